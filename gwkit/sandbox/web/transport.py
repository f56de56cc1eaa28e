"""httpx transports that call a Sandbox in-process: no server, no socket, same answers.

Fault injection works here too: a dropped answer raises `httpx.RemoteProtocolError`, as httpx does
when a server closes the connection without answering; a timeout raises `httpx.ReadTimeout` at
once; a latency is waited through `sleep` (time.sleep, asyncio.sleep, or a test's fake).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable

import httpx

from ..http import SandboxRequest, SandboxResponse
from .injection import Answer
from .sandbox import Sandbox


def _to_sandbox(request: httpx.Request, body: bytes) -> SandboxRequest:
    url = request.url
    default_port = {"http": 80, "https": 443}.get(url.scheme)
    host = url.host if url.port in (None, default_port) else f"{url.host}:{url.port}"
    return SandboxRequest(
        method=request.method,
        path=url.path,
        headers=_headers(request.headers),
        body=body,
        query=dict(url.params) if url.query else {},
        base_url=f"{url.scheme}://{host}",
    )


def _headers(headers: httpx.Headers) -> dict[str, str]:
    """Lower-case names; a header sent twice keeps its last value, as the server's app reads them."""
    return {name.decode("latin-1").lower(): value.decode("latin-1") for name, value in headers.raw}


def _to_httpx(answer: SandboxResponse) -> httpx.Response:
    """The answer as a server sends it: its headers, the length of its body, the body to be read."""
    body = answer.body
    headers = [(name.encode("latin-1"), value.encode("latin-1")) for name, value in answer.headers.items()]
    headers.append((b"content-length", str(len(body)).encode("ascii")))
    return httpx.Response(answer.status, headers=headers, stream=httpx.ByteStream(body))


def _answer(outcome: Answer, request: httpx.Request) -> httpx.Response:
    """The sandbox's answer; a silenced one (fault injection) fails as httpx fails without an answer."""
    if outcome.silence == "timeout":
        raise httpx.ReadTimeout("fault injection: the sandbox did not answer", request=request)
    if outcome.response is None:  # silence "drop": the connection closes without an answer
        raise httpx.RemoteProtocolError("Server disconnected without sending a response.", request=request)
    return _to_httpx(outcome.response)


class SandboxTransport(httpx.BaseTransport):
    def __init__(self, sandbox: Sandbox, *, sleep: Callable[[float], object] = time.sleep):
        self.sandbox, self.sleep = sandbox, sleep

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        outcome = self.sandbox.answer(_to_sandbox(request, request.read()))
        try:
            if outcome.delay:
                self.sleep(outcome.delay)
        finally:
            if outcome.slot is not None:
                outcome.slot.release()
        return _answer(outcome, request)


class AsyncSandboxTransport(httpx.AsyncBaseTransport):
    def __init__(self, sandbox: Sandbox, *, sleep: Callable[[float], Awaitable[object]] = asyncio.sleep):
        self.sandbox, self.sleep = sandbox, sleep

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        outcome = self.sandbox.answer(_to_sandbox(request, await request.aread()))
        try:
            if outcome.delay:
                await self.sleep(outcome.delay)
        finally:
            if outcome.slot is not None:
                outcome.slot.release()
        return _answer(outcome, request)
