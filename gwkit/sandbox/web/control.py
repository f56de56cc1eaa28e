"""The control API under `/_sandbox/`, for tests, notebooks and scripts (same credentials).

    GET  /_sandbox/health           {"status": "ok", "now": ..., "transactions": N, ...}   (no credentials)
    GET  /_sandbox/clock            {"now": "YYYY-MM-DDTHH:MM:SS"}
    POST /_sandbox/clock/advance    {"by": "P1M"} or {"to": "2027-01-31T00:00:00"} -> what ran meanwhile
    POST /_sandbox/settle           {} settles what is due today; {"all": true} every pending AUTH
    POST /_sandbox/reset            deletes all data; the clock stays
    GET  /_sandbox/faults           the fault injection in force
    POST /_sandbox/faults           {"drop_next": N} the next N answers of POST /json/ are not sent: the
                                    connection is closed instead (the request is processed first, unless
                                    "process": false)

Errors are HTTP 400 with {"error": "bad request", "detail": "..."}; a move of the clock backwards is
one of them.
"""

from __future__ import annotations

import json
from typing import Any

from ..gateway.clock import ISO, ClockError
from ..http import SandboxRequest, SandboxResponse
from .auth import authenticate, unauthorised
from .served import Served


def handle_control(sandbox: Served, request: SandboxRequest) -> SandboxResponse:
    route = (request.method, request.path.rstrip("/"))
    if route == ("GET", "/_sandbox/health"):
        return SandboxResponse.json(sandbox.health())
    if authenticate(sandbox.gateway.accounts, request.headers) is None:
        return unauthorised()
    handler = _ROUTES.get(route)
    if handler is None:
        endpoints = [f"{m} {p}" for m, p in [*_ROUTES, ("GET", "/_sandbox/health")]]
        return SandboxResponse.json({"error": f"no such control endpoint: {request.method} {request.path}",
                                     "endpoints": endpoints}, status=404)
    try:
        payload = request.json() if request.method == "POST" else {}
    except (UnicodeDecodeError, json.JSONDecodeError):
        return _bad_request("the body must be a JSON object")
    if not isinstance(payload, dict):
        return _bad_request("the body must be a JSON object")
    try:
        return SandboxResponse.json(handler(sandbox, payload))
    except (ClockError, ValueError) as exc:
        return _bad_request(str(exc))


def _clock(sandbox: Served, payload: dict[str, Any]) -> dict[str, Any]:
    return {"now": sandbox.gateway.clock.now().strftime(ISO)}


def _advance(sandbox: Served, payload: dict[str, Any]) -> dict[str, Any]:
    unknown = sorted(set(payload) - {"by", "to"})
    if unknown:
        raise ClockError(f"unknown field(s) {', '.join(unknown)}: give 'by' (an ISO 8601 duration) or 'to'")
    for name in ("by", "to"):
        if name in payload and not isinstance(payload[name], str):
            raise ClockError(f"{name} must be a string")
    return sandbox.gateway.advance(by=payload.get("by"), to=payload.get("to"))


def _settle(sandbox: Served, payload: dict[str, Any]) -> dict[str, Any]:
    return sandbox.gateway.settle(all_pending=payload.get("all") is True)


def _reset(sandbox: Served, payload: dict[str, Any]) -> dict[str, Any]:
    sandbox.gateway.reset()
    return {"reset": True, "now": sandbox.gateway.clock.now().strftime(ISO)}


def _faults(sandbox: Served, payload: dict[str, Any]) -> dict[str, Any]:
    return sandbox.faults.state()


def _set_faults(sandbox: Served, payload: dict[str, Any]) -> dict[str, Any]:
    unknown = sorted(set(payload) - {"drop_next", "process"})
    if unknown or "drop_next" not in payload:
        raise ValueError('give {"drop_next": N} and optionally "process": true or false')
    process = payload.get("process", True)
    if not isinstance(process, bool):
        raise ValueError("process must be true or false")
    return sandbox.faults.set(payload["drop_next"], process)


_ROUTES = {
    ("GET", "/_sandbox/clock"): _clock,
    ("POST", "/_sandbox/clock/advance"): _advance,
    ("POST", "/_sandbox/settle"): _settle,
    ("POST", "/_sandbox/reset"): _reset,
    ("GET", "/_sandbox/faults"): _faults,
    ("POST", "/_sandbox/faults"): _set_faults,
}


def _bad_request(message: str) -> SandboxResponse:
    return SandboxResponse.json({"error": "bad request", "detail": message}, status=400)
