"""The accounting view and its exports, on the analyst's books (tests/report/conftest.py): money that
adds up per currency, a workbook that reads back with its types, CSV bytes Excel keeps as they are."""

from __future__ import annotations

import csv
import io
from collections import defaultdict
from datetime import datetime
from decimal import Decimal

import openpyxl
import pandas as pd
import pytest

import gwkit.report as report
from gwkit.interface.codes import record_ok
from gwkit.interface.currency import to_major
from support.books import HYPERLINK


@pytest.fixture(scope="module")
def records(books):
    return books.records()


@pytest.fixture(scope="module")
def view(books, records):
    return report.accounting_view(report.query_frame(records), books.sandbox)


def truth(records) -> dict[str, Decimal]:
    """Settled less refunded per currency, from the raw records with plain Python."""
    net: dict[str, int] = defaultdict(int)
    for record in records:
        if not record_ok(record):
            continue
        amount = int(record.get("settlebaseamount") or record["baseamount"])
        if record["requesttypedescription"] == "AUTH" and record["settlestatus"] == "100":
            net[record["currencyiso3a"]] += amount
        elif record["requesttypedescription"] == "REFUND":
            net[record["currencyiso3a"]] -= amount
    return {currency: Decimal(to_major(amount, currency)) for currency, amount in net.items()}


def test_the_net_column_sums_to_settled_less_refunded_per_currency(view, records):
    expected = truth(records)
    assert set(expected) == {"GBP", "EUR"}
    sums = view.book.groupby("currency")["net"].sum()
    assert {c: Decimal(f"{v:.2f}") for c, v in sums.items()} == expected
    totals = view.totals.set_index("currency")
    assert {c: Decimal(f"{v:.2f}") for c, v in totals["net"].items()} == expected
    assert (totals["settled"] - totals["refunded"]).round(2).to_dict() == totals["net"].to_dict()


def test_refunds_are_negative_and_what_moved_no_money_is_apart_in_words(view, books):
    refunds = view.book[view.book["movement"] == "refund"]
    assert len(refunds) == 5 and (refunds["net"] < 0).all() and (refunds["amount"] < 0).all()
    payments = view.book[view.book["movement"] == "payment"]
    assert (payments["net"] > 0).all() and set(payments["status"].str.split(":").str[0]) == {"settled"}
    lowered = view.book.set_index("transaction reference").loc[books.refs["lowered"]]
    assert lowered["amount"] == 100.0 and lowered["status"] == "settled: £100.00 of the £120.00 authorised"
    apart = view.apart.set_index("transaction reference")["status"]
    assert apart[books.refs["declined"]].startswith("declined (70000")
    assert apart[books.refs["unknown"]].startswith("outcome unknown (60010")
    assert apart[books.refs["cancelled"]] == "cancelled: no money moved"
    assert apart[books.refs["suspended"]] == "authorised, settlement suspended: no money moved yet"
    assert apart[books.refs["waiting"]] == "authorised, pending settlement: no money moved yet"
    assert "SUBSCRIPTION" in view.left_out
    assert view.when.clock == "the sandbox's virtual clock" and "2026-03-05 09:00" in view.caption


def test_the_workbook_reads_back_with_its_types(view, books, tmp_path):
    files = view.export(tmp_path, "accounts")
    book = openpyxl.load_workbook(files["xlsx"])
    assert book.sheetnames == ["Summary", "EUR", "GBP", "No money moved"]
    summary = {row[0]: row[1] for row in book["Summary"].iter_rows(max_col=2, values_only=True) if row[0]}
    assert (
        summary["Clock read"] == "the sandbox's virtual clock" and summary["As of"] == "2026-03-05 09:00:00"
    )
    assert summary["Time zone of every time"]
    gbp = book["GBP"]
    header = [c.value for c in gbp[2]]
    assert header[:5] == ["day", "currency", "movement", "amount (GBP)", "net (GBP)"]
    assert header[-1] == f"time ({view.when.zone})"
    assert {"amount (GBP)", "net (GBP)", "order reference"} <= set(header)
    rows = list(gbp.iter_rows(min_row=3))
    column = {name: position for position, name in enumerate(header)}
    first = rows[0]
    assert (
        isinstance(first[column["day"]].value, datetime)
        and first[column["day"]].number_format == "yyyy-mm-dd"
    )
    assert first[column["day"]].value.time().isoformat() == "00:00:00"
    assert isinstance(first[column["time (" + view.when.zone + ")"]].value, datetime)
    by_order = {r[column["order reference"]].value: r for r in rows}
    leading = by_order["00123"][column["order reference"]]
    assert leading.data_type == "s" and leading.number_format == "@" and leading.quotePrefix
    formula = by_order[HYPERLINK][column["order reference"]]
    assert formula.data_type == "s" and formula.value == HYPERLINK and formula.quotePrefix
    reference = by_order["18-9-17"][column["order reference"]]
    assert reference.value == "18-9-17" and reference.data_type == "s"
    names = {r[column["billing name"]].value: r[column["billing name"]] for r in rows}
    assert names["Sam -Lee"].data_type == "s" and not names["Sam -Lee"].quotePrefix
    money = by_order["00123"][column["amount (GBP)"]]
    assert isinstance(money.value, float) and money.number_format == "#,##0.00;-#,##0.00"
    total = rows[-1]
    assert total[0].value == "Total"
    assert Decimal(f"{total[column['net (GBP)']].value:.2f}") == truth(books.records())["GBP"]
    assert book["EUR"].cell(row=3, column=column["currency"] + 1).value == "EUR"
    apart = [c.value for c in book["No money moved"][2]]
    assert "status" in apart and "net" not in apart


