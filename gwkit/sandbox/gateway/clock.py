"""The sandbox's virtual clock.

Business logic never reads the wall clock: timestamps, settlement, the subscription engine,
3-D Secure session expiry and cachetoken expiry all follow this clock. It is kept in the database,
so it survives restarts, and it only moves forward.
"""

from __future__ import annotations

import re
from datetime import date, datetime, timedelta
from functools import lru_cache

from ...interface.schedule import add_months
from ...interface.wire import TIMESTAMP
from .store import Store

ISO = "%Y-%m-%dT%H:%M:%S"  # how the control API and advance reports write an instant
_DURATION = re.compile(
    r"P(?:(?P<years>\d+)Y)?(?:(?P<months>\d+)M)?(?:(?P<weeks>\d+)W)?(?:(?P<days>\d+)D)?"
    r"(?:T(?:(?P<hours>\d+)H)?(?:(?P<minutes>\d+)M)?(?:(?P<seconds>\d+)S)?)?"
)


class ClockError(ValueError):
    """A clock move that cannot be made: a bad duration or date, or a move backwards."""


def parse_duration(text: str) -> dict[str, int]:
    """An ISO 8601 duration such as `P1D`, `P1M`, `P1Y2M`, `PT6H` as its parts."""
    match = _DURATION.fullmatch(text or "")
    if not match or text in ("P", "PT") or text.endswith("T"):
        raise ClockError(f"by: {text!r} is not an ISO 8601 duration such as P1D, P1M, P1Y or PT2H")
    return {k: int(v) for k, v in match.groupdict().items() if v}


def apply_duration(start: datetime, text: str) -> datetime:
    parts = parse_duration(text)
    try:
        moved = add_months(start, 12 * parts.get("years", 0) + parts.get("months", 0))
    except OverflowError as exc:  # past year 9999: refused like any other bad move
        raise ClockError(str(exc)) from None
    return moved + timedelta(weeks=parts.get("weeks", 0), days=parts.get("days", 0),
                             hours=parts.get("hours", 0), minutes=parts.get("minutes", 0),
                             seconds=parts.get("seconds", 0))


def parse_instant(text: str) -> datetime:
    try:
        value = datetime.fromisoformat(text)
    except (TypeError, ValueError):
        raise ClockError(f"to: {text!r} is not a date or time such as 2027-01-31T00:00:00") from None
    return value.replace(tzinfo=None, microsecond=0)


@lru_cache(maxsize=64)
def _parse_timestamp(text: str) -> datetime:
    return datetime.strptime(text, TIMESTAMP)


class Clock:
    """Reads and moves the virtual time kept in the store's `meta` table."""

    KEY = "clock"

    def __init__(self, store: Store, start: datetime | None = None):
        self._store = store
        if store.meta_get(self.KEY) is None:
            # The one place the wall clock is read: where a new sandbox's clock starts.
            initial = (start or datetime.now()).replace(microsecond=0, tzinfo=None)
            store.meta_set_default(self.KEY, initial.strftime(TIMESTAMP))

    def now(self) -> datetime:
        # Read on every request (another process may have moved it); parsed once per value.
        return _parse_timestamp(self._store.meta_get(self.KEY))

    def today(self) -> date:
        return self.now().date()

    def timestamp(self) -> str:
        return self._store.meta_get(self.KEY)

    def target(self, by: str | None = None, to: str | datetime | None = None) -> datetime:
        """Where a move `by` a duration or `to` an instant would land, checked to be forward."""
        if (by is None) == (to is None):
            raise ClockError("give exactly one of 'by' (an ISO 8601 duration) or 'to' (a date and time)")
        now = self.now()
        target = apply_duration(now, by) if by is not None else (
            to.replace(microsecond=0, tzinfo=None) if isinstance(to, datetime) else parse_instant(to))
        if target < now:
            raise ClockError(f"the clock only moves forward: {target.strftime(ISO)} is before {now.strftime(ISO)}")
        return target

    def set(self, conn, moment: datetime) -> None:
        """Move the clock inside the caller's write transaction."""
        conn.execute("UPDATE meta SET value = ? WHERE key = ?", (moment.strftime(TIMESTAMP), self.KEY))
