"""The connection pool of `AsyncClient`: httpx's, over a network backend that answers httpcore's
"is this idle connection closed?" question with one poll of the socket. And the TLS context every
httpx client gwkit makes shares.

Each time a request is queued or finished, httpcore asks every idle connection in the pool
whether the server has closed it (`get_extra_info("is_readable")`). Over anyio that builds the
stream's whole attribute table each time (a `getpeername` call among others): with 16 requests in
flight it cost more than the requests themselves, and `AsyncClient` at concurrency 16 was slower
than the sequential `Client`. Here the socket is looked up once per connection.
"""

from __future__ import annotations

import select
import socket
import ssl
from collections.abc import Iterable
from functools import cache
from typing import Any

import httpcore
import httpx


class _Stream(httpcore.AsyncNetworkStream):
    def __init__(self, stream: httpcore.AsyncNetworkStream):
        self._stream = stream
        self._socket: socket.socket | None = stream.get_extra_info("socket")

    async def read(self, max_bytes: int, timeout: float | None = None) -> bytes:
        return await self._stream.read(max_bytes, timeout)

    async def write(self, buffer: bytes, timeout: float | None = None) -> None:
        await self._stream.write(buffer, timeout)

    async def aclose(self) -> None:
        await self._stream.aclose()

    async def start_tls(
        self, ssl_context: Any, server_hostname: str | None = None, timeout: float | None = None
    ) -> httpcore.AsyncNetworkStream:
        return _Stream(await self._stream.start_tls(ssl_context, server_hostname, timeout))

    def get_extra_info(self, info: str) -> Any:
        if info == "is_readable" and self._socket is not None:
            return _readable(self._socket)
        if info == "socket":
            return self._socket
        return self._stream.get_extra_info(info)


def _readable(sock: socket.socket) -> bool:
    """Whether reading would not block: for an idle keep-alive connection, the server closed it."""
    if sock.fileno() == -1:
        return True
    poller = select.poll()
    poller.register(sock, select.POLLIN)
    return bool(poller.poll(0))


class _Backend(httpcore.AsyncNetworkBackend):
    def __init__(self) -> None:
        self._backend = httpcore.AnyIOBackend()

    async def connect_tcp(
        self,
        host: str,
        port: int,
        timeout: float | None = None,
        local_address: str | None = None,
        socket_options: Iterable[Any] | None = None,
    ) -> httpcore.AsyncNetworkStream:
        return _Stream(await self._backend.connect_tcp(host, port, timeout, local_address, socket_options))

    async def connect_unix_socket(
        self, path: str, timeout: float | None = None, socket_options: Iterable[Any] | None = None
    ) -> httpcore.AsyncNetworkStream:
        return _Stream(await self._backend.connect_unix_socket(path, timeout, socket_options))

    async def sleep(self, seconds: float) -> None:
        await self._backend.sleep(seconds)


class AsyncPoolTransport(httpx.AsyncHTTPTransport):
    """`httpx.AsyncHTTPTransport` (same settings, same TLS) whose pool runs over `_Backend`."""

    def __init__(self, **settings: Any):
        super().__init__(**settings)
        pool = self._pool
        self._pool = httpcore.AsyncConnectionPool(
            ssl_context=pool._ssl_context,
            max_connections=pool._max_connections,
            max_keepalive_connections=pool._max_keepalive_connections,
            keepalive_expiry=pool._keepalive_expiry,
            http1=pool._http1,
            http2=pool._http2,
            retries=pool._retries,
            local_address=pool._local_address,
            uds=pool._uds,
            socket_options=pool._socket_options,
            network_backend=_Backend(),
        )


@cache
def default_ssl_context() -> ssl.SSLContext:
    """httpx's default certificate verification (certifi's authorities, or `SSL_CERT_FILE` /
    `SSL_CERT_DIR` as they are when first asked), made once per process: loading the authorities
    takes some 50 ms, and httpx did it again for every client gwkit made. A context is safe to share."""
    return httpx.create_ssl_context()


@cache
def plain_http_ssl_context() -> ssl.SSLContext:
    """For a client of a plain http:// URL (the embedded sandbox on loopback), which makes no TLS
    connection: a context that verifies but trusts no authority, so should one ever be made it
    fails closed. It spares the 30 ms of loading the authorities in every notebook."""
    return ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
