"""Reports: typed DataFrames from the spec tables, the journal and queries, charts, export."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import matplotlib
import numpy as np
import openpyxl
import pandas as pd
import pytest

matplotlib.use("Agg")

import gwkit.report as report
from gwkit import sandbox as sandbox_module
from gwkit.config import Target
from gwkit.connect import Connection
from gwkit.interface import FIELDS
from gwkit.interface.fields import AMOUNT, CATEGORY, DATE, DATETIME, INTEGER, TEXT
from gwkit.journal import Journal
from gwkit.report import ReportError, records_frame
from gwkit.report.textcells import excel_would_convert, would_evaluate

SAMPLE = {
    AMOUNT: "1050",
    INTEGER: "12",
    DATE: "2026-03-04",
    DATETIME: "2026-03-04 05:06:07",
    CATEGORY: "X",
    TEXT: "free text",
}
ROOT = Path(__file__).resolve().parents[2]


def _benchmark_module():
    spec = importlib.util.spec_from_file_location(
        "report_frames_bench", ROOT / "benchmarks" / "report_frames.py"
    )
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


# -- dtypes from the spec tables --------------------------------------------------------------------


@pytest.mark.parametrize("name", sorted(FIELDS))
def test_every_field_gets_the_dtype_of_its_report_kind(name):
    kind = FIELDS[name].report
    frame = records_frame([{name: SAMPLE[kind]}, {}])
    column = frame[name]
    if kind in (AMOUNT, INTEGER):
        assert column.dtype == "Int64" and column.iloc[0] == int(SAMPLE[kind]) and column.isna().iloc[1]
    elif kind in (DATE, DATETIME):
        assert pd.api.types.is_datetime64_dtype(column)
        assert column.iloc[0] == pd.Timestamp(SAMPLE[kind]) and pd.isna(column.iloc[1])
    elif kind == CATEGORY:
        assert isinstance(column.dtype, pd.CategoricalDtype) and column.iloc[0] == "X"
    else:
        assert isinstance(column.dtype, pd.StringDtype) and column.iloc[0] == "free text"
    if kind == AMOUNT:
        assert frame.columns.get_loc(name + "_major") == frame.columns.get_loc(name) + 1


@pytest.mark.parametrize(
    "currency, expected",
    [
        ("GBP", 10.5),
        ("USD", 10.5),
        ("JPY", 1050.0),
        ("BHD", 1.05),
        ("KWD", 1.05),
        (None, 10.5),
        ("XXX", 10.5),
    ],
)
def test_major_units_follow_the_currency_exponent(currency, expected):
    record = {"baseamount": "1050", "settlebaseamount": "1050"}
    if currency:
        record["currencyiso3a"] = currency
    frame = records_frame([record])
    assert frame["baseamount_major"].iloc[0] == expected
    assert frame["settlebaseamount_major"].iloc[0] == expected


def test_mixed_currencies_in_one_frame():
    frame = records_frame(
        [{"baseamount": "1050", "currencyiso3a": c} for c in ("JPY", "GBP", "KWD")]
        + [{"currencyiso3a": "GBP"}]
    )
    assert frame["baseamount_major"].tolist()[:3] == [1050.0, 10.5, 1.05]
    assert np.isnan(frame["baseamount_major"].iloc[3])


def test_empty_strings_are_missing_and_unknown_fields_are_text():
    frame = records_frame(
        [
            {
                "settleduedate": "",
                "baseamount": "",
                "found": "2",
                "errordata": ["pan", "expirydate"],
                "nested": {"a": 1},
            }
        ]
    )
    assert frame["settleduedate"].isna().all() and frame["baseamount"].isna().all()
    assert frame["found"].dtype == "string" and frame["found"].iloc[0] == "2"
    assert frame["errordata"].iloc[0] == "pan, expirydate"
    assert frame["nested"].iloc[0] == '{"a": 1}'


@pytest.mark.parametrize(
    "record, column, rule",
    [
        ({"baseamount": "10.50"}, "baseamount", "an integer amount in base units"),
        ({"subscriptionnumber": "two"}, "subscriptionnumber", "a whole number"),
        (
            {"transactionstartedtimestamp": "2026-13-01 00:00:00"},
            "transactionstartedtimestamp",
            "a timestamp",
        ),
        ({"settleduedate": "04/03/2026"}, "settleduedate", "a date YYYY-MM-DD"),
    ],
)
def test_a_bad_value_names_column_row_and_rule(record, column, rule):
    with pytest.raises(ReportError) as caught:
        records_frame([{column: _good(column)}, record])
    assert caught.value.column == column and caught.value.row == 1
    assert rule in str(caught.value) and repr(record[column]) in str(caught.value)
    coerced = records_frame([{column: _good(column)}, record], errors="coerce")
    assert coerced[column].notna().iloc[0] and coerced[column].isna().iloc[1]


def _good(column: str) -> str:
    return SAMPLE[FIELDS[column].report]


def test_columns_pick_and_order():
    frame = records_frame([{"b": "1", "baseamount": "5"}], columns=["baseamount", "missing"])
    assert list(frame.columns) == ["baseamount", "baseamount_major", "missing"]
    assert frame["missing"].isna().all()
    empty = records_frame([], columns=["baseamount", "currencyiso3a"])
    assert len(empty) == 0 and empty["baseamount"].dtype == "Int64"


def test_the_fast_path_equals_the_naive_pandas_way():
    bench = _benchmark_module()
    records = bench.generate(3000)
    bench.check_same(records_frame(records), bench.naive_frame(records))


# -- sources: TRANSACTIONQUERY and the journal --------------------------------------------------------


@pytest.fixture(scope="module")
def activity(tmp_path_factory):
    """A sandbox with a few days of payments, declines and bank errors, journalled."""
    folder = tmp_path_factory.mktemp("report")
    handle = sandbox_module.start(folder / "sandbox.db")
    target = Target("sandbox", handle.base_url, handle.username, handle.sitereference, "GBP", "test")
    gw = Connection(target, handle.password, sandbox=handle, journal=Journal(folder / "journal.db"))
    expiry = f"12/{handle.now().year + 2}"
    orders = []
    for day in range(3):
        for i, amount in enumerate((1050, 2000, 70000, 60010)):
            order = f"r-{day}-{i}"
            gw.auth(
                accounttypedescription="ECOM",
                baseamount=amount,
                pan="4111111111111111",
                expirydate=expiry,
                securitycode="123",
                orderreference=order,
            )
            orders.append(order)
        handle.advance(by="P1D")
    gw.store(accounttypedescription="CARDSTORE", pan="4111111111111111", expirydate=expiry)
    yield gw, orders
    gw.close()
    handle.stop()


def test_query_frame_from_a_response_is_typed(activity):
    gw, orders = activity
    frame = report.query_frame(gw.transaction_query(orderreference=orders))
    assert len(frame) == 12
    assert frame["baseamount"].dtype == "Int64" and frame["transactionstartedtimestamp"].dtype.kind == "M"
    assert isinstance(frame["settlestatus"].dtype, pd.CategoricalDtype)
    assert set(frame["errorcode"].astype(str)) == {"0", "70000", "60010"}
    assert set(frame.loc[frame["errorcode"] == "0", "settlestatus"].astype(str)) == {"100"}
    assert frame["baseamount_major"].sum() == pytest.approx(3 * (10.5 + 20 + 700 + 600.1))
    assert not frame["maskedpan"].str.contains("4111111111111111").any()
    assert report.query_frame(gw.transaction_query(orderreference=orders).raw).equals(frame)


def test_journal_frames(activity):
    gw, _ = activity
    exchanges = report.journal_frame(gw)
    assert len(exchanges) == len(gw.journal)
    assert str(exchanges["started_at"].dtype) == "datetime64[us, UTC]"
    assert exchanges["id"].dtype == "Int64" and exchanges["elapsed_ms"].dtype == "float64"
    assert set(exchanges["outcome"].astype(str)) >= {"ok", "error"}
    assert isinstance(exchanges["request_types"].dtype, pd.CategoricalDtype)

    records = report.journal_records_frame(gw.journal)
    assert list(records.columns[:2]) == ["exchange_id", "exchange_started_at"]
    assert records["exchange_id"].dtype == "Int64"
    assert (records["requesttypedescription"] == "AUTH").sum() >= 12
    assert "records" not in records.columns
    assert report.journal_frame(gw.journal.path).equals(exchanges)


def test_journal_frames_of_an_empty_journal(tmp_path):
    journal = Journal(tmp_path / "empty.db")
    assert report.journal_frame(journal).empty
    assert list(report.journal_records_frame(journal).columns) == ["exchange_id", "exchange_started_at"]
    with pytest.raises(TypeError, match="expected a Journal"):
        report.journal_frame(42)


# -- charts --------------------------------------------------------------------------------------------


def test_amounts_by_day_chart_has_labelled_axes_and_the_table_totals(activity):
    gw, orders = activity
    frame = report.query_frame(gw.transaction_query(orderreference=orders))
    table = report.amounts_by_day_table(frame)
    assert len(table) == 3
    # cancelled payments (declines) moved no money: they are not stacked with the settled money
    assert set(frame["settlestatus"].astype(str)) >= {"3"} and set(table.columns) == {"100 · settled"}
    assert table["100 · settled"].tolist() == pytest.approx([30.5, 30.5, 30.5])
    ax = report.amounts_by_day(frame)
    assert ax.get_xlabel() == "Day the transaction started"
    assert ax.get_ylabel() == "Amount (GBP, major units)"
    assert "settle status" in ax.get_title()
    assert sum(p.get_height() for p in ax.patches) == pytest.approx(table.to_numpy().sum())
    assert [t.get_text() for t in ax.get_legend().get_texts()] == list(table.columns)
    legend = ax.get_legend().get_window_extent(ax.figure.canvas.get_renderer())
    assert legend.x0 >= ax.get_window_extent().x1  # beside the plot, never over the bars


def test_decline_reasons_chart(activity):
    gw, orders = activity
    frame = report.query_frame(gw.transaction_query(orderreference=orders))
    table = report.decline_reasons_table(frame)
    assert dict(zip(table["reason"], table["count"], strict=True)) == {
        "70000 Decline": 3,
        "60010 Bank System Error": 3,
    }
    ax = report.decline_reasons(frame)
    assert ax.get_xlabel() == "Number of records" and ax.get_ylabel() == "Error code and message"
    assert sorted(p.get_width() for p in ax.patches) == [3, 3]


def test_charts_refuse_what_they_cannot_draw():
    ok_only = records_frame(
        [
            {
                "errorcode": "0",
                "baseamount": "1",
                "currencyiso3a": "GBP",
                "transactionstartedtimestamp": "2026-01-01 00:00:00",
            }
        ]
    )
    with pytest.raises(ValueError, match="nothing to chart"):
        report.decline_reasons(ok_only)
    with pytest.raises(ValueError, match="no transactionstartedtimestamp column"):
        report.amounts_by_day(records_frame([{"baseamount": "1"}]))


def test_every_currency_in_rows_and_panels_of_its_own():
    frame = records_frame(
        [
            {
                "baseamount": "1000",
                "currencyiso3a": "GBP",
                "transactionstartedtimestamp": "2026-01-01 10:00:00",
                "settlestatus": "100",
                "requesttypedescription": "AUTH",
            },
            {
                "baseamount": "500",
                "currencyiso3a": "GBP",
                "transactionstartedtimestamp": "2026-01-01 11:00:00",
                "settlestatus": "0",
                "requesttypedescription": "AUTH",
            },
            {
                "baseamount": "9000",
                "currencyiso3a": "JPY",
                "transactionstartedtimestamp": "2026-01-01 12:00:00",
                "settlestatus": "100",
                "requesttypedescription": "AUTH",
            },
        ]
    )
    table = report.amounts_by_day_table(frame)
    assert table.loc[(pd.Timestamp("2026-01-01"), "GBP")].to_dict() == {
        "0 · pending settlement": 5.0,
        "100 · settled": 10.0,
    }
    assert table.loc[(pd.Timestamp("2026-01-01"), "JPY"), "100 · settled"] == 9000.0
    assert "GBP, JPY" in table.attrs["caption"] and "wall clock" in table.attrs["caption"]
    shown = report.for_people(table.reset_index())
    assert list(shown["100 · settled"]) == ["£10.00", "¥9,000"]
    gbp, jpy = report.amounts_by_day(frame)
    assert "GBP" in gbp.get_title() and "JPY" in jpy.get_ylabel()
    assert sum(p.get_height() for p in jpy.patches) == 9000.0
    only = report.amounts_by_day_table(frame, currency="JPY")
    assert only.to_numpy().sum() == 9000.0 and only.attrs["currency"] == "JPY"


# -- export --------------------------------------------------------------------------------------------


def test_export_to_csv_and_parquet_keeps_types(tmp_path):
    frame = records_frame(
        [
            {
                "baseamount": "1050",
                "currencyiso3a": "GBP",
                "settlestatus": "100",
                "transactionstartedtimestamp": "2026-01-02 03:04:05",
                "orderreference": "o-1",
            },
            {"currencyiso3a": "JPY", "settlestatus": "0"},
        ]
    )
    files = report.export(frame, tmp_path / "out", "tx")
    back = pd.read_parquet(files["parquet"])
    assert back["baseamount"].dtype == "Int64" and pd.isna(back["baseamount"].iloc[1])
    assert isinstance(back["settlestatus"].dtype, pd.CategoricalDtype)
    assert back["transactionstartedtimestamp"].iloc[0] == pd.Timestamp("2026-01-02 03:04:05")
    text = files["csv"].read_text(encoding="utf-8-sig").splitlines()
    assert text[0].split(",") == list(frame.columns)
    assert "2026-01-02 03:04:05" in text[1] and "10.50" in text[1]  # GBP: two decimals
    assert ',"=""0""",' in text[2]  # the settle status, a code: text to Excel (="0", quoted)
    book = openpyxl.load_workbook(files["xlsx"])
    assert book.sheetnames == ["Summary", "GBP", "JPY"]
    gbp = [[c.value for c in row] for row in book["GBP"].iter_rows()]
    assert (
        gbp[0][:2] == ["baseamount (GBP)", "currencyiso3a"] and gbp[1][0] == 10.5
    )  # written once, major units


