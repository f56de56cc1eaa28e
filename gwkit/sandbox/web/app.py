"""The Starlette app: hands every request to the Sandbox and acts on its fault injection (injection.py):
waits a latency out (asyncio.sleep: the event loop keeps serving), holds a timed-out request until the
client gives up, and closes the connection of a dropped answer, the one thing only a real server can do."""

from __future__ import annotations

import asyncio
from typing import Any, Awaitable, Callable

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from ..http import SandboxRequest
from .injection import Outcome
from .sandbox import Sandbox, too_large

METHODS = ["GET", "POST", "OPTIONS", "PUT", "DELETE", "PATCH", "HEAD"]
TIMEOUT_CAP_SECONDS = 600.0  # a timed-out request is held at most this long
RAW_SEND = "gwkit.send"  # the server's own `send`, kept in the scope for closing a connection

Scope = dict[str, Any]
Receive = Callable[[], Awaitable[dict[str, Any]]]
Send = Callable[[dict[str, Any]], Awaitable[None]]


class NoAnswer(Response):
    """Sends nothing: the connection was closed instead."""

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        return None


def create_app(sandbox: Sandbox) -> Callable[[Scope, Receive, Send], Awaitable[None]]:
    async def endpoint(request: Request) -> Response:
        declared = request.headers.get("content-length")
        if declared and declared.isdigit() and int(declared) > sandbox.max_body_bytes:
            outcome = Outcome(too_large(sandbox.max_body_bytes))
        else:
            body = await _read_limited(request, sandbox.max_body_bytes)
            outcome = sandbox.answer(SandboxRequest(
                method=request.method, path=request.url.path,
                headers={k.lower(): v for k, v in request.headers.items()}, body=body,
                query=dict(request.query_params), base_url=f"{request.url.scheme}://{request.url.netloc}",
            ))
        if outcome.delay:
            await asyncio.sleep(outcome.delay)
        if outcome.silence == "timeout":
            await _until_disconnected(request.receive, TIMEOUT_CAP_SECONDS)
        if outcome.response is None:
            await _close_connection(request.scope[RAW_SEND])
            return NoAnswer()
        answer = outcome.response
        return Response(answer.body, status_code=answer.status, headers=answer.headers)

    starlette = Starlette(routes=[Route("/{path:path}", endpoint, methods=METHODS)])

    async def app(scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            scope[RAW_SEND] = send
        await starlette(scope, receive, send)

    app.sandbox = sandbox  # type: ignore[attr-defined]
    return app


async def _until_disconnected(receive: Receive, cap_seconds: float) -> None:
    async def disconnected() -> None:
        while (await receive())["type"] != "http.disconnect":
            pass

    try:
        await asyncio.wait_for(disconnected(), cap_seconds)
    except asyncio.TimeoutError:
        pass


async def _read_limited(request: Request, limit: int) -> bytes:
    chunks, size = [], 0
    async for chunk in request.stream():
        size += len(chunk)
        chunks.append(chunk)
        if size > limit:
            break  # the Sandbox refuses it as too large
    return b"".join(chunks)


async def _close_connection(send: Send) -> None:
    """Close the client's connection without an answer.

    ASGI has no message for that, so the transport is taken from uvicorn's `send`, a method of
    its request cycle (found through the wrappers uvicorn adds at log level trace).
    """
    transport = _transport_of(send)
    if transport is None:  # pragma: no cover - another ASGI server: the nearest thing, a broken answer
        await send({"type": "http.response.start", "status": 200, "headers": [(b"content-length", b"1")]})
        raise ConnectionAbortedError("fault injection: answer dropped")
    transport.close()
    await asyncio.sleep(0)  # let the server see the disconnection before the app returns


def _transport_of(send: Any, depth: int = 0) -> asyncio.BaseTransport | None:
    transport = getattr(getattr(send, "__self__", None), "transport", None)
    if isinstance(transport, asyncio.BaseTransport):
        return transport
    for cell in (getattr(send, "__closure__", None) or ()) if depth < 4 else ():
        try:
            inner = cell.cell_contents
        except ValueError:  # an empty cell
            continue
        if callable(inner):
            transport = _transport_of(inner, depth + 1)
            if transport is not None:
                return transport
    return None
