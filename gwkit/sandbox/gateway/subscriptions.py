"""AUTH SUBSCRIPTION (interface 2.3, 2.5, 3.1, 4.2) and TRANSACTIONUPDATE of a SUBSCRIPTION.

The combined request makes the first payment at once (an AUTH through the shared payment path)
and answers a SUBSCRIPTION record, which is kept in `transactions` like every record, plus one
row of the engine's own `subscriptions` table. The engine (engine.py) makes the later payments.

Numbers. The AUTH is payment `subscriptionnumber` as sent (1 for a new series, 4 to continue one
that had 3 payments). The SUBSCRIPTION record answers one higher: the number of the next payment,
the first automated one, due on `subscriptionbegindate`. Payment `n` is due
`(n - first) * frequency` units (`subscriptionunit` MONTH, or DAY as the official clients' tests
send) after the begin date (`schedule.due_date`), always counted from the begin date; months are
clamped to the last day of short months, so a schedule anchored on the 31st returns to the 31st. The engine
pays numbers up to `subscriptionfinalnumber` (0: no end) and raises the subscription's `nextnumber`
by one per payment; the record's `subscriptionnumber` is that counter (`RECORD_VIEWS`: read with
the record, not written into it per payment), so it always names the next payment.

When the engine may pay (`next_due_date` is set only then):
- `transactionactive` 1: at once, once the AUTH succeeded (settled or not);
- `transactionactive` 2 (pending, the default): once the AUTH has settled (`settlestatus` 100);
- `transactionactive` 0: never, until changed;
- never when the AUTH failed (declined, bank error): such a subscription is kept and answered
  with `transactionactive` as sent, so the caller sees it, but nothing can start it, and a
  TRANSACTIONUPDATE of it is refused with 60017 (like an update of a cancelled AUTH);
- never past `subscriptionfinalnumber`.
Payments whose date passed while the subscription could not run (pending until settlement,
suspended, stopped at its final number) are caught up by the next daily run: no number is ever
skipped, each is made once.

SUBSCRIPTION on its own (what the official clients send after an ACCOUNTCHECK) names its parent
by `parenttransactionreference`, or takes the record just before it in the same request object or
envelope (core.py, chains.py). The parent must exist (else 20004), must not be a SUBSCRIPTION
(20032), must be an AUTH or an ACCOUNTCHECK (else 30000 naming the field) and must have succeeded
(20019). The amount and currency are the request's, else the parent's (an ACCOUNTCHECK's 0 is no
amount: 30000 `baseamount`). gwkit's choices where the facts are silent:
- an AUTH parent was payment `subscriptionnumber`, as in the combined request; after an
  ACCOUNTCHECK no payment was made, so the first automated payment is `subscriptionnumber` itself;
- without `subscriptionbegindate` the first automated payment is due one interval after today
  (AUTH parent) or today, paid by the next daily run (ACCOUNTCHECK parent);
- an ACCOUNTCHECK parent has nothing to settle: `transactionactive` 2 runs at once, as 1;
- `subscriptiontype` INSTALLMENT (sent by the official clients' tests) is scheduled as RECURRING
  is, but must end: `subscriptionfinalnumber` 0 is refused (30000), when sent and by update.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from datetime import date
from typing import Any, NamedTuple

from ...interface.codes import record_ok
from ...interface.requests import AUTH_SUBSCRIPTION
from ...interface.schedule import MONTH, due_date
from .context import Context
from .payments import authorise, resolve_card
from .refusal import Refusal, invalid_field
from .sql import Sql, in_json_list
from .store import Connection, Row, record_of

SCHEMA = Sql(
    sqlite="""
