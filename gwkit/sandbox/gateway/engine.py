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
import sqlite3
from datetime import date, datetime, time
from json.encoder import encode_basestring_ascii as json_string
from operator import itemgetter
from typing import Any

from ...interface.cards import expired
from ...interface.wire import TIMESTAMP
from . import acquirer
from .accounts import account_for_site
from .context import Context, DailyJob, JobContext
from .payments import Card, kept_details, payment_record, settle_due_date
from .store import transaction_row
from .subscriptions import SETTLED, Plan

BATCH_SIZE = 500  # subscriptions per write transaction
JOB_NAME = "subscriptions"

_OF_SITES = "sitereference IN (SELECT value FROM json_each(?))"
_DUE = f"SELECT * FROM subscriptions WHERE next_due_date <= ? AND {_OF_SITES} ORDER BY next_due_date, id LIMIT ?"


def run_subscriptions(job: JobContext, day: date) -> dict[str, Any]:
    report = EngineReport()
    today = day.isoformat()
    sites = job.sites_json
    # Asked without taking the write lock (unless the shared write is already open): idle days write nothing.
    if _settled_parents(job.store.connection(), sites):
        report.started = start_settled(job.writes.conn, sites)
    total = _due_count(job.store.connection(), today, sites)
    done = 0
    while total:
        conn = job.writes.conn  # what is due is read again under the lock
        rows = conn.execute(_DUE, (today, sites, BATCH_SIZE)).fetchall()
        if not rows:
            break
        job.writes.wrote(pay_batch(job, conn, rows, day, report))
        done += len(rows)
        if job.progress is not None:
            job.progress(f"{JOB_NAME} {today}", done, max(total, done))
        job.writes.commit_if_full()  # a batch is whole: its payments, claims and counters
    return report.as_dict()


# Subscriptions first, then their AUTH by its unique reference (CROSS JOIN fixes that order);
# the literal 'authorised' lets SQLite use the partial index.
_SETTLED_PARENTS = (
    "FROM subscriptions s CROSS JOIN transactions t ON t.transactionreference = s.authreference "
    "WHERE s.parent = 'authorised' AND t.settlestatus = '100' AND s." + _OF_SITES)


def _settled_parents(conn: sqlite3.Connection, sites: str) -> bool:
    return conn.execute(f"SELECT EXISTS (SELECT 1 {_SETTLED_PARENTS})", (sites,)).fetchone()[0] == 1


def _due_count(conn: sqlite3.Connection, today: str, sites: str) -> int:
    return conn.execute(f"SELECT COUNT(*) FROM subscriptions WHERE next_due_date <= ? AND {_OF_SITES}",
                        (today, sites)).fetchone()[0]


def start_settled(conn: sqlite3.Connection, sites: str) -> list[str]:
    """Mark subscriptions of `sites` (JSON list) whose AUTH has settled; pending ones get their next due date."""
    rows = conn.execute(f"SELECT s.* {_SETTLED_PARENTS}", (sites,)).fetchall()
    updates, started = [], []
    for row in rows:
        due = Plan.of(row, parent=SETTLED).next_due()
        updates.append((SETTLED, due, row["id"]))
        if due is not None and row["next_due_date"] is None:
            started.append(row["transactionreference"])
    conn.executemany("UPDATE subscriptions SET parent = ?, next_due_date = ? WHERE id = ?", updates)
    return started


