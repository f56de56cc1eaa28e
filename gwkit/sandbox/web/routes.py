"""The one routes table: (method, path) -> page and the bodies it accepts, and how a request finds
its page. Every page the sandbox serves is here, the control API's endpoints one by one.

A method `*` matches any method. A path segment `{id}` matches any one segment (the page is given
it); a path ending in `/*` serves everything below it. An exact (method, path) wins over `*`, a
path without its trailing slash comes next, then a path with an `{id}`, then a path below.

Bodies: a POST must be `application/json` unless its route says otherwise. A web page cannot
send JSON to another origin without a CORS preflight, so no page on the web can make a visitor's
browser (which keeps Basic credentials) post a payment or a reset here (CSRF). The exceptions are
the posts 3-D Secure v1 and st.js make as plain browser form posts, by design: the ACS page and
its completion (which check a signed PaReq and a one-time MD, so a forged post changes nothing),
EMV 3-D Secure's method, method notification, challenge and completion pages (each names a
transaction ID the gateway drew: a forged post can only do what that cardholder could),
and the demo merchant's form action, a recorder of whatever arrives that pays only on its own site.
"""

from __future__ import annotations

from typing import NamedTuple

from ..gateway.threeds import ACS_PATH
from ..gateway.threeds_v2 import ACS_PATH as ACS_V2_PATH
from ..gateway.threeds_v2 import METHOD_PATH, NOTIFY_PATH
from ..http import SandboxRequest, SandboxResponse
from . import acs, acs_v2, control, home, merchant
from . import notification_controls as notifications
from .control import ControlHandler, control_page
from .credentials import authenticate, unauthorised
from .endpoint import gateway_endpoint, method_not_allowed
from .faults import GATEWAY_PATHS
from .notification_controls import DELIVERIES, RULES
from .served import Page, Served
from .stjs import serve_stjs

JSON = ("application/json",)
FORM = ("application/x-www-form-urlencoded",)
ANY_BODY = None  # a recorder: every content type is what it is there to show
BODY_METHODS = frozenset({"POST", "PUT", "PATCH", "DELETE"})


class Route(NamedTuple):
    page: Page
    accepts: tuple[str, ...] | None = JSON  # content types of a body (BODY_METHODS); None: any


def control_endpoints() -> list[str]:
    """Every control endpoint, as "METHOD /path" (an `{id}` where a path carries one)."""
    return [f"{m} {p}" for m, p in ROUTES if m != "*" and p.startswith("/_sandbox/") and p != "/_sandbox/"]


def no_such_control_endpoint(sandbox: Served, request: SandboxRequest) -> SandboxResponse:
    """404 listing every control endpoint, to a caller with credentials (401 to any other)."""
    if authenticate(sandbox.gateway.accounts, request.headers) is None:
        return unauthorised()
    return SandboxResponse.json(
        {
            "error": f"no such control endpoint: {request.method} {request.path}",
            "endpoints": control_endpoints(),
        },
        status=404,
    )


def _control_rows(handlers: dict[tuple[str, str], ControlHandler]) -> dict[tuple[str, str], Route]:
    """Control endpoints as rows of the table: each handler served by `control_page`."""
    return {
        (method, path): Route(control_page(handler, path)) for (method, path), handler in handlers.items()
    }


ROUTES: dict[tuple[str, str], Route] = {
    **{(method, path): Route(gateway_endpoint) for path in GATEWAY_PATHS for method in ("POST", "OPTIONS")},
    **{("*", path): Route(method_not_allowed, ANY_BODY) for path in GATEWAY_PATHS},  # 405 whatever the body
    ("GET", "/"): Route(home.home),
    ("GET", "/_sandbox/"): Route(home.home),
    ("GET", "/_sandbox"): Route(home.home),
    ("GET", "/_sandbox/health"): Route(control.health_page),  # without credentials: only that it is up
    **_control_rows(
        {
            ("GET", "/_sandbox/clock"): control.clock,
            ("POST", "/_sandbox/clock/advance"): control.advance,
            ("GET", "/_sandbox/clock/progress"): control.progress,
            ("POST", "/_sandbox/settle"): control.settle,
            ("POST", "/_sandbox/reset"): control.reset,
            ("GET", "/_sandbox/faults"): control.faults,
            ("POST", "/_sandbox/faults"): control.add_fault,
            ("POST", "/_sandbox/faults/clear"): control.clear_faults,
            ("GET", "/_sandbox/faults/log"): control.fault_log,
            ("POST", "/_sandbox/snapshots"): control.save_snapshot,
            ("GET", "/_sandbox/snapshots"): control.snapshots,
            ("POST", "/_sandbox/snapshots/restore"): control.restore_snapshot,
            ("POST", "/_sandbox/snapshots/delete"): control.delete_snapshot,
            ("GET", "/_sandbox/threeds/{id}"): control.threeds_session,
            ("POST", RULES): notifications.add_rule,
            ("GET", RULES): notifications.rules,
            ("DELETE", f"{RULES}/{{id}}"): notifications.delete_rule,
            ("GET", DELIVERIES): notifications.deliveries,
            ("POST", f"{DELIVERIES}/{{id}}/resend"): notifications.resend,
        }
    ),
    ("*", "/_sandbox/*"): Route(no_such_control_endpoint),
    ("GET", ACS_PATH): Route(acs.acs_get),
    ("POST", ACS_PATH): Route(acs.acs_page, FORM),
    ("POST", acs.COMPLETE_PATH): Route(acs.acs_complete, FORM),
    **{("GET", path): Route(acs_v2.acs_get) for path in acs_v2.FORM_PATHS},
    ("POST", METHOD_PATH): Route(acs_v2.method_page, FORM),
    ("POST", NOTIFY_PATH): Route(acs_v2.method_notification, FORM),
    ("POST", ACS_V2_PATH): Route(acs_v2.challenge_page, FORM),
    ("POST", acs_v2.COMPLETE_PATH): Route(acs_v2.challenge_complete, FORM),
    ("GET", "/js/st.js"): Route(serve_stjs),
    ("GET", "/demo/merchant"): Route(merchant.payment_page),
    ("POST", "/demo/merchant/pay"): Route(merchant.pay, ANY_BODY),
    ("GET", "/demo/merchant/received"): Route(merchant.received),
}
_WITH_IDS = tuple(
    (method, path.split("/"), route) for (method, path), route in ROUTES.items() if "{id}" in path
)
_BELOW = tuple((method, path[:-1], route) for (method, path), route in ROUTES.items() if path.endswith("/*"))


def find_route(method: str, path: str) -> Route | None:
    for spelt in dict.fromkeys((path, path.rstrip("/") or "/")):
        route = ROUTES.get((method, spelt)) or ROUTES.get(("*", spelt))
        if route is not None:
            return route
    segments = path.rstrip("/").split("/")
    for wanted, template, route in _WITH_IDS:
        if wanted in (method, "*") and _matches(template, segments):
            return route
    for wanted, prefix, route in _BELOW:
        if wanted in (method, "*") and path.startswith(prefix):
            return route
    return None


def _matches(template: list[str], segments: list[str]) -> bool:
    return len(template) == len(segments) and all(
        wanted == segment or (wanted == "{id}" and segment != "")
        for wanted, segment in zip(template, segments, strict=True)
    )


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