# -- small helpers ---------------------------------------------------------------------------------------


def test_to_major_is_exact():
    assert report.to_major(1050, "GBP") == "10.50"
    assert report.to_major("5", "KWD") == "0.005"
    assert report.to_major(1050, "JPY") == "1050"
    assert report.to_major(-1050, "GBP") == "-10.50"
    assert report.exponent("clf") == 4


def test_code_and_status_labels():
    assert report.explain("70000").message == "Decline"
    assert report.explain("abc").code == -1
    assert report.settle_status_label("100") == "100 · settled"
    assert report.settle_status_label(None) == "unknown"
    assert report.settle_status_label("7") == "7 · not documented"


FORMULAS = ['=HYPERLINK("http://x","y")', "+1+cmd|' /C calc'!A0", "@SUM(A1:A2)", "-2+3", "\tx=1", "\r=1"]


def test_csv_export_neutralises_formulas_and_keeps_numbers(tmp_path):
    frame = records_frame(
        [{"orderreference": text, "baseamount": "1050", "currencyiso3a": "GBP"} for text in FORMULAS]
        + [{"orderreference": "plain-1", "baseamount": "1050", "currencyiso3a": "GBP"}]
    )
    frame.loc[0, ["baseamount", "baseamount_major"]] = [-1050, -10.5]  # money out: still a number
    files = report.export(frame, tmp_path, "tx")
    back = pd.read_csv(files["csv"], keep_default_na=False)
    assert list(back["orderreference"]) == ["'" + text for text in FORMULAS] + ["plain-1"]
    assert back["baseamount"].iloc[0] == -1050 and back["baseamount_major"].iloc[0] == -10.5
    parquet = pd.read_parquet(files["parquet"])
    assert list(parquet["orderreference"]) == [*FORMULAS, "plain-1"]


