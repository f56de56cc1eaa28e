"""Authorisation: the shared path of every payment the sandbox makes.

AUTH requests of every variant, the AUTH of AUTH SUBSCRIPTION and the subscription engine's
payments all come here: find the card (from the request, a parent record, a cachetoken or a
3-D Secure session), check it, ask the test acquirer, answer and keep the record.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from functools import cached_property, lru_cache
from typing import Any

from ...interface.cards import expired, scheme_of
from ...interface.fields import BILLING_FIELDS
from ...interface.masking import mask_pan
from . import acquirer
from .context import Context
from .refusal import Refusal, invalid_field
from .store import Row, details_of

MERCHANT = {
    "merchantname": "gwkit sandbox merchant",
    "merchantnumber": "00000000",
    "merchantcountryiso2a": "GB",
    "tid": "27882788",
}
# Fields a payment takes from its parent when the request does not carry them.
INHERITABLE = ("baseamount", "currencyiso3a", "accounttypedescription", "orderreference")


@dataclass
class Card:
    """A card a payment will use, wherever it came from. Never logged: see `__repr__`."""

    pan: str
    expirydate: str
    securitycode: str | None = None
    card_id: int | None = None  # an already stored card row
    details: dict[str, Any] = field(default_factory=dict)  # billing and names, inherited by children
    inherited: dict[str, str] = field(default_factory=dict)  # INHERITABLE fields from a parent
    parent: str | None = None
    extra: dict[str, str] = field(default_factory=dict)  # fields added to the record (3-D Secure ...)
    outcome: dict[str, str] | None = None  # decided before the bank, e.g. 60022 Unauthenticated
    threeds_authenticated: bool = False
    security_checked: str | None = None  # the THREEDQUERY's security code check (never the code)

    def __repr__(self) -> str:
        return f"Card({mask_pan(self.pan)}, parent={self.parent!r})"

    @cached_property
    def paymenttype(self) -> str | None:  # a subscription's card pays many times in one run
        scheme = scheme_of(self.pan)
        return scheme.code if scheme else None

    @cached_property
    def maskedpan(self) -> str:
        return mask_pan(self.pan)

    @cached_property
    def issuer(self) -> dict[str, str]:
        """`issuer` and `issuercountryiso2a`, as the test acquirer names them."""
        return acquirer.issuer_fields(self.pan)


def billing_details(request: Mapping[str, Any]) -> dict[str, Any]:
    """The billing fields a request carries: kept in `details`, lent to children."""
    return {k: request[k] for k in BILLING_FIELDS if k in request}


def resolve_card(ctx: Context, request: Mapping[str, Any], variant: str) -> Card:
    source = ctx.tables.card_sources.get(variant)
    if source is None:
        raise Refusal(60018, [variant])
    return source(ctx, request)


def card_from_fields(ctx: Context, request: Mapping[str, Any]) -> Card:
    return Card(
        request["pan"], request["expirydate"], request.get("securitycode"), details=billing_details(request)
    )


def card_from_parent(ctx: Context, request: Mapping[str, Any]) -> Card:
    return lent_card(ctx, ctx.find(request.get("parenttransactionreference")), request)


def lent_card(ctx: Context, row: Row, request: Mapping[str, Any]) -> Card:
    """The card a parent record lends, by the parent rule of its request type."""
    rule = ctx.tables.parent_rules.get(row["requesttypedescription"], inherit_card)
    return rule(ctx, row, request)


def inherit_card(ctx: Context, row: Row, request: Mapping[str, Any]) -> Card:
    """The default parent rule: a successful record that holds a card lends it."""
    if row["card_id"] is None or row["errorcode"] != "0":
        raise invalid_field("parenttransactionreference")
    return load_card(
        ctx,
        row["card_id"],
        request.get("securitycode"),
        details=details_of(row),
        parent=row["transactionreference"],
    )


def load_card(ctx: Context, card_id: int, securitycode: str | None = None, **fields: Any) -> Card:
    """A card the sandbox holds (row `card_id` of `cards`), decrypted for a payment."""
    stored = ctx.store.card(ctx.conn, card_id)
    return Card(stored["pan"], stored["expirydate"], securitycode, card_id=card_id, **fields)


@lru_cache(maxsize=64)  # the engine makes a day's payments at one `now`
def settle_due_date(now: datetime) -> str:
    """A record is due to settle on the day it is made, at that day's end (see settlement.py)."""
    return now.date().isoformat()


