"""The panels' one stylesheet and buttons that show their whole label."""

from __future__ import annotations

import pandas as pd

from gwkit.widgets.style import STYLESHEET, button, table_html


def test_a_panel_table_is_styled_and_written_for_people():
    shown = table_html(pd.DataFrame({"baseamount": [1050, None], "currencyiso3a": ["GBP", "GBP"]}), "none")
    assert shown.startswith(STYLESHEET) and 'class="dataframe gwkit-table' in shown
    assert "£10.50" in shown and "NaN" not in shown and "<NA>" not in shown
    assert table_html(pd.DataFrame(), "No payment yet.") == "<i>No payment yet.</i>"


def test_buttons_are_as_wide_as_their_label():
    made = button("Reset this notebook's sandbox")
    assert made.layout.width == "auto" and made.description == "Reset this notebook's sandbox"
