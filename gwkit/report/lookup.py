"""Support look-ups: find a payment in seconds, then everything that happened to it.

    gwkit.report.find(gw, last4="1111", start="2026-01-01")        # or a transactions frame
    gwkit.report.find(gw, email="chloe@example.com")                # order/transaction reference, name
    gwkit.report.payment_view(gw, "48-9-1", notifications=listener) # the record card and its story

`find` answers a table in words: when, what it was, what happened (status in words), the amount with
its currency, the references, the masked card, the customer's name and email. `payment_view` shows
the record card the notebooks use, then each event: the payment, its updates (from the journal),
its settlement, its refunds, the notifications about it, and the subscription it set up or belongs
to with that subscription's payments.
"""

from __future__ import annotations

import json
import os
import re
import unicodedata
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import date, timedelta
from typing import Any

import pandas as pd

from ..interface.codes import record_ok
from ..interface.currency import format_money, to_major
from ..interface.fields import AMOUNT
from ..interface.outcome import in_words
from ..interface.vocabulary import SETTLESTATUS_WORDS, labelled
from ..journal import Journal
from ..querying import query_paged
from ..response import records_html
from .accounting import money_status
from .display import to_html
from .frames import MONEY_COLUMNS, report_kind
from .sources import transactions_frame
from .timing import ReportTime, captioned, report_time, time_of

FOUND_COLUMNS = [
    "time",
    "what",
    "amount",
    "currency",
    "status",
    "name",
    "email",
    "card",
    "order reference",
    "transaction reference",
    "payment reference",
]
EVENT_COLUMNS = ["time", "what happened", "amount", "currency", "reference"]
CHANGE_NAMES = {
    "settlestatus": "settle status",
    "settlebaseamount": "amount to settle",
    "settleduedate": "settle day",
}
DEFAULT_DAYS = 90  # how far back `find` looks on a client when no start is given
LAST_FOUR = re.compile(r"\d{4}")


def find(
    source: Any,
    *,
    orderreference: str | None = None,
    transactionreference: str | None = None,
    last4: str | None = None,
    email: str | None = None,
    name: str | None = None,
    start: date | str | None = None,
    end: date | str | None = None,
) -> pd.DataFrame:
    """Transactions matching every key given, from `start` to `end` (days, both included), newest
    first, as a table in words. `source`: a transactions frame (`query_frame`, `transactions_frame`),
    or a client or connection (its transactions from `start`, default 90 days back by its clock).

    Keys: `orderreference` (exact, any case), `transactionreference` (the transaction and the
    refunds, payments and subscriptions that name it as parent), `last4` (the card's last four
    digits), `email` (the billing email, any part, any case), `name` (the billing name, any part, any
    case, accents or not: "chloe" finds Chloé)."""
    keys = {
        "orderreference": orderreference,
        "transactionreference": transactionreference,
        "last4": last4,
        "email": email,
        "name": name,
    }
    given = {k: str(v).strip() for k, v in keys.items() if v is not None and str(v).strip()}
    if not given:
        raise ValueError("find needs one of orderreference, transactionreference, last4, email or name")
    if "last4" in given and not LAST_FOUR.fullmatch(given["last4"]):
        raise ValueError(f"last4 must be the card's last four digits (4 digits), not {given['last4']!r}")
    first, last = _day(start), _day(end)
    if isinstance(source, pd.DataFrame):
        frame = source
    else:
        when = report_time(source)
        first = first or when.as_of.date() - timedelta(days=DEFAULT_DAYS)
        frame = transactions_frame(source, first, last or when.as_of.date())
    rows = frame[_matches(frame, given, first, last)]
    if "transactionstartedtimestamp" in rows.columns:
        rows = rows.sort_values("transactionstartedtimestamp", ascending=False, kind="stable")
    table = _in_words(rows)
    searched = ", ".join(f"{k.replace('last4', 'card ending')} {v}" for k, v in given.items())
    period = f" from {first or 'the first record'} to {last or 'the last'}"
    return captioned(table, f"{len(table)} transaction(s) found by {searched}{period}", frame)


