"""The accounting view: one row per money movement, a net column that sums to the truth per currency.

    view = gwkit.report.accounting_view(transactions, gw)   # transactions: a query_frame; gw: whose clock
    view.book        # settled payments (+) and refunds (-), amounts in major units with their currency
    view.apart       # what moved no money: awaiting settlement, suspended, declined, cancelled, unknown
    view.totals      # per currency: settled, refunded, net (never summed across currencies)
    view.export("exports", "transactions")   # .xlsx (a sheet per currency, a summary) and CSV for Excel

What counts, the same rules as `settlement_reconciliation` (so the two agree to the penny):
- a payment (AUTH, errorcode 0, not cancelled) is money when it has settled (settlestatus 100), for
  what it settled for (`settlebaseamount`, else `baseamount`), on its settle day;
- a refund (REFUND, errorcode 0, not cancelled) is money given back the day it is made, negative;
- everything else is kept apart with its status in words: payments still to settle or suspended,
  declined, failed, cancelled, and those whose outcome is unknown (look before charging again).
Other records (subscription schedules, card checks, stored cards, 3-D Secure queries) carry no money
of their own and are left out; `left_out` counts them in words.
"""

from __future__ import annotations

import html
import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from openpyxl import Workbook

from ..interface.codes import explain
from ..interface.currency import exponent, format_money
from ..interface.vocabulary import SETTLESTATUS_WORDS
from .charts import DAY_COLUMN
from .display import to_html
from .export import to_csv
from .frames import MONEY_COLUMNS
from .spreadsheet import BOLD, by_currency, money_format, save, write_lines, write_table
from .timing import REPORT_TIME, ReportTime, captioned, report_time, time_of

CURRENCY = "currency"
AMOUNT = "amount"
NET = "net"
BOOK_COLUMNS = [
    "day",
    CURRENCY,
    "movement",
    AMOUNT,
    NET,
    "status",
    "billing name",
    "order reference",
    "transaction reference",
    "payment reference",
    "card",
    "card type",
    "email",
    "time",
]
APART_COLUMNS = [c for c in BOOK_COLUMNS if c not in (NET, "payment reference")]
TOTAL_COLUMNS = [
    CURRENCY,
    "payments settled",
    "settled",
    "refunds",
    "refunded",
    NET,
    "awaiting settlement",
    "not taken",
]
TEXT_FIELDS = {
    "order reference": "orderreference",
    "transaction reference": "transactionreference",
    "payment reference": "parenttransactionreference",
    "card": "maskedpan",
    "card type": "paymenttypedescription",
    "email": "billingemail",
}
PENDING = ("0", "1", "10")
# What each total means: in the docs (docs/reporting.md), the workbook's summary and the captions.
FIGURES = {
    "settled": "payments that settled, for what they settled for, on the day they settled",
    "refunded": "refunds made, on the day they were made (below zero in the money movements)",
    "net": "settled less refunded: the sum of the net column of the currency's money movements",
    "awaiting settlement": "payments authorised that have not settled yet: no money moved yet",
    "not taken": "payments declined, failed, cancelled or of unknown outcome: no money moved",
}


@dataclass
class AccountingView:
    """The accounting view of some transactions (see the module's notes for what counts)."""

    book: pd.DataFrame
    apart: pd.DataFrame
    totals: pd.DataFrame
    when: ReportTime
    left_out: str = ""
    title: str = "Transactions for accounting"

    @property
    def caption(self) -> str:
        return f"{self.title}. {self.when.caption}"

    def _repr_html_(self) -> str:
        parts = [to_html(self.totals), to_html(self.book), to_html(self.apart)]
        if self.left_out:
            parts.append(f"<p>{html.escape(self.left_out)}</p>")
        return "".join(parts)

    def export(self, directory: str | os.PathLike[str], name: str) -> dict[str, Path]:
        """`<name>.xlsx` (a summary sheet, a sheet per currency, a sheet of what moved no money) and
        CSV for Excel: `<name>.csv` (the money movements) and `<name>-no-money.csv`."""
        folder = Path(directory)
        return {
            "xlsx": self.to_xlsx(folder / f"{name}.xlsx"),
            "csv": to_csv(self.book, folder / f"{name}.csv", caption=self.caption),
            "csv_no_money": to_csv(
                self.apart, folder / f"{name}-no-money.csv", caption=f"No money moved. {self.caption}"
            ),
        }

    def to_xlsx(self, path: str | os.PathLike[str]) -> Path:
        """The view as a workbook: a summary (as of when, which clock, the time zone, the totals per
        currency, what each figure means), a sheet of money movements per currency ending with its
        total, and a sheet of what moved no money."""
        book = Workbook()
        summary = book.active
        summary.title = "Summary"
        row = write_lines(summary, [("What this is", self.title), *self.when.lines()])
        row = write_table(summary, self.totals, start_row=row + 1, per_row_currency=CURRENCY)
        notes = list(FIGURES.items())
        if self.left_out:
            notes.append(("left out", self.left_out))
        write_lines(summary, notes, start_row=row + 1)
        for code, rows in by_currency(self.book, CURRENCY):
            sheet = book.create_sheet(code)
            end = write_table(
                sheet, rows, currency=code, caption=f"{self.caption} Currency: {code}.", zone=self.when.zone
            )
            sheet.cell(row=end, column=1, value="Total").font = BOLD
            scale = 10 ** exponent(code)
            for name in (AMOUNT, NET):
                total = int((rows[name] * scale).round().astype("int64").sum()) / scale
                cell = sheet.cell(row=end, column=list(rows.columns).index(name) + 1, value=total)
                cell.number_format, cell.font = money_format(code), BOLD
        write_table(
            book.create_sheet("No money moved"),
            self.apart,
            per_row_currency=CURRENCY,
            caption=f"Payments that moved no money, with their status in words. {self.caption}",
            zone=self.when.zone,
        )
        return save(book, path)


