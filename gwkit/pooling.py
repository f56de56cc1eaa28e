"""The connection pool of `AsyncClient`: an httpcore pool, as httpx's own transport makes it, over a
network backend that answers httpcore's "is this idle connection closed?" question with one poll of
the socket. And the TLS context every httpx client gwkit makes shares.

Each time a request is queued or finished, httpcore asks every idle connection in the pool
whether the server has closed it (`get_extra_info("is_readable")`). Over anyio that builds the
stream's whole attribute table each time (a `getpeername` call among others): with 16 requests in
flight it cost more than the requests themselves, and `AsyncClient` at concurrency 16 was slower
than the sequential `Client`. Here the socket is looked up once per connection.

`AsyncPoolTransport` is an httpx transport built on httpx's and httpcore's public interfaces only
(httpx gives no public way to hand its transport a network backend): it maps the request to
httpcore's, the answer back, and httpcore's errors to httpx's.
"""

from __future__ import annotations

import select
import socket
import ssl
from collections.abc import AsyncIterable, AsyncIterator, Iterable
from functools import cache
from typing import Any, NoReturn, cast

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


# httpx's documented default limits (https://www.python-httpx.org/advanced/resource-limits/), the ones
# `httpx.AsyncHTTPTransport` uses; `httpx.Limits()` alone leaves the connection counts unbounded.
DEFAULT_LIMITS = httpx.Limits(max_connections=100, max_keepalive_connections=20, keepalive_expiry=5.0)

# Each httpcore error and the httpx error it becomes, as httpx's own transport maps them. An error
# takes the entry of the nearest class in its hierarchy (a ConnectTimeout is not just a TimeoutException).
_HTTPX_ERRORS: dict[type[Exception], type[httpx.TransportError]] = {
    httpcore.TimeoutException: httpx.TimeoutException,
    httpcore.ConnectTimeout: httpx.ConnectTimeout,
    httpcore.ReadTimeout: httpx.ReadTimeout,
    httpcore.WriteTimeout: httpx.WriteTimeout,
    httpcore.PoolTimeout: httpx.PoolTimeout,
    httpcore.NetworkError: httpx.NetworkError,
    httpcore.ConnectError: httpx.ConnectError,
    httpcore.ReadError: httpx.ReadError,
    httpcore.WriteError: httpx.WriteError,
    httpcore.ProxyError: httpx.ProxyError,
    httpcore.UnsupportedProtocol: httpx.UnsupportedProtocol,
    httpcore.ProtocolError: httpx.ProtocolError,
    httpcore.LocalProtocolError: httpx.LocalProtocolError,
    httpcore.RemoteProtocolError: httpx.RemoteProtocolError,
}


def httpx_error(exc: Exception, request: httpx.Request) -> httpx.TransportError | None:
    """The httpx error for an httpcore one, knowing its request; None for any other exception."""
    for cls in type(exc).__mro__:
        error = _HTTPX_ERRORS.get(cls)
        if error is not None:
            return error(str(exc), request=request)
    return None


class _ResponseStream(httpx.AsyncByteStream):
    """An answer's body as httpx reads it: httpcore's stream, its errors as httpx's; closing it gives
    the connection back to the pool."""

    def __init__(self, response: httpcore.Response, request: httpx.Request):
        self._response = response
        self._request = request

    async def __aiter__(self) -> AsyncIterator[bytes]:
        try:
            async for chunk in cast(AsyncIterable[bytes], self._response.stream):
                yield chunk
        except Exception as exc:
            _raise_as_httpx(exc, self._request)

    async def aclose(self) -> None:
        try:
            await self._response.aclose()
        except Exception as exc:
            _raise_as_httpx(exc, self._request)


def _raise_as_httpx(exc: Exception, request: httpx.Request) -> NoReturn:
    error = httpx_error(exc, request)
    if error is None:
        raise exc
    raise error from exc


class AsyncPoolTransport(httpx.AsyncBaseTransport):
    """An httpx transport over an httpcore connection pool (`pool`) running on `_Backend`: HTTP/1.1,
    no retries, httpx's default limits unless given others.

    `verify` is read as httpx reads it: an `ssl.SSLContext` is used as given, True checks
    certificates against gwkit's shared `default_ssl_context()`, False checks nothing."""

    def __init__(self, verify: ssl.SSLContext | bool = True, *, limits: httpx.Limits = DEFAULT_LIMITS):
        self.limits = limits
        self.ssl_context = tls_context(verify)
        self.pool = httpcore.AsyncConnectionPool(
            ssl_context=self.ssl_context,
            max_connections=limits.max_connections,
            max_keepalive_connections=limits.max_keepalive_connections,
            keepalive_expiry=limits.keepalive_expiry,
            http1=True,
            http2=False,
            retries=0,
            network_backend=_Backend(),
        )

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        url = request.url
        core_request = httpcore.Request(
            method=request.method,
            url=httpcore.URL(scheme=url.raw_scheme, host=url.raw_host, port=url.port, target=url.raw_path),
            headers=request.headers.raw,
            content=cast(AsyncIterable[bytes], request.stream),
            extensions=request.extensions,
        )
        try:
            response = await self.pool.handle_async_request(core_request)
        except Exception as exc:
            _raise_as_httpx(exc, request)
        return httpx.Response(
            status_code=response.status,
            headers=response.headers,
            stream=_ResponseStream(response, request),
            extensions=response.extensions,
        )

    async def aclose(self) -> None:
        await self.pool.aclose()


def tls_context(verify: ssl.SSLContext | bool) -> ssl.SSLContext:
    """The TLS context httpx would make of `verify`, with gwkit's shared one for True."""
    if isinstance(verify, ssl.SSLContext):
        return verify
    if verify is True:
        return default_ssl_context()
    if verify is False:
        return httpx.create_ssl_context(verify=False)
    raise TypeError(f"verify must be an ssl.SSLContext, True or False, not {verify!r}")


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
