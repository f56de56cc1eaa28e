"""Typed DataFrames from gwkit's sources: the journal and TRANSACTIONQUERY responses."""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from datetime import date
from typing import Any

import pandas as pd

from ..journal import Journal
from ..querying import query_all
from .frames import records_frame
from .timing import REPORT_TIME, report_time

JOURNAL_COLUMNS = {
    "id": "Int64",
    "started_at": None,
    "elapsed_ms": "float64",
    "kind": "category",
    "target": "category",
    "alias": "category",
    "sitereference": "category",
    "request_types": "category",
    "requestreference": "string",
    "status_code": "Int64",
    "outcome": "category",
    "errorcode": "category",
    "errormessage": "string",
    "error": "string",
    "gateway_time": "gateway_time",
}


def _open(journal: Journal | str | os.PathLike[str] | Any | None) -> Journal:
    """A Journal from a Journal, a path, a connection (its journal) or None (the default file)."""
    if isinstance(journal, Journal):
        return journal
    attached = getattr(journal, "journal", None)
    if isinstance(attached, Journal):
        return attached
    if journal is not None and not isinstance(journal, (str, os.PathLike)):
        raise TypeError(
            f"expected a Journal, a path or a connection with a journal, not {type(journal).__name__}"
        )
    return Journal(journal)


def journal_frame(journal: Journal | str | os.PathLike[str] | Any | None = None) -> pd.DataFrame:
    """One row per journalled exchange: when (`started_at` wall clock, UTC; `gateway_time` the
    gateway's clock, which the records follow), how long, where, what, and how it ended."""
    rows = _open(journal).rows(f"SELECT {', '.join(JOURNAL_COLUMNS)} FROM exchanges ORDER BY id")
    frame = pd.DataFrame(rows, columns=list(JOURNAL_COLUMNS))
    for name, dtype in JOURNAL_COLUMNS.items():
        if dtype is None:
            frame[name] = pd.to_datetime(frame[name], format="ISO8601", utc=True)
        elif dtype == "gateway_time":  # the gateway's own clock (the sandbox's), as its records have it
            frame[name] = pd.to_datetime(frame[name], format="%Y-%m-%d %H:%M:%S")
        else:
            frame[name] = frame[name].astype(dtype)
    return frame


def journal_records_frame(
    journal: Journal | str | os.PathLike[str] | Any | None = None, *, errors: str = "raise"
) -> pd.DataFrame:
    """One row per response record in the journal, typed from the spec tables, with the
    exchange's `exchange_id` and `exchange_started_at` (wall clock, UTC) in front.
    The nested results of TRANSACTIONQUERY records are left out (see `query_frame`)."""
    records = [{k: v for k, v in r.items() if k != "records"} for r in _open(journal).records()]
    frame = records_frame(records, errors=errors)
    if "exchange_id" not in frame.columns:
        frame.insert(0, "exchange_id", pd.Series(dtype="Int64"))
        frame.insert(1, "exchange_started_at", pd.Series(dtype="datetime64[us, UTC]"))
        return frame
    frame["exchange_id"] = frame["exchange_id"].astype("Int64")
    frame["exchange_started_at"] = pd.to_datetime(frame["exchange_started_at"], format="ISO8601", utc=True)
    return frame


def query_frame(source: Any, *, errors: str = "raise", clock: Any = None) -> pd.DataFrame:
    """The transaction records of a TRANSACTIONQUERY as a typed DataFrame.

    `source` is a gwkit Response, a response envelope dict, a TRANSACTIONQUERY record, or a list
    of transaction records. `clock` (the client or connection that asked: its sandbox's virtual clock,
    else the wall clock) is the "now" the reports made from this frame state in their captions.
    """
    frame = records_frame([dict(r) for r in _query_records(source)], errors=errors)
    frame.attrs[REPORT_TIME] = report_time(clock).as_attrs()
    return frame


def transactions_frame(
    client: Any, start: date | str, end: date | str | None = None, **filters: Any
) -> pd.DataFrame:
    """Every transaction of the client's site from `start` to `end` (default: today by the client's
    clock, the sandbox's when it has one), past the 500-record cap (`gwkit.querying.query_all`),
    as a typed frame whose reports state that clock. `filters`: more TRANSACTIONQUERY filters."""
    when = report_time(client)
    first = date.fromisoformat(start) if isinstance(start, str) else start
    last = end if end is not None else when.as_of.date()
    last = date.fromisoformat(last) if isinstance(last, str) else last
    return query_frame(query_all(client, filters, start=first, end=last), clock=when)


def _query_records(source: Any) -> Iterable[Mapping[str, Any]]:
    if hasattr(source, "query_records"):  # gwkit Response or Record
        return source.query_records
    if isinstance(source, Mapping) and isinstance(source.get("response"), list):
        return [
            inner
            for record in source["response"]
            if isinstance(record, Mapping)
            for inner in record.get("records") or []
        ]
    if isinstance(source, Mapping) and isinstance(source.get("records"), list):
        return source["records"]
    if isinstance(source, (list, tuple)):
        return source
    raise TypeError(
        f"expected a TRANSACTIONQUERY response, record or list of records, not {type(source).__name__}"
    )
