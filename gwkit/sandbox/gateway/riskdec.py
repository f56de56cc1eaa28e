"""RISKDEC: fraud screening of a payment, answered as the real test site answers it (captured).

The record (py-payments-testing `wiremock/__files/ccRiskdecAccountcheckAuth.json`, the browser
library v3's `tests/wiremock/__files/ccRiskdecAccountcheckAuth.json`, ...): `requesttypedescription`
RISKDEC, `accounttypedescription` FRAUDCONTROL, `fraudcontrolshieldstatuscode` ACCEPT,
`fraudcontrolresponsecode` 0100, `acquirerrecommendedaction` C (continue), `fraudcontrolreference`
TEST, `errorcode` 0, the card's `maskedpan` and `paymenttypedescription`; no amount, issuer or
settlement. The captures show 0150 beside 0100, both ACCEPT, with nothing telling them apart: the
sandbox always answers 0100 and never 0150 (chosen).

It takes a card from the request or from a parent record (AUTH RISKDEC, THREEDQUERY AUTH RISKDEC:
the AUTH). It is kept, so a TRANSACTIONQUERY finds it, and it lends its card to the request type
chained after it (RISKDEC ACCOUNTCHECK AUTH: the ACCOUNTCHECK names it as parent, as captured).
The real gateway numbers these records in a series of their own (`42-65-347`); the sandbox's come
from the one series of its references.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ...interface.cards import scheme_of
from ...interface.requests import RISKDEC
from .context import Context
from .payments import Card, billing_details, card_from_fields, load_card
from .refusal import invalid_field
from .store import details_of

SCREENING = {
    "accounttypedescription": "FRAUDCONTROL",
    "fraudcontrolshieldstatuscode": "ACCEPT",
    "fraudcontrolresponsecode": "0100",
    "acquirerrecommendedaction": "C",
    "fraudcontrolreference": "TEST",
    "errorcode": "0",
    "errormessage": "Ok",
}


def handle_riskdec(ctx: Context, request: dict[str, Any]) -> list[dict[str, Any]]:
    card = _screened_card(ctx, request)
    paymenttype = scheme_of(card.pan)
    if paymenttype is None:
        raise invalid_field("pan")
    record: dict[str, Any] = {
        "transactionstartedtimestamp": ctx.timestamp,
        "livestatus": "0",
        **SCREENING,
        "transactionreference": ctx.new_reference(),
        "paymenttypedescription": paymenttype.code,
        "maskedpan": card.maskedpan,
        "requesttypedescription": "RISKDEC",
        "operatorname": ctx.account.username,
        "sitereference": request.get("sitereference") or ctx.sites[0],
        **({"orderreference": request["orderreference"]} if request.get("orderreference") else {}),
        **({"parenttransactionreference": card.parent} if card.parent else {}),
    }
    card_id = card.card_id or ctx.store.card_for(ctx.conn, card.pan, card.expirydate, paymenttype.code)
    ctx.keep(record, card_id=card_id, details={**card.details, **billing_details(request)})
    return [record]


def _screened_card(ctx: Context, request: Mapping[str, Any]) -> Card:
    """The card to screen: the request's, or its parent's (whatever the parent's outcome: a declined
    payment is screened too)."""
    if RISKDEC.select(request).name == "card":
        return card_from_fields(ctx, request)
    row = ctx.find(request.get("parenttransactionreference"))
    if row["card_id"] is None:
        raise invalid_field("parenttransactionreference")
    return load_card(
        ctx,
        row["card_id"],
        request.get("securitycode"),
        details=details_of(row),
        parent=row["transactionreference"],
    )


REQUEST_HANDLERS = {"RISKDEC": handle_riskdec}
