"""Subscription runs to check exactly-once against: many monthly subscriptions made at once, and the
check that every scheduled payment exists once, on its day (on either store)."""

from __future__ import annotations

import json
from datetime import date, datetime
from pathlib import Path
from typing import Any

from gwkit.interface.schedule import payment_dates
from gwkit.sandbox import Sandbox
from gwkit.sandbox.gateway.envelopes import MAX_REQUEST_OBJECTS
from support.databases import SUBSCRIPTION_NUMBER, Database

SITE = "test_gwkit12345"
CLOCK = datetime(2026, 1, 1, 8, 0)


def subscription_request(index: int) -> dict[str, str]:
    return {
        "requesttypedescriptions": ["AUTH", "SUBSCRIPTION"],
        "sitereference": SITE,
        "accounttypedescription": "ECOM",
        "currencyiso3a": "GBP",
        "baseamount": str(1000 + index),
        "orderreference": f"once-{index}",
        "pan": "4111111111111111",
        "expirydate": "12/2030",
        "securitycode": "123",
        "subscriptiontype": "RECURRING",
        "subscriptionunit": "MONTH",
        "subscriptionfrequency": "1",
        "subscriptionnumber": "1",
        "subscriptionfinalnumber": "0",
        "subscriptionbegindate": f"2026-01-{28 + index % 4:02d}",
        "credentialsonfile": "1",
    }


def populated(db: Path | str, count: int, *, settled: bool = False) -> list[tuple[str, date]]:
    """A database with `count` pending monthly subscriptions (their references and begin dates);
    with `settled`, the clock has moved on until their first payments settled and they started."""
    sandbox = Sandbox(db, clock_start=CLOCK)
    account = sandbox.default_account
    requests = [subscription_request(i) for i in range(count)]
    records = [
        record
        for start in range(0, count, MAX_REQUEST_OBJECTS)  # at most this many in one envelope
        for record in sandbox.gateway.process(
            {"alias": account.username, "request": requests[start : start + MAX_REQUEST_OBJECTS]}, account
        )["response"]
    ]
    if settled:
        assert len(sandbox.advance(by="P2D")["subscriptions"]["started_subscriptions"]) == count
    sandbox.close()
    subs = [r for r in records if r["requesttypedescription"] == "SUBSCRIPTION"]
    assert len(subs) == count and all(r["errorcode"] == "0" for r in records)
    return [(r["transactionreference"], date.fromisoformat(r["subscriptionbegindate"])) for r in subs]


def assert_each_payment_made_once(db: Path | str, subscriptions: list[tuple[str, date]], until: date) -> int:
    """Every scheduled payment exists exactly once, on its day; nothing else was paid."""
    sandbox = Sandbox(db)
    conn = sandbox.store.connection()
    rows = conn.execute(
        SUBSCRIPTION_NUMBER.map(
            lambda number: (
                f"SELECT parenttransactionreference, {number}, "
                "substr(transactionstartedtimestamp, 1, 10) FROM transactions WHERE accounttypedescription = 'RECUR' "
                "AND requesttypedescription = 'AUTH'"
            )
        )
    ).fetchall()
    claims = conn.execute("SELECT COUNT(*) FROM subscription_payments").fetchone()[0]
    sandbox.close()
    made = sorted((parent, int(number), day) for parent, number, day in rows)
    expected = sorted(
        (reference, number, due.isoformat())
        for reference, begin in subscriptions
        for number, due in payment_dates(begin, 1, 2, 0, until=until)
    )
    assert len(made) == len(set(made)), "a payment was made twice"
    assert made == expected
    assert claims == len(expected)
    return len(made)


def assert_whole_days_committed(db: Path | str, subscriptions: list[tuple[str, date]]) -> date:
    """On disk, without running the unfinished days: every payment due by the last day the engine marked
    done exists once, with its claim; later days may be partly paid (a big day commits batch by batch),
    never past their due date. The day marked done."""
    database = Database(db)
    through = date.fromisoformat(
        database.value(
            "SELECT through FROM site_jobs WHERE job = 'subscriptions' AND sitereference = ?", (SITE,)
        )
        or database.value("SELECT value FROM meta WHERE key = 'job:subscriptions:through'")
    )
    made = sorted(
        (parent, int(_json(record)["subscriptionnumber"]), day)
        for parent, record, day in database.rows(
            "SELECT parenttransactionreference, record, substr(transactionstartedtimestamp, 1, 10) FROM transactions "
            "WHERE accounttypedescription = 'RECUR' AND requesttypedescription = 'AUTH'"
        )
    )
    claims = database.value("SELECT COUNT(*) FROM subscription_payments")
    due_by_mark = {
        (reference, number, due.isoformat())
        for reference, begin in subscriptions
        for number, due in payment_dates(begin, 1, 2, 0, until=through)
    }
    assert len(made) == len(set(made)), "a payment was made twice"
    assert due_by_mark <= set(made), "a day marked done misses payments"
    assert claims == len(made), "a payment without its claim, or a claim without its payment"
    return through


def committed_payments(db: Path | str) -> int:
    """Payments on disk, read without opening a Sandbox (which would run the unfinished days)."""
    return Database(db).value(
        "SELECT COUNT(*) FROM transactions WHERE accounttypedescription = 'RECUR' "
        "AND requesttypedescription = 'AUTH'"
    )


def _json(value: Any) -> dict[str, Any]:
    return json.loads(value) if isinstance(value, str) else value  # PostgreSQL may hand back JSON decoded
