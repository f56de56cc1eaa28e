"""When a subscription's payments are due (interface 3.1): one rule for the engine and the client.

Payment `n` is due `(n - first) * frequency` units after the begin date, always counted from the
begin date (never from the previous payment). The unit is `MONTH` (the interface's) or `DAY` (what
the official clients' tests send). In months, a day past the end of a shorter month falls on its
last day: begun on the 31st, payments fall on the 30th of April, the 28th or 29th of February, and
the 31st again whenever the month has one.
"""

from __future__ import annotations

import calendar
from datetime import date, datetime, timedelta
from typing import TypeVar

Day = TypeVar("Day", date, datetime)
MONTH, DAY = "MONTH", "DAY"
UNITS = (MONTH, DAY)
MONTHS_PER_UNIT = {MONTH: 1.0, DAY: 12 / 365.25}  # for monthly figures (recurring revenue)


def add_months(day: Day, months: int, anchor_day: int | None = None) -> Day:
    """`day` moved by whole months; a day past the month's end falls on its last day.

    Raises OverflowError past year 9999 (and ValueError before year 1)."""
    month_index = day.month - 1 + months
    year, month = day.year + month_index // 12, month_index % 12 + 1
    if not 1 <= year <= 9999:
        raise OverflowError(f"year {year} is out of range")
    wanted = anchor_day or day.day
    return day.replace(year=year, month=month, day=min(wanted, calendar.monthrange(year, month)[1]))


def due_date(begin: date, frequency: int, first_number: int, number: int, unit: str = MONTH) -> date:
    """When payment `number` is due; raises ValueError for a number before the first (and
    OverflowError past year 9999)."""
    if number < first_number:
        raise ValueError(f"payment {number} comes before the first automated payment {first_number}")
    if unit == DAY:
        return begin + timedelta(days=(number - first_number) * frequency)
    return add_months(begin, (number - first_number) * frequency, anchor_day=begin.day)


def payment_dates(
    begin: date,
    frequency: int,
    first_number: int,
    final_number: int,
    *,
    until: date | None = None,
    start: int | None = None,
    limit: int | None = None,
    unit: str = MONTH,
) -> list[tuple[int, date]]:
    """(number, due date) of payments `start` (default the first) up to the final number (0: no end),
    stopping after `until` and after `limit` payments; one of the three must bound an endless one."""
    if final_number == 0 and until is None and limit is None:
        raise ValueError("an endless subscription (final number 0) needs `until` or `limit`")
    found: list[tuple[int, date]] = []
    number = first_number if start is None else start
    while (final_number == 0 or number <= final_number) and (limit is None or len(found) < limit):
        try:
            due = due_date(begin, frequency, first_number, number, unit)
        except (ValueError, OverflowError):  # beyond year 9999
            break
        if until is not None and due > until:
            break
        found.append((number, due))
        number += 1
    return found