def _day(value: date | str | None) -> date | None:
    if value is None or value == "":
        return None
    return value if isinstance(value, date) else date.fromisoformat(str(value))


def _text(frame: pd.DataFrame, column: str) -> pd.Series:
    if column not in frame.columns:
        return pd.Series("", index=frame.index, dtype="string")
    return frame[column].astype("string").fillna("")


def _folded(values: pd.Series) -> pd.Series:
    """Lower case without accents, so that "chloe" finds "Chloé"."""
    return values.map(_fold).astype("string")


def _fold(text: str) -> str:
    decomposed = unicodedata.normalize("NFKD", str(text))
    return "".join(c for c in decomposed if not unicodedata.combining(c)).casefold()


def _matches(
    frame: pd.DataFrame, given: Mapping[str, str], first: date | None, last: date | None
) -> pd.Series:
    keep = pd.Series(True, index=frame.index)
    if "orderreference" in given:
        keep &= _text(frame, "orderreference").str.casefold() == given["orderreference"].casefold()
    if "transactionreference" in given:
        wanted = given["transactionreference"]
        keep &= (_text(frame, "transactionreference") == wanted) | (
            _text(frame, "parenttransactionreference") == wanted
        )
    if "last4" in given:
        keep &= _text(frame, "maskedpan").str.endswith(given["last4"])
    if "email" in given:
        keep &= (
            _text(frame, "billingemail").str.casefold().str.contains(given["email"].casefold(), regex=False)
        )
    if "name" in given:
        names = _folded(_text(frame, "billingfirstname") + " " + _text(frame, "billinglastname"))
        keep &= names.str.contains(_fold(given["name"]), regex=False)
    if "transactionstartedtimestamp" in frame.columns and (first or last):
        days = frame["transactionstartedtimestamp"].dt.date
        if first:
            keep &= days >= first
        if last:
            keep &= days <= last
    return keep.fillna(False).astype(bool)


def what_it_was(record: Mapping[str, Any]) -> str:
    """A transaction's kind in words: payment, refund, subscription payment, subscription..."""
    kind = str(record.get("requesttypedescription") or "")
    if kind == "AUTH":
        return "subscription payment" if record.get("accounttypedescription") == "RECUR" else "payment"
    return {
        "REFUND": "refund",
        "SUBSCRIPTION": "subscription (its schedule)",
        "ACCOUNTCHECK": "card check (no money)",
        "STORE": "card stored (no money)",
        "THREEDQUERY": "3-D Secure check (no money)",
    }.get(kind, kind.lower() or "unknown")


def status_in_words(record: Mapping[str, Any]) -> str:
    """What happened to a transaction, in words (the accounting view's words for money)."""
    kind = str(record.get("requesttypedescription") or "")
    if kind in ("AUTH", "REFUND"):
        return money_status(record)
    if kind == "SUBSCRIPTION":
        return labelled("transactionactive", record.get("transactionactive"), record)
    return in_words(record)


def _in_words(rows: pd.DataFrame) -> pd.DataFrame:
    records = [{k: v for k, v in r.items() if not _missing(v)} for r in rows.to_dict("records")]
    table = pd.DataFrame(
        {
            "time": rows.get("transactionstartedtimestamp", pd.NaT),
            "what": [what_it_was(r) for r in records],
            "status": [status_in_words(r) for r in records],
            "amount": rows.get("baseamount_major", float("nan")),
            "currency": _text(rows, "currencyiso3a"),
            "order reference": _text(rows, "orderreference"),
            "transaction reference": _text(rows, "transactionreference"),
            "payment reference": _text(rows, "parenttransactionreference"),
            "card": _text(rows, "maskedpan"),
            "name": (_text(rows, "billingfirstname") + " " + _text(rows, "billinglastname")).str.strip(),
            "email": _text(rows, "billingemail"),
        },
        columns=FOUND_COLUMNS,
    ).reset_index(drop=True)
    for column in ("what", "status"):
        table[column] = table[column].astype("string")
    table.attrs[MONEY_COLUMNS] = ["amount"]
    return table


