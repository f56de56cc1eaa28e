"""One POST through a gwkit client's httpx transport, with what of `httpx.Client.send` a gateway
client needs and nothing more.

`httpx.Client.send` runs, for every request, an auth flow (a generator), the redirect loop, the
event hooks, a timer wrapped around the answer's stream, the cookie jar and a log line: about
30 us, as much as all the rest of a gwkit request on the in-process transport. A gateway client
needs none of it per request. Its Basic credentials are one fixed header, put on the request when
it is built (`Client._http_request`); the gateway never redirects; gwkit installs no httpx event
hooks, and times each exchange itself.

So a client holds one httpx transport (`transport_for`: the one given, or httpx's own, through the
proxy the environment names, as `httpx.Client` would choose) and calls its public
`handle_request`. What of httpx's path a gateway client does need is kept: a closed client refuses
to send, an error knows its request, the whole answer is read and its connection given back to the
pool, and a cookie set on the way (by a proxy) is kept in the client's `httpx.Cookies` and sent back.
"""

from __future__ import annotations

import base64
import ssl
import urllib.request

import httpx

from .pooling import AsyncPoolTransport

__all__ = ["asend", "basic_authorization", "proxy_for", "send", "transport_for"]

CLOSED = "Cannot send a request, as the client has been closed."  # httpx's own words


def basic_authorization(username: str, password: str) -> str:
    """The Authorization header's value for HTTP Basic credentials, as `httpx.BasicAuth` makes it."""
    return "Basic " + base64.b64encode(f"{username}:{password}".encode()).decode("ascii")


def proxy_for(url: httpx.URL) -> str | None:
    """The proxy the environment names for `url` (`HTTP_PROXY`, `HTTPS_PROXY`, `ALL_PROXY`, bypassed
    by `NO_PROXY`), as the standard library reads it; None to go direct."""
    proxies = urllib.request.getproxies()
    proxy = proxies.get(url.scheme) or proxies.get("all")
    if not proxy or urllib.request.proxy_bypass(url.netloc.decode("ascii")):
        return None
    return (
        proxy if "://" in proxy else "http://" + proxy
    )  # a bare host:port is an http proxy, as httpx reads it


def transport_for(
    url: httpx.URL, verify: ssl.SSLContext | bool, *, asynchronous: bool
) -> httpx.HTTPTransport:
    """The transport for a client of `url` given none: httpx's through the environment's proxy, else
    direct (for an async client, `AsyncPoolTransport`, httpx's settings over gwkit's pool)."""
    proxy = proxy_for(url)
    if asynchronous:
        if proxy is None:
            return AsyncPoolTransport(verify=verify)  # type: ignore[return-value]
        return httpx.AsyncHTTPTransport(verify=verify, proxy=proxy)  # type: ignore[return-value]
    return httpx.HTTPTransport(verify=verify, proxy=proxy)


def send(transport: httpx.BaseTransport, request: httpx.Request, cookies: httpx.Cookies) -> httpx.Response:
    """Send `request` (complete, credentials included) on `transport`; the answer, read. A cookie it
    sets goes into `cookies`."""
    try:
        response = transport.handle_request(request)
        response.request = request
        try:
            response.read()
        finally:
            response.close()
    except httpx.RequestError as exc:
        _give_request(exc, request)
        raise
    _keep_cookies(response, cookies)
    return response


async def asend(
    transport: httpx.AsyncBaseTransport, request: httpx.Request, cookies: httpx.Cookies
) -> httpx.Response:
    """`send` for an async transport."""
    try:
        response = await transport.handle_async_request(request)
        response.request = request
        try:
            await response.aread()
        finally:
            await response.aclose()
    except httpx.RequestError as exc:
        _give_request(exc, request)
        raise
    _keep_cookies(response, cookies)
    return response


def _keep_cookies(response: httpx.Response, cookies: httpx.Cookies) -> None:
    """httpx's reading of an answer's cookies builds a urllib request and an email message of every
    header first (some 50 us, a quarter of the client's time); the gateway sets none, so it is read
    only when the answer sets one. (`Set-Cookie2` alone is ignored by httpx's cookie policy too.)"""
    if "set-cookie" in response.headers:
        cookies.extract_cookies(response)


def _give_request(exc: httpx.RequestError, request: httpx.Request) -> None:
    """Set the request of an error raised without one, as httpx's `request_context` does in a send."""
    try:
        _ = exc.request  # the property raises when the error was given no request
    except RuntimeError:  # httpx's answer for an error that was given no request
        exc.request = request
