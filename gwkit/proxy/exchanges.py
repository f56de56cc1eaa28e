"""What the proxy saw of one exchange: the masked request and answer, its validation problems, who
answered it, and the fault it got; and the one-line terminal summary of it."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from ..exchange import Exchange
from ..interface.validation import Problem
from ..interface.vocabulary import labelled, no_answer_words

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
class ProxyProblem:
    """A validation problem of request object `index` (0, 1, ... as in the envelope), or of the body
    or the envelope as a whole (`index` None)."""

    index: int | None
    problem: Problem

    @property
    def field(self) -> str:
        return self.problem.field

    @property
    def rule(self) -> str:
        return self.problem.rule

    @property
    def value(self) -> Any:
        return self.problem.value  # masked

    @property
    def where(self) -> str:
        """`request.1` (the object, as the sandbox's paths name it) or `body`."""
        return "body" if self.index is None else f"request.{self.index}"

    def __str__(self) -> str:
        return f"{self.where}: {self.problem}"


@dataclass(frozen=True)
class ProxyExchange:
    number: int  # 1, 2, ... in the order requests arrived
    exchange: Exchange  # masked: what the application sent and what it was answered
    problems: tuple[ProxyProblem, ...] = ()
    answered_by: str = UPSTREAM
    drift: tuple[str, ...] = ()  # how the upstream's answer differs from a shadow sandbox's (drift.py)
    # The answer's body when it is not a JSON object (a 503 page, garbage), masked: for the cassette.
    answer_body: bytes | None = None
    answer_type: str | None = None  # the answer's content-type

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
        row["error"] = no_answer_words(self.exchange.error) if self.exchange.error else ""
        return {PEOPLE_COLUMNS[name]: value for name, value in row.items()}

    def summary(self, journal_id: int | None = None) -> str:
        """`08:01:02 #3 AUTH -> 200 0 in 12.5 ms [fault: latency] [2 problems]` for the terminal.
        Drift beyond two lines is counted, with how to see all of it (`journal_id`: its journal entry)."""
        row = self.as_row()
        answer = self.exchange.error or f"{row['status']} {row['errorcodes'] or '-'}".strip()
        notes = ["answered by the proxy" if self.answered_by == PROXY else ""]
        notes += [f"fault: {self.fault}" if self.fault else ""]
        notes += [f"{len(self.problems)} problem{'s' * (len(self.problems) != 1)}" if self.problems else ""]
        shown_by = f": gwkit proxy --show-drift {journal_id}" if journal_id is not None else ""
        more = f"; and {len(self.drift) - 2} more{shown_by}" if len(self.drift) > 2 else ""
        notes += [f"drift: {'; '.join(self.drift[:2])}{more}" if self.drift else ""]
        shown = "".join(f" [{note}]" for note in notes if note)
        return f"{row['time']} #{self.number} {row['request']} -> {answer} in {row['ms']} ms{shown}"


def problem_line(number: int, request_types: tuple[str, ...], found: ProxyProblem) -> str:
    """A validation problem as it is met, naming the object:
    `#3 request.1 AUTH problem: pan: must pass the Luhn check (sent ...)`."""
    if found.index is not None and found.index < len(request_types):
        what = f"{found.where} {request_types[found.index]}"
    else:
        what = f"{found.where} {' ; '.join(request_types) or '?'}"
    return f"#{number} {what} problem: {found.problem}"
