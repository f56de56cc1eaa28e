"""ACCOUNTCHECK: the bank checks a card (and its security code) without taking money.

The interface names it as the recommended alternative to the card store; the facts file says what
the real service does. The sandbox:
- takes `baseamount` 0 or absent (answered as `0`), or an amount that a child subscription or AUTH
  may inherit; no money is taken whatever the amount: a successful check carries `settlestatus` 0
  and its day as `settleduedate` (as the real service answers) but never settles and cannot be
  updated (60017);
- answers the AUTH record's fields that apply (acquirer response, auth code, security code check,
  masked card, issuer) through the shared payment path, so test cards and the expiry rule hold:
  a declining card declines (70000, settlestatus 3);
- takes a card from the request or from a stored card (`parenttransactionreference` of a STORE);
- is the parent of an AUTH (card, currency, account type and order reference lent, the amount too
  when it is not 0), of a THREEDQUERY (the card) and of a SUBSCRIPTION (subscriptions.py), when it
  succeeded.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ...interface.requests import ACCOUNTCHECK
from .context import Context
from .payments import INHERITABLE, Card, authorise, load_card, resolve_card
from .refusal import invalid_field
from .store import Row, details_of, record_of


def handle_accountcheck(ctx: Context, request: dict[str, Any]) -> list[dict[str, Any]]:
    card = resolve_card(ctx, request, ACCOUNTCHECK.select(request).name)
    return [authorise(ctx, request, card, requesttype="ACCOUNTCHECK", takes_money=False)]


def checked_card(ctx: Context, row: Row, request: Mapping[str, Any]) -> Card:
    """A successful account check lends its card and what it was made with to a child AUTH."""
    kept = record_of(row)
    if kept.get("errorcode") != "0" or row["card_id"] is None:
        raise invalid_field("parenttransactionreference")
    inherited = {name: kept[name] for name in INHERITABLE if kept.get(name) and kept[name] != "0"}
    return load_card(
        ctx,
        row["card_id"],
        request.get("securitycode"),
        details=details_of(row),
        inherited=inherited,
        parent=row["transactionreference"],
    )


REQUEST_HANDLERS = {"ACCOUNTCHECK": handle_accountcheck}
PARENT_RULES = {"ACCOUNTCHECK": checked_card}
