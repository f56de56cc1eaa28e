"""httpx transports that call a Sandbox in-process: no server, no socket, same answers.

Fault injection works here too: a dropped answer raises `httpx.RemoteProtocolError`, as httpx does
when a server closes the connection without answering.
"""

from __future__ import annotations

import httpx

from ..http import SandboxRequest, SandboxResponse
from .sandbox import Sandbox


def _to_sandbox(request: httpx.Request, body: bytes) -> SandboxRequest:
    url = request.url
    default_port = {"http": 80, "https": 443}.get(url.scheme)
    host = url.host if url.port in (None, default_port) else f"{url.host}:{url.port}"
    return SandboxRequest(
        method=request.method, path=url.path,
        headers={k.lower(): v for k, v in request.headers.items()}, body=body,
        query=dict(url.params), base_url=f"{url.scheme}://{host}",
    )


def _to_httpx(answer: SandboxResponse) -> httpx.Response:
    return httpx.Response(answer.status, headers=answer.headers, content=answer.body)


def _answer(sandbox: Sandbox, request: httpx.Request, body: bytes) -> httpx.Response:
    """The sandbox's answer; a dropped one (fault injection) fails as a lost connection does."""
    drop = sandbox.faults.dropped(request.method, request.url.path)
    if drop is not None:
        if drop:
            sandbox.handle(_to_sandbox(request, body))
        raise httpx.RemoteProtocolError("Server disconnected without sending a response.", request=request)
    return _to_httpx(sandbox.handle(_to_sandbox(request, body)))


class SandboxTransport(httpx.BaseTransport):
    def __init__(self, sandbox: Sandbox):
        self.sandbox = sandbox

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        return _answer(self.sandbox, request, request.read())


class AsyncSandboxTransport(httpx.AsyncBaseTransport):
    def __init__(self, sandbox: Sandbox):
        self.sandbox = sandbox

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        return _answer(self.sandbox, request, await request.aread())
