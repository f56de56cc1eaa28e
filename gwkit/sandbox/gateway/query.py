"""TRANSACTIONQUERY: records of the account's sites matching a filter, newest first, at most 500.

The filter has the real service's shape, several values per field meaning "any of":
`{"settlestatus": [{"value": "0"}, {"value": "100"}], "startdate": [{"value": "2026-01-01"}]}`.
The time range filters bound `transactionstartedtimestamp`: `startdate`/`enddate` by whole days,
`starttimestamp`/`endtimestamp` (`YYYY-MM-DD HH:MM:SS`) to the second, both ends included; given
together, every bound holds.
Card numbers are masked; MD, PaRes and cache tokens are never answered.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from ...interface.fields import BILLING_FIELDS, SENSITIVE_FIELDS
from ...interface.requests import FILTER_FIELDS
from .context import Context
from .envelopes import answered_record
from .refusal import Refusal
from .store import TRANSACTION_COLUMNS

MAX_RECORDS = 500
# Range filter -> (comparison on transactionstartedtimestamp, pick among several values, time appended).
_RANGE_FILTERS = {
    "startdate": (">=", min, " 00:00:00"),
    "enddate": ("<=", max, " 23:59:59"),
    "starttimestamp": (">=", min, ""),
    "endtimestamp": ("<=", max, ""),
}
# Every other filter of the spec is a column of `transactions` holding the wire value.
_COLUMN_FILTERS = tuple(name for name in FILTER_FIELDS if name not in _RANGE_FILTERS)
assert set(_COLUMN_FILTERS) <= set(TRANSACTION_COLUMNS), "a filter of the spec has no column"


def filter_values(filter_: Mapping[str, Any] | None) -> dict[str, list[str]]:
    """The usable part of a filter: each named field with its non-empty values."""
    usable: dict[str, list[str]] = {}
    for name, entries in (filter_ or {}).items():
        values = [e["value"] for e in entries if isinstance(e, Mapping) and e.get("value")]
        if values:
            usable[name] = values
    return usable


def requested_sites(ctx: Context, filters: Mapping[str, list[str]]) -> list[str]:
    """The account's sites a filter names; all of them when it names none."""
    return [s for s in filters.get("sitereference", ctx.sites) if s in ctx.sites]


def where_clause(ctx: Context, filters: Mapping[str, list[str]]) -> tuple[str, list[Any]]:
    """SQL conditions for a filter, always restricted to the account's own sites."""
    sites = requested_sites(ctx, filters) or [""]
    clauses = [f"sitereference IN ({', '.join('?' * len(sites))})"]
    params: list[Any] = list(sites)
    for name in _COLUMN_FILTERS:
        if name in filters and name != "sitereference":
            clauses.append(f"{name} IN ({', '.join('?' * len(filters[name]))})")
            params.extend(filters[name])
    for name, (comparison, pick, time) in _RANGE_FILTERS.items():
        if name in filters:
            clauses.append(f"transactionstartedtimestamp {comparison} ?")
            params.append(pick(filters[name]) + time)
    return " AND ".join(clauses), params


def public_record(row) -> dict[str, Any]:
    """A kept record as a query answers it: with its billing details, never card data or secrets, and
    without what no answer carries (`answered_record`: its site, a THREEDQUERY's amount)."""
    record = {
        k: v for k, v in answered_record(json.loads(row["record"])).items() if k not in SENSITIVE_FIELDS
    }
    details = json.loads(row["details"]) if row["details"] else {}
    record.update({k: v for k, v in details.items() if k in BILLING_FIELDS and k not in record})
    record["interface"] = "PASS-JSON-JSON"
    return record


def handle_query(ctx: Context, request: dict[str, Any]) -> list[dict[str, Any]]:
    filters = filter_values(request.get("filter"))
    if not filters:
        raise Refusal(60019, ["filter"])
    where, params = where_clause(ctx, filters)
    (found,) = ctx.conn.execute(f"SELECT COUNT(*) FROM transactions WHERE {where}", params).fetchone()
    rows = ctx.conn.execute(
        f"SELECT record, details FROM transactions WHERE {where} "
        "ORDER BY transactionstartedtimestamp DESC, id DESC LIMIT ?",
        [*params, MAX_RECORDS],
    ).fetchall()
    records = [public_record(row) for row in rows]
    with_current_views(ctx, records)
    return [
        {
            "requesttypedescription": "TRANSACTIONQUERY",
            "errorcode": "0",
            "errormessage": "Ok",
            "transactionstartedtimestamp": ctx.timestamp,
            "operatorname": ctx.account.username,
            "found": str(found),
            "records": records,
        }
    ]


def with_current_views(ctx: Context, records: list[dict[str, Any]]) -> None:
    """Set the fields of `records` that their modules keep outside the record (RECORD_VIEWS), one
    call per request type."""
    by_type: dict[str, list[dict[str, Any]]] = {}
    for record in records:
        by_type.setdefault(record["requesttypedescription"], []).append(record)
    for kind, view in ctx.tables.record_views.items():
        if kind in by_type:
            view(ctx.conn, by_type[kind])


REQUEST_HANDLERS = {"TRANSACTIONQUERY": handle_query}
READ_ONLY_REQUESTS = ("TRANSACTIONQUERY",)