def _missing(value: Any) -> bool:
    return value is None or (not isinstance(value, (str, list, dict)) and bool(pd.isna(value)))


# -- one payment --------------------------------------------------------------------------------


@dataclass
class PaymentView:
    """One payment (its record as the gateway has it now) and everything that happened to it."""

    record: Mapping[str, Any]
    events: pd.DataFrame
    when: ReportTime

    def _repr_html_(self) -> str:
        reference = self.record.get("transactionreference", "")
        return (
            f"<div class='gwkit-payment-view'><h4>Payment {reference}</h4>{records_html([self.record])}"
            f"{to_html(self.events)}</div>"
        )


def payment_view(
    client: Any,
    transactionreference: str,
    *,
    journal: Journal | str | os.PathLike[str] | None = None,
    notifications: Any = None,
) -> PaymentView:
    """The payment `transactionreference` and its story, oldest first: made, updated (TRANSACTIONUPDATEs
    found in the `journal`: default the client's own, if it has one), settled, refunded, notified
    (`notifications`: a NotificationListener or the notifications it received), and the subscription
    it set up or belongs to, with that subscription's payments."""
    found = query_paged(client, {"transactionreference": [transactionreference]})
    if not found:
        raise LookupError(f"transactionreference: no transaction {transactionreference!r} on this site")
    record = dict(found[0])
    related = [dict(r) for r in query_paged(client, {"parenttransactionreference": [transactionreference]})]
    events: list[dict[str, Any] | None] = [_made(record)]
    events += _updates(
        journal if journal is not None else getattr(client, "journal", None),
        record,
        getattr(client, "sitereference", None),
    )
    events += [_settlement(record)]
    parent = record.get("parenttransactionreference")
    if parent and record.get("accounttypedescription") == "RECUR":
        events.append(
            _event(record.get("transactionstartedtimestamp"), f"A payment of subscription {parent}")
        )
    for child in related:
        events.append(_related(child))
        if child.get("requesttypedescription") == "SUBSCRIPTION":
            payments = query_paged(client, {"parenttransactionreference": [child["transactionreference"]]})
            events += [_related(dict(p)) for p in payments]
    events += _notified(notifications, transactionreference)
    table = pd.DataFrame([e for e in events if e is not None], columns=EVENT_COLUMNS)
    table["time"] = pd.to_datetime(table["time"], errors="coerce")
    table = table.sort_values("time", kind="stable", na_position="last").reset_index(drop=True)
    table.attrs[MONEY_COLUMNS] = ["amount"]
    when = report_time(client)
    table.attrs["report_time"] = when.as_attrs()
    captioned(table, f"Everything that happened to payment {transactionreference}")
    return PaymentView(record, table, time_of(table))


def _event(
    time: Any, what: str, amount: float | None = None, currency: Any = None, reference: Any = None
) -> dict[str, Any]:
    return {
        "time": time,
        "what happened": what,
        "amount": amount,
        "currency": currency,
        "reference": reference,
    }


def _major(record: Mapping[str, Any], field: str = "baseamount") -> float | None:
    value = record.get(field)
    if value in (None, ""):
        return None
    return float(to_major(int(value), record.get("currencyiso3a")))


def _made(record: Mapping[str, Any]) -> dict[str, Any]:
    return _event(
        record.get("transactionstartedtimestamp"),
        f"{what_it_was(record).capitalize()}: {status_in_words(record)}",
        _major(record),
        record.get("currencyiso3a"),
        record.get("transactionreference"),
    )


def _settlement(record: Mapping[str, Any]) -> dict[str, Any] | None:
    status = str(record.get("settlestatus") or "")
    due = record.get("settleduedate")
    if not record_ok(record):
        return None  # declined, failed or cancelled: nothing to settle (said in the first event)
    field = "settlebaseamount" if record.get("settlebaseamount") else "baseamount"
    if status == "100":
        # settlement runs at the end of the settle day (the real gateway's daily run, and the sandbox's)
        return _event(
            f"{due} 23:59:59" if due else None,
            f"Settled at the end of {due}" if due else "Settled",
            _major(record, field),
            record.get("currencyiso3a"),
        )
    words = SETTLESTATUS_WORDS.get(status, "settle status not documented")
    return _event(None, f"Not settled yet ({status} · {words}); due {due or 'when released'}")


