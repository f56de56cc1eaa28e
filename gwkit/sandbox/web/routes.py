"""The routes table: (method, path) -> page and the bodies it accepts, and how a request finds its page.

A method `*` matches any method; a path ending in `/*` serves everything below it. An exact
(method, path) wins over `*`, and both over a path below.

Bodies: a POST must be `application/json` unless its route says otherwise. A web page cannot
send JSON to another origin without a CORS preflight, so no page on the web can make a visitor's
browser (which keeps Basic credentials) post a payment or a reset here (CSRF). The exceptions are
the posts 3-D Secure v1 and st.js make as plain browser form posts, by design: the ACS page and
its completion (which check a signed PaReq and a one-time MD, so a forged post changes nothing),
and the demo merchant's form action, a recorder of whatever arrives that pays only on its own site.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import NamedTuple

from ..gateway.threeds import ACS_PATH
from ..http import SandboxRequest, SandboxResponse
from . import acs, home, merchant
from .control import handle_control
from .endpoint import gateway_endpoint, method_not_allowed
from .faults import GATEWAY_PATHS
from .notification_controls import handle_notifications
from .served import Served
from .stjs import serve_stjs

Page = Callable[[Served, SandboxRequest], SandboxResponse]
JSON = ("application/json",)
FORM = ("application/x-www-form-urlencoded",)
ANY_BODY = None  # a recorder: every content type is what it is there to show
BODY_METHODS = frozenset({"POST", "PUT", "PATCH", "DELETE"})


class Route(NamedTuple):
    page: Page
    accepts: tuple[str, ...] | None = JSON  # content types of a body (BODY_METHODS); None: any


ROUTES: dict[tuple[str, str], Route] = {
    **{(method, path): Route(gateway_endpoint) for path in GATEWAY_PATHS for method in ("POST", "OPTIONS")},
    **{("*", path): Route(method_not_allowed, ANY_BODY) for path in GATEWAY_PATHS},  # 405 whatever the body
    ("GET", "/"): Route(home.home),
    ("GET", "/_sandbox/"): Route(home.home),
    ("GET", "/_sandbox"): Route(home.home),
    ("*", "/_sandbox/notifications/*"): Route(handle_notifications),  # before /_sandbox/*: found first
    ("*", "/_sandbox/*"): Route(handle_control),
    ("GET", ACS_PATH): Route(acs.acs_get),
    ("POST", ACS_PATH): Route(acs.acs_page, FORM),
    ("POST", acs.COMPLETE_PATH): Route(acs.acs_complete, FORM),
    ("GET", "/js/st.js"): Route(serve_stjs),
    ("GET", "/demo/merchant"): Route(merchant.payment_page),
    ("POST", "/demo/merchant/pay"): Route(merchant.pay, ANY_BODY),
    ("GET", "/demo/merchant/received"): Route(merchant.received),
}
_BELOW = tuple((method, path[:-1], route) for (method, path), route in ROUTES.items() if path.endswith("/*"))


def find_route(method: str, path: str) -> Route | None:
    route = ROUTES.get((method, path)) or ROUTES.get(("*", path))
    if route is not None:
        return route
    for wanted, prefix, route in _BELOW:
        if wanted in (method, "*") and path.startswith(prefix):
            return route
    return None


def unsupported_body(route: Route, request: SandboxRequest) -> SandboxResponse | None:
    """415 naming the accepted type when the request's body type is not one its route takes."""
    if route.accepts is ANY_BODY or request.method not in BODY_METHODS:
        return None
    sent = request.headers.get("content-type", "").split(";")[0].strip().lower()
    if sent in route.accepts:
        return None
    return SandboxResponse.json(
        {
            "error": "unsupported media type",
            "content_type": sent or None,
            "accepted": list(route.accepts),
            "detail": f"{request.method} {request.path} takes a body of type {' or '.join(route.accepts)}: "
            f"send the header Content-Type: {route.accepts[0]}",
        },
        status=415,
    )
