"""Carrying out a fault on a request to `POST /json/`: what is processed, what is answered, what is logged.

`serve` is given a gateway request, its `Caller` (read once, endpoint.py) and how to process it,
and gives an `Answer`: the answer (or none: `silence` "drop" or "timeout"), and how long to
wait before it. The Starlette app and the httpx transports act on it; only they can sleep, close a
connection or time out. Every answer that carries a fault has the header `x-gwkit-fault: <kind>`.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

from ...interface.codes import message_of
from ...interface.faults import with_outcome_card
from ...interface.validation import normalised
from ...interface.wire import FAULT_HEADER
from ..gateway import faultlog
from ..gateway.clock import ISO
from ..gateway.envelopes import answer_reference, envelope
from ..gateway.refusal import log_internal_error, storage_failure
from ..http import JSON_HEADERS, BodyError, SandboxRequest, SandboxResponse
from .endpoint import Caller
from .faults import ActiveFault
from .latency import Slot, over_cap
from .served import Served

GARBAGE = b"\x00\xff<html>upstream sent garbage\xfe\x1f"
_PROXY_REASONS = {
    500: "Internal Server Error",
    502: "Bad Gateway",
    503: "Service Unavailable",
    504: "Gateway Timeout",
}


@dataclass
class Answer:
    response: SandboxResponse | None  # None: no answer is sent (see `silence`)
    delay: float = 0.0  # seconds to wait before answering
    silence: str | None = (
        None  # "drop": the connection closes; "timeout": no answer until the client gives up
    )
    slot: Slot | None = None  # of a delayed answer: released when the delay ends (latency.py)


@dataclass(frozen=True)
class Target:
    """What the fault selection looks at in a gateway request."""

    sitereference: str
    requesttypes: list[str]
    amounts: list[int | None]
    orderreference: str | None


Process = Callable[..., SandboxResponse]  # the request's answer without a fault (given a Caller: its)


def serve(sandbox: Served, request: SandboxRequest, caller: Caller, process: Process) -> Answer:
    """A gateway POST with a fault armed somewhere: the fault it meets, if any, carried out."""
    target = target_of(caller)
    if target is None:  # refused whatever is armed: wrong credentials, or another's site
        return Answer(process())
    fault = _picked_fault(sandbox, target)
    if fault is None:
        return Answer(process())
    if fault.kind == "threeds":  # processed with the outcome's test card in place of the card sent
        changed = replace(caller, body=with_outcome_card(caller.body, fault.params["outcome"]))
        return _APPLY[fault.kind](sandbox, request, fault, target, lambda: process(changed))
    return _APPLY[fault.kind](sandbox, request, fault, target, process)


def _picked_fault(sandbox: Served, target: Target) -> ActiveFault | None:
    """The fault armed for this request, if any. When the store cannot tell (it fails: a lost
    connection, a full disk), the request is answered as without faults: the gateway then answers
    99999 in a 200 if the store still fails, never an HTTP 500."""
    try:
        return sandbox.fault_book.pick(target.sitereference, target.requesttypes, target.amounts)
    except Exception as exc:
        if not storage_failure(exc):
            raise
        log_internal_error(exc, "answered without faults: the store could not tell the armed faults")
        return None


def target_of(caller: Caller) -> Target | None:
    """The site a gateway request is for, its request types and amounts; None when no account is known
    (wrong credentials: the 401 is never faulted). Several sites in one envelope: the first by name."""
    account, body = caller.account, caller.body
    if account is None:
        return None
    objects = body.get("request") if isinstance(body, dict) else None
    objects = [o for o in objects if isinstance(o, dict)] if isinstance(objects, list) else []
    sites = {o["sitereference"] for o in objects if isinstance(o.get("sitereference"), str)}
    if sites - set(account.sitereferences):
        return None  # refused by the gateway: not one of the caller's sites
    site = min(sites) if sites else account.sitereferences[0]
    named = [normalised(o)[0].get("requesttypedescriptions") for o in objects]  # the singular form too
    types = [t for listed in named if isinstance(listed, list) for t in listed if isinstance(t, str)]
    order = next((o["orderreference"] for o in objects if isinstance(o.get("orderreference"), str)), None)
    return Target(site, types, [_amount(o.get("baseamount")) for o in objects], order)


def _amount(value: Any) -> int | None:
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    return int(value) if isinstance(value, str) and value.isdigit() else None


def _processed(process: Process, wanted: bool) -> SandboxResponse | None:
    return process() if wanted else None


def _records(answer: SandboxResponse | None) -> list[dict[str, Any]]:
    if answer is None or answer.status != 200:
        return []
    try:
        return [r for r in json.loads(answer.body).get("response", []) if isinstance(r, dict)]
    except (ValueError, AttributeError):
        return []


def _log(sandbox: Served, fault: ActiveFault, target: Target, answer: SandboxResponse | None) -> None:
    made = [r["transactionreference"] for r in _records(answer) if r.get("transactionreference")]
    entry = faultlog.Injection(
        target.sitereference,
        fault.id,
        fault.kind,
        fault.params,
        target.requesttypes,
        target.orderreference,
        made[-1] if made else None,
        bool(made),
    )
    store = sandbox.gateway.store
    with store.write([target.sitereference]) as conn:
        faultlog.record(conn, sandbox.gateway.clock.now(target.sitereference).strftime(ISO), entry)


def _marked(response: SandboxResponse, fault: ActiveFault) -> SandboxResponse:
    response.headers[FAULT_HEADER] = fault.kind
    return response


def _latency(
    sandbox: Served, request: SandboxRequest, fault: ActiveFault, target: Target, process: Process
) -> Answer:
    """Processed now, answered `fault.delay` later, within the site's budget of delayed requests:
    beyond it, a 429 and nothing processed."""
    return _held(sandbox, fault, target, lambda: _latency_outcome(sandbox, request, fault, target, process))


def _latency_outcome(
    sandbox: Served, request: SandboxRequest, fault: ActiveFault, target: Target, process: Process
) -> Answer:
    answer = process()
    _log(sandbox, fault, target, answer)
    return Answer(_marked(answer, fault), delay=fault.delay)


def _held(sandbox: Served, fault: ActiveFault, target: Target, outcome: Callable[[], Answer]) -> Answer:
    """The outcome of a request the server will hold (a latency, a timeout), with a slot of its
    site's budget; a 429 naming the cap, and nothing processed, when the site has none left."""
    slot = sandbox.latency.take(target.sitereference)
    if slot is None:
        return Answer(_marked(over_cap(target.sitereference, sandbox.latency.cap), fault))
    try:
        held = outcome()
    except BaseException:
        slot.release()
        raise
    held.slot = slot
    return held