def _related(child: Mapping[str, Any]) -> dict[str, Any]:
    kind = str(child.get("requesttypedescription") or "")
    what = what_it_was(child)
    if kind == "AUTH" and child.get("subscriptionnumber"):
        what = f"subscription payment {child['subscriptionnumber']}"
    sign = -1 if kind == "REFUND" else 1
    amount = _major(child, "settlebaseamount" if child.get("settlebaseamount") else "baseamount")
    return _event(
        child.get("transactionstartedtimestamp"),
        f"{what.capitalize()}: {status_in_words(child)}",
        None if amount is None or kind == "SUBSCRIPTION" else sign * amount,
        child.get("currencyiso3a"),
        child.get("transactionreference"),
    )


def _updates(journal: Any, record: Mapping[str, Any], site: str | None) -> list[dict[str, Any]]:
    """The TRANSACTIONUPDATEs of this payment the journal holds: of its site, sent after it was made
    (a journal outlives a notebook's fresh sandbox, whose references may come round again)."""
    if journal is None:
        return []
    reference, currency = str(record.get("transactionreference")), record.get("currencyiso3a")
    made = pd.to_datetime(record.get("transactionstartedtimestamp"), errors="coerce")
    source = journal if isinstance(journal, Journal) else Journal(journal)
    rows = source.rows(
        "SELECT started_at, gateway_time, request_json, outcome, errorcode, errormessage FROM exchanges "
        "WHERE request_types LIKE '%TRANSACTIONUPDATE%' AND request_json LIKE ? "
        "AND (sitereference = ? OR sitereference IS NULL OR ? IS NULL) ORDER BY id",
        (f"%{reference}%", site, site),
    )
    sent = [pd.to_datetime(row["gateway_time"], errors="coerce") for row in rows]
    rows = [row for row, at in zip(rows, sent, strict=True) if pd.isna(made) or pd.isna(at) or at >= made]
    events = []
    for row in rows:
        for request in json.loads(row["request_json"]).get("request", []):
            filters = request.get("filter") or {}
            if reference not in _values(filters.get("transactionreference")):
                continue
            changes = ", ".join(_change(k, v, currency) for k, v in (request.get("updates") or {}).items())
            done = (
                "done" if row["outcome"] == "ok" else f"refused ({row['errorcode']} · {row['errormessage']})"
            )
            events.append(_event(row["gateway_time"] or row["started_at"], f"Updated: {changes}: {done}"))
    return events


def _values(value: Any) -> list[str]:
    items = value if isinstance(value, list) else [value]
    return [str(v.get("value") if isinstance(v, Mapping) else v) for v in items if v is not None]


def _change(field: str, value: Any, currency: str | None) -> str:
    name = CHANGE_NAMES.get(field, field)
    if report_kind(field) == AMOUNT and str(value).lstrip("-").isdigit():
        return f"{name} set to {format_money(int(value), currency)}"
    return f"{name} set to {labelled(field, value)}"


def _notified(notifications: Any, reference: str) -> list[dict[str, Any]]:
    received: Iterable[Any] = getattr(notifications, "received", notifications) or []
    events = []
    for note in received:
        fields = getattr(note, "fields", note)
        if fields.get("transactionreference") != reference:
            continue
        checked = {True: "signature checked", False: "signature WRONG", None: "no signature to check"}
        verified = getattr(note, "verified", None)
        answered = getattr(note, "answered", None)
        duplicate = " (a resend: dropped)" if getattr(note, "duplicate", False) else ""
        arrived = getattr(note, "received", None)
        # the listener stamps arrivals by this machine's wall clock, not the gateway's: said in words
        at = f" at {arrived:%Y-%m-%d %H:%M:%S %Z} (wall clock)" if arrived is not None else ""
        events.append(
            _event(
                None,
                f"Notification received{at}: {checked[verified]}, answered {answered}{duplicate}",
                reference=fields.get("notificationreference"),
            )
        )
    return events
