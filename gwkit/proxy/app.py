"""The proxy over HTTP: a Starlette app on loopback serving `POST /json/` only, and its server.

The gateway's JSON endpoint is proxied, and with a sandbox upstream the sandbox's control API
(`/_sandbox/...`: clock, settle, faults), with the same credentials and site mapping. Any other
path (the payment pages, st.js; the control API of an upstream that is not the sandbox) is answered
404 saying so. Every request is bounded: its body
(MAX_BODY_BYTES, read within BODY_READ_SECONDS) and the connections served at once.
"""

from __future__ import annotations

import asyncio
import contextlib
import socket
import threading
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any, Self

import uvicorn
from starlette.applications import Starlette
from starlette.requests import ClientDisconnect, Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from ..interface.wire import GATEWAY_PATH
from ..sandbox.web.app import DroppedConnection
from ..sandbox.web.server import ServerLimits, bind, uvicorn_config  # bind: TCP_NODELAY, no delayed-ACK waits
from .answers import Answer
from .proxy import Proxy
from .upstreams import UpstreamError

MAX_BODY_BYTES = 1_048_576  # as the sandbox: far more than any envelope needs
BODY_READ_SECONDS = 30.0
TIMEOUT_HOLD_SECONDS = 300.0  # a "timeout" fault holds the answer until the client leaves, or this long


def create_app(proxy: Proxy) -> Starlette:
    async def gateway(request: Request) -> Response:
        body = await _bounded_body(request)
        if isinstance(body, Response):
            return body
        answer = await proxy.answer({k.lower(): v for k, v in request.headers.items()}, body)
        if answer.silence is not None:
            return _Silence(answer)
        return Response(answer.body, status_code=answer.status, headers=answer.headers)

    async def control(request: Request) -> Response:
        body = await _bounded_body(request)
        if isinstance(body, Response):
            return body
        query = dict(request.query_params)
        try:
            headers = {k.lower(): v for k, v in request.headers.items()}
            answer = await proxy.upstream.control(request.method, request.url.path, query, body, headers)
        except UpstreamError as exc:
            return JSONResponse({"error": "upstream failed", "detail": str(exc)}, status_code=502)
        if answer is None:
            return await elsewhere(request)
        kept = {k: v for k, v in answer.headers.items() if k.lower() in ("content-type", "allow")}
        return Response(answer.body, status_code=answer.status, headers=kept)

    async def elsewhere(request: Request) -> Response:
        return JSONResponse(
            {
                "error": f"not proxied: {request.method} {request.url.path}",
                "detail": f"gwkit proxy forwards the gateway's JSON endpoint only: POST {GATEWAY_PATH} "
                "(and the sandbox's control API /_sandbox/... when its upstream is the sandbox)",
            },
            status_code=404 if request.url.path not in (GATEWAY_PATH, GATEWAY_PATH.rstrip("/")) else 405,
            headers={"allow": "POST"} if request.url.path.startswith(GATEWAY_PATH.rstrip("/")) else None,
        )

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        yield
        await proxy.upstream.aclose()  # its connections, on the loop that opened them

    routes = [Route(path, gateway, methods=["POST"]) for path in (GATEWAY_PATH, GATEWAY_PATH.rstrip("/"))]
    routes += [Route(path, control, methods=_METHODS) for path in ("/_sandbox", "/_sandbox/{path:path}")]
    app = Starlette(routes=routes + [Route("/{path:path}", elsewhere, methods=_METHODS)], lifespan=lifespan)
    app.router.redirect_slashes = False
    return app


_METHODS = ["GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"]


async def _bounded_body(request: Request) -> bytes | Response:
    """The request's body, or the answer to one over MAX_BODY_BYTES or slower than BODY_READ_SECONDS."""
    declared = request.headers.get("content-length")
    if declared and declared.isdigit() and int(declared) > MAX_BODY_BYTES:
        return _too_large()
    try:
        async with asyncio.timeout(BODY_READ_SECONDS):
            body = await _read_limited(request)
    except TimeoutError:
        return JSONResponse(
            {"error": "request timeout", "detail": f"the body must arrive within {BODY_READ_SECONDS:g} s"},
            status_code=408,
        )
    except ClientDisconnect:
        return Response(status_code=400)
    return _too_large() if body is None else body


