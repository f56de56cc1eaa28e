"""The control API under `/_sandbox/`, for tests, notebooks and scripts (same credentials).

    GET  /_sandbox/health           {"status": "ok"} without credentials; with them also "now",
                                    "transactions", "database", "process" (the worker's) and "faults",
                                    of the caller's sites
    GET  /_sandbox/clock            {"now": latest of the caller's sites, "sites": {site: now, ...}}
    POST /_sandbox/clock/advance    {"by": "P1M"} or {"to": "2027-01-31T00:00:00"} -> what ran meanwhile
    GET  /_sandbox/clock/progress   {"advances": [...]} the running advances of the caller's sites (day n of N)
    POST /_sandbox/settle           {} settles what is due today; {"all": true} every pending AUTH
    POST /_sandbox/reset            deletes the caller's sites' data; their clocks stay, unless
                                    {"clock": true}: then the sites start afresh (clock at the start)
    GET  /_sandbox/faults           the active faults of the caller's sites {"faults": [...], "drop_next": N, ...}
    POST /_sandbox/faults           {"kind": ..., parameters, selector, "sitereference"?} adds a fault (faults.py)
                                    and returns it with its id; {"drop_next": N, "process": bool} the older form
    POST /_sandbox/faults/clear     {} every site of the caller, or {"sitereference": ...}
    GET  /_sandbox/faults/log       every fault injected on the caller's sites
    GET  /_sandbox/threeds/{ref}    the EMV 3-D Secure session of the THREEDQUERY {ref}: whether the
                                    issuer asked for a challenge, and what its ACS answered
    POST /_sandbox/snapshots        {"name": ...} saves the caller's sites (snapshots.py)
    GET  /_sandbox/snapshots        the caller's snapshots
    POST /_sandbox/snapshots/restore  {"name": ...} puts the caller's sites back as saved
    POST /_sandbox/snapshots/delete   {"name": ...}

Every endpoint acts on the caller's own sites (an operator account, `admin = true`: every site);
advance, settle and reset take an optional "sitereference" to act on one of them only. A site that
is not the caller's is a 403 {"error": "forbidden", "field": "sitereference", "detail": ...}.

Each endpoint is a row of the one routes table (routes.py), its page `control_page(handler, path)`;
any other path under `/_sandbox/` is a 404 listing them all.

Errors are HTTP 400 with {"error": "bad request", "detail": "..."}; a move of the clock backwards is
one of them, and a move past a limit also names it ("limit": "max_move" or "latest"). A snapshot
that does not exist is a 404 {"error": "not found", "detail": "..."}.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..gateway import threeds_v2
from ..gateway.accounts import Account, SiteNotYours
from ..gateway.clock import ISO, ClockError
from ..gateway.notifications import NotFound
from ..gateway.store.snapshots import SnapshotNotFound
from ..http import BodyError, SandboxRequest, SandboxResponse
from .credentials import authenticate, unauthorised
from .fault_controls import FaultControls
from .served import Page, Served

ControlHandler = Callable[..., dict[str, Any]]  # (sandbox, account, payload, *the path's ids)


def control_page(handler: ControlHandler, path: str) -> Page:
    """The page of a control endpoint (its path may carry `{id}`s): the caller's credentials, the
    JSON body of a POST (the query of any other method), and refusals as 4xx naming what is wrong."""

    def page(sandbox: Served, request: SandboxRequest) -> SandboxResponse:
        account = authenticate(sandbox.gateway.accounts, request.headers)
        if account is None:
            return unauthorised()
        try:
            payload = request.json() if request.method == "POST" else dict(request.query)
        except BodyError as error:
            return SandboxResponse.bad_body(error, expected="a JSON object")
        if not isinstance(payload, dict):
            return bad_request("the body must be a JSON object")
        try:
            return SandboxResponse.json(handler(sandbox, account, payload, *ids_in(path, request.path)))
        except SiteNotYours as exc:
            return SandboxResponse.json(
                {"error": "forbidden", "field": "sitereference", "detail": str(exc)}, status=403
            )
        except (SnapshotNotFound, NotFound) as exc:
            return SandboxResponse.json({"error": "not found", "detail": str(exc)}, status=404)
        except ClockError as exc:
            return bad_request(str(exc), **({"limit": exc.limit} if exc.limit else {}))
        except ValueError as exc:  # NotificationError too
            return bad_request(str(exc))

    page.__qualname__ = page.__name__ = f"control_page({handler.__name__})"
    return page


def ids_in(template: str, path: str) -> list[str]:
    """The segments of `path` standing where `template` has `{id}` (routes.find_route matched them)."""
    pairs = zip(template.split("/"), path.rstrip("/").split("/"), strict=True)
    return [segment for wanted, segment in pairs if wanted == "{id}"]


def health_page(sandbox: Served, request: SandboxRequest) -> SandboxResponse:
    """Up, without credentials; with them, the caller's sites' clock, transactions and faults."""
    account = authenticate(sandbox.gateway.accounts, request.headers)
    return SandboxResponse.json(health(sandbox, account) if account is not None else {"status": "ok"})


def _site(sandbox: Served, account: Account, payload: dict[str, Any], *allowed: str) -> str | None:
    """The one site a request names ("sitereference"; 403 when not the caller's), or None: all of
    the caller's. Any field but `allowed` and "sitereference" is refused."""
    unknown = sorted(set(payload) - {*allowed, "sitereference"})
    if unknown:
        listed = ", ".join(repr(name) for name in (*allowed, "sitereference"))
        raise ValueError(f"unknown field(s) {', '.join(unknown)}: this endpoint takes {listed}")
    site = payload.get("sitereference")
    if "sitereference" in payload and not isinstance(site, str):
        raise ValueError("sitereference must be a string")
    sandbox.gateway.sites_of(account, site)  # SiteNotYours before anything moves
    return site


def health(sandbox: Served, account: Account) -> dict[str, Any]:
    """Up, with the caller's sites' clock, transactions and faults (an operator's: every site's)."""
    sites = sandbox.gateway.sites_of(account)
    return {**sandbox.gateway.health(sites), "faults": _controls(sandbox, account).state()}


def clock(sandbox: Served, account: Account, payload: dict[str, Any]) -> dict[str, Any]:
    clocks = sandbox.gateway.clock.clocks(sandbox.gateway.sites_of(account))
    return {
        "now": max(clocks.values()).strftime(ISO),
        "sites": {site: moment.strftime(ISO) for site, moment in clocks.items()},
    }


def progress(sandbox: Served, account: Account, payload: dict[str, Any]) -> dict[str, Any]:
    return {"advances": sandbox.gateway.advances_of(sandbox.gateway.sites_of(account))}


def advance(sandbox: Served, account: Account, payload: dict[str, Any]) -> dict[str, Any]:
    site = _site(sandbox, account, payload, "by", "to")
    for name in ("by", "to"):
        if name in payload and not isinstance(payload[name], str):
            raise ClockError(f"{name} must be a string")
    return sandbox.advance(by=payload.get("by"), to=payload.get("to"), sitereference=site, account=account)


def settle(sandbox: Served, account: Account, payload: dict[str, Any]) -> dict[str, Any]:
    site = _site(sandbox, account, payload, "all")
    return sandbox.settle(all_pending=payload.get("all") is True, sitereference=site, account=account)


def reset(sandbox: Served, account: Account, payload: dict[str, Any]) -> dict[str, Any]:
    site = _site(sandbox, account, payload, "clock")
    if not isinstance(payload.get("clock", False), bool):
        raise ValueError("clock must be true or false")
    sandbox.reset(site, account=account, clock=payload.get("clock", False))
    now = sandbox.gateway.clock.now(sandbox.gateway.sites_of(account, site))
    return {"reset": True, "now": now.strftime(ISO)}


def _controls(sandbox: Served, account: Account) -> FaultControls:
    return FaultControls(sandbox.fault_book, sandbox.gateway, sandbox.gateway.sites_of(account))


def faults(sandbox: Served, account: Account, payload: dict[str, Any]) -> dict[str, Any]:
    return _controls(sandbox, account).state()


def add_fault(sandbox: Served, account: Account, payload: dict[str, Any]) -> dict[str, Any]:
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


def clear_faults(sandbox: Served, account: Account, payload: dict[str, Any]) -> dict[str, Any]:
    unknown = sorted(set(payload) - {"sitereference"})
    if unknown:
        raise ValueError(f'unknown field(s) {", ".join(unknown)}: give {{}} or {{"sitereference": ...}}')
    site = payload.get("sitereference")
    if "sitereference" in payload and not isinstance(site, str):
        raise ValueError("sitereference must be a string")
    if site is not None:
        sandbox.gateway.sites_of(account, site)
    return {"cleared": _controls(sandbox, account).clear(site)}


def fault_log(sandbox: Served, account: Account, payload: dict[str, Any]) -> dict[str, Any]:
    return {"log": _controls(sandbox, account).log()}


def threeds_session(
    sandbox: Served, account: Account, payload: dict[str, Any], reference: str
) -> dict[str, Any]:
    """What the ACS saw of the THREEDQUERY `reference` (the browser's part, which no proxy sees):
    `challenged`, `state` (frictionless, challenge: not answered yet, answered, used: an AUTH
    followed) and the issuer's `transstatus`. Another tenant's THREEDQUERY is not found, as none."""
    with sandbox.gateway.store.read() as conn:
        session = threeds_v2.session_by_reference(conn, reference)
    if session is None or session.sitereference not in sandbox.gateway.sites_of(account):
        raise NotFound(f"no EMV 3-D Secure THREEDQUERY {reference} on your sites")
    return {
        "transactionreference": reference,
        "threedversion": session.threedversion,
        "challenged": session.acstransid is not None,
        "state": session.state,
        "transstatus": session.transstatus,
    }


def _named(payload: dict[str, Any]) -> str:
    unknown = sorted(set(payload) - {"name"})
    if unknown or "name" not in payload:
        raise ValueError("give {\"name\": ...}: 1 to 64 letters, digits, '-' or '_'")
    return payload["name"]


def save_snapshot(sandbox: Served, account: Account, payload: dict[str, Any]) -> dict[str, Any]:
    return sandbox.snapshots_of(account).save(_named(payload))


def snapshots(sandbox: Served, account: Account, payload: dict[str, Any]) -> dict[str, Any]:
    return {"snapshots": sandbox.snapshots_of(account).list()}


def restore_snapshot(sandbox: Served, account: Account, payload: dict[str, Any]) -> dict[str, Any]:
    return sandbox.snapshots_of(account).restore(_named(payload))


def delete_snapshot(sandbox: Served, account: Account, payload: dict[str, Any]) -> dict[str, Any]:
    return sandbox.snapshots_of(account).delete(_named(payload))


def bad_request(message: str, **extra: Any) -> SandboxResponse:
    return SandboxResponse.json({"error": "bad request", "detail": message, **extra}, status=400)
