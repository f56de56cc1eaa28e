"""The subscription engine: a daily job on the sandbox clock (after settlement, order 10).

For each day, and the sites whose day it is on their own clocks (`JobContext.sites`), it
1. starts pending subscriptions whose parent AUTH has settled (`settlestatus` 100), and
2. makes every payment due on or before that day, oldest first: an AUTH of its own
   (`accounttypedescription` RECUR, `parenttransactionreference` the SUBSCRIPTION,
   `subscriptionnumber` the payment's number, `transactionstartedtimestamp` the day at 00:00:00)
   on the subscription's card, with the test acquirer's usual outcomes. An expired card is
   declined (70000) rather than refused. A payment that fails (declined, bank error) still counts
   as its number and is not retried: the series moves on to the next one (gwkit's choice; the
   interface does not say).

A subscription's payments in one run are alike but for a few fields (PER_DAY, PER_PAYMENT): the
record of its payment, with the acquirer's decision, is made once through the same path as every
AUTH (`payments.payment_record`), and each payment fills in only those fields (`PreparedPayment`).

Exactly once. Due subscriptions are read and paid in batches inside the write transaction the
run's days share (jobwrites.SharedWrite): the payment records, the rows of `subscription_payments`
(unique per subscription and number) and the subscriptions' next number and due date of a batch
commit together or not at all, and with the marks of the days finished before them. Set-based
within the batch: one SELECT of what is due, one block of references, one executemany each for
the payment records, the claims and the subscriptions' counters. Writers are serialised by
SQLite (PostgreSQL: an advisory lock), and a batch re-reads what is due once it holds the write
lock, so two runs at the same time (threads or processes) cannot both make a payment, and a run
killed halfway leaves whole batches and whole days behind: the next run (the sandbox re-runs
unfinished days at start) makes the rest and skips what was made.
"""

from __future__ import annotations

import json
import re
import secrets
from collections.abc import Callable
from datetime import date, datetime, time
from functools import lru_cache
from itertools import repeat
from json.encoder import encode_basestring_ascii as json_string
from operator import itemgetter
from typing import Any, NamedTuple

from ...interface.cards import expired
from ...interface.wire import TIMESTAMP
from . import acquirer
from .accounts import account_for_site
from .context import Context, DailyJob, JobContext, day_of
from .payments import Card, kept_details, payment_record, settle_due_date
from .sql import OF_SITES, Sql
from .store import Connection, Store, transaction_row
from .subscriptions import SETTLED, Plan

BATCH_SIZE = 500  # subscriptions per write transaction
JOB_NAME = "subscriptions"


class Due(NamedTuple):
    """A due subscription as the engine reads it: by position, not by name (a row's name lookups
    cost more than the rest of a payment's Python)."""

    id: int
    next_due_date: str
    nextnumber: int
    # its schedule, as Plan.due_of reads it (the arguments of `_due_of`)
    begindate: str
    frequency: int
    firstnumber: int
    finalnumber: int
    unit: str
    # what its payments' record is made from (`_PAID_WITH`)
    sitereference: str
    baseamount: str
    currencyiso3a: str
    orderreference: str | None
    card_id: int
    details: str
    transactionreference: str


def _due_rows(rows: list[Any]) -> list[Due]:
    return list(map(tuple.__new__, repeat(Due), rows))  # Due._make without a Python call per row


_PAID_WITH = slice(8, 15)
# Due after a day (all due by it are known to be paid; '' for none) and by another. The lower bound
# matters on PostgreSQL: each payment leaves its subscription's earlier version in the index of due
# dates until a vacuum, and a read of everything due by today would walk those of every day before.
_DUE = OF_SITES.map(
    lambda sites: (
        f"SELECT {', '.join(Due._fields)} FROM subscriptions WHERE next_due_date > ? AND next_due_date <= ? "
        f"AND {sites} ORDER BY next_due_date, id LIMIT ?"
    )
)


