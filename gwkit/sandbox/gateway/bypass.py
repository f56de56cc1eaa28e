"""A THREEDQUERY skipped by `threedbypasspaymenttypes`, as the real gateway skips it (captured).

The payment types come from the request object and from its site's setting in the accounts file
(accounts.py), together. When they name the card's payment type, the THREEDQUERY makes no record but
uses up one transaction reference, and the rest of the object runs: the request type after it takes
the record before the THREEDQUERY as its parent where they chain, else runs on its own (V3
`tests/wiremock/__files/ccAccountcheckAuth.json`: ACCOUNTCHECK `42-9-81111`, then the AUTH
`42-9-81113` naming it, `42-9-81112` used up). A THREEDQUERY alone is answered by one ERROR record,
`22000` `Bypass`, with the reference it used (V3 `ccBypass_requesttypedescriptions.json`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ...interface.bypass import BYPASS_FIELD, bypassed_types
from ...interface.cards import scheme_of
from ...interface.codes import message_of
from ...interface.requests import CHAINS, RequestType
from .context import Context

BYPASS = 22000


def skips_threedquery(ctx: Context, request: Mapping[str, Any], site_types: frozenset[str]) -> bool:
    """Is this THREEDQUERY skipped: do the request's and the site's bypass types name its card's type?"""
    types = bypassed_types(request.get(BYPASS_FIELD)) | site_types
    return bool(types) and _payment_type(ctx, request) in types


def _payment_type(ctx: Context, request: Mapping[str, Any]) -> str | None:
    """The payment type of the card the THREEDQUERY would query: sent, or its parent's."""
    pan = request.get("pan")
    if isinstance(pan, str) and pan:
        scheme = scheme_of(pan)
        return scheme.code if scheme else None
    reference = request.get("parenttransactionreference")
    row = ctx.store.transaction(ctx.conn, reference, ctx.sites) if isinstance(reference, str) else None
    return row["paymenttypedescription"] if row is not None else None


def bypass_record(ctx: Context) -> dict[str, Any]:
    """The answer to a THREEDQUERY alone that is skipped: it uses up a reference and names it."""
    return {
        "requesttypedescription": "ERROR",
        "transactionreference": ctx.new_reference(),
        "transactionstartedtimestamp": ctx.timestamp,
        "errorcode": str(BYPASS),
        "errormessage": message_of(BYPASS),
    }


def chains_after_skip(records: list[dict[str, Any]], request_type: RequestType) -> bool:
    """After a skipped THREEDQUERY: does the next request type take the record before it as parent?"""
    return bool(records) and (records[-1].get("requesttypedescription"), request_type.types[0]) in CHAINS