def accounting_view(frame: pd.DataFrame, clock: Any = None, *, title: str | None = None) -> AccountingView:
    """The accounting view of a transactions frame (`query_frame`); `clock`: whose "now" to state
    (a client or connection, a sandbox handle, a `ReportTime`; default the frame's own, which
    `query_frame(..., clock=gw)` and `transactions_frame` set, else the wall clock)."""
    needed = ("requesttypedescription", "errorcode", "settlestatus", "baseamount", "currencyiso3a")
    missing = [c for c in needed if c not in frame.columns]
    if missing:
        raise ValueError(
            f"the frame has no {', '.join(missing)} column(s); build it with gwkit.report.query_frame"
        )
    kind = _text(frame, "requesttypedescription")
    code = _text(frame, "errorcode")
    status = _text(frame, "settlestatus")
    ok = (code == "0") & (status != "3")
    money_kind = kind.isin(["AUTH", "REFUND"])
    settled = ok & (kind == "AUTH") & (status == "100")
    refunds = ok & (kind == "REFUND")
    rows = frame[money_kind]
    book = _rows(frame[settled | refunds], sign=np.where(kind[settled | refunds] == "REFUND", -1, 1))
    book = book.sort_values(["day", "time"], kind="stable").reset_index(drop=True)
    apart_rows = rows[~(settled | refunds)[money_kind]]
    apart = _rows(apart_rows, sign=np.ones(len(apart_rows), dtype=int), apart=True)
    apart = apart.sort_values(["day", "time"], kind="stable").reset_index(drop=True)[APART_COLUMNS]
    for table, columns in ((book, [AMOUNT, NET]), (apart, [AMOUNT])):
        table.attrs[MONEY_COLUMNS] = columns
    others = kind[~money_kind].value_counts()
    left_out = ""
    if len(others):
        listed = ", ".join(f"{count} {name or 'unnamed'}" for name, count in others.items())
        left_out = f"Left out, as they carry no money of their own: {listed} record(s)."
    when = report_time(clock) if clock is not None else time_of(frame)
    totals = _totals(book, apart)
    for table, what in (
        (book, "Money movements: settled payments, refunds below zero; net sums to the truth per currency"),
        (apart, "No money moved (kept apart, status in words)"),
        (totals, "Totals per currency, never added across currencies"),
    ):
        table.attrs[REPORT_TIME] = when.as_attrs()
        captioned(table, what)
    return AccountingView(
        book=book,
        apart=apart,
        totals=totals,
        when=when,
        left_out=left_out,
        title=title or "Transactions for accounting",
    )


def _text(frame: pd.DataFrame, column: str) -> pd.Series:
    if column not in frame.columns:
        return pd.Series("", index=frame.index, dtype="string")
    return frame[column].astype("string").fillna("")


def _to_settle(rows: pd.DataFrame) -> pd.Series:
    asked = rows["baseamount"].astype("Int64")
    if "settlebaseamount" not in rows.columns:
        return asked
    return rows["settlebaseamount"].astype("Int64").fillna(asked)