CREATE TABLE IF NOT EXISTS subscriptions (
    id INTEGER PRIMARY KEY,
    transactionreference TEXT NOT NULL UNIQUE,  -- the SUBSCRIPTION record
    authreference TEXT NOT NULL,                -- its parent AUTH, the first payment
    sitereference TEXT NOT NULL,
    card_id INTEGER NOT NULL REFERENCES cards(id),
    details TEXT NOT NULL DEFAULT '{}',         -- billing details the payments inherit
    orderreference TEXT,
    currencyiso3a TEXT NOT NULL,
    baseamount TEXT NOT NULL,                   -- of the payments still to come
    begindate TEXT NOT NULL,                    -- YYYY-MM-DD, due date of firstnumber
    frequency INTEGER NOT NULL,                 -- units between payments
    unit TEXT NOT NULL DEFAULT 'MONTH',         -- MONTH or DAY
    firstnumber INTEGER NOT NULL,               -- number of the first automated payment
    finalnumber INTEGER NOT NULL,               -- 0: no end
    nextnumber INTEGER NOT NULL,                -- the next payment to make
    active TEXT NOT NULL,                       -- transactionactive 0, 1, 2
    parent TEXT NOT NULL,                       -- the AUTH: authorised, settled or failed
    next_due_date TEXT                          -- set only while the engine may pay
);
CREATE INDEX IF NOT EXISTS subscriptions_due ON subscriptions (next_due_date)
    WHERE next_due_date IS NOT NULL;
CREATE INDEX IF NOT EXISTS subscriptions_unsettled ON subscriptions (authreference)
    WHERE parent = 'authorised';
CREATE TABLE IF NOT EXISTS subscription_payments (
    number INTEGER NOT NULL,                    -- first in the key: a day's payments land close together
    subscription_id INTEGER NOT NULL REFERENCES subscriptions(id),
    duedate TEXT NOT NULL,
    madedate TEXT NOT NULL,
    transactionreference TEXT NOT NULL,
    errorcode TEXT NOT NULL,
    baseamount TEXT NOT NULL,
    PRIMARY KEY (number, subscription_id)       -- each payment of a series exists once
) WITHOUT ROWID;
""",
    postgresql="""
CREATE TABLE IF NOT EXISTS subscriptions (
    id BIGINT GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY,
    transactionreference TEXT COLLATE "C" NOT NULL UNIQUE,
    authreference TEXT COLLATE "C" NOT NULL,
    sitereference TEXT COLLATE "C" NOT NULL,
    card_id BIGINT NOT NULL REFERENCES cards(id) DEFERRABLE,
    details TEXT COLLATE "C" NOT NULL DEFAULT '{}',
    orderreference TEXT COLLATE "C",
    currencyiso3a TEXT COLLATE "C" NOT NULL,
    baseamount TEXT COLLATE "C" NOT NULL,
    begindate TEXT COLLATE "C" NOT NULL,
    frequency BIGINT NOT NULL,
    unit TEXT COLLATE "C" NOT NULL DEFAULT 'MONTH',
    firstnumber BIGINT NOT NULL,
    finalnumber BIGINT NOT NULL,
    nextnumber BIGINT NOT NULL,
    active TEXT COLLATE "C" NOT NULL,
    parent TEXT COLLATE "C" NOT NULL,
    next_due_date TEXT COLLATE "C"
);
CREATE INDEX IF NOT EXISTS subscriptions_due ON subscriptions (next_due_date)
    WHERE next_due_date IS NOT NULL;
CREATE INDEX IF NOT EXISTS subscriptions_unsettled ON subscriptions (authreference)
    WHERE parent = 'authorised';
