"""The output scan finds money shown bare in a table ("15.00" where the kit writes "£15.00")."""

from __future__ import annotations

import nbformat
import pandas as pd
import pytest

from gwkit.devtools import output_scan
from gwkit.report import display


def scanned(markup: str) -> list[output_scan.Finding]:
    notebook = nbformat.v4.new_notebook()
    cell = nbformat.v4.new_code_cell("x")
    cell.outputs = [nbformat.from_dict({"output_type": "display_data", "data": {"text/html": markup}})]
    notebook.cells = [cell]
    return [f for f in output_scan.scan(notebook) if f.kind == "a bare money amount"]


def plain(frame: pd.DataFrame, monkeypatch) -> str:
    monkeypatch.setattr(display, "itables", None)
    return display.to_html(frame)


@pytest.mark.parametrize(
    "markup",
    [
        # a selection of payment columns without the currency, as notebook 04 showed it
        "<table><thead><tr><th>number</th><th>baseamount</th></tr></thead>"
        "<tbody><tr><td>2</td><td>15.00</td></tr><tr><td>3</td><td>15.00</td></tr></tbody></table>",
        # pandas' own table: the index is a <th> of each row, the titles line up all the same
        pd.DataFrame({"orderreference": ["a"], "revenue": [1234.5]}).to_html(),
        # a record as a table of fields, the field's name in <code>
        "<table><tr><th><code>baseamount</code></th><td>10.50 · 1050 in base units</td></tr></table>",
        # base units written raw in an amount column
        "<table><thead><tr><th>settlebaseamount</th></tr></thead><tbody><tr><td>1050</td></tr></tbody></table>",
    ],
)
def test_a_bare_amount_in_a_money_column_is_a_finding(markup):
    found = scanned(markup)
    assert len(found) == 1 and "no currency" in str(found[0])


def test_money_with_its_currency_counts_and_codes_are_no_finding(monkeypatch):
    frame = pd.DataFrame(
        {
            "baseamount": [1500, 105000],
            "currencyiso3a": ["GBP", "BHD"],
            "refunded_count": [0, 2],
            "errorcode": ["0", "70000"],
        }
    )
    assert scanned(display.to_html(frame)) == []  # the interactive table's static preview
    assert scanned(plain(frame, monkeypatch)) == []
    fields = "<table><tr><th><code>baseamount</code></th><td>£10.50 · 1050 in base units</td></tr></table>"
    assert scanned(fields) == []


def test_a_frame_without_its_currency_is_found_as_the_notebooks_showed_it(monkeypatch):
    """A frame of amounts in major units whose currency nothing names: the table shows them bare."""
    frame = pd.DataFrame({"transactionreference": ["1-9-1"], "baseamount_major": [15.0]})
    assert [f.excerpt for f in scanned(plain(frame, monkeypatch))] == [
        "baseamount_major: 15.00 (no currency: write £15.00, not 15.00)"
    ]