def _rows(rows: pd.DataFrame, *, sign: np.ndarray, apart: bool = False) -> pd.DataFrame:
    """The records as book rows: amounts signed, in major units with their currency's decimals."""
    kind = _text(rows, "requesttypedescription")
    currency = _text(rows, "currencyiso3a")
    base = (rows["baseamount"].astype("Int64") if apart else _to_settle(rows)).fillna(0)
    scale = currency.map(lambda c: 10 ** exponent(c or None)).astype("int64")
    major = pd.Series(
        [
            round(int(b) * int(s) / int(k), exponent(c or None))
            for b, s, k, c in zip(base, sign, scale, currency, strict=True)
        ],
        index=rows.index,
        dtype="float64",
    )
    started = rows[DAY_COLUMN] if DAY_COLUMN in rows.columns else pd.Series(pd.NaT, index=rows.index)
    day = started
    if not apart and "settleduedate" in rows.columns:
        # a payment is money on the day it settled; a refund the day it was made
        day = rows["settleduedate"].where(kind == "AUTH", started).fillna(started)
    table = pd.DataFrame(
        {
            "day": pd.to_datetime(day).dt.floor("D"),
            "time": pd.to_datetime(started),
            CURRENCY: currency.astype("string"),
            "movement": kind.map({"AUTH": "payment", "REFUND": "refund"}).astype("string"),
            "status": [money_status(record) for record in rows.to_dict("records")],
            **{label: _text(rows, name) for label, name in TEXT_FIELDS.items()},
            "billing name": _names(rows),
            AMOUNT: major,
            NET: major if not apart else 0.0,
        },
        index=rows.index,
    )
    for label in [*TEXT_FIELDS, "billing name", "status"]:
        table[label] = table[label].astype("string")
    return table.reindex(columns=BOOK_COLUMNS)


def _names(rows: pd.DataFrame) -> pd.Series:
    first, last = _text(rows, "billingfirstname"), _text(rows, "billinglastname")
    return (first + " " + last).str.strip()


def money_status(record: Mapping[str, Any]) -> str:
    """What happened to a payment or a refund, in words a finance user reads."""
    kind = str(record.get("requesttypedescription") or "")
    code = _plain(record.get("errorcode"))
    status = _plain(record.get("settlestatus"))
    currency = _plain(record.get("currencyiso3a")) or None
    if code not in ("", "0"):
        entry = explain(code)
        words = f"{code} · {entry.message or 'not in gwkit’s table'}"
        if entry.unknown_outcome:
            return f"outcome unknown ({words}): look it up before charging again"
        return f"{'declined' if code == '70000' else 'failed'} ({words}): no money moved"
    if status == "3":
        return "cancelled: no money moved"
    if kind == "REFUND":
        settled = "settled" if status == "100" else SETTLESTATUS_WORDS.get(status, "status not documented")
        return f"refund made ({settled})"
    if status == "100":
        asked, to_settle = _plain(record.get("baseamount")), _plain(record.get("settlebaseamount"))
        if to_settle and asked and to_settle != asked:
            return (
                f"settled: {format_money(to_settle, currency)} of the "
                f"{format_money(asked, currency)} authorised"
            )
        return "settled"
    if status == "2":
        return "authorised, settlement suspended: no money moved yet"
    if status in PENDING:
        return f"authorised, {SETTLESTATUS_WORDS[status]}: no money moved yet"
    return f"settle status {status or 'missing'}: not documented"


def _plain(value: Any) -> str:
    if value is None or (not isinstance(value, str) and pd.isna(value)):
        return ""
    return str(value)


def _totals(book: pd.DataFrame, apart: pd.DataFrame) -> pd.DataFrame:
    """Per currency, from integer base units (exact): settled, refunded and net; what awaits
    settlement; how many payments were not taken."""
    currencies = sorted(set(book[CURRENCY].dropna()) | set(apart[CURRENCY].dropna()))
    rows = []
    for code in currencies:
        mine = book[book[CURRENCY] == code]
        scale = 10 ** exponent(code)
        base = (mine[AMOUNT] * scale).round().astype("int64")
        payments, refunds = base[mine["movement"] == "payment"], base[mine["movement"] == "refund"]
        waiting = apart[(apart[CURRENCY] == code) & apart["status"].str.startswith("authorised")]
        rows.append(
            {
                CURRENCY: code,
                "payments settled": len(payments),
                "settled": int(payments.sum()) / scale,
                "refunds": len(refunds),
                "refunded": -int(refunds.sum()) / scale,
                NET: int(base.sum()) / scale,
                "awaiting settlement": round(float(waiting[AMOUNT].sum()), exponent(code)),
                "not taken": int(
                    ((apart[CURRENCY] == code) & ~apart["status"].str.startswith("authorised")).sum()
                ),
            }
        )
    totals = pd.DataFrame(rows, columns=TOTAL_COLUMNS).astype(
        {CURRENCY: "string", "payments settled": "int64", "refunds": "int64", "not taken": "int64"}
    )
    totals.attrs[MONEY_COLUMNS] = ["settled", "refunded", NET, "awaiting settlement"]
    return totals