def authorise(
    ctx: Context,
    request: Mapping[str, Any],
    card: Card,
    *,
    requesttype: str = "AUTH",
    extra: Mapping[str, str] | None = None,
    check_expiry: bool = True,
    takes_money: bool = True,
) -> dict[str, Any]:
    """Make the payment (or, with `takes_money` False, an ACCOUNTCHECK of the card), keep its record,
    and return the record as answered."""
    record = payment_record(
        ctx,
        request,
        card,
        ctx.new_reference,
        requesttype=requesttype,
        extra=extra,
        check_expiry=check_expiry,
        takes_money=takes_money,
    )
    card_id = card.card_id or ctx.store.card_for(
        ctx.conn, card.pan, card.expirydate, record["paymenttypedescription"]
    )
    ctx.keep(record, card_id=card_id, details=kept_details(card, request))
    return {**record, **acquirer.answered_outcome(record["baseamount"], record)}


def kept_details(card: Card, request: Mapping[str, Any]) -> dict[str, Any]:
    """The details a payment's record keeps: its card's, and the billing fields of its request."""
    return {**card.details, **billing_details(request)}


def payment_record(
    ctx: Context,
    request: Mapping[str, Any],
    card: Card,
    new_reference: Callable[[], str],
    *,
    requesttype: str = "AUTH",
    extra: Mapping[str, str] | None = None,
    check_expiry: bool = True,
    takes_money: bool = True,
) -> dict[str, Any]:
    """The record of a payment made now, with the bank's decision, as `authorise` keeps it; nothing kept yet.
    Its reference is drawn (`new_reference`) only once the request is known to be good."""
    fields: dict[str, Any] = {name: request.get(name) or card.inherited.get(name) for name in INHERITABLE}
    if not takes_money:
        fields["baseamount"] = fields["baseamount"] or "0"
    missing = [n for n in ("baseamount", "currencyiso3a", "accounttypedescription") if not fields[n]]
    if missing:
        raise invalid_field(*missing)
    if (
        takes_money
        and card.paymenttype == "MAESTRO"
        and fields["accounttypedescription"] == "ECOM"
        and not card.threeds_authenticated
        and card.outcome is None
    ):
        # Interface 4.3: every e-commerce Maestro transaction must use 3-D Secure. The code is gwkit's
        # choice (not shown): refused, nothing kept, the bank not contacted.
        raise Refusal(60022, ["md", "pares"])
    paymenttype = card.paymenttype
    if paymenttype is None:  # Luhn-valid, but of no scheme the gateway supports
        raise invalid_field("pan")
    is_expired = expired(card.expirydate, ctx.now.date())
    if is_expired and check_expiry:
        raise invalid_field("expirydate")
    exempt = bool(card.extra.get("enrolled")) or fields["accounttypedescription"] in ("MOTO", "RECUR")
    outcome = card.outcome or (
        acquirer.decline()
        if is_expired
        else acquirer.decide(
            card.pan,
            fields["baseamount"],
            card.securitycode,
            strong_auth_exempt=exempt or not takes_money,
            billing={**card.details, **billing_details(request)},
            security_checked=card.security_checked,
        )
    )
    record: dict[str, Any] = {
        "transactionstartedtimestamp": ctx.timestamp,
        "livestatus": "0",
        **card.issuer,
        # captured: on AUTH records, never on an ACCOUNTCHECK's (none of 44 captured has it)
        **({"splitfinalnumber": "1"} if takes_money else {}),
        "dccenabled": "0",
        "settleduedate": settle_due_date(ctx.now),
        **MERCHANT,
        "baseamount": fields["baseamount"],
        "transactionreference": new_reference(),
        "paymenttypedescription": paymenttype,
        "accounttypedescription": fields["accounttypedescription"],
        "requesttypedescription": requesttype,
        "currencyiso3a": fields["currencyiso3a"],
        "operatorname": ctx.account.username,
        "maskedpan": card.maskedpan,
        "sitereference": request.get("sitereference") or ctx.sites[0],
        **({"orderreference": fields["orderreference"]} if fields["orderreference"] else {}),
        **({"parenttransactionreference": card.parent} if card.parent else {}),
        **({"credentialsonfile": request["credentialsonfile"]} if request.get("credentialsonfile") else {}),
        **outcome,
        **card.extra,
        **(extra or {}),
    }
    return record


CARD_SOURCES = {"card": card_from_fields, "parent": card_from_parent}
