"""Tables for people: money with symbols, thousands, percentages, no <NA>/NaN; frames unchanged."""

from __future__ import annotations

import re

import pandas as pd
import pytest

from gwkit.report import display, for_people, records_frame


@pytest.fixture
def frame():
    return records_frame(
        [
            {
                "transactionreference": "1-9-1",
                "baseamount": "150000",
                "currencyiso3a": "GBP",
                "settlestatus": "0",
                "errorcode": "0",
                "transactionstartedtimestamp": "2026-01-01 10:00:00",
            },
            {
                "transactionreference": "1-9-2",
                "baseamount": "1050",
                "currencyiso3a": "JPY",
                "errorcode": "70000",
                "transactionstartedtimestamp": "2026-01-02 10:00:00",
            },
            {
                "transactionreference": "1-9-3",
                "currencyiso3a": "EUR",
                "errorcode": "30000",
                "transactionstartedtimestamp": "2026-01-03 11:30:00",
            },
        ]
    )


def test_money_is_shown_once_in_major_units_with_its_symbol(frame):
    shown = for_people(frame)
    assert list(shown["baseamount"]) == ["£1,500.00", "¥1,050", ""]
    assert "baseamount_major" not in shown.columns
    assert (
        frame["baseamount"].dtype == pd.Int64Dtype() and "baseamount_major" in frame
    )  # the frame is untouched


def test_nothing_missing_is_written_as_na_or_nan(frame):
    text = for_people(frame).to_string()
    assert "<NA>" not in text and "NaN" not in text and "NaT" not in text and "nan" not in text


def test_numbers_rates_and_dates_for_people():
    frame = pd.DataFrame(
        {
            "decline_rate": [0.125, None],
            "payments": [1234567, 2],
            "day": pd.to_datetime(["2026-01-01", None]),
            "revenue_major": [15.5, 0.0],
            "currencyiso3a": ["GBP", "GBP"],
            "active": [True, False],
        }
    )
    shown = for_people(frame)
    assert list(shown["decline_rate"]) == ["12.5%", ""]
    assert list(shown["payments"]) == ["1,234,567", "2"]
    assert list(shown["day"]) == ["2026-01-01", ""]  # no time of midnight
    assert list(shown["revenue_major"]) == ["£15.50", "£0.00"]
    assert list(shown["active"]) == ["yes", "no"]


def test_the_html_is_interactive_with_itables_and_plain_without(frame, monkeypatch):
    interactive = display.to_html(frame, caption="Payments")
    assert "itables" in interactive and "£1,500.00" in interactive
    assert interactive.index(">Payments</p>") < interactive.index("<table")  # above, never scrolled away
    monkeypatch.setattr(display, "itables", None)
    plain = display.to_html(frame, caption="Payments")
    assert (
        plain.index(">Payments</p>") < plain.index("<table") and "£1,500.00" in plain and "NaN" not in plain
    )


def test_mappings_and_lists_are_written_as_text_never_as_a_python_repr():
    frame = pd.DataFrame(
        {"parameters": [{"status": 502, "process": True}, None], "fields": [["pan", "expirydate"], []]}
    )
    shown = for_people(frame)
    assert list(shown["parameters"]) == ["status=502, process=True", ""]
    assert list(shown["fields"]) == ["pan, expirydate", ""]


def test_a_dict_is_a_table_of_fields_with_card_data_masked():
    shown = display.mapping_html({"pan": "4111111111111111", "errordata": ["expirydate"], "nested": {"a": 1}})
    assert "411111######1111" in shown and "4111111111111111" not in shown
    assert "<td style='text-align:left'>expirydate</td>" in shown and "a=1" in shown and "{'" not in shown


def test_show_tables_for_people_registers_dataframes_and_dicts_in_ipython():
    from IPython.core.interactiveshell import InteractiveShell

    shell = InteractiveShell.instance()
    try:
        assert display.show_tables_for_people()
        data, _ = shell.display_formatter.format({"baseamount": "1050"})
        assert "gwkit-fields" in data["text/html"]
        data, _ = shell.display_formatter.format(
            pd.DataFrame({"baseamount": [1050], "currencyiso3a": ["GBP"]})
        )
        assert "£10.50" in data["text/html"]
        data, _ = shell.display_formatter.format(pd.Series([3, 1], index=["active", "ended"], name="count"))
        assert "active" in data["text/html"] and "dtype" not in data["text/html"]
    finally:
        InteractiveShell.clear_instance()


def test_a_series_is_a_table_of_labels_and_values_written_for_people():
    counts = pd.Series([1200, 3], index=pd.Index(["active", "ended"], name="state"), name="count")
    shown = display.series_html(counts)
    assert "state" in shown and "count" in shown and "1,200" in shown
    assert "dtype" not in shown and "Name:" not in shown

    types = pd.DataFrame(
        {"baseamount": pd.array([1050], dtype="Int64"), "when": pd.to_datetime(["2026-01-01"])}
    ).dtypes
    shown = display.series_html(types)
    assert "baseamount" in shown and "Int64" in shown and "datetime64" in shown

    plain = display.series_html(pd.Series([0.5, None]))
    assert "NaN" not in plain and "value" in plain