def run_subscriptions(job: JobContext, day: date) -> dict[str, Any]:
    report = EngineReport()
    today = day.isoformat()
    sites = job.sites_json
    waiting = (JOB_NAME, "waiting", job.sites)  # writes.known: whether a subscription waits for its AUTH
    if job.writes.is_open:  # the lock is held: what the checks below ask, the reads under it answer
        if job.writes.known.get(waiting, True):  # none waits: none can start until another writer comes
            report.started = start_settled(job.store, job.writes.conn, sites)
            job.writes.known[waiting] = _any_waiting(job.writes.conn, sites)
    else:  # asked first without taking the write lock: an idle day writes nothing
        if _settled_parents(job.store.connection(), sites):
            report.started = start_settled(job.store, job.writes.conn, sites)
        if not _any_due(job.store.connection(), today, sites):
            return report.as_dict()
    total, done = None, 0
    through = (JOB_NAME, job.sites)  # writes.known: the day all due by it are paid, under this lock
    while True:
        conn = job.writes.conn  # what is due is read again under the lock
        after = job.writes.known.get(through, "")
        rows = _due_rows(conn.execute(_DUE, (after, today, sites, BATCH_SIZE)).fetchall())
        if not rows:
            break
        if total is None:  # counted only on a day with more than one batch (most have fewer)
            total = len(rows) if len(rows) < BATCH_SIZE else _due_count(conn, today, sites)
        job.writes.wrote(pay_batch(job, conn, rows, day, report))
        done += len(rows)
        if job.progress is not None:
            job.progress(f"{JOB_NAME} {today}", done, max(total, done))
        job.writes.commit_if_full()  # a batch is whole: its payments, claims and counters
        if len(rows) < BATCH_SIZE:  # that was all that was due: each one's next due date is now after today
            break
    if job.writes.is_open:  # read under the lock it still holds
        job.writes.known[through] = today
    return report.as_dict()


# Subscriptions first, then their AUTH by its unique reference; the literal 'authorised' lets both use
# the partial index. SQLite's CROSS JOIN fixes that order; on PostgreSQL a subquery per subscription
# does (as a join, its planner went from the settled AUTHs, every payment among them: 80 ms a day).
_SETTLED_PARENTS = Sql(
    sqlite="FROM subscriptions s CROSS JOIN transactions t ON t.transactionreference = s.authreference "
    "WHERE s.parent = 'authorised' AND t.settlestatus = '100' AND s." + OF_SITES.sqlite,
    postgresql="FROM subscriptions s WHERE s.parent = 'authorised' AND (SELECT t.settlestatus "
    "FROM transactions t WHERE t.transactionreference = s.authreference) = '100' AND s."
    + OF_SITES.postgresql,
)


def _settled_parents(conn: Connection, sites: str) -> bool:
    return bool(
        conn.execute(
            _SETTLED_PARENTS.map(lambda rows: f"SELECT EXISTS (SELECT 1 {rows})"), (sites,)
        ).fetchone()[0]
    )


def _any_waiting(conn: Connection, sites: str) -> bool:
    """Whether a subscription of `sites` waits for its AUTH to settle (only a request makes one)."""
    return bool(
        conn.execute(
            OF_SITES.map(
                lambda of: f"SELECT EXISTS (SELECT 1 FROM subscriptions WHERE parent = 'authorised' AND {of})"
            ),
            (sites,),
        ).fetchone()[0]
    )


def _any_due(conn: Connection, today: str, sites: str) -> bool:
    return bool(
        conn.execute(
            OF_SITES.map(
                lambda of: f"SELECT EXISTS (SELECT 1 FROM subscriptions WHERE next_due_date <= ? AND {of})"
            ),
            (today, sites),
        ).fetchone()[0]
    )


def _due_count(conn: Connection, today: str, sites: str) -> int:
    return conn.execute(
        OF_SITES.map(lambda of: f"SELECT COUNT(*) FROM subscriptions WHERE next_due_date <= ? AND {of}"),
        (today, sites),
    ).fetchone()[0]


def start_settled(store: Store, conn: Connection, sites: str) -> list[str]:
    """Mark subscriptions of `sites` (JSON list) whose AUTH has settled; pending ones get their next due date."""
    rows = conn.execute(_SETTLED_PARENTS.map(lambda rows: f"SELECT s.* {rows}"), (sites,)).fetchall()
    updates, started = [], []
    for row in rows:
        due = Plan.of(row, parent=SETTLED).next_due()
        updates.append((SETTLED, due, row["id"]))
        if due is not None and row["next_due_date"] is None:
            started.append(row["transactionreference"])
    store.each_row(conn, _SET_PARENT, updates)
    return started