async def _read_limited(request: Request) -> bytes | None:
    """The body, or None once it grows past MAX_BODY_BYTES."""
    chunks, size = [], 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > MAX_BODY_BYTES:
            return None
        chunks.append(chunk)
    return b"".join(chunks)


def _too_large() -> Response:
    return JSONResponse(
        {"error": "request too large", "detail": f"the body must be at most {MAX_BODY_BYTES} bytes"},
        status_code=413,
    )


class _Silence(Response):
    """No answer: "drop" closes the connection at once; "timeout" waits until the client leaves."""

    def __init__(self, answer: Answer):
        super().__init__(status_code=200)
        self.silence = answer.silence

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if self.silence == "timeout":
            try:
                async with asyncio.timeout(TIMEOUT_HOLD_SECONDS):
                    while (await receive())["type"] != "http.disconnect":
                        pass
            except TimeoutError:
                pass
        await DroppedConnection()(scope, receive, send)  # closed through the server's CLOSE_CONNECTION


def server_for(proxy: Proxy, log_level: str = "warning", app: Starlette | None = None) -> uvicorn.Server:
    """uvicorn with the sandbox's bounds (`ServerLimits`: connections served at once, a request head
    within 10 s, idle keep-alive, an answer the client stops reading); no access log (the proxy's
    own line is its log, and holds no credentials). `app`: the proxy's app with routes of its own
    added (the checklist's); by default `create_app(proxy)`."""
    config = uvicorn_config(app if app is not None else create_app(proxy), log_level, ServerLimits())
    config.lifespan = "on"  # the app's lifespan closes the upstream's connections
    return uvicorn.Server(config)


@dataclass
class ProxyHandle:
    """A proxy serving on loopback in a background thread: point an application at `base_url`."""

    proxy: Proxy
    base_url: str
    _server: uvicorn.Server = field(repr=False)
    _thread: threading.Thread = field(repr=False)
    _sock: socket.socket = field(repr=False)

    @property
    def exchanges(self) -> list[Any]:
        return self.proxy.exchanges

    @property
    def faults(self) -> Any:
        return self.proxy.faults

    def flush(self) -> None:
        """Wait until every exchange so far is journalled, recorded and shown (`Proxy.flush`)."""
        self.proxy.flush()

    def stop(self) -> None:
        self.proxy.close()
        self._server.should_exit = True
        self._thread.join(timeout=30)
        self._sock.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


def start(
    proxy: Proxy, *, host: str = "127.0.0.1", port: int = 0, app: Starlette | None = None
) -> ProxyHandle:
    """Serve `proxy` (or `app`, built on `create_app(proxy)`) on `host`:`port` (0: a free port) in a
    background thread; serving on return."""
    sock = bind(host, port)
    server = server_for(proxy, app=app)
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, name="gwkit-proxy", daemon=True)
    thread.start()
    _wait_until_started(server, thread)
    bound_host, bound_port = sock.getsockname()[:2]
    shown = f"[{bound_host}]" if ":" in bound_host else bound_host
    return ProxyHandle(proxy, f"http://{shown}:{bound_port}", server, thread, sock)


def _wait_until_started(server: uvicorn.Server, thread: threading.Thread, seconds: float = 30.0) -> None:
    """Return once uvicorn has started (its start logged): a server configured meanwhile (the reference
    shop's, say) resets uvicorn's loggers to INFO for a moment, and its start lines would reach stderr."""
    deadline = time.monotonic() + seconds
    while not server.started and thread.is_alive() and time.monotonic() < deadline:
        thread.join(0.005)  # uvicorn says it has started by a flag only
