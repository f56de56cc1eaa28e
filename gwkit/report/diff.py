"""Sandbox-vs-real diff: the same requests answered by two targets, compared field by field.

    diff = compare_cassettes("sandbox.jsonl", "real-test-site.jsonl")
    diff.frame            # one row per difference: exchange, request types, record, field, kind, left, right
    print(diff.report())  # the same, readable

    diff = compare_targets(requests, sandbox_client, real_client)   # send each request to both, then compare

Exchanges are paired in order, and records within an exchange by position. Fields that differ on
every answer (references, timestamps, `secrand`, authorisation codes, 3-D Secure session data)
are compared for presence only, never for value. What is left is where the two targets part ways:
a field only one side sends, a different value, a different error code, a record or an exchange
only one side has.
"""

from __future__ import annotations

import html
import os
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import astuple, dataclass, fields
from typing import Any

import pandas as pd

from ..cassette import Cassette, Recording
from ..protocols import GatewayClient

# Values that differ between any two answers, even from the same target.
NORMALISED_FIELDS = frozenset(
    {
        "requestreference",
        "secrand",
        "transactionreference",
        "parenttransactionreference",
        "authcode",
        "transactionstartedtimestamp",
        "settleduedate",
        "md",
        "pareq",
        "cachetoken",
        "xid",
        "cavv",
        "operatorname",
        "merchantname",
    }
)
ONLY_LEFT, ONLY_RIGHT, VALUE, ERRORCODE = "only left", "only right", "different value", "different errorcode"
MISSING_RECORD, MISSING_EXCHANGE = "record on one side only", "exchange on one side only"


@dataclass(frozen=True)
class Difference:
    exchange: int  # position of the exchange, from 0
    request_types: str
    record: int | None  # position of the record within the exchange; None for a whole exchange
    field: str | None
    kind: str
    left: Any = None
    right: Any = None


@dataclass
class Diff:
    """The differences between two runs of the same requests."""

    differences: list[Difference]
    left_name: str = "left"
    right_name: str = "right"
    exchanges: int = 0

    def __bool__(self) -> bool:
        return bool(self.differences)

    def __len__(self) -> int:
        return len(self.differences)

    @property
    def frame(self) -> pd.DataFrame:
        columns = [f.name for f in fields(Difference)]
        frame = pd.DataFrame([astuple(d) for d in self.differences], columns=columns)
        frame["record"] = frame["record"].astype("Int64")
        for side in ("left", "right"):
            frame[side] = frame[side].map(lambda v: "" if v is None else str(v)).astype("string")
        return frame.rename(columns={"left": self.left_name, "right": self.right_name})

    def report(self) -> str:
        head = (
            f"{self.left_name} vs {self.right_name}: {self.exchanges} exchange(s), {len(self)} difference(s)"
        )
        if not self.differences:
            return head + "; the answers agree (references and timestamps aside)."
        lines = [head]
        for d in self.differences:
            where = f"#{d.exchange} {d.request_types}" + (
                f" record {d.record}" if d.record is not None else ""
            )
            what = f"{d.field}: " if d.field else ""
            lines.append(f"- {where}: {what}{d.kind}" + _values(d, self.left_name, self.right_name))
        return "\n".join(lines)

    def _repr_html_(self) -> str:
        return f"<p>{html.escape(self.report().splitlines()[0])}</p>" + (
            self.frame.to_html(index=False) if self.differences else ""
        )


def _values(d: Difference, left: str, right: str) -> str:
    if d.kind in (VALUE, ERRORCODE):
        return f" ({left} {d.left!r}, {right} {d.right!r})"
    if d.kind == ONLY_LEFT:
        return f" ({d.left!r})"
    if d.kind == ONLY_RIGHT:
        return f" ({d.right!r})"
    return ""


def compare(
    left: Iterable[Recording | Any],
    right: Iterable[Recording | Any],
    *,
    left_name: str = "left",
    right_name: str = "right",
    normalised: Iterable[str] = NORMALISED_FIELDS,
) -> Diff:
    """Compare two runs: sequences of recordings, exchanges or journal entries, in the order sent."""
    ignore = frozenset(normalised)
    lefts, rights = [_recording(x) for x in left], [_recording(x) for x in right]
    found: list[Difference] = []
    for position in range(max(len(lefts), len(rights))):
        a = lefts[position] if position < len(lefts) else None
        b = rights[position] if position < len(rights) else None
        either = a or b  # one of them, at a position below the longer run's length
        types = (" + ".join(either.request_types) if either else "") or "?"
        if a is None or b is None:
            found.append(
                Difference(
                    position,
                    types,
                    None,
                    None,
                    MISSING_EXCHANGE,
                    "present" if a else None,
                    "present" if b else None,
                )
            )
            continue
        found += _compare_records(position, types, _records(a), _records(b), ignore)
    return Diff(found, left_name, right_name, max(len(lefts), len(rights)))


