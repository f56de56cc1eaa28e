"""TRANSACTIONUPDATE: change records found by `transactionreference`, as their type allows.

Each request type's module lists what may change (its UPDATE_RULES): a stored card's
`transactionactive` and billing details; a subscription's amount, final number, active state and
interval; an AUTH's settlement while it is pending or suspended (`settlestatus` 0, 1 or 2):
- `settlestatus` 0, 1, 2, or 3 to cancel it (the real service's way to cancel an AUTH; a
  cancelled AUTH never settles and is final, as a declined one);
- `settleduedate` (YYYY-MM-DD), today or later on the site's clock: it settles on that day;
- `settlebaseamount`, at most the authorised `baseamount`: lowered, and raised again up to it (the
  official client's module tests, written against the real test site, lower an AUTH to 35 and then
  set it to 50 of 100, and expect both accepted).
Once an AUTH has been refunded from, it must settle at least what was refunded, and no later than
its refunds: cancelling (3) or suspending (2) it is 60017 naming `settlestatus`, a `settleduedate`
after its refunds' is 60017 naming `settleduedate`, lowering `settlebaseamount` below the refunds is
20007 naming it.
Settled (100) and cancelled (3) AUTHs, declines, and records of other types answer 60017; a field
the record does not take is 30000 naming it. All named records change, or none.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ...interface.codes import CANCELLED
from ...interface.requests import AUTH_UPDATABLE
from .context import Context
from .query import filter_values, requested_sites
from .refunded import refunds_of
from .refusal import Refusal, invalid_field
from .store import Row

NOT_UPDATABLE = Refusal(60017)


def handle_update(ctx: Context, request: dict[str, Any]) -> list[dict[str, Any]]:
    filters = filter_values(request.get("filter"))
    references = filters.get("transactionreference")
    if not references:
        raise Refusal(60019, ["filter"])
    updates = {k: v for k, v in (request.get("updates") or {}).items() if v not in (None, "")}
    if not updates:
        raise Refusal(60013, ["updates"])
    sites = requested_sites(ctx, filters)
    for reference in references:
        row = ctx.store.transaction(ctx.conn, reference, sites)
        if row is None:
            raise invalid_field("transactionreference")
        rule = ctx.tables.update_rules.get(row["requesttypedescription"])
        if rule is None:
            raise NOT_UPDATABLE
        changes = rule(ctx, row, updates)
        if changes:
            ctx.store.update_transaction(ctx.conn, reference, changes)
    return [
        {
            "requesttypedescription": "TRANSACTIONUPDATE",
            "errorcode": "0",
            "errormessage": "Ok",
            "transactionstartedtimestamp": ctx.timestamp,
            "operatorname": ctx.account.username,
        }
    ]


def update_auth(ctx: Context, row: Row, updates: Mapping[str, str]) -> dict[str, str]:
    """Settlement instructions for an AUTH that has not settled and was not cancelled."""
    if row["errorcode"] != "0" or row["settlestatus"] not in PENDING:
        raise NOT_UPDATABLE
    refused = [name for name in updates if name not in AUTH_UPDATABLE]
    if refused:
        raise invalid_field(*refused)
    if updates.get("settlestatus", "0") not in PENDING + (CANCELLED,):
        raise invalid_field("settlestatus")
    if updates.get("settleduedate", ctx.now.date().isoformat()) < ctx.now.date().isoformat():
        raise invalid_field("settleduedate")
    if "settlebaseamount" in updates and int(updates["settlebaseamount"]) > int(row["baseamount"]):
        raise invalid_field("settlebaseamount")
    _keeps_refunds_covered(ctx, row, updates)
    return dict(updates)


def _keeps_refunds_covered(ctx: Context, row: Row, updates: Mapping[str, str]) -> None:
    """An AUTH refunded from must still settle what was refunded, and no later than its refunds
    (else a refund gives back money never taken, or before it was taken)."""
    if not {"settlebaseamount", "settlestatus", "settleduedate"} & updates.keys():
        return
    refunded = refunds_of(ctx.conn, row["transactionreference"])
    if not refunded.total:
        return
    if updates.get("settlestatus") in (SUSPENDED, CANCELLED):
        raise Refusal(60017, ["settlestatus"])
    if int(updates.get("settlebaseamount", refunded.total)) < refunded.total:
        raise Refusal(20007, ["settlebaseamount"])
    if refunded.first_due is not None and updates.get("settleduedate", "") > refunded.first_due:
        raise Refusal(60017, ["settleduedate"])


SUSPENDED = "2"
PENDING = ("0", "1", SUSPENDED)


REQUEST_HANDLERS = {"TRANSACTIONUPDATE": handle_update}
UPDATE_RULES = {"AUTH": update_auth}