def pay_batch(job: JobContext, conn: sqlite3.Connection, rows: list[sqlite3.Row], day: date,
              report: "EngineReport") -> int:
    """Make every payment of `rows` due by `day`, inside the caller's write transaction; how many."""
    today = day.isoformat()
    due: list[tuple[sqlite3.Row, int, str]] = []  # (subscription, number, due date), oldest first
    moves = []
    for row in rows:
        plan = Plan.of(row)
        number, when = plan.nextnumber, row["next_due_date"]
        while when is not None and when <= today:
            due.append((row, number, when))
            number += 1
            when = plan.due_of(number)
        if when is None:
            report.stopped.append(row["transactionreference"])
        moves.append((number, when, row["id"]))
    made = _already_made(conn, [(number, row["id"]) for row, number, _ in due])
    to_pay = [(row, number, when) for row, number, when in due if (number, row["id"]) not in made]
    payer = Payer(job, conn, day, job.store.reserve_references(conn, len(to_pay)))
    claims = []
    for row, number, when in to_pay:  # a payment made is never made again
        reference, errorcode = payer.pay(row, number)
        claims.append((number, row["id"], when, today, reference, errorcode, row["baseamount"]))
        report.payment(reference, errorcode, caught_up=when < today)
    payer.write()
    conn.executemany("INSERT INTO subscription_payments (number, subscription_id, duedate, madedate, "
                     "transactionreference, errorcode, baseamount) VALUES (?, ?, ?, ?, ?, ?, ?)", claims)
    # The SUBSCRIPTION record's `subscriptionnumber` is read from `nextnumber` (subscriptions.RECORD_VIEWS).
    conn.executemany("UPDATE subscriptions SET nextnumber = ?, next_due_date = ? WHERE id = ?", moves)
    return len(to_pay)


def _already_made(conn: sqlite3.Connection, wanted: list[tuple[int, int]]) -> set[tuple[int, int]]:
    """Which (number, subscription id) of `wanted` already have a payment (none, unless a bug).

    Asked as `number IN (...) AND subscription_id IN (...)`, which the primary key answers by lookups
    (a batch has few distinct numbers), then narrowed to the pairs wanted."""
    pairs = set(wanted)
    numbers = sorted({number for number, _ in pairs})
    ids = sorted({subscription_id for _, subscription_id in pairs})
    found: set[tuple[int, int]] = set()
    for start in range(0, len(ids), 900):  # within SQLite's limit on parameters
        chunk = ids[start:start + 900]
        found.update((number, subscription_id) for number, subscription_id in conn.execute(
            f"SELECT number, subscription_id FROM subscription_payments WHERE number IN "
            f"({', '.join('?' * len(numbers))}) AND subscription_id IN ({', '.join('?' * len(chunk))})",
            [*numbers, *chunk]))
    return found & pairs


# What differs between two payments of one subscription: the day's fields and the payment's own.
# The rest of a payment's record, the bank's decision for its amount and card included, is the same
# for all of a subscription's payments in a run, and made once (`PreparedPayment`); made again when
# a column it comes from changed (an update between two days) or its card expired meanwhile.
PER_DAY = ("transactionstartedtimestamp", "settleduedate")
PER_PAYMENT = ("transactionreference", "subscriptionnumber", "authcode")  # an authcode only where drawn


