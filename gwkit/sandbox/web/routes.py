"""The routes table: (method, path) -> page, and how a request finds its page.

A method `*` matches any method; a path ending in `/*` serves everything below it. An exact
(method, path) wins over `*`, and both over a path below.
"""

from __future__ import annotations

from typing import Callable

from ..gateway.threeds import ACS_PATH
from ..http import SandboxRequest, SandboxResponse
from . import acs, merchant
from .control import handle_control
from .endpoint import gateway_endpoint, method_not_allowed
from .faults import GATEWAY_PATHS
from .served import Served
from .stjs import serve_stjs

Page = Callable[[Served, SandboxRequest], SandboxResponse]

ROUTES: dict[tuple[str, str], Page] = {
    **{(method, path): gateway_endpoint for path in GATEWAY_PATHS for method in ("POST", "OPTIONS")},
    **{("*", path): method_not_allowed for path in GATEWAY_PATHS},
    ("*", "/_sandbox/*"): handle_control,
    ("GET", ACS_PATH): acs.acs_get,
    ("POST", ACS_PATH): acs.acs_page,
    ("POST", acs.COMPLETE_PATH): acs.acs_complete,
    ("GET", "/js/st.js"): serve_stjs,
    ("GET", "/demo/merchant"): merchant.payment_page,
    ("POST", "/demo/merchant/pay"): merchant.pay,
    ("GET", "/demo/merchant/received"): merchant.received,
}
_BELOW = tuple((method, path[:-1], page) for (method, path), page in ROUTES.items() if path.endswith("/*"))


def find_route(method: str, path: str) -> Page | None:
    page = ROUTES.get((method, path)) or ROUTES.get(("*", path))
    if page is not None:
        return page
    for wanted, prefix, page in _BELOW:
        if wanted in (method, "*") and path.startswith(prefix):
            return page
    return None