CREATE TABLE IF NOT EXISTS subscription_payments (
    number BIGINT NOT NULL,
    subscription_id BIGINT NOT NULL REFERENCES subscriptions(id) DEFERRABLE,
    duedate TEXT COLLATE "C" NOT NULL,
    madedate TEXT COLLATE "C" NOT NULL,
    transactionreference TEXT COLLATE "C" NOT NULL,
    errorcode TEXT COLLATE "C" NOT NULL,
    baseamount TEXT COLLATE "C" NOT NULL,
    PRIMARY KEY (number, subscription_id)
);
""",
)

INSTALLMENT = "INSTALLMENT"  # scheduled as RECURRING is, but never without an end (final number 0)
ADDED_COLUMNS = (("subscriptions", "unit", "TEXT NOT NULL DEFAULT 'MONTH'"),)
# Parent AUTH states.
AUTHORISED, SETTLED, FAILED = "authorised", "settled", "failed"
DEFAULT_ACTIVE = "2"
UPDATABLE = ("baseamount", "subscriptionfinalnumber", "transactionactive", "subscriptionfrequency")
NOT_UPDATABLE = Refusal(60017)


class Plan(NamedTuple):
    """What decides whether and when the engine pays a subscription next (a tuple: the engine
    makes one per subscription and payment)."""

    begindate: date
    frequency: int
    firstnumber: int
    finalnumber: int
    nextnumber: int
    active: str
    parent: str
    unit: str = MONTH

    @classmethod
    def of(cls, row: Mapping[str, Any], **changes: Any) -> Plan:
        plan = cls(
            date.fromisoformat(row["begindate"]),
            row["frequency"],
            row["firstnumber"],
            row["finalnumber"],
            row["nextnumber"],
            row["active"],
            row["parent"],
            row["unit"],
        )
        return plan._replace(**changes) if changes else plan

    @property
    def may_run(self) -> bool:
        if self.parent == FAILED or self.active == "0":
            return False
        return self.active == "1" or self.parent == SETTLED

    def next_due(self) -> str | None:
        """`next_due_date`: the date of the next payment while the engine may make it."""
        return self.due_of(self.nextnumber) if self.may_run else None

    def due_of(self, number: int) -> str | None:
        """The due date of payment `number`, or None past the final number or the calendar (year 9999)."""
        if self.finalnumber != 0 and number > self.finalnumber:
            return None
        try:
            return due_date(self.begindate, self.frequency, self.firstnumber, number, self.unit).isoformat()
        except OverflowError:
            return None


# -- AUTH + SUBSCRIPTION ----------------------------------------------------------------------


def handle_auth_subscription(ctx: Context, request: dict[str, Any]) -> list[dict[str, Any]]:
    begin, number, final = _checked_schedule(ctx, request)
    card = resolve_card(ctx, request, AUTH_SUBSCRIPTION.select(request).name)
    auth = authorise(ctx, request, card, extra={"credentialsonfile": request["credentialsonfile"]})
    auth_row = ctx.store.transaction(ctx.conn, auth["transactionreference"])
    failed = not record_ok(record_of(auth_row))  # what was kept: a 60034 answer hides a payment made
    record = _start(ctx, request, auth, auth_row, begin, number + 1, final, FAILED if failed else AUTHORISED)
    return [auth, record]


def handle_subscription(ctx: Context, request: dict[str, Any]) -> list[dict[str, Any]]:
    """SUBSCRIPTION on its own, from a successful AUTH or ACCOUNTCHECK parent."""
    row = ctx.store.transaction(ctx.conn, request["parenttransactionreference"], ctx.sites)
    if row is None:
        raise Refusal(20004, ["parenttransactionreference"])
    kind = row["requesttypedescription"]
    if kind == "SUBSCRIPTION":
        raise Refusal(20032, ["parenttransactionreference"])
    if kind not in ("AUTH", "ACCOUNTCHECK"):
        raise invalid_field("parenttransactionreference")
    parent = record_of(row)
    if not record_ok(parent):
        raise Refusal(20019, ["parenttransactionreference"])
    amount = request.get("baseamount") or (
        parent.get("baseamount") if parent.get("baseamount") != "0" else None
    )
    currency = request.get("currencyiso3a") or parent.get("currencyiso3a")
    missing = [name for name, value in (("baseamount", amount), ("currencyiso3a", currency)) if not value]
    if missing:
        raise invalid_field(*missing)
    frequency = int(request["subscriptionfrequency"])
    first_begin = (
        ctx.now.date()
        if kind == "ACCOUNTCHECK"
        else due_date(ctx.now.date(), frequency, 1, 2, request["subscriptionunit"])
    )
    begin, number, final = _checked_schedule(
        ctx,
        {**request, "subscriptionbegindate": request.get("subscriptionbegindate") or first_begin.isoformat()},
    )
    state = SETTLED if kind == "ACCOUNTCHECK" or row["settlestatus"] == "100" else AUTHORISED
    lent = {**parent, "baseamount": amount, "currencyiso3a": currency}
    sent = {
        **request,
        "subscriptionbegindate": begin.isoformat(),
        "orderreference": request.get("orderreference") or parent.get("orderreference"),
    }
    return [
        _start(ctx, sent, lent, row, begin, number if kind == "ACCOUNTCHECK" else number + 1, final, state)
    ]


def _start(
    ctx: Context,
    request: Mapping[str, Any],
    parent: Mapping[str, Any],
    parent_row: Row,
    begin: date,
    first: int,
    final: int,
    state: str,
) -> dict[str, Any]:
    """Keep the SUBSCRIPTION record and the engine's row; the record as answered."""
    record = subscription_record(ctx, request, parent, first)
    ctx.store.add_transaction(
        ctx.conn, record, card_id=parent_row["card_id"], details=json.loads(parent_row["details"])
    )
    plan = Plan(
        begin,
        int(request["subscriptionfrequency"]),
        first,
        final,
        first,
        record["transactionactive"],
        state,
        request["subscriptionunit"],
    )
    ctx.conn.execute(
        "INSERT INTO subscriptions (transactionreference, authreference, sitereference, card_id, details, "
        "orderreference, currencyiso3a, baseamount, begindate, frequency, unit, firstnumber, finalnumber, "
        "nextnumber, active, parent, next_due_date) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        (
            record["transactionreference"],
            parent["transactionreference"],
            record["sitereference"],
            parent_row["card_id"],
            parent_row["details"],
            record.get("orderreference"),
            record["currencyiso3a"],
            record["baseamount"],
            begin.isoformat(),
            plan.frequency,
            plan.unit,
            plan.firstnumber,
            final,
            plan.nextnumber,
            plan.active,
            plan.parent,
            plan.next_due(),
        ),
    )
    return record


