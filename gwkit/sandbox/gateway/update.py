"""TRANSACTIONUPDATE: change records found by `transactionreference`, as their type allows.

Each request type's module lists what may change (its UPDATE_RULES): a stored card's
`transactionactive`; an unsettled AUTH's `settlestatus` (0, 1, 2) and `settlebaseamount`; a
subscription's amount, final number and active state. All named records change, or none.
"""

from __future__ import annotations

import sqlite3
from typing import Any, Mapping

from .context import Context
from .fault import Fault, invalid_field
from .query import filter_values, requested_sites

NOT_UPDATABLE = Fault(60017)


def handle_update(ctx: Context, request: dict[str, Any]) -> list[dict[str, Any]]:
    filters = filter_values(request.get("filter"))
    references = filters.get("transactionreference")
    if not references:
        raise Fault(60019, ["filter"])
    updates = {k: v for k, v in (request.get("updates") or {}).items() if v not in (None, "")}
    if not updates:
        raise Fault(60013, ["updates"])
    sites = requested_sites(ctx, filters)
    for reference in references:
        row = ctx.store.transaction(ctx.conn, reference, sites)
        if row is None:
            raise invalid_field("transactionreference")
        rule = ctx.tables.update_rules.get(row["requesttypedescription"])
        if rule is None:
            raise NOT_UPDATABLE
        ctx.store.update_transaction(ctx.conn, reference, rule(ctx, row, updates))
    return [{"requesttypedescription": "TRANSACTIONUPDATE", "errorcode": "0", "errormessage": "Ok",
             "transactionstartedtimestamp": ctx.timestamp, "operatorname": ctx.account.username}]


def update_auth(ctx: Context, row: sqlite3.Row, updates: Mapping[str, str]) -> dict[str, str]:
    """Settlement instructions for an AUTH that has not settled and was not cancelled."""
    if row["errorcode"] != "0" or row["settlestatus"] in ("3", "100"):
        raise NOT_UPDATABLE
    refused = [name for name in updates if name not in ("settlestatus", "settlebaseamount")]
    if refused:
        raise invalid_field(*refused)
    if updates.get("settlestatus", "0") not in ("0", "1", "2"):
        raise invalid_field("settlestatus")
    if "settlebaseamount" in updates and int(updates["settlebaseamount"]) > int(row["baseamount"]):
        raise invalid_field("settlebaseamount")
    return dict(updates)


REQUEST_HANDLERS = {"TRANSACTIONUPDATE": handle_update}
UPDATE_RULES = {"AUTH": update_auth}
