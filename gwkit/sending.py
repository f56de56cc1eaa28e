"""One POST through the transport of a gwkit client's httpx client, without httpx's per-request machinery.

`httpx.Client.send` runs, for every request, an auth flow (a generator), the redirect loop, the
event hooks, a timer wrapped around the answer's stream, the cookie jar and a log line: about
30 us, as much as all the rest of a gwkit request on the in-process transport. A gateway client
needs none of it per request. Its Basic credentials are one fixed header, put on the request when
it is built (`Client._http_request`); the gateway never redirects (and httpx follows no redirect
unless told to); gwkit installs no httpx event hooks, and times each exchange itself.

So the request goes straight to the transport httpx would have chosen for its URL (a proxy's,
where one is mounted), and what of httpx's path a gateway client does need is kept: a closed client
refuses to send, an error knows its request, the whole answer is read and its connection given
back to the pool, and a cookie set on the way (by a proxy) is kept and then sent back through
httpx's own `build_request`. `_transport_for_url` is httpx's (0.27, 0.28); an httpx without it gets the
request through its own `send`, unchanged (the client sets no httpx auth, so nothing is added twice).
"""

from __future__ import annotations

import base64

import httpx

__all__ = ["asend", "basic_authorization", "send"]

CLOSED = "Cannot send a request, as the client has been closed."  # httpx's own words
ROUTE = "_transport_for_url"  # httpx.Client's method choosing the transport for a URL (httpx 0.27, 0.28)


def basic_authorization(username: str, password: str) -> str:
    """The Authorization header's value for HTTP Basic credentials, as `httpx.BasicAuth` makes it."""
    return "Basic " + base64.b64encode(f"{username}:{password}".encode("utf-8")).decode("ascii")


def send(http: httpx.Client, request: httpx.Request) -> httpx.Response:
    """Send `request` (complete, credentials included) on `http`'s transport; the answer, read."""
    if http.is_closed:
        raise RuntimeError(CLOSED)
    route = getattr(http, ROUTE, None)  # httpx's own choice, honouring mounts (proxies)
    if route is None:  # an httpx without it: its own path, which sends the request as it is
        return http.send(request)
    try:
        response = route(request.url).handle_request(request)
        response.request = request
        try:
            response.read()
        finally:
            response.close()
    except httpx.RequestError as exc:
        _give_request(exc, request)
        raise
    http.cookies.extract_cookies(response)
    return response


async def asend(http: httpx.AsyncClient, request: httpx.Request) -> httpx.Response:
    """`send` for an `httpx.AsyncClient`."""
    if http.is_closed:
        raise RuntimeError(CLOSED)
    route = getattr(http, ROUTE, None)
    if route is None:
        return await http.send(request)
    try:
        response = await route(request.url).handle_async_request(request)
        response.request = request
        try:
            await response.aread()
        finally:
            await response.aclose()
    except httpx.RequestError as exc:
        _give_request(exc, request)
        raise
    http.cookies.extract_cookies(response)
    return response


def _give_request(exc: httpx.RequestError, request: httpx.Request) -> None:
    """Set the request of an error raised without one, as httpx's `request_context` does in a send."""
    try:
        exc.request
    except RuntimeError:  # httpx's answer for an error that was given no request
        exc.request = request
