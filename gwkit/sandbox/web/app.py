"""The Starlette app: hands every request to the Sandbox, and closes the connection of a dropped
answer (fault injection, `Faults.dropped`), the one thing only a real server can do."""

from __future__ import annotations

import asyncio
from typing import Any, Awaitable, Callable

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from ..http import SandboxRequest
from .sandbox import Sandbox, too_large

METHODS = ["GET", "POST", "OPTIONS", "PUT", "DELETE", "PATCH", "HEAD"]

Scope = dict[str, Any]
Receive = Callable[[], Awaitable[dict[str, Any]]]
Send = Callable[[dict[str, Any]], Awaitable[None]]


def create_app(sandbox: Sandbox) -> Callable[[Scope, Receive, Send], Awaitable[None]]:
    async def endpoint(request: Request) -> Response:
        declared = request.headers.get("content-length")
        if declared and declared.isdigit() and int(declared) > sandbox.max_body_bytes:
            answer = too_large(sandbox.max_body_bytes)
        else:
            body = await _read_limited(request, sandbox.max_body_bytes)
            answer = sandbox.handle(SandboxRequest(
                method=request.method, path=request.url.path,
                headers={k.lower(): v for k, v in request.headers.items()}, body=body,
                query=dict(request.query_params), base_url=f"{request.url.scheme}://{request.url.netloc}",
            ))
        return Response(answer.body, status_code=answer.status, headers=answer.headers)

    starlette = Starlette(routes=[Route("/{path:path}", endpoint, methods=METHODS)])

    async def app(scope: Scope, receive: Receive, send: Send) -> None:
        drop = sandbox.faults.dropped(scope["method"], scope["path"]) if scope["type"] == "http" else None
        if drop is None:
            await starlette(scope, receive, send)
        elif drop:  # processed, then the answer lost
            await starlette(scope, receive, _dropping(send))
        else:
            await _drain(receive)
            await _close_connection(send)

    app.sandbox = sandbox  # type: ignore[attr-defined]
    return app


async def _read_limited(request: Request, limit: int) -> bytes:
    chunks, size = [], 0
    async for chunk in request.stream():
        size += len(chunk)
        chunks.append(chunk)
        if size > limit:
            break  # the Sandbox refuses it as too large
    return b"".join(chunks)


def _dropping(send: Send) -> Send:
    closed = False

    async def instead(message: dict[str, Any]) -> None:
        nonlocal closed
        if not closed:
            closed = True
            await _close_connection(send)

    return instead


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


async def _drain(receive: Receive) -> None:
    while True:
        message = await receive()
        if message["type"] != "http.request" or not message.get("more_body"):
            return
