"""The sandbox's virtual clocks: one per site.

Business logic never reads the wall clock: timestamps, settlement, the subscription engine,
3-D Secure session expiry and cachetoken expiry all follow the clock of the site they belong to.
Each site's clock is a row of `site_clocks`; a site without one is at the sandbox's start time
(`meta` 'clock', set once when the database is made). A site's clock only moves forward, at most
`MAX_MOVE` per call and never past `LATEST`, so no move can run for long or overflow a date.
The daily jobs keep, per site, the last day they finished (`site_jobs`).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from datetime import date, datetime, timedelta
from functools import lru_cache

from ...interface.errors import GwkitError
from ...interface.schedule import add_months
from ...interface.wire import TIMESTAMP
from .sql import OF_SITES, Sql
from .store import Connection, Store

ISO = "%Y-%m-%dT%H:%M:%S"  # how the control API and advance reports write an instant
MAX_MOVE_MONTHS = 120  # one call moves a clock at most 10 years ...
MAX_MOVE = "P10Y"
LATEST = datetime(2099, 12, 31, 23, 59, 59)  # ... and never past the latest supported date
_MAX_DURATION_CHARS = 40
_DURATION = re.compile(
    r"P(?:(?P<years>\d+)Y)?(?:(?P<months>\d+)M)?(?:(?P<weeks>\d+)W)?(?:(?P<days>\d+)D)?"
    r"(?:T(?:(?P<hours>\d+)H)?(?:(?P<minutes>\d+)M)?(?:(?P<seconds>\d+)S)?)?"
)

SCHEMA = Sql(
    sqlite="""
