"""Reconciliation: after an unknown outcome, find out whether the payment exists and in which state.

    try:
        gw.auth(orderreference="order-42", ...)
    except gwkit.TransportError as error:          # a timeout, a lost connection, a 5xx ...
        result = reconcile(gw, orderreference="order-42")
    result.exists, result.state, result.summary

After `60010`, `60034` and `99999`, or when no answer came at all, the final status is not known:
the request may or may not have been processed. The merchant must look before trying again, and
this is the looking: one TRANSACTIONQUERY. It never sends a payment.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from .interface.codes import CANCELLED, SETTLE_STATUSES, explain, record_ok
from .protocols import GatewayClient
from .querying import newest_first, query_answer
from .response import Record

# What a record's state means for the money.
NOT_FOUND = "not found: no transaction was made, it is safe to try again"
DECLINED = "declined: no money moved"
AUTHORISED = "authorised, waiting to settle"
SETTLED = "settled: the money moved"
CANCELLED_STATE = "cancelled: no money will move"
SUSPENDED = "suspended: settles only when released"
UNKNOWN = "made, but its final status is still unknown: ask the gateway's support"


@dataclass(frozen=True)
class Reconciliation:
    """What the gateway holds for one order (or one transaction reference)."""

    orderreference: str | None
    transactionreference: str | None
    records: list[Record] = field(default_factory=list)

    @property
    def exists(self) -> bool:
        return bool(self.payments)

    @property
    def payments(self) -> list[Record]:
        """The AUTH records found (a query also returns other request types of the order)."""
        return [r for r in self.records if r.get("requesttypedescription") in (None, "AUTH")]

    @property
    def state(self) -> str:
        """The latest payment's state in words (see the module's constants)."""
        if not self.payments:
            return NOT_FOUND
        return state_of(self.payments[0])

    @property
    def paid(self) -> bool:
        """True when a payment was authorised and is not cancelled (settled or on its way)."""
        return any(record_ok(r) for r in self.payments)

    @property
    def summary(self) -> str:
        what = (
            f"order {self.orderreference}"
            if self.orderreference
            else f"transaction {self.transactionreference}"
        )
        if not self.payments:
            return f"{what}: {NOT_FOUND}"
        latest = self.payments[0]
        many = (
            f" ({len(self.payments)} payments found: check for duplicates)" if len(self.payments) > 1 else ""
        )
        return f"{what}: {latest.get('transactionreference')} {self.state}{many}"

    def __str__(self) -> str:
        return self.summary


def state_of(record: Mapping[str, Any]) -> str:
    code = explain(record.get("errorcode"))
    if code.unknown_outcome:
        return UNKNOWN
    if not code.ok:
        return DECLINED
    status = str(record.get("settlestatus", ""))
    if status == CANCELLED:
        return CANCELLED_STATE
    if status == "100":
        return SETTLED
    if status == "2":
        return SUSPENDED
    return AUTHORISED if status in SETTLE_STATUSES else f"authorised, settlestatus {status or 'not given'}"


def reconcile(
    client: GatewayClient,
    *,
    orderreference: str | None = None,
    transactionreference: str | None = None,
    exchange: Any = None,
) -> Reconciliation:
    """Query the gateway for the payment an order, a transaction reference or a failed exchange made.

    `exchange` is a `gwkit.Exchange` or journal entry whose answer was lost or unknown: its
    request's `orderreference` is looked up. Never re-sends anything but a TRANSACTIONQUERY."""
    if exchange is not None and orderreference is None and transactionreference is None:
        orderreference = _orderreference_of(exchange.request)
    if not (orderreference or transactionreference):
        raise ValueError(
            "give orderreference or transactionreference (or an exchange whose request has an "
            "orderreference): without one the payment cannot be found"
        )
    filters = {"orderreference": orderreference} if orderreference else {}
    if transactionreference:
        filters["transactionreference"] = transactionreference
    records = sorted(query_answer(client, filters).query_records, key=newest_first, reverse=True)
    return Reconciliation(orderreference, transactionreference, records)


def _orderreference_of(envelope: Any) -> str | None:
    objects = envelope.get("request") if isinstance(envelope, Mapping) else None
    for obj in objects if isinstance(objects, list) else []:
        if isinstance(obj, Mapping) and obj.get("orderreference"):
            return str(obj["orderreference"])
    return None
