"""STORE (interface 2.8, 3.2, 4.7): keep a card and its billing details; the bank is not contacted.

- The billing rules (US state, postcodes for US/GB/CA, email, telephone) and the refusal of a
  security code are the interface tables' (gwkit/interface), checked by the gateway before this handler.
- The card must be of a supported scheme and not expired by the sandbox clock (30000 naming
  `pan` or `expirydate`); nothing of a refused STORE is kept.
- The kept record carries `expirydate` (answered by TRANSACTIONQUERY, with the billing details
  from `details`), never the PAN, which the vault encrypts in `cards`.
- A stored card lends its card and billing details to any request naming it as
  `parenttransactionreference` (AUTH, THREEDQUERY, AUTH SUBSCRIPTION) while `transactionactive`
  is 1; a disabled one is refused with 30000 naming `parenttransactionreference`. Subscriptions
  already started from it go on: they have their own `transactionactive`.
- TRANSACTIONUPDATE changes `transactionactive` (0 or 1) and the billing details (checked together
  with the details kept, so a postcode still fits its country); children made later inherit them.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ...interface.cards import scheme_of
from ...interface.fields import BILLING_FIELDS
from ...interface.masking import mask_pan
from ...interface.requests import STORE_UPDATABLE
from ...interface.validation import check_value
from . import acquirer
from .context import Context
from .payments import MERCHANT, Card, billing_details, expired, inherit_card
from .refusal import invalid_field
from .store import Row, details_of


def handle_store(ctx: Context, request: dict[str, Any]) -> list[dict[str, Any]]:
    pan = request["pan"]
    scheme = scheme_of(pan)
    if scheme is None:
        raise invalid_field("pan")
    if expired(request["expirydate"], ctx.now.date()):
        raise invalid_field("expirydate")
    record: dict[str, Any] = {
        "transactionreference": ctx.new_reference(),
        "merchantname": MERCHANT["merchantname"],
        "paymenttypedescription": scheme.code,
        "transactionactive": "1",
        **({"orderreference": request["orderreference"]} if request.get("orderreference") else {}),
        "transactionstartedtimestamp": ctx.timestamp,
        "errormessage": "Ok",
        "errorcode": "0",
        "operatorname": ctx.account.username,
        "accounttypedescription": "CARDSTORE",
        "maskedpan": mask_pan(pan),
        "requesttypedescription": "STORE",
        **acquirer.issuer_fields(pan),
        "livestatus": "0",
        "sitereference": request["sitereference"],
    }
    card_id = ctx.store.add_card(ctx.conn, pan, request["expirydate"], scheme.code)
    details = billing_details(request)
    ctx.store.add_transaction(
        ctx.conn, {**record, "expirydate": request["expirydate"]}, card_id=card_id, details=details
    )
    return [record]


def stored_card(ctx: Context, row: Row, request: Mapping[str, Any]) -> Card:
    """A stored card lends its card and billing details while it is enabled."""
    if row["transactionactive"] != "1":
        raise invalid_field("parenttransactionreference")
    return inherit_card(ctx, row, request)


def update_stored_card(ctx: Context, row: Row, updates: Mapping[str, str]) -> dict[str, str]:
    """`transactionactive` goes to the record; billing details to the details the card lends."""
    refused = [name for name in updates if name not in STORE_UPDATABLE]
    if refused:
        raise invalid_field(*refused)
    if updates.get("transactionactive", "1") not in ("0", "1"):
        raise invalid_field("transactionactive")
    billing = {name: value for name, value in updates.items() if name in BILLING_FIELDS}
    if billing:
        details = {**details_of(row), **billing}
        wrong = [name for name in billing if check_value(name, billing[name], details)]
        if wrong:
            raise invalid_field(*wrong)
        ctx.store.update_details(ctx.conn, row["transactionreference"], details)
    return {name: value for name, value in updates.items() if name == "transactionactive"}


REQUEST_HANDLERS = {"STORE": handle_store}
PARENT_RULES = {"STORE": stored_card}
UPDATE_RULES = {"STORE": update_stored_card}