CREATE TABLE IF NOT EXISTS site_clocks (sitereference TEXT PRIMARY KEY, now TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS site_jobs (
    sitereference TEXT NOT NULL,
    job TEXT NOT NULL,
    through TEXT NOT NULL,  -- the last day the job finished for the site
    PRIMARY KEY (sitereference, job)
);
""",
    postgresql="""
CREATE TABLE IF NOT EXISTS site_clocks (sitereference TEXT COLLATE "C" PRIMARY KEY, now TEXT COLLATE "C" NOT NULL);
CREATE TABLE IF NOT EXISTS site_jobs (
    sitereference TEXT COLLATE "C" NOT NULL,
    job TEXT COLLATE "C" NOT NULL,
    through TEXT COLLATE "C" NOT NULL,
    PRIMARY KEY (sitereference, job)
);
""",
)
CLOCK_TABLES = ("site_clocks", "site_jobs")
# Never backwards: the later of the two (SQLite's two-argument max, PostgreSQL's GREATEST).
_SET_CLOCK = Sql(
    sqlite="INSERT INTO site_clocks (sitereference, now) VALUES (?, ?) ON CONFLICT (sitereference) "
    "DO UPDATE SET now = max(now, excluded.now)",
    postgresql="INSERT INTO site_clocks (sitereference, now) VALUES (?, ?) ON CONFLICT (sitereference) "
    "DO UPDATE SET now = GREATEST(site_clocks.now, excluded.now)",
)
_SET_MARK = Sql(
    sqlite="INSERT INTO site_jobs (sitereference, job, through) VALUES (?, ?, ?) "
    "ON CONFLICT (sitereference, job) DO UPDATE SET through = max(through, excluded.through)",
    postgresql="INSERT INTO site_jobs (sitereference, job, through) VALUES (?, ?, ?) "
    "ON CONFLICT (sitereference, job) DO UPDATE SET through = GREATEST(site_jobs.through, excluded.through)",
)


class ClockError(GwkitError, ValueError):
    """A clock move that cannot be made: a bad duration or date, a move backwards, or past a limit.

    `limit` names the limit a refused move broke (`max_move` or `latest`), else None."""

    def __init__(self, message: str, limit: str | None = None):
        super().__init__(message)
        self.limit = limit


def _too_far(text: str) -> ClockError:
    return ClockError(
        f"{text}: the clock moves at most {MAX_MOVE} (10 years) per call (limit max_move)", "max_move"
    )


def parse_duration(text: str) -> dict[str, int]:
    """An ISO 8601 duration such as `P1D`, `P1M`, `P1Y2M`, `PT6H` as its parts."""
    if isinstance(text, str) and len(text) > _MAX_DURATION_CHARS:
        raise _too_far(f"by: {text[:_MAX_DURATION_CHARS]}...")
    match = _DURATION.fullmatch(text or "")
    if not match or text in ("P", "PT") or text.endswith("T"):
        raise ClockError(f"by: {text!r} is not an ISO 8601 duration such as P1D, P1M, P1Y or PT2H")
    return {k: int(v) for k, v in match.groupdict().items() if v}


def apply_duration(start: datetime, text: str) -> datetime:
    parts = parse_duration(text)
    months = 12 * parts.get("years", 0) + parts.get("months", 0)
    if months > MAX_MOVE_MONTHS:
        raise _too_far(f"by: {text}")
    try:
        return add_months(start, months) + timedelta(
            weeks=parts.get("weeks", 0),
            days=parts.get("days", 0),
            hours=parts.get("hours", 0),
            minutes=parts.get("minutes", 0),
            seconds=parts.get("seconds", 0),
        )
    except OverflowError:  # a number of days or hours past any date: refused like any move too far
        raise _too_far(f"by: {text}") from None


def parse_instant(text: str) -> datetime:
    try:
        value = datetime.fromisoformat(text)
    except (TypeError, ValueError):
        raise ClockError(f"to: {text!r} is not a date or time such as 2027-01-31T00:00:00") from None
    return value.replace(tzinfo=None, microsecond=0)


def check_move(now: datetime, target: datetime) -> None:
    """Refuse a move backwards, past `LATEST`, or of more than `MAX_MOVE`."""
    if target < now:
        raise ClockError(
            f"the clock only moves forward: {target.strftime(ISO)} is before {now.strftime(ISO)}"
        )
    if target > LATEST:
        raise ClockError(
            f"{target.strftime(ISO)} is after the latest supported date "
            f"{LATEST.strftime(ISO)} (limit latest)",
            "latest",
        )
    if target > add_months(now, MAX_MOVE_MONTHS):
        raise _too_far(f"{now.strftime(ISO)} to {target.strftime(ISO)}")


@lru_cache(maxsize=256)
def _parse_timestamp(text: str) -> datetime:
    return datetime.strptime(text, TIMESTAMP)


def _site_list(sites: str | Iterable[str]) -> list[str]:
    return [sites] if isinstance(sites, str) else list(dict.fromkeys(sites))


class Clock:
    """Reads and moves the sites' clocks. Without `sites`, the default sites (the first account's)."""

    KEY = "clock"  # meta: the sandbox's start time, where every new site's clock starts

    def __init__(self, store: Store, start: datetime | None = None, default_sites: Iterable[str] = ()):
        self._store = store
        self.default_sites = tuple(default_sites)
        if store.meta_get(self.KEY) is None:
            # The one place the wall clock is read: where a new sandbox's clock starts.
            initial = (start or datetime.now()).replace(microsecond=0, tzinfo=None)
            store.meta_set_default(self.KEY, initial.strftime(TIMESTAMP))
        self._start = store.meta_get(self.KEY)

    def start(self) -> datetime:
        return _parse_timestamp(self._start)

    def clocks(self, sites: str | Iterable[str] | None = None) -> dict[str, datetime]:
        """Each site's now (read on every call: another process may have moved it)."""
        wanted = _site_list(self.default_sites if sites is None else sites)
        conn = self._store.connection()
        if len(wanted) == 1:  # every payment asks for its site's clock: the simplest statement
            found = dict(
                conn.execute(
                    "SELECT sitereference, now FROM site_clocks WHERE sitereference = ?", (wanted[0],)
                ).fetchall()
            )
        else:
            found = (
                dict(
                    conn.execute(
                        OF_SITES.map(
                            lambda sites: f"SELECT sitereference, now FROM site_clocks WHERE {sites}"
                        ),
                        (json.dumps(wanted),),
                    ).fetchall()
                )
                if wanted
                else {}
            )
        return {site: _parse_timestamp(found.get(site, self._start)) for site in wanted}

    def now(self, sites: str | Iterable[str] | None = None) -> datetime:
        """The latest clock of `sites` (of one site: its clock)."""
        return max(self.clocks(sites).values(), default=self.start())

    def today(self, sites: str | Iterable[str] | None = None) -> date:
        return self.now(sites).date()

    def timestamp(self, sites: str | Iterable[str] | None = None) -> str:
        return self.now(sites).strftime(TIMESTAMP)

    def target(
        self,
        by: str | None = None,
        to: str | datetime | None = None,
        sites: str | Iterable[str] | None = None,
    ) -> datetime:
        """Where a move `by` a duration or `to` an instant of `sites` (together) would land, checked."""
        if by is not None and to is None:
            now = self.now(sites)
            target = apply_duration(now, by)
        elif to is not None and by is None:
            now = self.now(sites)
            target = to.replace(microsecond=0, tzinfo=None) if isinstance(to, datetime) else parse_instant(to)
        else:
            raise ClockError("give exactly one of 'by' (an ISO 8601 duration) or 'to' (a date and time)")
        check_move(now, target)
        return target

    def set(self, conn: Connection, moment: datetime, sites: str | Iterable[str] | None = None) -> None:
        """Move the sites' clocks to `moment` inside the caller's write transaction; never backwards."""
        value = moment.strftime(TIMESTAMP)
        conn.executemany(
            _SET_CLOCK,
            [(site, value) for site in _site_list(self.default_sites if sites is None else sites)],
        )

    # the daily jobs' marks

    def marks(self, job: str, sites: Iterable[str]) -> dict[str, date]:
        """The last day `job` finished for each site (a site without a mark: the sandbox-wide default)."""
        wanted = _site_list(sites)
        conn = self._store.connection()
        found = dict(
            conn.execute(
                OF_SITES.map(
                    lambda sites: f"SELECT sitereference, through FROM site_jobs WHERE job = ? AND {sites}"
                ),
                (job, json.dumps(wanted)),
            ).fetchall()
        )
        default = self._store.meta_get(f"job:{job}:through") or self.start().date().isoformat()
        return {site: date.fromisoformat(found.get(site, default)) for site in wanted}

    def set_marks(self, conn: Connection, job: str, sites: Iterable[str], day: date) -> None:
        conn.executemany(
            _SET_MARK,
            [(site, job, day.isoformat()) for site in sites],
        )
