"""httpx transports that call a Sandbox in-process: no server, no socket, same answers."""

from __future__ import annotations

import httpx

from .core import Sandbox, SandboxRequest


def _to_sandbox(request: httpx.Request, body: bytes) -> SandboxRequest:
    url = request.url
    default_port = {"http": 80, "https": 443}.get(url.scheme)
    host = url.host if url.port in (None, default_port) else f"{url.host}:{url.port}"
    return SandboxRequest(
        method=request.method, path=url.path,
        headers={k.lower(): v for k, v in request.headers.items()}, body=body,
        query=dict(url.params), base_url=f"{url.scheme}://{host}",
    )


def _to_httpx(answer) -> httpx.Response:
    return httpx.Response(answer.status, headers=answer.headers, content=answer.body)


class SandboxTransport(httpx.BaseTransport):
    def __init__(self, sandbox: Sandbox):
        self.sandbox = sandbox

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        return _to_httpx(self.sandbox.handle(_to_sandbox(request, request.read())))


class AsyncSandboxTransport(httpx.AsyncBaseTransport):
    def __init__(self, sandbox: Sandbox):
        self.sandbox = sandbox

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        return _to_httpx(self.sandbox.handle(_to_sandbox(request, await request.aread())))
