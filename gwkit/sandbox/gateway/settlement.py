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
from .sql import OF_SITES, Sql
from .store import Connection, Store

JOB_NAME = "settlement"

# Due after a day (all due by it are known to be settled; '' for none) and by another. The lower bound
# matters on PostgreSQL: each record settled leaves its earlier version's index entry behind until a
# vacuum, and a read of everything due by today would walk those of every day before.
_DUE_WHERE = OF_SITES.map(
    lambda sites: (
        "WHERE settlestatus IN ('0', '1') AND settleduedate > ? AND settleduedate <= ? "
        "AND requesttypedescription IN ('AUTH', 'REFUND') AND " + sites
    )
)
_DUE = _DUE_WHERE.map(lambda where: "FROM transactions " + where)
# Settled in one statement, the record's JSON with its column: SQLite's json_set changes the key in place;
# on PostgreSQL the text the store keeps (json.dumps) holds `"settlestatus": "<the column's value>"`, so a
# replace keeps the key in its place (a JSON function there would reorder the keys). The last value
# returned says the record was changed; one whose text is not so laid out (none is known) is left to
# the store's `update_transactions`.
_KEPT_STATUS = """'"settlestatus": "' || settlestatus || '"'"""
_SETTLE = Sql(
    sqlite="UPDATE transactions SET settlestatus = '100', record = json_set(record, '$.settlestatus', '100') "
    f"{_DUE_WHERE.sqlite} RETURNING id, transactionreference, 1",
    postgresql="UPDATE transactions SET settlestatus = '100', "
    f"""record = replace(record, {_KEPT_STATUS}, '"settlestatus": "100"') {_DUE_WHERE.postgresql} """
    """RETURNING id, transactionreference, strpos(record, '"settlestatus": "100"') > 0""",
)


def settle_due(
    store: Store, conn: Connection, day: date, sites: Iterable[str], after: date | None = None
) -> list[str]:
    """Settle the AUTHs of `sites` due on or before `day` (and after `after`, when all due by then are
    known to be settled); their references, oldest first."""
    due = (after.isoformat() if after else "", day.isoformat(), json.dumps(list(sites)))
    settled = sorted((row[0], row[1], row[2]) for row in conn.execute(_SETTLE, due).fetchall())
    unchanged = [reference for _, reference, changed in settled if not changed]
    store.update_transactions(conn, unchanged, {"settlestatus": "100"})
    return [reference for _, reference, _ in settled]


def settlement_run(job: JobContext, day: date) -> dict[str, Any]:
    """The run at the start of `day` is the end of the day before: it settles what was due by then."""
    ended = day - timedelta(days=1)
    if not job.writes.is_open:  # asked first without taking the write lock: an idle day writes nothing
        due = job.store.connection().execute(
            _DUE.map(lambda due: f"SELECT EXISTS (SELECT 1 {due})"), ("", ended.isoformat(), job.sites_json)
        )
        if not due.fetchone()[0]:
            return {"settled": []}
    through = (JOB_NAME, job.sites)  # writes.known: the day all due by it are settled, under this lock
    settled = settle_due(job.store, job.writes.conn, ended, job.sites, job.writes.known.get(through))
    job.writes.known[through] = ended
    job.writes.wrote(len(settled))
    return {"settled": settled}


def next_settlement_day(job: JobContext, day: date) -> date | None:
    """The first day from `day` on whose run settles anything: the day after the earliest due date."""
    (earliest,) = (
        job.store.connection()
        .execute(
            _DUE.map(lambda due: f"SELECT MIN(settleduedate) {due}"),
            ("", date.max.isoformat(), job.sites_json),
        )
        .fetchone()
    )
    if earliest is None:
        return None
    return max(day, day_of(earliest) + timedelta(days=1))


DAILY_JOBS = (DailyJob(JOB_NAME, 10, settlement_run, next_settlement_day),)
