"""The ASGI app: reads each request (its body bounded in size and time), hands it to the Sandbox
through the worker threads (`workers.Workers`), and acts on its fault injection (injection.py):
waits a latency out (the event loop keeps serving; the wait ends when the client disconnects, and
gives back its site's slot, latency.py), holds a timed-out request until the client gives up, and
closes the connection of a dropped answer, the one thing only a real server can do.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable

from starlette.applications import Starlette
from starlette.requests import ClientDisconnect, Request
from starlette.responses import JSONResponse, PlainTextResponse, Response
from starlette.types import Receive, Scope, Send

from ..http import SandboxRequest
from .injection import Answer
from .sandbox import Sandbox, too_large
from .sandbox import internal_error as sandbox_internal_error
from .workers import Workers

METHODS = ["GET", "POST", "OPTIONS", "PUT", "DELETE", "PATCH", "HEAD"]
TIMEOUT_CAP_SECONDS = 600.0  # a timed-out request is held at most this long
# An ASGI scope extension: a callable closing the connection without an answer, where the server
# offers one (uvicorn_adapter.GuardedH11Protocol does).
CLOSE_CONNECTION = "gwkit.close_connection"
BODY_READ_SECONDS = 30.0  # a body not received in full by then is refused (408)
log = logging.getLogger("gwkit.sandbox")


class NoAnswer(Response):
    """Sends nothing: the connection was closed instead."""

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        return None


class DroppedConnection(Response):
    """No answer: the connection is closed, through the server's `CLOSE_CONNECTION` scope extension
    (fault injection's dropped answer). A server offering none gets the nearest thing, an answer
    broken off after its head."""

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        close = scope.get("extensions", {}).get(CLOSE_CONNECTION)
        if close is None:
            await send({"type": "http.response.start", "status": 200, "headers": [(b"content-length", b"1")]})
            raise ConnectionAbortedError("fault injection: answer dropped")
        close()
        await asyncio.sleep(0)  # let the server see the disconnection before the app returns


def create_app(
    sandbox: Sandbox, *, workers: Workers | None = None, body_read_seconds: float = BODY_READ_SECONDS
) -> Callable[[Scope, Receive, Send], Awaitable[None]]:
    workers = workers or Workers()

    async def endpoint(request: Request) -> Response:
        try:
            return await _answer(request)
        except ClientDisconnect:
            return NoAnswer()  # the client left while sending: nobody to answer
        except (
            Exception
        ) as exc:  # a sandbox bug: a JSON 500 the client can quote, and the connection stays usable
            return internal_error(request, exc)

    async def _answer(request: Request) -> Response:
        declared = request.headers.get("content-length")
        if declared and declared.isdigit() and int(declared) > sandbox.max_body_bytes:
            outcome = Answer(too_large(sandbox.max_body_bytes))
        else:
            try:
                async with asyncio.timeout(body_read_seconds):  # unlike wait_for, no task per request
                    body = await _read_limited(request, sandbox.max_body_bytes)
            except TimeoutError:
                return _body_too_slow(body_read_seconds)
            url = request.url
            outcome = await workers.answer(
                sandbox,
                SandboxRequest(
                    method=request.method,
                    path=url.path,
                    headers={k.lower(): v for k, v in request.headers.items()},
                    body=body,
                    query=dict(request.query_params) if url.query else {},
                    base_url=f"{url.scheme}://{url.netloc}",
                ),
            )
        if outcome.delay:  # ends early when the client leaves: nobody is waiting for the answer
            try:
                with workers.waiting():
                    left = await _until_disconnected(request.receive, outcome.delay)
            finally:
                if outcome.slot is not None:
                    outcome.slot.release()
            if left:
                return NoAnswer()
        if outcome.silence == "timeout":
            try:
                with workers.waiting():
                    await _until_disconnected(request.receive, TIMEOUT_CAP_SECONDS)
            finally:
                if outcome.slot is not None:
                    outcome.slot.release()
        if outcome.response is None:
            return DroppedConnection()
        answer = outcome.response
        return Response(answer.body, status_code=answer.status, headers=answer.headers)

    starlette = Starlette()  # the lifespan only

    async def app(scope: Scope, receive: Receive, send: Send) -> None:
        """Every path is the one endpoint: called directly, without Starlette's router and middleware,
        work a gateway request does not need (the endpoint answers every error itself)."""
        if scope["type"] != "http":
            return await starlette(scope, receive, send)
        workers.requests += 1
        try:
            response = (
                await endpoint(Request(scope, receive)) if scope["method"] in METHODS else _not_allowed()
            )
            await response(scope, receive, send)
        finally:
            workers.requests -= 1

    app.sandbox = sandbox  # type: ignore[attr-defined]
    app.workers = workers  # type: ignore[attr-defined]
    return app


def internal_error(request: Request, exc: BaseException) -> Response:
    """`sandbox.internal_error`'s answer, as a Starlette response."""
    answer = sandbox_internal_error(exc, f"{request.method} {request.url.path}")
    return Response(answer.body, status_code=answer.status, headers=answer.headers)


def _not_allowed() -> Response:
    return PlainTextResponse("Method Not Allowed", status_code=405, headers={"allow": ", ".join(METHODS)})


def _body_too_slow(seconds: float) -> JSONResponse:
    return JSONResponse(
        {
            "error": "request body too slow",
            "detail": f"the body was not received within {seconds:g} s",
            "limit_seconds": seconds,
        },
        status_code=408,
        headers={"connection": "close"},
    )


async def _until_disconnected(receive: Receive, cap_seconds: float) -> bool:
    """Wait until the client disconnects (True) or `cap_seconds` pass (False)."""

    async def disconnected() -> None:
        while (await receive())["type"] != "http.disconnect":
            pass

    try:
        await asyncio.wait_for(disconnected(), cap_seconds)
    except TimeoutError:
        return False
    return True


async def _read_limited(request: Request, limit: int) -> bytes:
    chunks, size = [], 0
    async for chunk in request.stream():
        size += len(chunk)
        chunks.append(chunk)
        if size > limit:
            break  # the Sandbox refuses it as too large
    return b"".join(chunks)