def _checked_schedule(ctx: Context, request: Mapping[str, Any]) -> tuple[date, int, int]:
    """The begin date, the number sent and the final number, checked against each other."""
    begin = date.fromisoformat(request["subscriptionbegindate"])
    if begin < ctx.now.date():  # the schedule starts today at the earliest
        raise invalid_field("subscriptionbegindate")
    number, final = int(request["subscriptionnumber"]), int(request["subscriptionfinalnumber"])
    if final != 0 and final < number:  # the last payment cannot come before this first one
        raise invalid_field("subscriptionfinalnumber")
    if final == 0 and request["subscriptiontype"] == INSTALLMENT:  # instalments pay off an amount: they end
        raise invalid_field("subscriptionfinalnumber")
    return begin, number, final


def subscription_record(
    ctx: Context, request: Mapping[str, Any], auth: Mapping[str, Any], next_number: int
) -> dict[str, Any]:
    """The SUBSCRIPTION record of 2.5, in its field order (plus `sitereference`, as every record)."""
    begin = request["subscriptionbegindate"]
    record: dict[str, Any] = {
        "transactionstartedtimestamp": f"{begin} 00:00:00",  # the scheduled start
        "parenttransactionreference": auth["transactionreference"],
        "livestatus": "0",
        "errorcode": "0",
        "errormessage": "Ok",
        **({"orderreference": request["orderreference"]} if request.get("orderreference") else {}),
        "subscriptionfinalnumber": str(int(request["subscriptionfinalnumber"])),
        "subscriptionunit": request["subscriptionunit"],
        "subscriptiontype": request["subscriptiontype"],
        "subscriptionfrequency": str(int(request["subscriptionfrequency"])),
        "subscriptionnumber": str(next_number),
        "subscriptionbegindate": begin,
        "transactionreference": ctx.new_reference(),
        "paymenttypedescription": auth.get("paymenttypedescription"),
        "transactionactive": request.get("transactionactive") or DEFAULT_ACTIVE,
        "baseamount": auth["baseamount"],
        "currencyiso3a": auth["currencyiso3a"],
        "accounttypedescription": "RECUR",
        "requesttypedescription": "SUBSCRIPTION",
        "maskedpan": auth["maskedpan"],
        "operatorname": ctx.account.username,
        "sitereference": auth["sitereference"],
    }
    return record


# -- TRANSACTIONUPDATE ------------------------------------------------------------------------


