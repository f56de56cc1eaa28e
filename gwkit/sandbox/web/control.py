"""The control API under `/_sandbox/`, for tests, notebooks and scripts (same credentials).

    GET  /_sandbox/health           {"status": "ok"} without credentials; with them also "now",
                                    "transactions", "database", "process" (the worker's) and "faults",
                                    of the caller's sites
    GET  /_sandbox/clock            {"now": latest of the caller's sites, "sites": {site: now, ...}}
    POST /_sandbox/clock/advance    {"by": "P1M"} or {"to": "2027-01-31T00:00:00"} -> what ran meanwhile
    GET  /_sandbox/clock/progress   {"advances": [...]} the running advances of the caller's sites (day n of N)
    POST /_sandbox/settle           {} settles what is due today; {"all": true} every pending AUTH
    POST /_sandbox/reset            deletes the caller's sites' data; their clocks stay
    GET  /_sandbox/faults           the active faults of the caller's sites {"faults": [...], "drop_next": N, ...}
    POST /_sandbox/faults           {"kind": ..., parameters, selector, "sitereference"?} adds a fault (faults.py)
                                    and returns it with its id; {"drop_next": N, "process": bool} the older form
    POST /_sandbox/faults/clear     {} every site of the caller, or {"sitereference": ...}
    GET  /_sandbox/faults/log       every fault injected on the caller's sites
    POST /_sandbox/snapshots        {"name": ...} saves the caller's sites (snapshots.py)
    GET  /_sandbox/snapshots        the caller's snapshots
    POST /_sandbox/snapshots/restore  {"name": ...} puts the caller's sites back as saved
    POST /_sandbox/snapshots/delete   {"name": ...}

Every endpoint acts on the caller's own sites (an operator account, `admin = true`: every site);
advance, settle and reset take an optional "sitereference" to act on one of them only. A site that
is not the caller's is a 403 {"error": "forbidden", "field": "sitereference", "detail": ...}.

Errors are HTTP 400 with {"error": "bad request", "detail": "..."}; a move of the clock backwards is
one of them, and a move past a limit also names it ("limit": "max_move" or "latest"). A snapshot
that does not exist is a 404 {"error": "not found", "detail": "..."}.
"""

from __future__ import annotations

from typing import Any

from ..gateway.accounts import Account, SiteNotYours
from ..gateway.clock import ISO, ClockError
from ..gateway.store.snapshots import SnapshotNotFound
from ..http import BodyError, SandboxRequest, SandboxResponse
from .credentials import authenticate, unauthorised
from .fault_controls import FaultControls
from .served import Served


def handle_control(sandbox: Served, request: SandboxRequest) -> SandboxResponse:
    route = (request.method, request.path.rstrip("/"))
    account = authenticate(sandbox.gateway.accounts, request.headers)
    if route == ("GET", "/_sandbox/health"):  # without credentials: only that it is up
        return SandboxResponse.json(_health(sandbox, account) if account is not None else {"status": "ok"})
    if account is None:
        return unauthorised()
    handler = _ROUTES.get(route)
    if handler is None:
        endpoints = [f"{m} {p}" for m, p in [*_ROUTES, ("GET", "/_sandbox/health")]]
        return SandboxResponse.json(
            {"error": f"no such control endpoint: {request.method} {request.path}", "endpoints": endpoints},
            status=404,
        )
    try:
        payload = request.json() if request.method == "POST" else {}
    except BodyError as error:
        return SandboxResponse.bad_body(error, expected="a JSON object")
    if not isinstance(payload, dict):
        return _bad_request("the body must be a JSON object")
    try:
        return SandboxResponse.json(handler(sandbox, account, payload))
    except SiteNotYours as exc:
        return SandboxResponse.json(
            {"error": "forbidden", "field": "sitereference", "detail": str(exc)}, status=403
        )
    except ClockError as exc:
        return _bad_request(str(exc), **({"limit": exc.limit} if exc.limit else {}))
    except ValueError as exc:
        return _bad_request(str(exc))
    except SnapshotNotFound as exc:
        return SandboxResponse.json({"error": "not found", "detail": str(exc)}, status=404)


def _sites(sandbox: Served, account: Account, payload: dict[str, Any], *allowed: str) -> tuple[str, ...]:
    """The sites a request acts on: the caller's, or the one its "sitereference" names."""
    unknown = sorted(set(payload) - {*allowed, "sitereference"})
    if unknown:
        listed = ", ".join(repr(name) for name in (*allowed, "sitereference"))
        raise ValueError(f"unknown field(s) {', '.join(unknown)}: this endpoint takes {listed}")
    site = payload.get("sitereference")
    if "sitereference" in payload and not isinstance(site, str):
        raise ValueError("sitereference must be a string")
    return sandbox.gateway.sites_of(account, site)


def _health(sandbox: Served, account: Account) -> dict[str, Any]:
    """Up, with the caller's sites' clock, transactions and faults (an operator's: every site's)."""
    sites = sandbox.gateway.sites_of(account)
    return {**sandbox.gateway.health(sites), "faults": _controls(sandbox, account).state()}


def _clock(sandbox: Served, account: Account, payload: dict[str, Any]) -> dict[str, Any]:
    clocks = sandbox.gateway.clock.clocks(sandbox.gateway.sites_of(account))
    return {
        "now": max(clocks.values()).strftime(ISO),
        "sites": {site: moment.strftime(ISO) for site, moment in clocks.items()},
    }