def test_the_csv_for_excel_keeps_references_leading_zeros_and_names(view, tmp_path):
    path = view.export(tmp_path, "accounts")["csv"]
    data = path.read_bytes()
    assert data.startswith(b"\xef\xbb\xbf")  # the byte-order mark: Excel reads UTF-8
    text = data.decode("utf-8-sig")
    assert "Chloé" in text
    lines = list(csv.reader(io.StringIO(text)))
    assert lines[0][0].startswith("Transactions for accounting. As of 2026-03-05 09:00 by the sandbox")
    header, rows = lines[1], lines[2:]
    column = {name: position for position, name in enumerate(header)}
    orders = {r[column["order reference"]] for r in rows}
    assert '="00123"' in orders and '="18-9-17"' in orders  # text to Excel, not a number or a date
    assert "'" + HYPERLINK in orders  # would run: neutralised as OWASP advises
    assert "Sam -Lee" in {r[column["billing name"]] for r in rows}  # a name, left as it is
    assert all(len(r[column["day"]]) == 10 for r in rows)  # no 00:00:00 on a date
    assert all(len(r[column["time"]]) == 19 for r in rows)
    assert all(r[column["transaction reference"]].startswith('="') for r in rows)  # 48-9-1 is not a date
    assert {r[column["amount"]] for r in rows} >= {"10.50", "-10.50", "-5.99"}


def test_csv_for_data_tools_has_no_mark_and_no_protection(view, tmp_path):
    path = report.to_csv(view.book, tmp_path / "plain.csv", for_excel=False)
    data = path.read_bytes()
    assert not data.startswith(b"\xef\xbb\xbf")
    back = pd.read_csv(path, dtype=str, keep_default_na=False)
    assert "00123" in set(back["order reference"]) and "'" + HYPERLINK in set(back["order reference"])


def test_totals_never_add_currencies(view):
    assert list(view.totals["currency"]) == ["EUR", "GBP"]
    assert view.totals.attrs["money_columns"]
    shown = report.for_people(view.totals)
    assert shown.loc[0, "net"].startswith("€") and shown.loc[1, "net"].startswith("£")


def test_a_cancelled_payment_is_a_failed_payment_in_words_not_ok(records):
    table = report.declines_by_code(report.query_frame(records)).set_index("errorcode")
    assert table.loc["0", "message"] == "Cancelled (settle status 3)" and table.loc["0", "count"] == 1
    assert "no money moved" in table.loc["0", "meaning"]


def test_a_raw_export_states_its_clock_in_every_file(books, tmp_path):
    transactions = report.transactions_frame(books.gw, "2026-01-01")
    files = report.export(transactions, tmp_path, "raw")
    first = files["csv"].read_text(encoding="utf-8-sig").splitlines()[0]
    assert first == "Exported by gwkit. As of 2026-03-05 09:00 by the sandbox's virtual clock; times in UTC."
    book = openpyxl.load_workbook(files["xlsx"])
    summary = {row[0]: row[1] for row in book["Summary"].iter_rows(max_col=2, values_only=True) if row[0]}
    assert (
        summary["Clock read"] == "the sandbox's virtual clock" and summary["As of"] == "2026-03-05 09:00:00"
    )
    assert book.sheetnames == ["Summary", "EUR", "GBP"]  # a sheet per currency
    assert pd.read_parquet(files["parquet"]).attrs["report_time"]["clock"] == "the sandbox's virtual clock"