def update_subscription(ctx: Context, row: Row, updates: Mapping[str, str]) -> dict[str, str]:
    """Amount of the payments to come, final number, active state, interval; nothing else.

    A new `subscriptionfrequency` applies from the next payment on: it stays due when it was, and
    the payments after it follow the new interval (the schedule is anchored there afresh)."""
    refused = [name for name in updates if name not in UPDATABLE]
    if refused:
        raise invalid_field(*refused)
    sub = ctx.conn.execute(
        "SELECT * FROM subscriptions WHERE transactionreference = ?", (row["transactionreference"],)
    ).fetchone()
    if sub is None or sub["parent"] == FAILED:
        raise NOT_UPDATABLE
    changes = _checked_updates(sub, updates)
    if (
        changes.get("subscriptionfinalnumber") == "0"
        and record_of(row).get("subscriptiontype") == INSTALLMENT
    ):
        raise invalid_field("subscriptionfinalnumber")
    plan = Plan.of(
        sub,
        finalnumber=int(changes.get("subscriptionfinalnumber", sub["finalnumber"])),
        active=changes.get("transactionactive", sub["active"]),
        parent=parent_state(ctx.conn, sub),
    )
    if "subscriptionfrequency" in changes:
        plan = _reanchored(plan, int(changes["subscriptionfrequency"]))
    ctx.conn.execute(
        "UPDATE subscriptions SET baseamount = ?, finalnumber = ?, active = ?, parent = ?, next_due_date = ?, "
        "begindate = ?, frequency = ?, firstnumber = ? WHERE id = ?",
        (
            changes.get("baseamount", sub["baseamount"]),
            plan.finalnumber,
            plan.active,
            plan.parent,
            plan.next_due(),
            plan.begindate.isoformat(),
            plan.frequency,
            plan.firstnumber,
            sub["id"],
        ),
    )
    return changes


def _reanchored(plan: Plan, frequency: int) -> Plan:
    """The plan with a new interval from its next payment on (that payment keeps its due date)."""
    try:
        next_due = due_date(plan.begindate, plan.frequency, plan.firstnumber, plan.nextnumber, plan.unit)
    except OverflowError:
        raise invalid_field("subscriptionfrequency") from None
    return plan._replace(begindate=next_due, frequency=frequency, firstnumber=plan.nextnumber)


def parent_state(conn: Connection, sub: Mapping[str, Any]) -> str:
    """The parent AUTH's state now (settlement may have happened outside a daily run)."""
    if sub["parent"] != AUTHORISED:
        return sub["parent"]
    (status,) = conn.execute(
        "SELECT settlestatus FROM transactions WHERE transactionreference = ?", (sub["authreference"],)
    ).fetchone()
    return SETTLED if status == "100" else AUTHORISED


def _checked_updates(sub: Row, updates: Mapping[str, str]) -> dict[str, str]:
    """The changes to make. Each value has passed the spec's rules already (the gateway validates
    `updates` with gwkit.interface); what is left is the subscription's own rule on the final number."""
    changes = {
        name: str(int(value)) if name != "transactionactive" else value for name, value in updates.items()
    }
    final = changes.get("subscriptionfinalnumber")
    if final is not None and int(final) != 0 and int(final) < sub["nextnumber"] - 1:
        raise invalid_field("subscriptionfinalnumber")  # below payments already made: they cannot be undone
    return changes


# -- reading a SUBSCRIPTION record ------------------------------------------------------------


def with_next_numbers(conn: Connection, records: list[dict[str, Any]]) -> None:
    """Set each SUBSCRIPTION record's `subscriptionnumber` to the next payment's, the engine's counter.

    The stored record keeps the number it was answered with: rewriting the record at every payment
    cost the engine about as much as writing the payment itself."""
    references = json.dumps([record["transactionreference"] for record in records])
    numbers = dict(
        conn.execute(
            in_json_list("transactionreference").map(
                lambda listed: f"SELECT transactionreference, nextnumber FROM subscriptions WHERE {listed}"
            ),
            (references,),
        )
    )
    for record in records:
        number = numbers.get(record["transactionreference"])
        if number is not None:
            record["subscriptionnumber"] = str(number)


REQUEST_HANDLERS = {"AUTH+SUBSCRIPTION": handle_auth_subscription, "SUBSCRIPTION": handle_subscription}
UPDATE_RULES = {"SUBSCRIPTION": update_subscription}
RECORD_VIEWS = {"SUBSCRIPTION": with_next_numbers}