def pay_batch(job: JobContext, conn: Connection, rows: list[Due], day: date, report: EngineReport) -> int:
    """Make every payment of `rows` due by `day`, inside the caller's write transaction; how many."""
    today = day.isoformat()
    due: list[tuple[Due, int, str]] = []  # (subscription, number, due date), oldest first
    moves = []
    for row in rows:
        schedule = row[3:8]  # begindate to unit (a literal slice, so its items keep their types)
        number = row.nextnumber
        when: str | None = row.next_due_date
        while when is not None and when <= today:
            due.append((row, number, when))
            number += 1
            when = _due_of(*schedule, number)
        if when is None:
            report.stopped.append(row.transactionreference)
        moves.append((number, when, row.id))
    made = _already_made(conn, [(number, row.id) for row, number, _ in due])
    to_pay = (
        [(row, number, when) for row, number, when in due if (number, row.id) not in made] if made else due
    )
    payer = Payer(job, conn, day, job.store.reserve_references(conn, len(to_pay)))
    claims = []
    for row, number, when in to_pay:  # a payment made is never made again
        reference, errorcode = payer.pay(row, number)
        claims.append((number, row.id, when, today, reference, errorcode, row.baseamount))
        report.payment(reference, errorcode, caught_up=when < today)
    payer.write()
    job.store.each_row(conn, _CLAIM, claims)
    # The SUBSCRIPTION record's `subscriptionnumber` is read from `nextnumber` (subscriptions.RECORD_VIEWS).
    job.store.each_row(conn, _MOVE, moves)
    return len(to_pay)


# A batch's writes, each one statement per row on SQLite (executemany), one over arrays on PostgreSQL.
_SET_PARENT = Sql(
    sqlite="UPDATE subscriptions SET parent = ?, next_due_date = ? WHERE id = ?",
    postgresql="UPDATE subscriptions s SET parent = v.parent, next_due_date = v.due "
    "FROM unnest(?::text[], ?::text[], ?::bigint[]) AS v(parent, due, id) WHERE s.id = v.id",
)
_CLAIM = Sql(
    sqlite="INSERT INTO subscription_payments (number, subscription_id, duedate, madedate, "
    "transactionreference, errorcode, baseamount) VALUES (?, ?, ?, ?, ?, ?, ?)",
    postgresql="INSERT INTO subscription_payments (number, subscription_id, duedate, madedate, "
    "transactionreference, errorcode, baseamount) "
    "SELECT * FROM unnest(?::bigint[], ?::bigint[], ?::text[], ?::text[], ?::text[], ?::text[], ?::text[])",
)
_MOVE = Sql(
    sqlite="UPDATE subscriptions SET nextnumber = ?, next_due_date = ? WHERE id = ?",
    postgresql="UPDATE subscriptions s SET nextnumber = v.number, next_due_date = v.due "
    "FROM unnest(?::bigint[], ?::text[], ?::bigint[]) AS v(number, due, id) WHERE s.id = v.id",
)


@lru_cache(maxsize=16384)  # a day's subscriptions share few schedules; each is asked for every payment
def _due_of(
    begindate: str, frequency: int, firstnumber: int, finalnumber: int, unit: str, number: int
) -> str | None:
    """Plan.due_of for a schedule as a subscription row holds it."""
    plan = Plan(
        date.fromisoformat(begindate), frequency, firstnumber, finalnumber, number, "1", SETTLED, unit
    )
    return plan.due_of(number)


def _already_made(conn: Connection, wanted: list[tuple[int, int]]) -> set[tuple[int, int]]:
    """Which (number, subscription id) of `wanted` already have a payment (none, unless a bug): the
    pairs, sent as one JSON list, joined to the primary key, one lookup each."""
    if not wanted:
        return set()
    return {
        (number, subscription_id) for number, subscription_id in conn.execute(_MADE, (json.dumps(wanted),))
    }


