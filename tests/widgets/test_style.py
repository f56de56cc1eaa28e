"""The one table style and the one button palette every panel uses."""

from __future__ import annotations

import pandas as pd
import pytest

from gwkit.widgets.style import BUTTON_STYLES, STYLESHEET, button, table_html


def test_a_panel_table_is_styled_and_written_for_people():
    frame = pd.DataFrame(
        {
            "transactionreference": ["1-2-3", "1-2-4"],
            "baseamount": [1050, None],
            "currencyiso3a": ["GBP", "GBP"],
            "settlestatus": ["100", "3"],
        }
    )
    shown = table_html(frame, "none")
    assert shown.startswith(STYLESHEET) and "class='gwkit-table gwkit-table'" in shown
    assert "£10.50" in shown and "NaN" not in shown and "<NA>" not in shown
    assert "100 · settled" in shown and "3 · cancelled" in shown  # codes with their words
    # money right, text (and references, and codes) left
    assert "<td class='gwkit-num'>£10.50</td>" in shown and "<td>1-2-3</td>" in shown
    assert "<td>100 · settled</td>" in shown
    assert "gwkit-scroll" in shown  # a wide table scrolls instead of being cut off
    assert table_html(pd.DataFrame(), "No payment yet.") == "<i class='gwkit-placeholder'>No payment yet.</i>"


def test_buttons_are_as_wide_as_their_label_and_of_one_palette():
    made = button("Reset this notebook's sandbox")
    assert made.layout.width == "auto" and made.description == "Reset this notebook's sandbox"
    assert made.button_style == ""
    assert button("Send", kind="primary").button_style == "primary"
    assert button("Clear all", kind="danger").button_style == "danger"
    assert set(BUTTON_STYLES) == {"primary", "secondary", "danger"}
    with pytest.raises(ValueError, match="button kind must be one of primary, secondary, danger"):
        button("Inject", kind="warning")