def test_csv_export_neutralising_can_be_turned_off(tmp_path):
    frame = pd.DataFrame({"orderreference": pd.array(["=1+1", "@x"], dtype="string")})
    path = report.to_csv(frame, tmp_path / "raw.csv", neutralise_formulas=False)
    assert path.read_text(encoding="utf-8-sig").splitlines() == ["orderreference", "=1+1", "@x"]
    safe = report.to_csv(frame, tmp_path / "safe.csv").read_text(encoding="utf-8-sig")
    assert safe.splitlines()[1:] == ["'=1+1", "'@x"]


def test_only_text_that_would_run_is_neutralised():
    """A name starting with "-" is a name; a sign followed by anything else could run."""
    for name in ("-Lee", "+Anne-Marie", "-O'Neil", "-St. John", "-Lee Smith"):
        assert not would_evaluate(name), name
    for formula in (*FORMULAS, "-A1", "-1", "+cmd|x", "-", "-Lee(1)"):
        assert would_evaluate(formula), formula
    for converted in ("18-9-17", "05", "00", "12:30", "1/2", "3 Mar", "1E5", "12%", "2026-01-10"):
        assert excel_would_convert(converted), converted
    for text in ("May", "Mayer", "plain-1", "A12", "Chloé"):
        assert not excel_would_convert(text), text


def test_csv_export_quotes_a_carriage_return_so_it_cannot_start_a_row(tmp_path):
    frame = pd.DataFrame({"orderreference": pd.array(["a\r=1+1", "b"], dtype="string")})
    path = report.to_csv(frame, tmp_path / "cr.csv")
    assert path.read_bytes() == b'\xef\xbb\xbforderreference\r\n"a\r=1+1"\r\nb\r\n'
