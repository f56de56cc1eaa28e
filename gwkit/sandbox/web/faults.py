"""Payment-aware fault injection (`/_sandbox/faults`): what each kind takes, and which request gets one.

Faults are kept per site reference where the store keeps them (`Store.fault_rows()`): in memory
for a SQLite sandbox (they last as long as it runs), in PostgreSQL for the team sandbox, shared by
its workers. A fault
has a `kind` with its parameters and a selector: `count` (the next N matching requests, default 1)
or `fraction` (that share of matching requests), optionally with a `seed` for the random draws
(which requests a fraction picks, where in a latency range a delay falls), and optionally
narrowed by `requesttypes` and `amounts` (a list of baseamounts or {"min": .., "max": ..}).
`FaultBook.pick` is the one decision; injection.py carries it out, faultlog.py records it.
"""

from __future__ import annotations

import random
from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from typing import Any

from ...interface.codes import message_of
from ...interface.faults import (
    GATEWAY_ERROR_CODES,
    KINDS,
    MALFORMED_BODIES,
    NEVER_MADE_CODES,
    PROXY_STATUSES,
    SELECTOR_FIELDS,
    THREEDS_OUTCOMES,
)
from ...interface.wire import GATEWAY_PATH
from ..gateway.store import FaultRow, FaultRows, MemoryFaultRows

GATEWAY_PATHS = (GATEWAY_PATH.rstrip("/"), GATEWAY_PATH)  # the gateway endpoint, with or without its slash


@dataclass
class ActiveFault:
    """An active fault of one site."""

    id: int
    sitereference: str
    kind: str
    params: dict[str, Any]
    count: int | None = None  # left to inject; None with a fraction
    fraction: float | None = None
    seed: int | None = None
    requesttypes: tuple[str, ...] = ()
    amounts: list[int] | dict[str, int] | None = None
    _random: random.Random = field(default_factory=random.Random, repr=False)
    delay: float = 0.0  # of a picked latency fault: drawn when it was picked (`picked`)

    def as_dict(self) -> dict[str, Any]:
        selector = {"count": self.count} if self.fraction is None else {"fraction": self.fraction}
        return {
            "id": self.id,
            "sitereference": self.sitereference,
            "kind": self.kind,
            **self.params,
            **selector,
            **({"seed": self.seed} if self.seed is not None else {}),
            **({"requesttypes": list(self.requesttypes)} if self.requesttypes else {}),
            **({"amounts": self.amounts} if self.amounts is not None else {}),
        }

    def matches(self, requesttypes: Iterable[str], amounts: Iterable[int | None]) -> bool:
        if self.requesttypes and not set(self.requesttypes) & set(requesttypes):
            return False
        return self.amounts is None or any(a is not None and _in_amounts(a, self.amounts) for a in amounts)

    def fires(self) -> bool:
        """Called for a matching request: whether this one gets the fault (and it is counted)."""
        if self.fraction is not None:
            return self._random.random() < self.fraction
        self.count = (self.count or 0) - 1
        return True

    def picked(self) -> ActiveFault:
        """What one request gets of this fault that fired: a copy with its delay drawn (from the
        fault's random source, seeded when the fault has a seed), so concurrent requests never share one."""
        if "min_seconds" in self.params:
            delay = self._random.uniform(self.params["min_seconds"], self.params["max_seconds"])
        else:
            delay = self.params.get("seconds", 0.0)
        return replace(self, delay=delay)

    @property
    def used_up(self) -> bool:
        return self.fraction is None and not self.count


def _in_amounts(amount: int, amounts: list[int] | dict[str, int]) -> bool:
    if isinstance(amounts, list):
        return amount in amounts
    return amounts.get("min", amount) <= amount <= amounts.get("max", amount)