def test_money_is_base_units_in_integer_columns_and_major_units_in_float_columns():
    frame = pd.DataFrame({"refunded": pd.array([1050, 0], dtype="Int64"), "revenue": [40.0, 30.5]})
    frame.attrs["currency"] = "GBP"
    shown = for_people(frame)
    assert list(shown["refunded"]) == ["£10.50", "£0.00"]
    assert list(shown["revenue"]) == ["£40.00", "£30.50"]


def test_codes_and_references_are_written_without_thousands_separators():
    shown = for_people(pd.DataFrame({"errorcode": [20007, 0], "payments": [12000, 3]}))
    assert list(shown["payments"]) == ["12,000", "3"]
    # a code is shown with its words beside it (the vocabulary), never as 20,007
    assert list(shown["errorcode"]) == ["20007 · Refund amount too great", "0 · Ok"]
    shown = for_people(pd.DataFrame({"subscriptionnumber": [12000], "settlestatus": ["100"]}))
    assert list(shown["subscriptionnumber"]) == ["12000"] and list(shown["settlestatus"]) == ["100 · settled"]


def test_a_meaningful_index_is_shown_as_columns():
    by_day = pd.DataFrame({"settled": [1050, 2000]}, index=pd.Index(["2026-11-23", "2026-11-24"], name="day"))
    by_month = pd.DataFrame(
        {"paying": [4, 3]}, index=pd.PeriodIndex(["2026-11", "2026-12"], freq="M", name="month")
    )
    assert "2026-11-24" in display.to_html(by_day) and ">day<" in display.to_html(by_day)
    assert "2026-12" in display.to_html(by_month) and ">month<" in display.to_html(by_month)
    assert ">index<" not in display.to_html(pd.DataFrame({"paying": [4]}))


def test_counts_are_not_money_unless_the_frame_says_so():
    counts = pd.DataFrame({"authorised": [134], "declined": [2]})
    assert list(for_people(counts)["authorised"]) == ["134"]
    amounts = pd.DataFrame({"authorised": pd.array([1050], dtype="Int64"), "currencyiso3a": ["GBP"]})
    amounts.attrs["money_columns"] = ["authorised"]
    assert list(for_people(amounts)["authorised"]) == ["£10.50"]


def test_times_and_single_words_are_kept_on_one_line_and_prose_wraps():
    frame = pd.DataFrame(
        {
            "injected": ["2026-11-24T00:11:42", "2026-11-24T00:11:43"],
            "at": pd.to_datetime(["2026-11-24 10:31:02", None]),
            "orderreference": ["unknown-60010-made-37c733", "x"],
            "what it means": ["The acquiring bank's system failed to answer.", "ok"],
            "code": ["a" * 40, "b"],
        }
    )
    assert display.unbroken_columns(frame, for_people(frame)) == [0, 1, 2]
    html = display.to_html(frame)
    assert '"className": "dt-left dt-nowrap", "targets": [0, 1, 2]' in html
    assert '"className": "dt-left gwkit-prose", "targets": [3]' in html  # a sentence: room to read it
    assert '"className": "dt-left", "targets": [4]' in html


def test_each_column_has_its_whole_class_list_in_one_column_def():
    defs = display.column_classes(4, right=[1, 3], unbroken=[0, 1])
    assert defs == [
        {"className": "dt-left dt-nowrap", "targets": [0]},
        {"className": "dt-right dt-nowrap", "targets": [1]},
        {"className": "dt-left", "targets": [2]},
        {"className": "dt-right", "targets": [3]},
    ]


def test_columns_are_counted_as_shown_when_an_amount_is_shown_once():
    frame = pd.DataFrame(
        {"baseamount": [1050], "baseamount_major": [10.5], "currencyiso3a": ["GBP"], "note": ["two words"]}
    )
    shown = for_people(frame)
    assert list(shown.columns) == ["baseamount", "currencyiso3a", "note"]
    assert display.unbroken_columns(frame, shown) == [0, 1]


def test_one_table_style_text_left_numbers_right_small_tables_whole_wide_ones_scrolling(frame):
    small = display.to_html(frame)
    assert '"paging": false' in small and '"scrollX": true' in small
    # baseamount (money) right; references, codes and text left
    positions = list(for_people(frame).columns)
    right = display.numeric_columns(frame, for_people(frame))
    assert [positions[p] for p in right] == ["baseamount"]
    big = records_frame(
        [{"transactionreference": f"1-9-{i}", "errorcode": "0"} for i in range(display.PAGED_FROM)]
    )
    assert '"paging": true' in display.to_html(big)


