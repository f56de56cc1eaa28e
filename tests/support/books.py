"""The analyst's books (a session fixture, provided by tests/report/conftest.py): two months of
payments in GBP and EUR made through the sandbox, like those a support and finance analyst reports on."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

import pytest

import gwkit.sandbox
from gwkit.config import Target
from gwkit.connect import Connection
from gwkit.journal import Journal
from gwkit.querying import query_all
from gwkit.subscription import Subscription
from support.subscriptions import VISA

BOOKS_START = datetime(2026, 1, 5, 9, 0, 0)
MASTERCARD = "5160010000000004"  # authorised; last four 0004
DECLINED_CARD = "4000000000000812"
HYPERLINK = '=HYPERLINK("http://x.example","y")'
CUSTOMERS = {
    "chloe": {"billingfirstname": "Chloé", "billinglastname": "Dubois", "billingemail": "chloe@example.com"},
    "sam": {"billingfirstname": "Sam", "billinglastname": "-Lee", "billingemail": "sam.lee@example.com"},
    "ana": {"billingfirstname": "Ana", "billinglastname": "O'Neil", "billingemail": "ana@example.org"},
    "jean": {"billingfirstname": "Jean", "billinglastname": "Martin", "billingemail": "jean@example.fr"},
    "bob": {"billingfirstname": "Bob", "billinglastname": "Smith", "billingemail": "bob@example.com"},
}


@dataclass
class Books:
    """What the analyst made: the references by name, the subscriptions, and the client and sandbox."""

    gw: Any
    sandbox: Any
    journal: Journal
    refs: dict[str, str] = field(default_factory=dict)
    subscriptions: dict[str, Subscription] = field(default_factory=dict)

    def records(self) -> list[dict[str, Any]]:
        return [dict(r) for r in query_all(self.gw, start=BOOKS_START.date(), end=self.sandbox.now().date())]


def _pay(books: Books, name: str, baseamount: int, customer: str, *, pan: str = VISA, **fields: Any) -> str:
    record = books.gw.auth(
        accounttypedescription="ECOM",
        baseamount=baseamount,
        pan=pan,
        expirydate="12/2030",
        securitycode="123",
        orderreference=fields.pop("orderreference", f"ord-{name}"),
        **CUSTOMERS[customer],
        **fields,
    ).record
    books.refs[name] = record["transactionreference"]
    return record["transactionreference"]


@pytest.fixture(scope="session")
def books(tmp_path_factory):
    """Two months from 2026-01-05: GBP and EUR payments, declines, a bank error (outcome unknown), a
    declined card, full and partial refunds, a lowered settle amount, a cancel, a suspended settlement,
    and subscriptions: three that pay, one declining from its second payment, one suspended, one in
    EUR. One payment at the end is still awaiting settlement."""
    folder = tmp_path_factory.mktemp("books")
    handle = gwkit.sandbox.start(folder / "sandbox.db", clock_start=BOOKS_START)
    target = Target("sandbox", handle.base_url, handle.username, handle.sitereference, "GBP", "test")
    journal = Journal(folder / "journal.db")  # the updates, for the one-payment view
    # a Connection, as gwkit.connect gives a notebook: it knows its sandbox, so reports read its clock
    client = Connection(target, handle.password, sandbox=handle, journal=journal)
    books = Books(client, handle, journal)
    try:
        _make(books)
        yield books
    finally:
        client.close()
        journal.close()
        handle.stop()


def _make(books: Books) -> None:
    client, clock = books.gw, books.sandbox
    # 2026-01-05
    _pay(books, "chloe", 1050, "chloe", orderreference="00123")
    _pay(books, "sam", 2599, "sam", orderreference=HYPERLINK)
    _pay(books, "ana", 4999, "ana", orderreference="18-9-17", pan=MASTERCARD)
    _pay(books, "declined", 70000, "bob")
    _pay(books, "unknown", 60010, "bob")
    _pay(books, "declined_card", 1200, "bob", pan=DECLINED_CARD)
    _pay(books, "jean", 2499, "jean", currencyiso3a="EUR")
    _pay(books, "jean2", 10000, "jean", currencyiso3a="EUR")
    clock.advance(by="P1D")  # 2026-01-06: the day's payments settled at 01-05's end
    assert client.refund(books.refs["chloe"]).ok  # in full
    assert client.refund(books.refs["sam"], baseamount=599).ok  # in part
    lowered = _pay(books, "lowered", 12000, "ana")
    assert client.transaction_update(transactionreference=lowered, updates={"settlebaseamount": 10000}).ok
    cancelled = _pay(books, "cancelled", 3000, "bob")
    assert client.transaction_update(transactionreference=cancelled, updates={"settlestatus": 3}).ok
    suspended = _pay(books, "suspended", 1500, "chloe")
    assert client.transaction_update(transactionreference=suspended, updates={"settlestatus": 2}).ok
    _pay(books, "jean3", 5000, "jean", currencyiso3a="EUR")
    subscribe = {"pan": VISA, "expirydate": "12/2030", "securitycode": "123", "subscriptionfrequency": 1}
    subscribe |= {"subscriptionfinalnumber": 0, "transactionactive": 1, "subscriptionbegindate": "2026-01-10"}
    for name, amount, currency, customer in (
        ("gym1", 999, "GBP", "chloe"),
        ("gym2", 999, "GBP", "sam"),
        ("gym3", 1999, "GBP", "ana"),
        ("declining", 2500, "GBP", "bob"),
        ("leaving", 1500, "GBP", "bob"),
        ("euro", 1499, "EUR", "jean"),
    ):
        sub = Subscription.create(
            client,
            baseamount=amount,
            currencyiso3a=currency,
            orderreference=f"sub-{name}",
            **subscribe,
            **CUSTOMERS[customer],
        )
        books.subscriptions[name] = sub
        books.refs[f"sub-{name}"] = sub.reference
    clock.advance(by="P1D")  # 2026-01-07
    assert client.refund(books.refs["sam"], baseamount=1000).ok  # a second part
    assert client.refund(books.refs["jean"], baseamount=499).ok  # EUR, in part
    clock.advance(to="2026-01-11T09:00:00")  # every subscription's first automated payment (01-10)
    books.subscriptions["declining"].set_amount(70000)  # the test bank declines it from now on
    clock.advance(to="2026-02-11T09:00:00")  # the second (02-10)
    books.subscriptions["leaving"].suspend()
    clock.advance(to="2026-03-05T09:00:00")
    _pay(books, "waiting", 2000, "ana")  # still awaiting settlement at the end
