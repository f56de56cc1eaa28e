"""What the proxy saw of one exchange: the masked request and answer, its validation problems, who
answered it, and the fault it got; and the one-line terminal summary of it."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from ..exchange import Exchange
from ..interface.validation import Problem
from ..interface.vocabulary import labelled

# Who answered the application: the upstream (a gateway, the sandbox or a cassette) or the proxy
# itself (--strict refusing an invalid request, a fault that was not forwarded, an upstream failure).
UPSTREAM, PROXY = "upstream", "proxy"

# `as_row`'s columns as a person reads them (the live view, the notebook).
PEOPLE_COLUMNS = {
    "number": "#",
    "time": "time",
    "request": "request",
    "status": "HTTP status",
    "errorcodes": "gateway's answer",
    "answered_by": "answered by",
    "fault": "fault injected",
    "problems": "validation problems",
    "drift": "differs from the sandbox",
    "ms": "ms",
    "error": "connection error",
}


@dataclass(frozen=True)
class ProxyExchange:
    number: int  # 1, 2, ... in the order requests arrived
    exchange: Exchange  # masked: what the application sent and what it was answered
    problems: tuple[Problem, ...] = ()
    answered_by: str = UPSTREAM
    drift: tuple[str, ...] = ()  # how the upstream's answer differs from a shadow sandbox's (drift.py)

    @property
    def started_at(self) -> datetime:
        return self.exchange.started_at

    @property
    def request(self) -> Mapping[str, Any]:
        return self.exchange.request

    @property
    def response(self) -> Mapping[str, Any] | None:
        return self.exchange.response

    @property
    def request_types(self) -> tuple[str, ...]:
        return self.exchange.request_types

    @property
    def fault(self) -> str | None:
        return self.exchange.fault

    @property
    def status_code(self) -> int | None:
        return self.exchange.status_code

    @property
    def errorcodes(self) -> tuple[str, ...]:
        return tuple(str(r.get("errorcode")) for r in self.records)

    @property
    def records(self) -> list[Mapping[str, Any]]:
        records = (self.response or {}).get("response")
        return [r for r in records if isinstance(r, Mapping)] if isinstance(records, list) else []

    def as_row(self) -> dict[str, Any]:
        """A flat row for tables: one value a column."""
        return {
            "number": self.number,
            "time": self.started_at.strftime("%H:%M:%S"),
            "request": " ; ".join(self.request_types) or "?",
            "status": self.status_code,
            "errorcodes": " ".join(self.errorcodes),
            "answered_by": self.answered_by,
            "fault": self.fault or "",
            "problems": "; ".join(str(p) for p in self.problems),
            "drift": "; ".join(self.drift),
            "ms": round(self.exchange.elapsed * 1000, 1),
            "error": self.exchange.error or "",
        }

    def as_people_row(self) -> dict[str, Any]:
        """`as_row` as a person reads it: each error code with its words, columns named in words."""
        row = self.as_row()
        row["errorcodes"] = "; ".join(labelled("errorcode", code) for code in self.errorcodes)
        return {PEOPLE_COLUMNS[name]: value for name, value in row.items()}

    def summary(self) -> str:
        """`08:01:02 #3 AUTH -> 200 0 in 12.5 ms [fault: latency] [2 problems]` for the terminal."""
        row = self.as_row()
        answer = self.exchange.error or f"{row['status']} {row['errorcodes'] or '-'}".strip()
        notes = ["answered by the proxy" if self.answered_by == PROXY else ""]
        notes += [f"fault: {self.fault}" if self.fault else ""]
        notes += [f"{len(self.problems)} problem{'s' * (len(self.problems) != 1)}" if self.problems else ""]
        more = f"; and {len(self.drift) - 2} more" if len(self.drift) > 2 else ""
        notes += [f"drift: {'; '.join(self.drift[:2])}{more}" if self.drift else ""]
        shown = "".join(f" [{note}]" for note in notes if note)
        return f"{row['time']} #{self.number} {row['request']} -> {answer} in {row['ms']} ms{shown}"


def problem_line(number: int, request_types: tuple[str, ...], problem: Problem) -> str:
    """A validation problem as it is met: `#3 AUTH problem: pan: must pass the Luhn check (sent ...)`."""
    return f"#{number} {' ; '.join(request_types) or '?'} problem: {problem}"
