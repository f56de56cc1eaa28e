"""The control API under `/_sandbox/`, for tests, notebooks and scripts (same credentials).

    GET  /_sandbox/health           {"status": "ok", "now": ..., "transactions": N}   (no credentials)
    GET  /_sandbox/clock            {"now": "YYYY-MM-DDTHH:MM:SS"}
    POST /_sandbox/clock/advance    {"by": "P1M"} or {"to": "2027-01-31T00:00:00"} -> what ran meanwhile
    POST /_sandbox/settle           {} settles what is due today; {"all": true} every pending AUTH
    POST /_sandbox/reset            deletes all data; the clock stays
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

from .clock import ClockError

if TYPE_CHECKING:  # pragma: no cover
    from .core import Sandbox, SandboxRequest, SandboxResponse


def handle_control(sandbox: "Sandbox", request: "SandboxRequest") -> "SandboxResponse":
    from .core import SandboxResponse, unauthorised

    route = (request.method, request.path.rstrip("/"))
    if route == ("GET", "/_sandbox/health"):
        return SandboxResponse.json(sandbox.health())
    if sandbox.authenticate(request.headers) is None:
        return unauthorised()
    try:
        payload = request.json() if request.method == "POST" else {}
    except (UnicodeDecodeError, json.JSONDecodeError):
        return _bad_request("the body must be a JSON object")
    if not isinstance(payload, dict):
        return _bad_request("the body must be a JSON object")
    if route == ("GET", "/_sandbox/clock"):
        return SandboxResponse.json({"now": sandbox.clock.now().strftime("%Y-%m-%dT%H:%M:%S")})
    if route == ("POST", "/_sandbox/clock/advance"):
        try:
            return SandboxResponse.json(sandbox.advance(by=payload.get("by"), to=payload.get("to")))
        except ClockError as exc:
            return _bad_request(str(exc))
    if route == ("POST", "/_sandbox/settle"):
        return SandboxResponse.json(sandbox.settle(all_pending=bool(payload.get("all"))))
    if route == ("POST", "/_sandbox/reset"):
        sandbox.reset()
        return SandboxResponse.json({"reset": True, "now": sandbox.clock.now().strftime("%Y-%m-%dT%H:%M:%S")})
    return SandboxResponse.json({"error": f"no such control endpoint: {request.method} {request.path}"},
                                status=404)


def _bad_request(message: str) -> "SandboxResponse":
    from .core import SandboxResponse

    return SandboxResponse.json({"error": "bad request", "detail": message}, status=400)