def parse_fault(payload: dict[str, Any], fault_id: int, sitereference: str) -> ActiveFault:
    """A ActiveFault from the control API's JSON (or `add`'s keywords); ValueError names the field and rule."""
    kind = payload.get("kind")
    if not isinstance(kind, str) or kind not in KINDS:
        raise ValueError(f"kind must be one of {', '.join(KINDS)}")
    allowed = {"kind", "sitereference", *KINDS[kind], *SELECTOR_FIELDS}
    unknown = sorted(set(payload) - allowed)
    if unknown:
        raise ValueError(
            f"unknown field(s) {', '.join(unknown)} for kind {kind}; it takes "
            f"{', '.join(sorted(allowed - {'kind'}))}"
        )
    params = _PARAMETERS[kind](payload)
    fault = ActiveFault(fault_id, sitereference, kind, params, **_selector(payload))
    if fault.seed is not None:
        fault._random.seed(fault.seed)
    return fault


def _flag(payload: dict[str, Any], name: str, default: bool) -> bool:
    value = payload.get(name, default)
    if not isinstance(value, bool):
        raise ValueError(f"{name} must be true or false")
    return value


def _seconds(payload: dict[str, Any], name: str) -> float:
    value = payload[name]
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 <= value <= 3600:
        raise ValueError(f"{name} must be a number of seconds from 0 to 3600")
    return float(value)


def _latency(payload: dict[str, Any]) -> dict[str, Any]:
    if "seconds" in payload and not {"min_seconds", "max_seconds"} & set(payload):
        return {"seconds": _seconds(payload, "seconds")}
    if "seconds" not in payload and {"min_seconds", "max_seconds"} <= set(payload):
        low, high = _seconds(payload, "min_seconds"), _seconds(payload, "max_seconds")
        if low > high:
            raise ValueError("min_seconds must not be more than max_seconds")
        return {"min_seconds": low, "max_seconds": high}
    raise ValueError("latency takes either seconds, or min_seconds and max_seconds")


def _gateway_error(payload: dict[str, Any]) -> dict[str, Any]:
    code, made = payload.get("code"), _flag(payload, "made", False)
    if isinstance(code, bool) or code not in GATEWAY_ERROR_CODES:
        raise ValueError(f"code must be one of {', '.join(map(str, GATEWAY_ERROR_CODES))}")
    if code in NEVER_MADE_CODES and made:
        raise ValueError(f"made must be false for code {code}: a {message_of(code).lower()} is never made")
    return {"code": code, "made": made}


def _http_status(payload: dict[str, Any]) -> dict[str, Any]:
    status = payload.get("status")
    if isinstance(status, bool) or status not in PROXY_STATUSES:
        raise ValueError(f"status must be one of {', '.join(map(str, PROXY_STATUSES))}")
    return {"status": status, "process": _flag(payload, "process", True)}


def _malformed(payload: dict[str, Any]) -> dict[str, Any]:
    if payload.get("body") not in MALFORMED_BODIES:
        raise ValueError(f"body must be one of {', '.join(MALFORMED_BODIES)}")
    return {"body": payload["body"], "process": _flag(payload, "process", True)}


def _threeds(payload: dict[str, Any]) -> dict[str, Any]:
    if payload.get("outcome") not in THREEDS_OUTCOMES:
        raise ValueError(f"outcome must be one of {', '.join(THREEDS_OUTCOMES)}")
    return {"outcome": payload["outcome"]}


_PARAMETERS = {
    "latency": _latency,
    "timeout": lambda payload: {"process": _flag(payload, "process", True)},
    "gateway_error": _gateway_error,
    "http_status": _http_status,
    "drop": lambda payload: {"process": _flag(payload, "process", True)},
    "malformed": _malformed,
    "threeds": _threeds,
}