# Each pair looked up by the primary key: SQLite's CROSS JOIN fixes the order; on PostgreSQL a subquery
# per pair does (its planner chose a scan of the whole table for `number IN (...) AND subscription_id
# IN (...)`, and may for a join).
_MADE = Sql(
    sqlite="SELECT p.number, p.subscription_id FROM json_each(?) AS v CROSS JOIN subscription_payments p "
    "ON p.number = v.value ->> 0 AND p.subscription_id = v.value ->> 1",
    postgresql="SELECT number, subscription_id FROM (SELECT (v ->> 0)::bigint AS number, "
    "(v ->> 1)::bigint AS subscription_id FROM json_array_elements(?::json) AS v) AS wanted WHERE "
    "(SELECT true FROM subscription_payments p WHERE p.number = wanted.number "
    "AND p.subscription_id = wanted.subscription_id)",
)


# What differs between two payments of one subscription: the day's fields and the payment's own.
# The rest of a payment's record, the bank's decision for its amount and card included, is the same
# for all of a subscription's payments in a run, and made once (`PreparedPayment`); made again when
# a column it comes from changed (an update between two days) or its card expired meanwhile.
PER_DAY = ("transactionstartedtimestamp", "settleduedate")
PER_PAYMENT = ("transactionreference", "subscriptionnumber", "authcode")  # an authcode only where drawn
OPEN = (*PER_DAY, *PER_PAYMENT)  # the order `PreparedPayment.row` takes their values in


class Payer:
    """Makes the payments of one batch, made on `day` at 00:00:00: their rows wait in `rows`
    until `write` keeps them in the batch's transaction."""

    def __init__(self, job: JobContext, conn: Connection, day: date, references: list[str]):
        self.job, self.conn, self.now = job, conn, datetime.combine(day, time())
        self.cards: dict[int, tuple[str, str]] = job.cache.setdefault(
            "subscription_cards", {}
        )  # decrypted once
        self.prepared: dict[int, tuple[tuple, PreparedPayment]] = job.cache.setdefault(
            "subscription_payments", {}
        )
        self.rows: dict[tuple[str, ...], list[tuple[Any, ...]]] = {}  # by the record's columns
        self._references = iter(references)
        self._authcodes = iter(
            acquirer.new_authcodes(len(references))
        )  # drawn at once; a decline's go unused
        self._contexts: dict[str, Context] = {}
        self._expired: dict[str, bool] = {}  # by expiry date
        # PER_DAY, as payments.payment_record sets them for a payment made at `now`
        self.day_fields = (self.now.strftime(TIMESTAMP), settle_due_date(self.now))

    def pay(self, row: Due, number: int) -> tuple[str, str]:
        """Make payment `number` of the subscription `row`; its reference and errorcode."""
        prepared = self._prepared(row)
        reference = next(self._references)
        authcode = next(self._authcodes) if prepared.draws_authcode else None
        self.rows.setdefault(prepared.columns, []).append(
            prepared.row((*self.day_fields, reference, str(number), authcode))
        )
        return reference, prepared.errorcode

    def write(self) -> None:
        for columns, rows in self.rows.items():
            self.job.store.add_transaction_rows(self.conn, columns, rows)

    def _prepared(self, row: Due) -> PreparedPayment:
        pan, expirydate = self._card(row.card_id)
        expired_now = self._expired.get(expirydate)
        if expired_now is None:
            expired_now = self._expired[expirydate] = expired(expirydate, self.now.date())
        key = (row[_PAID_WITH], expired_now)  # the row's columns its payments' record is made from
        made = self.prepared.get(row.id)
        if made is None or made[0] != key:
            card = Card(
                pan,
                expirydate,
                card_id=row.card_id,
                parent=row.transactionreference,
                details=json.loads(row.details) if row.details != "{}" else {},
            )
            made = self.prepared[row.id] = (key, self._prepare(row, card))
        return made[1]

    def _prepare(self, row: Due, card: Card) -> PreparedPayment:
        ctx = self._context(row.sitereference)
        request = {
            "sitereference": row.sitereference,
            "baseamount": row.baseamount,
            "currencyiso3a": row.currencyiso3a,
            "accounttypedescription": "RECUR",
            "orderreference": row.orderreference,
        }
        # An expired card is declined by the bank, not refused. The per-payment fields are filled in by `pay`.
        record = payment_record(ctx, request, card, str, extra={"subscriptionnumber": ""}, check_expiry=False)
        return PreparedPayment(record, card.card_id, kept_details(card, request))

    def _card(self, card_id: int) -> tuple[str, str]:
        """A subscription's card (pan, expiry date), decrypted once per run."""
        cached = self.cards.get(card_id)
        if cached is None:
            stored = self.job.store.card(self.conn, card_id)
            cached = self.cards[card_id] = (stored["pan"], stored["expirydate"])
        return cached

    def _context(self, site: str) -> Context:
        ctx = self._contexts.get(site)
        if ctx is None:
            accounts = self.job.accounts.values()
            account = account_for_site(accounts, site) or next(iter(accounts))
            ctx = self._contexts[site] = Context(
                self.job.store, self.job.tables, self.conn, account, self.now
            )
        return ctx