def test_the_plain_table_has_the_same_style(frame, monkeypatch):
    monkeypatch.setattr(display, "itables", None)
    plain = display.to_html(frame)
    assert "<td class='gwkit-num'>£1,500.00</td>" in plain and "<td>1-9-1</td>" in plain
    assert "<td>0 · pending settlement</td>" in plain and "gwkit-scroll" in plain


def test_money_keeps_its_currency_sign_when_the_currency_column_is_left_out(frame):
    one_currency = records_frame(
        [{"baseamount": "1050", "currencyiso3a": "GBP", "transactionreference": "1-9-1"}]
    )
    assert list(for_people(one_currency[["transactionreference", "baseamount"]])["baseamount"]) == ["£10.50"]
    assert "currency" not in frame.attrs  # several currencies: each row's own, from the column


def test_a_blank_amount_is_shown_blank_not_an_error():
    shown = for_people(pd.DataFrame({"baseamount": ["1050", ""], "currencyiso3a": ["GBP", "GBP"]}))
    assert list(shown["baseamount"]) == ["£10.50", ""]


# Wide and long tables: every column reaches the page, the cue says it scrolls, nothing left out silently.
def wide_long_frame(rows: int, columns: int = 13) -> pd.DataFrame:
    return pd.DataFrame({f"column_{n:02d}": [f"value-{n}-{r}" for r in range(rows)] for n in range(columns)})


def test_a_large_wide_frame_sends_every_column_and_row_to_the_page():
    pytest.importorskip("itables")
    frame = wide_long_frame(2000)  # far past itables' own 64 KB, which dropped rows and columns
    page = display.to_html(frame)
    assert "downsampled" not in page
    assert all(f"<th>{name}</th>" in page for name in frame.columns)
    assert "value-12-1999" in page  # the last row's last column
    assert "gwkit-scroll-cue" in page and "Scroll right" in page  # the cue, filled in the browser
    assert "gwkit-note" not in page  # nothing left out: no note
    with pd.option_context("display.max_columns", 3):  # a user's pandas option hides no column either
        assert all(f"<th>{name}</th>" in display.to_html(frame.head(3)) for name in frame.columns)


def test_rows_past_the_limit_and_major_columns_are_named_under_the_table(frame, monkeypatch):
    monkeypatch.setattr(display, "MAX_ROWS", 2)
    interactive = display.to_html(frame)
    monkeypatch.setattr(display, "itables", None)
    for html in (interactive, display.to_html(frame)):
        assert "The first 2 of 3 rows are shown" in html and "frame.iloc[2:]" in html
        assert "Shown once, within its amount: baseamount_major" in html
    assert display.left_out_note(pd.DataFrame({"a": [1]}), pd.DataFrame({"a": ["1"]})) == ""


def test_a_search_box_from_searched_from_rows_and_pages_from_paged_from():
    assert display.table_controls(display.SEARCHED_FROM - 1) == {
        "paging": False,
        "layout": {"topStart": None, "topEnd": None, "bottomStart": None, "bottomEnd": None},
    }
    searched = display.table_controls(display.SEARCHED_FROM)
    assert searched["layout"]["topEnd"] == "search" and searched["paging"] is False
    paged = display.table_controls(display.PAGED_FROM)
    assert paged["paging"] is True and paged["layout"]["bottomEnd"] == "paging"


def test_what_the_notebooks_say_of_their_tables_is_what_the_tables_do():
    """Sortable and searchable from SEARCHED_FROM rows; never "filterable" (there is no filter)."""
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]
    texts = {p.name: p.read_text(encoding="utf-8") for p in (root / "notebooks").glob("*.ipynb")}
    texts["notebooks.md"] = (root / "docs" / "notebooks.md").read_text(encoding="utf-8")
    assert [name for name, text in texts.items() if "filterable" in text] == []
    promises = re.compile(r"search from (\d+) rows")
    assert {int(n) for text in texts.values() for n in promises.findall(text)} == {display.SEARCHED_FROM}


def test_a_selection_of_payment_columns_without_the_currency_keeps_its_sign():
    from gwkit.report.subscriptions import payments_frame

    subscription = {
        "transactionreference": "1-9-1",
        "subscriptionbegindate": "2026-01-01",
        "subscriptionfrequency": "1",
        "subscriptionunit": "MONTH",
        "subscriptionfinalnumber": "3",
        "baseamount": "1500",
        "currencyiso3a": "GBP",
    }
    payment = {
        "transactionreference": "1-9-2",
        "parenttransactionreference": "1-9-1",
        "requesttypedescription": "AUTH",
        "subscriptionnumber": "2",
        "baseamount": "1500",
        "currencyiso3a": "GBP",
        "errorcode": "0",
        "settlestatus": "0",
        "transactionstartedtimestamp": "2026-01-01 09:00:00",
    }
    payments = payments_frame([subscription], [payment])
    assert list(for_people(payments[["number", "baseamount"]])["baseamount"]) == ["£15.00"]
