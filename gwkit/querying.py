"""Past the 500-record cap: a TRANSACTIONQUERY over a date range, split until every window fits.

    records = query_all(gw, {"settlestatus": "100"}, start=date(2026, 1, 1), end=date(2026, 12, 31))

The gateway answers at most 500 records a query (and says how many matched in `found`). A window
whose answer is cut short is split in two halves of days, and each half queried again, until every
window answers whole; the records are merged without duplicates, newest first. One day with more
than 500 matching records cannot be split by date: that is a clear error asking for a narrower
filter. Only TRANSACTIONQUERY is ever sent.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date, timedelta
from typing import Any, Callable, Mapping

from .errors import GwkitError
from .response import Record

MAX_QUERY_RECORDS = 500  # the most records one TRANSACTIONQUERY answers
Progress = Callable[[int, int], None]  # (days covered so far, days in all)


class QueryCapError(GwkitError):
    """One day holds more matching records than a single query answers."""


@dataclass(frozen=True)
class Window:
    start: date
    end: date

    @property
    def days(self) -> int:
        return (self.end - self.start).days + 1

    def halves(self) -> tuple["Window", "Window"]:
        middle = self.start + timedelta(days=self.days // 2 - 1)
        return Window(self.start, middle), Window(middle + timedelta(days=1), self.end)


def query_all(client: Any, filters: Mapping[str, Any] | None = None, *, start: date, end: date,
              progress: Progress | None = None) -> list[Record]:
    """Every record `filters` match between `start` and `end` (dates, both included), newest first."""
    if end < start:
        raise ValueError(f"end ({end}) is before start ({start})")
    found: dict[str, Record] = {}
    pending = [Window(start, end)]
    covered, total = 0, Window(start, end).days
    while pending:
        window = pending.pop()
        answer = _query(client, filters or {}, window)
        records = answer.query_records
        if _complete(answer, records):
            for record in records:
                found.setdefault(str(record.get("transactionreference")), record)
            covered += window.days
            if progress is not None:
                progress(covered, total)
        elif window.days == 1:
            raise QueryCapError(f"more than {len(records)} records match on {window.start}: one query answers at "
                                "most 500, so narrow the filter (for example by settlestatus or currencyiso3a)")
        else:
            earlier, later = window.halves()
            pending += [earlier, later]  # the later half is queried first
    return sorted(found.values(), key=newest_first, reverse=True)


def _query(client: Any, filters: Mapping[str, Any], window: Window) -> Record:
    response = client.transaction_query(**filters, startdate=window.start.isoformat(),
                                        enddate=window.end.isoformat())
    response.raise_for_errors()
    return response.record


def _complete(answer: Record, records: list[Record]) -> bool:
    """Whether the answer holds every match: `found` when the gateway says, else a short answer."""
    if answer.get("found") not in (None, ""):
        return int(answer["found"]) <= len(records)
    return len(records) < MAX_QUERY_RECORDS


def newest_first(record: Record) -> tuple[str, tuple[int, ...]]:
    """A sort key (reverse it): timestamp, then the reference's numbers (`23-9-10` after `23-9-9`)."""
    parts = str(record.get("transactionreference", "")).split("-")
    return str(record.get("transactionstartedtimestamp", "")), tuple(int(p) if p.isdigit() else -1 for p in parts)