class PreparedPayment:
    """A subscription's payment record, made once with its PER_DAY and PER_PAYMENT fields left open;
    `row` fills them in and lays the record out as a row of `transactions` (`Store.add_transaction_rows`)."""

    def __init__(self, record: dict[str, Any], card_id: int | None, details: dict[str, Any]):
        self.errorcode = record["errorcode"]
        self.draws_authcode = self.errorcode == "0"  # acquirer.decide draws an authorised payment's authcode
        opened = [name for name in OPEN if name in record and (name != "authcode" or self.draws_authcode)]
        marked = {**record, **{name: _MARK + name for name in opened}}
        self.columns, values = transaction_row(marked, card_id, details)
        # The record's JSON as a %-template, cut where the open fields' values go.
        pieces = re.split(f'"{_MARK}(\\w+)"', values[-2])
        self._json = "%s".join(piece.replace("%", "%%") for piece in pieces[0::2])
        self._json_fields = _picker([OPEN.index(name) for name in pieces[1::2]])
        # A row is picked from the made record's values followed by the open fields' and the JSON.
        self._values = tuple(values)
        after = len(values)
        self._pick = _picker(
            [after + OPEN.index(column) if column in opened else i for i, column in enumerate(self.columns)]
            + [len(self.columns), after + len(OPEN), len(values) - 1]
        )

    def row(self, fields: tuple[str | None, ...]) -> tuple[Any, ...]:
        """The row of the payment whose open fields (in the order of OPEN) are `fields`."""
        record = self._json % tuple(map(json_string, self._json_fields(fields)))
        return self._pick((*self._values, *fields, record))


def _picker(indexes: list[int]) -> Callable[[tuple], tuple]:
    """What takes the items at `indexes` of a tuple, as a tuple (itemgetter's answer for one is no tuple)."""
    if len(indexes) == 1:
        (index,) = indexes
        return lambda items: (items[index],)
    return itemgetter(*indexes)


_MARK = f"open-{secrets.token_hex(8)}-"  # in no value a record holds


class EngineReport:
    """What one day's run did, with references; `Gateway.advance` merges the days."""

    def __init__(self) -> None:
        self.payments: list[str] = []
        self.declined: list[str] = []
        self.caught_up: list[str] = []
        self.stopped: list[str] = []
        self.started: list[str] = []

    def payment(self, reference: str, errorcode: str, *, caught_up: bool) -> None:
        self.payments.append(reference)
        if errorcode != "0":
            self.declined.append(reference)
        if caught_up:
            self.caught_up.append(reference)

    def as_dict(self) -> dict[str, Any]:
        return {
            "made": len(self.payments),
            "declined": len(self.declined),
            "caught_up": len(self.caught_up),
            "stopped": len(self.stopped),
            "started": len(self.started),
            "payments": self.payments,
            "declined_payments": self.declined,
            "caught_up_payments": self.caught_up,
            "stopped_subscriptions": self.stopped,
            "started_subscriptions": self.started,
        }


def next_payment_day(job: JobContext, day: date) -> date | None:
    """The first day from `day` on whose run starts or pays a subscription: `day` if a parent AUTH has
    settled, else the earliest next due date (one indexed read instead of a run per idle day)."""
    conn = job.store.connection()
    if _settled_parents(conn, job.sites_json):
        return day
    (earliest,) = conn.execute(
        OF_SITES.map(lambda of: f"SELECT MIN(next_due_date) FROM subscriptions WHERE {of}"), (job.sites_json,)
    ).fetchone()
    return None if earliest is None else max(day, day_of(earliest))


DAILY_JOBS = (DailyJob(JOB_NAME, 20, run_subscriptions, next_payment_day),)