def _progress(sandbox: Served, account: Account, payload: dict[str, Any]) -> dict[str, Any]:
    return {"advances": sandbox.gateway.advances_of(sandbox.gateway.sites_of(account))}


def _advance(sandbox: Served, account: Account, payload: dict[str, Any]) -> dict[str, Any]:
    sites = _sites(sandbox, account, payload, "by", "to")
    for name in ("by", "to"):
        if name in payload and not isinstance(payload[name], str):
            raise ClockError(f"{name} must be a string")
    return sandbox.gateway.advance(by=payload.get("by"), to=payload.get("to"), sites=sites)


def _settle(sandbox: Served, account: Account, payload: dict[str, Any]) -> dict[str, Any]:
    sites = _sites(sandbox, account, payload, "all")
    return sandbox.gateway.settle(all_pending=payload.get("all") is True, sites=sites)


def _reset(sandbox: Served, account: Account, payload: dict[str, Any]) -> dict[str, Any]:
    sites = _sites(sandbox, account, payload)
    sandbox.gateway.reset(sites)
    return {"reset": True, "now": sandbox.gateway.clock.now(sites).strftime(ISO)}


def _controls(sandbox: Served, account: Account) -> FaultControls:
    return FaultControls(sandbox.fault_book, sandbox.gateway, sandbox.gateway.sites_of(account))


def _faults(sandbox: Served, account: Account, payload: dict[str, Any]) -> dict[str, Any]:
    return _controls(sandbox, account).state()


def _add_fault(sandbox: Served, account: Account, payload: dict[str, Any]) -> dict[str, Any]:
    controls = _controls(sandbox, account)
    if "drop_next" in payload:
        unknown = sorted(set(payload) - {"drop_next", "process"})
        if unknown:
            raise ValueError('give {"drop_next": N} and optionally "process": true or false')
        return controls.replace_drops(payload["drop_next"], payload.get("process", True))
    if "kind" not in payload:
        raise ValueError('give a fault {"kind": ..., ...} or the older {"drop_next": N}')
    site = payload.get("sitereference")
    if site is not None and not isinstance(site, str):
        raise ValueError("sitereference must be a string")
    if site is not None:
        sandbox.gateway.sites_of(account, site)  # another tenant's site: 403, as on every endpoint
    params = {k: v for k, v in payload.items() if k not in ("kind", "sitereference")}
    return controls.add(payload["kind"], sitereference=site, **params)


def _clear_faults(sandbox: Served, account: Account, payload: dict[str, Any]) -> dict[str, Any]:
    unknown = sorted(set(payload) - {"sitereference"})
    if unknown:
        raise ValueError(f'unknown field(s) {", ".join(unknown)}: give {{}} or {{"sitereference": ...}}')
    site = payload.get("sitereference")
    if "sitereference" in payload and not isinstance(site, str):
        raise ValueError("sitereference must be a string")
    if site is not None:
        sandbox.gateway.sites_of(account, site)
    return {"cleared": _controls(sandbox, account).clear(site)}


def _fault_log(sandbox: Served, account: Account, payload: dict[str, Any]) -> dict[str, Any]:
    return {"log": _controls(sandbox, account).log()}


def _named(payload: dict[str, Any]) -> str:
    unknown = sorted(set(payload) - {"name"})
    if unknown or "name" not in payload:
        raise ValueError("give {\"name\": ...}: 1 to 64 letters, digits, '-' or '_'")
    return payload["name"]


def _save_snapshot(sandbox: Served, account: Account, payload: dict[str, Any]) -> dict[str, Any]:
    return sandbox.snapshots_of(account).save(_named(payload))


def _snapshots(sandbox: Served, account: Account, payload: dict[str, Any]) -> dict[str, Any]:
    return {"snapshots": sandbox.snapshots_of(account).list()}


def _restore_snapshot(sandbox: Served, account: Account, payload: dict[str, Any]) -> dict[str, Any]:
    return sandbox.snapshots_of(account).restore(_named(payload))


def _delete_snapshot(sandbox: Served, account: Account, payload: dict[str, Any]) -> dict[str, Any]:
    return sandbox.snapshots_of(account).delete(_named(payload))


_ROUTES = {
    ("GET", "/_sandbox/clock"): _clock,
    ("POST", "/_sandbox/clock/advance"): _advance,
    ("GET", "/_sandbox/clock/progress"): _progress,
    ("POST", "/_sandbox/settle"): _settle,
    ("POST", "/_sandbox/reset"): _reset,
    ("GET", "/_sandbox/faults"): _faults,
    ("POST", "/_sandbox/faults"): _add_fault,
    ("POST", "/_sandbox/faults/clear"): _clear_faults,
    ("GET", "/_sandbox/faults/log"): _fault_log,
    ("POST", "/_sandbox/snapshots"): _save_snapshot,
    ("GET", "/_sandbox/snapshots"): _snapshots,
    ("POST", "/_sandbox/snapshots/restore"): _restore_snapshot,
    ("POST", "/_sandbox/snapshots/delete"): _delete_snapshot,
}


def _bad_request(message: str, **extra: Any) -> SandboxResponse:
    return SandboxResponse.json({"error": "bad request", "detail": message, **extra}, status=400)