def _silence(
    sandbox: Served, request: SandboxRequest, fault: ActiveFault, target: Target, process: Process
) -> Answer:
    """drop and timeout: the request is processed first or not at all; no answer is sent (a timeout
    holds the connection until the client gives up: within the site's budget, as a latency)."""

    def silenced() -> Answer:
        answer = _processed(process, fault.params["process"])
        _log(sandbox, fault, target, answer)
        return Answer(None, silence=fault.kind)

    return _held(sandbox, fault, target, silenced) if fault.kind == "timeout" else silenced()


def _gateway_error(
    sandbox: Served, request: SandboxRequest, fault: ActiveFault, target: Target, process: Process
) -> Answer:
    """The error record for each record the request got (made: with its transactionreference), or for
    each request type sent (not made)."""
    answer = _processed(process, fault.params["made"])
    _log(sandbox, fault, target, answer)
    code = fault.params["code"]
    sent = [(r.get("requesttypedescription"), r.get("transactionreference")) for r in _records(answer)]
    records = [
        {
            "requesttypedescription": requesttype,
            "errorcode": str(code),
            "errormessage": message_of(code),
            "errordata": [],
            **({"transactionreference": reference} if reference else {}),
        }
        for requesttype, reference in sent or [(t, None) for t in target.requesttypes or ["ERROR"]]
    ]
    reference = answer_reference(request.headers.get("requestreference"), _objects(request))
    return Answer(_marked(SandboxResponse.json(envelope(records, reference)), fault))


def _objects(request: SandboxRequest) -> Any:
    try:
        body = request.parsed_json()  # read once, for the fault selection
    except BodyError:  # not JSON (nor UTF-8): nothing to echo
        return None
    return body.get("request") if isinstance(body, dict) else None


def _http_status(
    sandbox: Served, request: SandboxRequest, fault: ActiveFault, target: Target, process: Process
) -> Answer:
    answer = _processed(process, fault.params["process"])
    _log(sandbox, fault, target, answer)
    status = fault.params["status"]
    title = f"{status} {_PROXY_REASONS[status]}"
    page = f"<html><head><title>{title}</title></head><body><h1>{title}</h1><hr>proxy</body></html>"
    return Answer(_marked(SandboxResponse.html(page, status=status), fault))


def _malformed(
    sandbox: Served, request: SandboxRequest, fault: ActiveFault, target: Target, process: Process
) -> Answer:
    answer = _processed(process, fault.params["process"])
    _log(sandbox, fault, target, answer)
    if fault.params["body"] == "garbage":
        body = GARBAGE
    else:
        whole = answer.body if answer is not None else json.dumps(envelope([])).encode("utf-8")
        body = whole[: len(whole) // 2]
    return Answer(_marked(SandboxResponse(200, {**JSON_HEADERS}, body), fault))


def _threeds(
    sandbox: Served, request: SandboxRequest, fault: ActiveFault, target: Target, process: Process
) -> Answer:
    """The THREEDQUERY answered as the outcome's test card is (`serve` put the card in)."""
    answer = process()
    _log(sandbox, fault, target, answer)
    return Answer(_marked(answer, fault))


# One way of applying each kind of gwkit.interface.faults.KINDS (tests/sandbox/test_faults.py checks both agree).
_APPLY: dict[str, Callable[[Served, SandboxRequest, ActiveFault, Target, Process], Answer]] = {
    "latency": _latency,
    "timeout": _silence,
    "drop": _silence,
    "gateway_error": _gateway_error,
    "http_status": _http_status,
    "malformed": _malformed,
    "threeds": _threeds,
}
