"""The daily-job runner: each daily job (settlement, the subscription engine, token expiry...) run
for every day a site's clock has passed that the job has not finished for it, the days committed
together with their marks (jobwrites.py), the days on which no job has work skipped.

The Gateway runs it after each clock move and at start (the days a stopped run left undone).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Iterable, Mapping
from datetime import date, timedelta
from typing import Any

from .accounts import Account
from .clock import Clock
from .context import DailyJob, JobContext, Tables
from .jobwrites import SharedWrite
from .store import Store

Progress = Callable[[str, int, int], None]
log = logging.getLogger("gwkit.sandbox")


class DailyRunner:
    """Runs `jobs` over the sites' days; `stopping` set ends a long run at its next day."""

    def __init__(
        self,
        store: Store,
        clock: Clock,
        tables: Tables,
        accounts: Mapping[str, Account],
        jobs: list[DailyJob],
        stopping: threading.Event,
    ) -> None:
        self.store, self.clock, self.tables, self.accounts = store, clock, tables, accounts
        self.jobs = jobs  # the Gateway's own list: a job replaced there is run here
        self.stopping = stopping

    def run(
        self,
        every_site: tuple[str, ...],
        progress: Progress | None = None,
        sites: Iterable[str] | None = None,
        on_day: Callable[[date], None] | None = None,
    ) -> dict[str, Any]:
        """Run each daily job, for each of `sites` (default: every site), for every day up to that
        site's today that the job has not finished for it yet. Days on which no job has anything to
        do are skipped (`_first_day_with_work`): the next day run sets their marks."""
        sites = tuple(every_site if sites is None else sites)
        report: dict[str, Any] = {}
        todays = {site: moment.date() for site, moment in self.clock.clocks(sites).items()}
        marks = {job.name: self.clock.marks(job.name, sites) for job in self.jobs}
        behind = [
            mark for job_marks in marks.values() for site, mark in job_marks.items() if mark < todays[site]
        ]
        if not behind:
            return report
        cache: dict[str, Any] = {}
        day, last = min(behind) + timedelta(days=1), max(todays.values())
        if day < last:
            log.info("running the daily jobs for %d days, %s to %s", (last - day).days + 1, day, last)
        with SharedWrite(self.store, sites) as writes:  # days commit together with their marks (jobwrites.py)
            while day <= last:
                if (
                    self.stopping.is_set()
                ):  # what ran is committed on leaving; the rest runs at the next start
                    log.info("daily jobs stopped before %s: the sandbox is stopping", day)
                    report["stopped_before"] = day.isoformat()
                    break
                in_turn = day  # the day after the last one run
                day = self._first_day_with_work(day, sites, todays, marks, progress, cache, writes)
                if on_day is not None:
                    on_day(day)
                finished = []
                for job in self.jobs:
                    due = tuple(site for site in sites if marks[job.name][site] < day <= todays[site])
                    if due:
                        job_context = JobContext(
                            self.store, self.clock, self.tables, self.accounts, writes, progress, cache, due
                        )
                        _merge(report.setdefault(job.name, {}), job.run(job_context, day) or {})
                        finished.append((job.name, due))
                for name, due in finished:  # in the transaction that holds what the day's jobs wrote
                    self.clock.set_marks(writes.conn, name, due, day)
                    marks[name].update(dict.fromkeys(due, day))
                writes.day_done((day - in_turn).days + 1)
                day += timedelta(days=1)
        return report

    def _first_day_with_work(
        self,
        day: date,
        sites: tuple[str, ...],
        todays: dict[str, date],
        marks: dict[str, dict[str, date]],
        progress: Progress | None,
        cache: dict[str, Any],
        writes: SharedWrite,
    ) -> date:
        """The next day from `day` on that must run: the earliest any job has work on, or a site's last
        day (its marks are set there). The days skipped would each have run every job and done nothing:
        one read per job instead of a run per idle day. Every job must say (`DailyJob.next_day`)."""
        if any(job.next_day is None for job in self.jobs):
            return day
        first = min(today for today in todays.values() if today >= day)
        for job in self.jobs:
            behind = tuple(site for site in sites if marks[job.name][site] < todays[site])
            if not behind:
                continue
            context = JobContext(
                self.store, self.clock, self.tables, self.accounts, writes, progress, cache, behind
            )
            worked = job.next_day(context, day)  # type: ignore[misc]
            if worked is not None:
                first = min(first, worked)
            if first <= day:
                return day
        return first


def _merge(into: dict[str, Any], part: Mapping[str, Any]) -> None:
    for key, value in part.items():
        if isinstance(value, list):
            into.setdefault(key, []).extend(value)
        elif isinstance(value, (int, float)) and not isinstance(value, bool):
            into[key] = into.get(key, 0) + value
        elif isinstance(value, Mapping):
            _merge(into.setdefault(key, {}), value)
        else:
            into[key] = value
