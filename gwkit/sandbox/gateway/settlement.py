"""Settlement on the virtual clock.

An authorised AUTH (or a refund) is answered with `settlestatus` 0 and a `settleduedate` of its own
day, as the real service answers; at the end of that day (the daily run of the next day) it moves,
with any AUTH set to 1 (settle manually), to 100, settled, for its `settlebaseamount` when one was
set. Suspended (2) and cancelled (3) ones stay as they are. ACCOUNTCHECK and THREEDQUERY records
carry `settlestatus` 0 and a `settleduedate` too, but move no money: they never settle.
Each site settles on its own clock: the daily run is given the sites whose day it is.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from datetime import date, timedelta
from typing import Any

from .context import DailyJob, JobContext, day_of
from .sql import OF_SITES
from .store import Connection, Store

_DUE = OF_SITES.map(
    lambda sites: (
        "FROM transactions WHERE settlestatus IN ('0', '1') AND settleduedate <= ? "
        "AND requesttypedescription IN ('AUTH', 'REFUND') AND " + sites
    )
)


def settle_due(store: Store, conn: Connection, day: date, sites: Iterable[str]) -> list[str]:
    """Settle the AUTHs of `sites` due on or before `day`; their references."""
    rows = conn.execute(
        _DUE.map(lambda due: f"SELECT transactionreference {due} ORDER BY id"),
        (day.isoformat(), json.dumps(list(sites))),
    ).fetchall()
    references = [r[0] for r in rows]
    store.update_transactions(conn, references, {"settlestatus": "100"})
    return references


def settlement_run(job: JobContext, day: date) -> dict[str, Any]:
    """The run at the start of `day` is the end of the day before: it settles what was due by then."""
    ended = day - timedelta(days=1)
    # Asked first without taking the write lock: a day with nothing to settle writes nothing.
    due = job.store.connection().execute(
        _DUE.map(lambda due: f"SELECT EXISTS (SELECT 1 {due})"), (ended.isoformat(), job.sites_json)
    )
    if not due.fetchone()[0]:
        return {"settled": []}
    settled = settle_due(job.store, job.writes.conn, ended, job.sites)
    job.writes.wrote(len(settled))
    return {"settled": settled}


def next_settlement_day(job: JobContext, day: date) -> date | None:
    """The first day from `day` on whose run settles anything: the day after the earliest due date."""
    (earliest,) = (
        job.store.connection()
        .execute(
            _DUE.map(lambda due: f"SELECT MIN(settleduedate) {due}"), (date.max.isoformat(), job.sites_json)
        )
        .fetchone()
    )
    if earliest is None:
        return None
    return max(day, day_of(earliest) + timedelta(days=1))


DAILY_JOBS = (DailyJob("settlement", 10, settlement_run, next_settlement_day),)
