"""Which "now" a report read, and in which time zone its times are: said in every caption and file.

    when = report_time(gw)        # the sandbox's virtual clock when gw has a sandbox, else the wall clock
    when.caption                  # "As of 2026-03-01 09:00 by the sandbox's virtual clock; times in UTC."

A sandbox's records follow its virtual clock, which can be months ahead of the wall clock: a report
of "this month" or "due next week" means the sandbox's month and week. Against a real gateway the
report reads this machine's wall clock. The gateway's timestamps carry no zone; gwkit reads them in
the zone the clock that made them uses: the sandbox's is this machine's local zone (its clock starts
from the local time), a real gateway's is taken as UTC unless `zone=` says otherwise.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

SANDBOX_CLOCK = "the sandbox's virtual clock"
WALL_CLOCK = "this machine's wall clock"


@dataclass(frozen=True)
class ReportTime:
    """The moment a report counts from (`as_of`, naive, in `zone`), the clock it came from, the zone."""

    as_of: datetime
    clock: str
    zone: str

    @property
    def caption(self) -> str:
        return f"As of {self.as_of:%Y-%m-%d %H:%M} by {self.clock}; times in {self.zone}."

    def as_attrs(self) -> dict[str, str]:
        """Plain values for a frame's attrs (Parquet keeps them in the file, as JSON)."""
        return {"as_of": self.as_of.isoformat(sep=" "), "clock": self.clock, "zone": self.zone}

    @classmethod
    def from_attrs(cls, value: Any) -> ReportTime | None:
        if isinstance(value, ReportTime):
            return value
        if isinstance(value, dict) and {"as_of", "clock", "zone"} <= set(value):
            return cls(datetime.fromisoformat(value["as_of"]), str(value["clock"]), str(value["zone"]))
        return None

    def lines(self) -> list[tuple[str, str]]:
        """The same, as (label, value) rows for the top of an exported file."""
        return [
            ("As of", f"{self.as_of:%Y-%m-%d %H:%M:%S}"),
            ("Clock read", self.clock),
            ("Time zone of every time", self.zone),
        ]


def local_zone() -> str:
    """This machine's time zone, as its name (`UTC`, `CET`, `BST`)."""
    return datetime.now().astimezone().tzname() or "local time"


def report_time(source: Any = None, *, zone: str | None = None) -> ReportTime:
    """The report's "now": from a `ReportTime` (itself), a client or connection with a sandbox (its
    virtual clock), a sandbox handle (its clock), or anything else (this machine's wall clock)."""
    if isinstance(source, ReportTime):
        return source
    sandbox = getattr(source, "sandbox", None) if not hasattr(source, "advance") else source
    if sandbox is not None and callable(getattr(sandbox, "now", None)):
        moment = sandbox.now()
        return ReportTime(moment.replace(tzinfo=None), SANDBOX_CLOCK, zone or local_zone())
    chosen = zone or "UTC"
    now = datetime.now(UTC) if chosen == "UTC" else datetime.now().astimezone()
    return ReportTime(now.replace(tzinfo=None, microsecond=0), WALL_CLOCK, chosen)


REPORT_TIME = "report_time"  # a frame's attrs key: the ReportTime of the query that made it
CAPTION = "caption"  # a frame's attrs key: what the table is, as of when, by which clock, which zone


def time_of(frame: Any) -> ReportTime:
    """The ReportTime a frame carries (set by `query_frame(..., clock=gw)`), else the wall clock now."""
    found = ReportTime.from_attrs(getattr(frame, "attrs", {}).get(REPORT_TIME))
    return found if found is not None else report_time(None)


def captioned(table: Any, what: str, source: Any = None) -> Any:
    """`table` with its caption (`attrs["caption"]`): what it is, then when and by which clock (the
    ReportTime of `source`, a frame, else of `table`). Returns the table."""
    when = time_of(source if source is not None else table)
    table.attrs[REPORT_TIME] = when.as_attrs()
    table.attrs[CAPTION] = f"{what}. {when.caption}"
    return table


def caption_of(frame: Any) -> str | None:
    """What an exported file says first: the frame's caption, else, when the frame knows the clock
    its records were read by (`query_frame(..., clock=gw)`), as of when and which clock; else None."""
    attrs = getattr(frame, "attrs", {})
    if attrs.get(CAPTION):
        return str(attrs[CAPTION])
    when = ReportTime.from_attrs(attrs.get(REPORT_TIME))
    return f"Exported by gwkit. {when.caption}" if when is not None else None
