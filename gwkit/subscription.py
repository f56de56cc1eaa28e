"""`Subscription`: one AUTH SUBSCRIPTION series, handled through the gateway's own requests.

    sub = Subscription.create(gw, baseamount=1050, orderreference="gym-42", pan="4111111111111111",
                              expirydate="12/2030", securitycode="123", subscriptionfrequency=1,
                              subscriptionfinalnumber=12, subscriptionbegindate="2026-02-01")
    sub.auth.ok, sub.state           # the first payment; "pending" until the AUTH settles
    sub.set_amount(1500)             # later payments only
    sub.suspend(); sub.activate()    # transactionactive 0, then 1
    sub.set_final_number(24)         # a stopped subscription resumes
    sub.payments()                   # the automated payments (TRANSACTIONQUERY on the parent reference)
    sub.schedule(periods=6)          # the projected next payments, one dict each

It works against the real gateway as against the sandbox: it only sends AUTH SUBSCRIPTION,
TRANSACTIONQUERY and TRANSACTIONUPDATE requests. Due dates follow `gwkit.interface.schedule`;
`gwkit.report.subscriptions` turns payments and schedules into DataFrames.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from datetime import date
from typing import Any

from .errors import GatewayError
from .interface.codes import record_ok
from .interface.schedule import MONTH, payment_dates
from .protocols import GatewayClient
from .querying import query_answer, query_paged
from .response import Record

__all__ = ["Subscription", "SubscriptionError", "fetch_subscriptions", "subscription_state"]

# States a subscription can be in (derived from its records; the gateway only has transactionactive).
PENDING, SCHEDULED, SUSPENDED, STOPPED, DECLINED = "pending", "scheduled", "suspended", "stopped", "declined"
STATES = (PENDING, SCHEDULED, SUSPENDED, STOPPED, DECLINED)
STATE_MEANINGS = {
    PENDING: "transactionactive 2: waits for the first payment (the AUTH) to settle",
    SCHEDULED: "payments are made on their due dates",
    SUSPENDED: "transactionactive 0: no payments until it is set to 1 or 2",
    STOPPED: "the final payment number was reached; raise subscriptionfinalnumber to resume",
    DECLINED: "the first payment failed, so no payment is ever made",
}
# Whether a scheduled payment will be made, by the subscription's present state.
EXPECTED = {
    SCHEDULED: "yes",
    PENDING: "once the first payment settles",
    SUSPENDED: "not while suspended",
    STOPPED: "no",
    DECLINED: "never",
}
CREATE_DEFAULTS = {
    "accounttypedescription": "ECOM",
    "subscriptiontype": "RECURRING",
    "subscriptionunit": "MONTH",
    "subscriptionnumber": "1",
    "credentialsonfile": "1",
}


class SubscriptionError(GatewayError):
    """The gateway refused a subscription request (the message carries its error code and fields)."""


def subscription_state(record: Mapping[str, Any], auth: Mapping[str, Any] | None) -> str:
    """The state of a SUBSCRIPTION record, given its parent AUTH record (None: not known)."""
    if auth is not None and not record_ok(auth):
        return DECLINED
    active = str(record.get("transactionactive", "2"))
    if active == "0":
        return SUSPENDED
    final, upcoming = (
        int(record.get("subscriptionfinalnumber") or 0),
        int(record.get("subscriptionnumber") or 1),
    )
    if final != 0 and upcoming > final:
        return STOPPED
    if active == "2" and (auth is None or auth.get("settlestatus") != "100"):
        return PENDING
    return SCHEDULED


# -- the helper ------------------------------------------------------------------------------


class Subscription:
    """One subscription, known by the `transactionreference` of its SUBSCRIPTION record.

    `record` is the SUBSCRIPTION record as last fetched, `auth` its parent AUTH record (the first
    payment). Every method sends a request through `client` (a `gwkit.Client`) and refreshes them.
    """

    def __init__(
        self,
        client: GatewayClient | None,
        record: Mapping[str, Any],
        auth: Mapping[str, Any] | None = None,
    ):
        self.client = client
        self.record = record if isinstance(record, Record) else Record(record)
        self.auth = None if auth is None else (auth if isinstance(auth, Record) else Record(auth))

    def __repr__(self) -> str:
        r = self.record
        return (
            f"<Subscription {self.reference} {self.state}: {r.get('baseamount')} {r.get('currencyiso3a')} "
            f"every {r.get('subscriptionfrequency')} {str(r.get('subscriptionunit', 'MONTH')).lower()}(s) from "
            f"{r.get('subscriptionbegindate')}, next payment {r.get('subscriptionnumber')} of "
            f"{r.get('subscriptionfinalnumber')} (0: no end), transactionactive {r.get('transactionactive')}>"
        )

    # creating and finding

    def require_client(self) -> GatewayClient:
        """The client this subscription sends with; one made from a record alone (a report's) has none."""
        if self.client is None:
            raise RuntimeError(
                "this Subscription was made from its record alone (for a report): give it a client, "
                "Subscription(client, record), to query or change it"
            )
        return self.client

    @classmethod
    def create(cls, client: GatewayClient, **fields: Any) -> Subscription:
        """Send AUTH SUBSCRIPTION. Raises `SubscriptionError` when the gateway refuses the request;
        a declined first payment is not an exception: check `auth.ok` and `state`, as the interface says."""
        response = client.auth_subscription(**{**CREATE_DEFAULTS, **fields})
        if (
            len(response.records) < 2
            or response.records[1].requesttype != "SUBSCRIPTION"
            or response.records[1].errorcode != 0
        ):
            failed = next((r for r in response.records if r.errorcode != 0), response.record)
            raise SubscriptionError(
                failed.errorcode,
                f"AUTH SUBSCRIPTION refused: {failed.errormessage}",
                failed.errordata,
                response.requestreference,
                failed.requesttype,
            )
        return cls(client, response.records[1], response.records[0])

    @classmethod
    def from_reference(cls, client: GatewayClient, reference: str) -> Subscription:
        """The subscription whose SUBSCRIPTION record has `reference`."""
        subscription = cls(client, {"transactionreference": reference})
        subscription.refresh()
        return subscription

    @property
    def reference(self) -> str:
        return str(self.record["transactionreference"])

    @property
    def auth_reference(self) -> str | None:
        return self.record.get("parenttransactionreference")

    def refresh(self) -> Subscription:
        """Fetch the SUBSCRIPTION record and its parent AUTH again: one TRANSACTIONQUERY naming both
        when the parent is known (after the first fetch), else one for each."""
        known_parent = self.record.get("parenttransactionreference")
        found = self._records([self.reference, known_parent] if known_parent else [self.reference])
        record = found.get(self.reference)
        if record is None or record.get("requesttypedescription") != "SUBSCRIPTION":
            raise SubscriptionError(
                30000,
                f"no SUBSCRIPTION record has transactionreference {self.reference}",
                ["transactionreference"],
            )
        self.record = record
        parent = record.get("parenttransactionreference")
        if parent:
            self.auth = (found if parent in found else self._records([parent])).get(parent)
        return self

    def _records(self, references: list[str]) -> dict[str, Record]:
        """The records of `references` (one TRANSACTIONQUERY), by reference."""
        answer = query_answer(self.require_client(), {"transactionreference": references})
        return {
            reference: r
            for r in answer.query_records
            if isinstance(reference := r.get("transactionreference"), str)
        }

    # state

    @property
    def state(self) -> str:
        """pending, scheduled, suspended, stopped or declined (see STATE_MEANINGS)."""
        return subscription_state(self.record, self.auth)

    @property
    def next_number(self) -> int:
        """The number of the next payment (the record's `subscriptionnumber`)."""
        return int(self.record.get("subscriptionnumber") or 1)

    @property
    def final_number(self) -> int:
        return int(self.record.get("subscriptionfinalnumber") or 0)

    @property
    def begin_date(self) -> date:
        return date.fromisoformat(str(self.record["subscriptionbegindate"]))

    @property
    def frequency(self) -> int:
        return int(self.record.get("subscriptionfrequency") or 1)

    @property
    def unit(self) -> str:
        """`MONTH` (the interface's) or `DAY`."""
        return str(self.record.get("subscriptionunit") or MONTH)

    # changes (TRANSACTIONUPDATE)

    def update(self, **updates: Any) -> Subscription:
        """TRANSACTIONUPDATE of `baseamount`, `subscriptionfinalnumber` and/or `transactionactive`."""
        response = self.require_client().transaction_update(
            transactionreference=self.reference, updates=updates
        )
        record = response.record
        if record.errorcode != 0:
            raise SubscriptionError(
                record.errorcode,
                f"TRANSACTIONUPDATE of {self.reference} refused: {record.errormessage}",
                record.errordata,
                response.requestreference,
                record.requesttype,
            )
        return self.refresh()

    def set_amount(self, baseamount: int | str) -> Subscription:
        """The amount of every later payment, in base units (the payments made keep theirs)."""
        return self.update(baseamount=baseamount)

    def set_final_number(self, final_number: int | str) -> Subscription:
        """The number of the last payment (0: no end); raising it resumes a stopped subscription."""
        return self.update(subscriptionfinalnumber=final_number)

    def suspend(self) -> Subscription:
        return self.update(transactionactive=0)

    def activate(self, value: int | str = 1) -> Subscription:
        """Re-enable: 1 pays at once (missed payments are caught up), 2 waits for the first payment to settle."""
        return self.update(transactionactive=value)

    # payments

    def payments(self) -> list[Record]:
        """The automated payments made so far, by number (AUTH records whose parent is this subscription)."""
        found = query_paged(
            self.require_client(),
            {"parenttransactionreference": self.reference, "requesttypedescription": "AUTH"},
        )
        return sorted(found, key=lambda r: int(r.get("subscriptionnumber") or 0))

    def refund_payment(self, number: int, baseamount: int | str | None = None) -> Record:
        """REFUND of automated payment `number` (all that is left of it without `baseamount`); the REFUND
        record. The payment must have settled, or be due to settle today, as for any AUTH."""
        made = [p for p in self.payments() if int(p.get("subscriptionnumber") or 0) == int(number)]
        if not made:
            raise SubscriptionError(
                20004, f"subscription {self.reference} has made no payment {number}", ["subscriptionnumber"]
            )
        fields: dict[str, Any] = {} if baseamount is None else {"baseamount": baseamount}
        response = self.require_client().refund(made[0]["transactionreference"], **fields)
        record = response.record
        if record.errorcode != 0:
            raise SubscriptionError(
                record.errorcode,
                f"REFUND of payment {number} of {self.reference} refused: {record.errormessage}",
                record.errordata,
                response.requestreference,
                record.requesttype,
            )
        return record

    @property
    def first_number(self) -> int:
        """The number of the first automated payment (numbers run on from it, none skipped)."""
        made = self.payments()
        return int(made[0]["subscriptionnumber"]) if made else self.refresh().next_number

    def schedule(
        self,
        periods: int = 12,
        *,
        until: date | None = None,
        payments: Sequence[Mapping[str, Any]] | None = None,
    ) -> list[dict[str, Any]]:
        """The next `periods` payments (or those due by `until`) as the engine would make them now:
        number, due date, amount, and whether it will be made (`expected`) in the present state.

        The subscription and its payments are fetched first, unless `payments` (as `payments()`
        answered them) are given: then the record as last fetched is used, with no query."""
        if payments is None:
            self.refresh()
            payments = self.payments()
        first = min((int(p.get("subscriptionnumber") or 0) for p in payments), default=self.next_number)
        dates = payment_dates(
            self.begin_date,
            self.frequency,
            first,
            self.final_number,
            start=self.next_number,
            until=until,
            limit=None if until is not None else periods,
            unit=self.unit,
        )
        expected = EXPECTED[self.state]
        return [
            {
                "number": number,
                "due_date": due,
                "baseamount": int(self.record["baseamount"]),
                "currencyiso3a": self.record.get("currencyiso3a"),
                "expected": expected,
            }
            for number, due in dates
        ]


def fetch_subscriptions(client: GatewayClient, references: Iterable[str] | None = None) -> list[Subscription]:
    """Subscriptions of the client's site: those named (in that order), or every SUBSCRIPTION record.
    Records and their parent AUTHs are fetched 100 references to a query."""
    if references is None:
        records = query_paged(client, {"requesttypedescription": "SUBSCRIPTION"})
    else:
        wanted = list(references)
        found = {
            r["transactionreference"]: r
            for chunk in _chunks(wanted, 100)
            for r in query_paged(
                client, {"transactionreference": chunk, "requesttypedescription": "SUBSCRIPTION"}
            )
        }
        missing = [r for r in wanted if r not in found]
        if missing:
            raise SubscriptionError(
                30000,
                f"no SUBSCRIPTION record has transactionreference {missing[0]}",
                ["transactionreference"],
            )
        records = [found[r] for r in wanted]
    parents = [r.get("parenttransactionreference") for r in records]
    auths = {
        r["transactionreference"]: r
        for chunk in _chunks(parents, 100)
        for r in query_paged(client, {"transactionreference": chunk})
    }
    return [Subscription(client, r, auths.get(r.get("parenttransactionreference"))) for r in records]


def _chunks(items: list[Any], size: int) -> Iterable[list[Any]]:
    items = [i for i in items if i]
    for start in range(0, len(items), size):
        yield items[start : start + size]