class Payer:
    """Makes the payments of one batch, made on `day` at 00:00:00: their rows wait in `rows`
    until `write` keeps them in the batch's transaction."""

    def __init__(self, job: JobContext, conn: sqlite3.Connection, day: date, references: list[str]):
        self.job, self.conn, self.now = job, conn, datetime.combine(day, time())
        self.cards: dict[int, tuple[str, str]] = job.cache.setdefault("subscription_cards", {})  # decrypted once
        self.prepared: dict[int, tuple[tuple, PreparedPayment]] = job.cache.setdefault("subscription_payments", {})
        self.rows: dict[tuple[str, ...], list[list[Any]]] = {}  # by the record's columns
        self._references = iter(references)
        self._contexts: dict[str, Context] = {}
        self._expired: dict[str, bool] = {}  # by expiry date
        # PER_DAY, as payments.payment_record sets them for a payment made at `now`
        self.day_fields = {"transactionstartedtimestamp": self.now.strftime(TIMESTAMP),
                           "settleduedate": settle_due_date(self.now)}

    def pay(self, row: sqlite3.Row, number: int) -> tuple[str, str]:
        """Make payment `number` of the subscription `row`; its reference and errorcode."""
        prepared = self._prepared(row)
        reference = next(self._references)
        fields = {**self.day_fields, "transactionreference": reference, "subscriptionnumber": str(number)}
        if prepared.draws_authcode:
            fields["authcode"] = acquirer.new_authcode()
        self.rows.setdefault(prepared.columns, []).append(prepared.row(fields))
        return reference, prepared.errorcode

    def write(self) -> None:
        for columns, rows in self.rows.items():
            self.job.store.add_transaction_rows(self.conn, columns, rows)

    def _prepared(self, row: sqlite3.Row) -> "PreparedPayment":
        pan, expirydate = self._card(row["card_id"])
        expired_now = self._expired.get(expirydate)
        if expired_now is None:
            expired_now = self._expired[expirydate] = expired(expirydate, self.now.date())
        key = (_paid_with(row), expired_now)
        made = self.prepared.get(row["id"])
        if made is None or made[0] != key:
            card = Card(pan, expirydate, card_id=row["card_id"], parent=row["transactionreference"],
                        details=json.loads(row["details"]) if row["details"] != "{}" else {})
            made = self.prepared[row["id"]] = (key, self._prepare(row, card))
        return made[1]

    def _prepare(self, row: sqlite3.Row, card: Card) -> "PreparedPayment":
        ctx = self._context(row["sitereference"])
        request = {"sitereference": row["sitereference"], "baseamount": row["baseamount"],
                   "currencyiso3a": row["currencyiso3a"], "accounttypedescription": "RECUR",
                   "orderreference": row["orderreference"]}
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
            ctx = self._contexts[site] = Context(self.job.store, self.job.tables, self.conn, account, self.now)
        return ctx


_PAID_WITH = ("sitereference", "baseamount", "currencyiso3a", "orderreference", "card_id", "details",
              "transactionreference")


_paid_with = itemgetter(*_PAID_WITH)  # a row's columns its payments' record is made from


class PreparedPayment:
    """A subscription's payment record, made once with its PER_DAY and PER_PAYMENT fields left open;
    `row` fills them in and lays the record out as a row of `transactions` (`Store.add_transaction_rows`)."""

    def __init__(self, record: dict[str, Any], card_id: int | None, details: dict[str, Any]):
        self.errorcode = record["errorcode"]
        self.draws_authcode = self.errorcode == "0"  # acquirer.decide draws an authorised payment's authcode
        self._open = [name for name in (*PER_DAY, *PER_PAYMENT)
                      if name in record and (name != "authcode" or self.draws_authcode)]
        marked = {**record, **{name: _MARK + name for name in self._open}}
        self.columns, self._values = transaction_row(marked, card_id, details)
        self._slots = [(i, c) for i, c in enumerate(self.columns) if c in self._open]
        # The record's JSON cut where the open fields' values go: [text, name, text, name, ..., text].
        self._json = re.split(f'"{_MARK}(\\w+)"', self._values[-2])
        self._json_slots = [(i, self._json[i]) for i in range(1, len(self._json), 2)]

    def row(self, fields: dict[str, str]) -> list[Any]:
        """The row of the payment whose open fields are `fields`."""
        values, pieces = self._values.copy(), self._json.copy()
        for index, name in self._slots:
            values[index] = fields[name]
        for index, name in self._json_slots:
            pieces[index] = json_string(fields[name])
        values[-2] = "".join(pieces)
        return values


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
        return {"made": len(self.payments), "declined": len(self.declined), "caught_up": len(self.caught_up),
                "stopped": len(self.stopped), "started": len(self.started),
                "payments": self.payments, "declined_payments": self.declined,
                "caught_up_payments": self.caught_up, "stopped_subscriptions": self.stopped,
                "started_subscriptions": self.started}


DAILY_JOBS = (DailyJob(JOB_NAME, 20, run_subscriptions),)
