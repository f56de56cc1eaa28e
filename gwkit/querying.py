"""Past the 500-record cap: every record a TRANSACTIONQUERY filter matches, however many.

    records = query_all(gw, {"settlestatus": "100"}, start=date(2026, 1, 1), end=date(2026, 12, 31))
    records = query_paged(gw, {"requesttypedescription": "SUBSCRIPTION"})     # no date range known

The gateway answers at most 500 records a query, newest first (and says how many matched in
`found`). `query_all` splits a date range: a window whose answer is cut short is split in two
halves of days, each queried again, until every window answers whole. `query_paged` walks back
from today instead: while answers are cut short it asks again with `enddate` the day of the oldest
record received. Either merges without duplicates, newest first. One day with more than 500
matching records cannot be split by date: that is a clear error asking for a narrower filter.
Only TRANSACTIONQUERY is ever sent.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import date, timedelta
from typing import Any

from .errors import GwkitError
from .protocols import GatewayClient
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

    def halves(self) -> tuple[Window, Window]:
        middle = self.start + timedelta(days=self.days // 2 - 1)
        return Window(self.start, middle), Window(middle + timedelta(days=1), self.end)


def query_all(
    client: GatewayClient,
    filters: Mapping[str, Any] | None = None,
    *,
    start: date,
    end: date,
    progress: Progress | None = None,
) -> list[Record]:
    """Every record `filters` match between `start` and `end` (dates, both included), newest first."""
    if end < start:
        raise ValueError(f"end ({end}) is before start ({start})")
    found: dict[str, Record] = {}
    pending = [Window(start, end)]
    covered, total = 0, Window(start, end).days
    while pending:
        window = pending.pop()
        answer = query_answer(
            client,
            {**(filters or {}), "startdate": window.start.isoformat(), "enddate": window.end.isoformat()},
        )
        records = answer.query_records
        if matched(answer) <= len(records):
            for record in records:
                found.setdefault(str(record.get("transactionreference")), record)
            covered += window.days
            if progress is not None:
                progress(covered, total)
        elif window.days == 1:
            raise QueryCapError(
                f"more than {len(records)} records match on {window.start}: one query answers at "
                "most 500, so narrow the filter (for example by settlestatus or currencyiso3a)"
            )
        else:
            earlier, later = window.halves()
            pending += [earlier, later]  # the later half is queried first
    return sorted(found.values(), key=newest_first, reverse=True)


def query_paged(client: GatewayClient, filters: Mapping[str, Any] | None = None) -> list[Record]:
    """Every record `filters` match, newest first, paging back through `enddate` while answers are cut."""
    found: dict[str, Record] = {}
    end: date | None = None
    while True:
        answer = query_answer(client, {**(filters or {}), **({"enddate": end.isoformat()} if end else {})})
        records = answer.query_records
        for record in records:
            found.setdefault(str(record.get("transactionreference")), record)
        if matched(answer) <= len(records) or not records:
            return list(found.values())
        oldest = date.fromisoformat(str(records[-1]["transactionstartedtimestamp"])[:10])
        if oldest == end:  # the same day again: it alone holds more than one answer
            raise QueryCapError(
                f"more than {len(records)} records match on {oldest}: one query answers at most "
                "500, so narrow the filter to fetch them all"
            )
        end = oldest


def matched(answer: Record) -> int:
    """How many records a TRANSACTIONQUERY matched: `found` when the gateway says, else a full
    answer means more than it holds."""
    if answer.get("found") not in (None, ""):
        return int(answer["found"])
    count = len(answer.query_records)
    return count + 1 if count >= MAX_QUERY_RECORDS else count


def query_answer(client: GatewayClient, filters: Mapping[str, Any]) -> Record:
    """The TRANSACTIONQUERY record answering `filters` (its `records` hold what was found)."""
    response = client.transaction_query(**filters)
    response.raise_for_errors()
    return response.record


def newest_first(record: Record) -> tuple[str, tuple[int, ...]]:
    """A sort key (reverse it): timestamp, then the reference's numbers (`23-9-10` after `23-9-9`)."""
    parts = str(record.get("transactionreference", "")).split("-")
    return str(record.get("transactionstartedtimestamp", "")), tuple(
        int(p) if p.isdigit() else -1 for p in parts
    )