def compare_cassettes(
    left: str | os.PathLike[str] | Cassette, right: str | os.PathLike[str] | Cassette, **options: Any
) -> Diff:
    cassettes = [c if isinstance(c, Cassette) else Cassette(c) for c in (left, right)]
    options.setdefault("left_name", cassettes[0].path.stem)
    options.setdefault("right_name", cassettes[1].path.stem)
    return compare(cassettes[0].recordings(), cassettes[1].recordings(), **options)


def compare_targets(
    requests: Sequence[Mapping[str, Any]], left: GatewayClient, right: GatewayClient, **options: Any
) -> Diff:
    """Send each request (a request object or a list of them) to both targets, then compare the answers."""
    answers: dict[str, list[Recording]] = {"left": [], "right": []}
    for request in requests:
        for side, client in (("left", left), ("right", right)):
            response = client.send(request)
            answers[side].append(
                Recording(
                    dict(response.request or {}), dict(response.raw), response.status_code, _types_of(request)
                )
            )
    return compare(answers["left"], answers["right"], **options)


def _types_of(request: Mapping[str, Any] | Sequence[Mapping[str, Any]]) -> tuple[str, ...]:
    objects = [request] if isinstance(request, Mapping) else list(request)
    return tuple("+".join(o.get("requesttypedescriptions") or ["?"]) for o in objects)


def _recording(item: Recording | Any) -> Recording:
    return item if isinstance(item, Recording) else Recording.of(item)


def _records(recording: Recording) -> list[Mapping[str, Any]]:
    records = (recording.response or {}).get("response")
    return [r for r in records if isinstance(r, Mapping)] if isinstance(records, list) else []


def _compare_records(
    position: int,
    types: str,
    lefts: list[Mapping[str, Any]],
    rights: list[Mapping[str, Any]],
    ignore: frozenset[str],
) -> list[Difference]:
    found: list[Difference] = []
    for index in range(max(len(lefts), len(rights))):
        a = lefts[index] if index < len(lefts) else None
        b = rights[index] if index < len(rights) else None
        if a is None or b is None:
            found.append(
                Difference(
                    position,
                    types,
                    index,
                    None,
                    MISSING_RECORD,
                    "present" if a is not None else None,
                    "present" if b is not None else None,
                )
            )
            continue
        for name in [*a, *(k for k in b if k not in a)]:
            found += _compare_field(position, types, index, name, a, b, ignore)
    return found


def _compare_field(
    position: int,
    types: str,
    index: int,
    name: str,
    a: Mapping[str, Any],
    b: Mapping[str, Any],
    ignore: frozenset[str],
    prefix: str = "",
) -> list[Difference]:
    shown = prefix + name
    if name not in b:
        return [Difference(position, types, index, shown, ONLY_LEFT, a[name], None)]
    if name not in a:
        return [Difference(position, types, index, shown, ONLY_RIGHT, None, b[name])]
    if name in ignore or name.endswith("timestamp") or a[name] == b[name]:
        return []
    if _records_list(a[name]) and _records_list(b[name]):  # a TRANSACTIONQUERY's records, one by one
        return _compare_nested(position, types, index, shown, a[name], b[name], ignore)
    kind = ERRORCODE if name == "errorcode" else VALUE
    return [Difference(position, types, index, shown, kind, a[name], b[name])]


def _records_list(value: Any) -> bool:
    return isinstance(value, list) and all(isinstance(v, Mapping) for v in value)


def _compare_nested(
    position: int,
    types: str,
    index: int,
    name: str,
    lefts: list[Mapping[str, Any]],
    rights: list[Mapping[str, Any]],
    ignore: frozenset[str],
) -> list[Difference]:
    found: list[Difference] = []
    for inner in range(max(len(lefts), len(rights))):
        a = lefts[inner] if inner < len(lefts) else None
        b = rights[inner] if inner < len(rights) else None
        if a is None or b is None:
            found.append(
                Difference(
                    position,
                    types,
                    index,
                    f"{name}[{inner}]",
                    MISSING_RECORD,
                    "present" if a is not None else None,
                    "present" if b is not None else None,
                )
            )
            continue
        for field_name in [*a, *(k for k in b if k not in a)]:
            found += _compare_field(position, types, index, field_name, a, b, ignore, f"{name}[{inner}].")
    return found