def _selector(payload: dict[str, Any]) -> dict[str, Any]:
    if "count" in payload and "fraction" in payload:
        raise ValueError("give count or fraction, not both")
    selector: dict[str, Any] = {}
    if "fraction" in payload:
        fraction = payload["fraction"]
        if isinstance(fraction, bool) or not isinstance(fraction, (int, float)) or not 0 < fraction <= 1:
            raise ValueError("fraction must be a number more than 0 and at most 1")
        selector["fraction"] = float(fraction)
    else:
        count = payload.get("count", 1)
        if isinstance(count, bool) or not isinstance(count, int) or count < 1:
            raise ValueError("count must be a whole number, 1 or more")
        selector["count"] = count
    seed = payload.get("seed")
    if seed is not None and (isinstance(seed, bool) or not isinstance(seed, int)):
        raise ValueError("seed must be a whole number")
    selector["seed"] = seed
    if "requesttypes" in payload:
        types = payload["requesttypes"]
        if not isinstance(types, list) or not types or not all(isinstance(t, str) and t for t in types):
            raise ValueError('requesttypes must be a non-empty list of request types, e.g. ["AUTH"]')
        selector["requesttypes"] = tuple(types)
    if "amounts" in payload:
        selector["amounts"] = _amounts(payload["amounts"])
    return selector


def _whole(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


def _amounts(amounts: Any) -> list[int] | dict[str, int]:
    if isinstance(amounts, list) and amounts and all(_whole(a) for a in amounts):
        return list(amounts)
    if (
        isinstance(amounts, dict)
        and amounts
        and set(amounts) <= {"min", "max"}
        and all(_whole(a) for a in amounts.values())
        and amounts.get("min", 0) <= amounts.get("max", amounts.get("min", 0))
    ):
        return dict(amounts)
    raise ValueError(
        'amounts must be a non-empty list of baseamounts (whole numbers) or {"min": .., "max": ..} '
        "with min not more than max"
    )


class FaultBook:
    """The active faults of every site, kept where the store keeps them (`Store.fault_rows()`: in
    memory for one process, in the database for a team sandbox's workers); thread-safe."""

    def __init__(self, rows: FaultRows | None = None) -> None:
        self._rows: FaultRows = MemoryFaultRows() if rows is None else rows

    def __bool__(self) -> bool:
        return bool(self._rows)

    def add(self, payload: dict[str, Any], sitereference: str) -> ActiveFault:
        fault = parse_fault(payload, 0, sitereference)  # refused here, with the field and the rule, if wrong
        fault.id = self._rows.add(sitereference, payload, fault.count, _state(fault))
        return fault

    def active(self, sites: Iterable[str]) -> list[ActiveFault]:
        return [_fault(row) for row in self._rows.of_sites(sites)]

    def clear(self, sites: Iterable[str], kind: str | None = None) -> int:
        return self._rows.clear(sites, kind)

    def pick(
        self, sitereference: str, requesttypes: Iterable[str], amounts: Iterable[int | None]
    ) -> ActiveFault | None:
        """The fault this request gets, if any: the first of its site's that matches and fires."""
        requesttypes, amounts = list(requesttypes), list(amounts)
        with self._rows.picking(sitereference) as picking:
            for row in picking.rows:
                fault = _fault(row)
                if not fault.matches(requesttypes, amounts):
                    continue
                fired = fault.fires()
                picked = fault.picked() if fired else None  # the delay is drawn before the state is kept
                if fault.used_up:
                    picking.drop(row)
                else:
                    row.count_left, row.random_state = fault.count, _state(fault)
                    picking.keep(row)
                if picked is not None:
                    return picked
        return None


def _fault(row: FaultRow) -> ActiveFault:
    fault = parse_fault(row.payload, row.id, row.sitereference)
    fault.count = row.count_left
    if row.random_state is not None:
        version, internal, gauss = row.random_state
        fault._random.setstate((version, tuple(internal), gauss))
    return fault


def _state(fault: ActiveFault) -> list[Any] | None:
    """A seeded fault's random source, to go on from where it was; an unseeded one starts afresh."""
    if fault.seed is None:
        return None
    version, internal, gauss = fault._random.getstate()
    return [version, list(internal), gauss]
