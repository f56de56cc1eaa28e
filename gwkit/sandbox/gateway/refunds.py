"""REFUND: money back to the card of an AUTH, or to a card with no parent (a standalone CFT refund).

The rules and codes are the real service's (real-gateway-facts.md, "More error codes"):
- the parent must exist on the request's site (20004 Missing parent),
- it must be an AUTH (20006): a subscription's payments are AUTHs, so each can be refunded,
- it must not have failed (20011: a decline, a bank error or an unauthenticated 3-D AUTH moved no money),
- it must have settled, or be due to settle today (20005),
- the refunds of one AUTH together may not exceed what it settles for (20007); without `baseamount`
  a refund takes all that is left,
- the currency is the parent's (20015 when another is sent).

A refund is a record of its own (`requesttypedescription` REFUND, `parenttransactionreference` the
AUTH) and settles like an AUTH: `settlestatus` 0, settled by the daily run on its `settleduedate`.
The test acquirer always accepts a refund (gwkit's choice: see docs/sandbox.md, known differences).
"""

from __future__ import annotations

import secrets
from collections.abc import Mapping
from typing import Any

from ...interface.cards import expired, scheme_of
from ...interface.masking import mask_pan
from ...interface.requests import REFUND
from . import acquirer
from .context import Context
from .payments import MERCHANT, billing_details, settle_due_date
from .refunded import refunded_so_far
from .refusal import Refusal, invalid_field
from .store import Row, details_of, record_of
from .update import update_auth

SETTLED = "100"
# What a refund of an AUTH answers of its parent's card (never the card itself).
_CARD_FIELDS = ("paymenttypedescription", "maskedpan", "issuer", "issuercountryiso2a")


def handle_refund(ctx: Context, request: dict[str, Any]) -> list[dict[str, Any]]:
    if REFUND.select(request).name == "cft":
        return [standalone_refund(ctx, request)]
    parent = refundable_parent(ctx, request)
    amount = refund_amount(ctx, parent, request.get("baseamount"))
    if request.get("currencyiso3a") not in (None, parent["currencyiso3a"]):
        raise Refusal(20015, ["currencyiso3a"])
    inherited = record_of(parent)
    record = refund_record(
        ctx,
        request,
        {
            "baseamount": str(amount),
            "currencyiso3a": parent["currencyiso3a"],
            "accounttypedescription": parent["accounttypedescription"],
            "orderreference": request.get("orderreference") or parent["orderreference"],
            "parenttransactionreference": parent["transactionreference"],
            **{k: inherited[k] for k in _CARD_FIELDS if k in inherited},
        },
    )
    ctx.store.add_transaction(ctx.conn, record, card_id=parent["card_id"], details=details_of(parent))
    return [record]


def refundable_parent(ctx: Context, request: Mapping[str, Any]) -> Row:
    """The AUTH a refund names, checked against the rules in the order the codes are listed."""
    parent = ctx.store.transaction(
        ctx.conn, request["parenttransactionreference"], [request["sitereference"]]
    )
    if parent is None:
        raise Refusal(20004, ["parenttransactionreference"])
    if parent["requesttypedescription"] != "AUTH":
        raise Refusal(20006, ["parenttransactionreference"])
    if parent["errorcode"] != "0" or parent["settlestatus"] == "3":
        raise Refusal(20011, ["parenttransactionreference"])
    due_today = parent["settlestatus"] in ("0", "1") and parent["settleduedate"] <= ctx.now.date().isoformat()
    if parent["settlestatus"] != SETTLED and not due_today:
        raise Refusal(20005, ["parenttransactionreference"])
    return parent


def refund_amount(ctx: Context, parent: Row, asked: str | None) -> int:
    """The amount to refund: as asked, or all that is left; 20007 past what the AUTH settles for."""
    settles_for = int(parent["settlebaseamount"] or parent["baseamount"])
    left = settles_for - refunded_so_far(ctx.conn, parent["transactionreference"])
    amount = left if asked is None else int(asked)
    if amount <= 0 or amount > left:
        raise Refusal(20007, ["baseamount"])
    return amount


def standalone_refund(ctx: Context, request: Mapping[str, Any]) -> dict[str, Any]:
    """A refund with no parent: a credit to the card sent (`accounttypedescription` CFT)."""
    paymenttype = scheme_of(request["pan"])
    if paymenttype is None:
        raise invalid_field("pan")
    if expired(request["expirydate"], ctx.now.date()):
        raise invalid_field("expirydate")
    record = refund_record(
        ctx,
        request,
        {
            "baseamount": request["baseamount"],
            "currencyiso3a": request["currencyiso3a"],
            "accounttypedescription": request["accounttypedescription"],
            "orderreference": request.get("orderreference"),
            "paymenttypedescription": paymenttype.code,
            "maskedpan": mask_pan(request["pan"]),
            **acquirer.issuer_fields(request["pan"]),
            "securityresponsesecuritycode": acquirer.security_response(
                request["pan"], request.get("securitycode")
            ),
        },
    )
    card_id = ctx.store.card_for(ctx.conn, request["pan"], request["expirydate"], paymenttype.code)
    ctx.store.add_transaction(ctx.conn, record, card_id=card_id, details=billing_details(request))
    return record


def refund_record(ctx: Context, request: Mapping[str, Any], fields: Mapping[str, Any]) -> dict[str, Any]:
    """A successful REFUND record: the fields given plus what every refund answers."""
    return {
        "transactionstartedtimestamp": ctx.timestamp,
        "livestatus": "0",
        "splitfinalnumber": "1",
        "dccenabled": "0",
        "settleduedate": settle_due_date(ctx.now),
        **MERCHANT,
        **{k: v for k, v in fields.items() if v is not None},
        "transactionreference": ctx.new_reference(),
        "requesttypedescription": "REFUND",
        "operatorname": ctx.account.username,
        "sitereference": request["sitereference"],
        "errorcode": "0",
        "errormessage": "Ok",
        "acquirerresponsecode": "00",
        "authcode": f"TEST{secrets.randbelow(90) + 10}",
        "settlestatus": "0",
    }


REQUEST_HANDLERS = {"REFUND": handle_refund}
# A refund is updatable as an AUTH is while it has not settled (real-gateway-facts.md).
UPDATE_RULES = {"REFUND": update_auth}
