"""Two months of a shop's payments on a sandbox, like those a support and finance analyst reports on.

    refs = gwkit.report.sample.sample_activity(gw)   # gw: a connection to a sandbox; moves its clock ~2 months

GBP and EUR payments with customers' names and emails, a decline, a bank error (outcome unknown), a
declined card, full and partial refunds (one of a subscription payment), a lowered settle amount, a cancel, a suspended settlement,
subscriptions (three that pay, one declining from its second payment, one suspended, one in EUR)
and one payment still awaiting settlement at the end. Notebook 07 and the report tests read it.
Answers the transaction references by name ("chloe", "declined", "sub-declining", ...).
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import timedelta
from typing import Any

from ..interface.schedule import add_months
from ..interface.testcards import test_cards
from ..subscription import Subscription

CUSTOMERS = {
    "chloe": {"billingfirstname": "Chloé", "billinglastname": "Dubois", "billingemail": "chloe@example.com"},
    "sam": {"billingfirstname": "Sam", "billinglastname": "-Lee", "billingemail": "sam.lee@example.com"},
    "ana": {"billingfirstname": "Ana", "billinglastname": "O’Neil", "billingemail": "ana@example.org"},
    "jean": {"billingfirstname": "Jean", "billinglastname": "Martin", "billingemail": "jean@example.fr"},
    "bob": {"billingfirstname": "Bob", "billinglastname": "Smith", "billingemail": "bob@example.com"},
}
# (name, amount in base units, currency, customer) of each subscription
SUBSCRIPTIONS = (
    ("gym1", 999, "GBP", "chloe"),
    ("gym2", 999, "GBP", "sam"),
    ("gym3", 1999, "GBP", "ana"),
    ("declining", 2500, "GBP", "bob"),
    ("leaving", 1500, "GBP", "bob"),
    ("euro", 1499, "EUR", "jean"),
)


def card(paymenttype: str, outcome: str) -> str:
    """A test card of this type that is not enrolled in 3-D Secure (version 1's table, so that the
    EMV 3-D Secure cards change no story) and has this outcome."""
    return next(
        c.pan
        for c in test_cards().values()
        if c.paymenttypedescription == paymenttype
        and c.enrolled == "N"
        and not c.emv3ds
        and c.outcome == outcome
    )


class _Shop:
    def __init__(self, gw: Any, orders: Mapping[str, str]):
        self.gw, self.orders = gw, orders
        self.refs: dict[str, str] = {}
        self.subscriptions: dict[str, Subscription] = {}
        self.expiry = f"12/{gw.sandbox.now().year + 3}"

    def pay(self, name: str, baseamount: int, customer: str, *, pan: str | None = None, **fields: Any) -> str:
        record = self.gw.auth(
            accounttypedescription="ECOM",
            baseamount=baseamount,
            pan=pan or card("VISA", "authorised"),
            expirydate=self.expiry,
            securitycode="123",
            orderreference=self.orders.get(name, f"ord-{name}"),
            **CUSTOMERS[customer],
            **fields,
        ).record
        self.refs[name] = record["transactionreference"]
        return str(record["transactionreference"])

    def update(self, name: str, **updates: Any) -> None:
        self.gw.transaction_update(transactionreference=self.refs[name], updates=updates).raise_for_errors()

    def refund(self, name: str, **amount: Any) -> None:
        self.gw.refund(self.refs[name], **amount).raise_for_errors()


def sample_activity(gw: Any, *, orders: Mapping[str, str] | None = None) -> dict[str, str]:
    """Make the sample on `gw`'s sandbox from its clock's day (see the module); `orders` names the
    order reference of some payments (default `ord-<name>`). Answers the references by name; the
    subscriptions are under "sub-<name>", their sign-up payments under "signup-<name>"."""
    if getattr(gw, "sandbox", None) is None:
        raise ValueError(
            "gw: sample_activity makes payments and moves the clock: it needs a sandbox connection"
        )
    shop = _Shop(gw, {"chloe": "00123", "ana": "18-9-17", **(orders or {})})
    clock = gw.sandbox
    start = clock.now().replace(hour=9, minute=0, second=0, microsecond=0)
    shop.pay("chloe", 1050, "chloe")
    shop.pay("sam", 2599, "sam")
    shop.pay("ana", 4999, "ana", pan=card("MASTERCARDDEBIT", "authorised"))
    shop.pay("declined", 70000, "bob")  # the test bank declines this amount
    shop.pay("unknown", 60010, "bob")  # and fails on this one: outcome unknown
    shop.pay("declined_card", 1200, "bob", pan=card("VISA", "declined"))
    shop.pay("jean", 2499, "jean", currencyiso3a="EUR")
    shop.pay("jean2", 10000, "jean", currencyiso3a="EUR")
    clock.advance(by="P1D")  # the first day's payments settle at its end
    shop.refund("chloe")  # in full
    shop.refund("sam", baseamount=599)  # in part
    shop.pay("lowered", 12000, "ana")
    shop.update("lowered", settlebaseamount=10000)
    shop.pay("cancelled", 3000, "bob")
    shop.update("cancelled", settlestatus=3)
    shop.pay("suspended", 1500, "chloe")
    shop.update("suspended", settlestatus=2)
    shop.pay("jean3", 5000, "jean", currencyiso3a="EUR")
    begin = (start + timedelta(days=5)).date()
    for name, amount, currency, customer in SUBSCRIPTIONS:
        sub = Subscription.create(
            gw,
            baseamount=amount,
            currencyiso3a=currency,
            orderreference=f"sub-{name}",
            pan=card("VISA", "authorised"),
            expirydate=shop.expiry,
            securitycode="123",
            subscriptionbegindate=begin.isoformat(),
            subscriptionfrequency=1,
            subscriptionfinalnumber=0,
            transactionactive=1,
            **CUSTOMERS[customer],
        )
        shop.subscriptions[name] = sub
        shop.refs[f"sub-{name}"] = sub.reference
        if sub.auth is not None:
            shop.refs[f"signup-{name}"] = str(sub.auth["transactionreference"])
    clock.advance(by="P1D")
    shop.refund("sam", baseamount=1000)  # a second part
    shop.refund("jean", baseamount=499)  # EUR, in part
    clock.advance(to=f"{begin + timedelta(days=1)}T09:00:00")  # every subscription's first automated payment
    shop.subscriptions["declining"].set_amount(70000)  # declined from now on
    gym = shop.subscriptions["gym1"]
    gym.refund_payment(gym.first_number, baseamount=250)  # part of a subscription payment given back
    clock.advance(to=f"{add_months(begin, 1) + timedelta(days=1)}T09:00:00")  # the second
    shop.subscriptions["leaving"].suspend()
    clock.advance(to=f"{(start + timedelta(days=59)).date()}T09:00:00")
    shop.pay("waiting", 2000, "ana")  # still awaiting settlement at the end
    return shop.refs
