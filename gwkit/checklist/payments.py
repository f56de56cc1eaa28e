"""Which payment an exchange belongs to, and what the exchanges of one payment show.

A payment is known by its key: the `orderreference` the application sent, or without one a
fingerprint of the masked card number, the amount and the currency. A key of neither kind is None:
a verdict on such a payment is advisory, since its later requests cannot be told from another
payment's. What the application did after the outcome (a query, a cancel, a new AUTH) is read
from the masked exchanges the proxy kept.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from ..interface.masking import mask_pan
from ..proxy import ProxyExchange
from ..proxy.answers import objects_of, types_of

PAYING = frozenset({"AUTH", "THREEDQUERY"})  # the request types that begin (or retry) a payment


@dataclass(frozen=True)
class PaymentKey:
    """`orderreference` "order-7", or `fingerprint` "411111######1111 1050 GBP"."""

    kind: str
    value: str

    def __str__(self) -> str:
        return f"{self.kind} {self.value!r}"


def key_of(obj: Mapping[str, Any]) -> PaymentKey | None:
    """The key of one request object: its orderreference, else its card, amount and currency."""
    order = obj.get("orderreference")
    if isinstance(order, str) and order:
        return PaymentKey("orderreference", order)
    pan, amount, currency = obj.get("pan"), obj.get("baseamount"), obj.get("currencyiso3a")
    if all(isinstance(part, str) and part for part in (pan, amount, currency)):
        return PaymentKey("fingerprint", f"{mask_pan(str(pan))} {amount} {currency}")
    return None


def paying_key(sent: Any) -> tuple[bool, PaymentKey | None]:
    """Does this envelope begin or retry a payment (an AUTH or a THREEDQUERY), and under which key."""
    for obj in objects_of(sent):
        if PAYING & set(types_of(obj)):
            return True, key_of(obj)
    return False, None


def types(exchange: ProxyExchange) -> set[str]:
    return {t for obj in objects_of(exchange.request) for t in types_of(obj)}


def pays(exchange: ProxyExchange) -> bool:
    return "AUTH" in types(exchange)


def with_3ds(exchange: ProxyExchange) -> bool:
    """An AUTH that carries 3-D Secure: a THREEDQUERY in the same object, or its results."""
    for obj in objects_of(exchange.request):
        found = set(types_of(obj))
        if "AUTH" in found and (
            "THREEDQUERY" in found or any(obj.get(name) for name in ("threedresponse", "pares", "md"))
        ):
            return True
    return False


def _mapping(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def queried_orders(obj: Mapping[str, Any]) -> set[str]:
    """The order references a TRANSACTIONQUERY's filter names."""
    wanted = _mapping(obj.get("filter")).get("orderreference")
    return {f["value"] for f in wanted or () if isinstance(f, dict) and isinstance(f.get("value"), str)}


def named_references(obj: Mapping[str, Any]) -> set[str]:
    """The transaction references a request names: its parent, or its filter's."""
    named = (
        {obj["parenttransactionreference"]}
        if isinstance(obj.get("parenttransactionreference"), str)
        else set()
    )
    wanted = _mapping(obj.get("filter"))
    for item in wanted.get("transactionreference") or ():
        if isinstance(item, dict) and isinstance(item.get("value"), str):
            named.add(item["value"])
    return named


def answered_references(exchange: ProxyExchange) -> set[str]:
    """The transaction references in an answer: its records', and those a query found."""
    found: set[str] = set()
    for record in exchange.records:
        for each in [record, *(r for r in record.get("records") or () if isinstance(r, Mapping))]:
            if isinstance(each.get("transactionreference"), str) and each["transactionreference"]:
                found.add(each["transactionreference"])
    return found


def query_found_payment(exchange: ProxyExchange) -> bool | None:
    """What a TRANSACTIONQUERY answered: True when it found an AUTH that was made (errorcode 0, not
    cancelled), False when it found none, None when it failed (no answer, an error record)."""
    for record in exchange.records:
        if record.get("requesttypedescription") != "TRANSACTIONQUERY":
            continue
        if str(record.get("errorcode")) != "0":
            return None
        made = [
            r
            for r in record.get("records") or ()
            if isinstance(r, Mapping)
            and r.get("requesttypedescription") == "AUTH"
            and str(r.get("errorcode")) == "0"
            and str(r.get("settlestatus")) != "3"
        ]
        return bool(made)
    return None


def cancels(exchange: ProxyExchange) -> bool:
    """A TRANSACTIONUPDATE setting settlestatus 3 (the payment cancelled)."""
    for obj in objects_of(exchange.request):
        updates = _mapping(obj.get("updates"))
        if "TRANSACTIONUPDATE" in types_of(obj) and str(updates.get("settlestatus")) == "3":
            return True
    return False


@dataclass
class Payment:
    """One payment's exchanges, gathered by its key and the transaction references it was answered."""

    key: PaymentKey | None
    exchanges: list[ProxyExchange] = field(default_factory=list)
    references: set[str] = field(default_factory=set)
    # What the sandbox's ACS saw of each THREEDQUERY (by its transactionreference), read when the AUTH
    # after it came: the browser's part, which the proxy never sees. Empty when the upstream is no sandbox.
    acs: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    # The URL notifications of each AUTH (by its transactionreference) from the step's rule, read once
    # the AUTH was answered; `rule_refused`: why the step's rule could not be added, if it could not.
    deliveries: Mapping[str, list[dict[str, Any]]] = field(default_factory=dict)
    rule_refused: str | None = None

    def gather(self, exchanges: Iterable[ProxyExchange]) -> Payment:
        """This payment's exchanges among `exchanges` (in order); without a key, every paying one."""
        for exchange in exchanges:
            if self.owns(exchange):
                self.exchanges.append(exchange)
                self.references |= answered_references(exchange)
        return self

    def owns(self, exchange: ProxyExchange) -> bool:
        for obj in objects_of(exchange.request):
            if self.key is None:
                if PAYING & set(types_of(obj)) and key_of(obj) is None:
                    return True
                continue
            if key_of(obj) == self.key and PAYING & set(types_of(obj)):
                return True
            if self.key.kind == "orderreference" and self.key.value in queried_orders(obj):
                return True
            if named_references(obj) & self.references:
                return True
        return False
