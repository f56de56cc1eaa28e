"""One small stylesheet for every panel's tables, and buttons that show their whole label."""

from __future__ import annotations

import html
from typing import Any

import ipywidgets as widgets
import pandas as pd

from ..report import display

STYLESHEET = display.STYLESHEET


def table_html(frame: pd.DataFrame, empty: str, *, css_class: str = "gwkit-table") -> str:
    """A panel's table in the one table style (gwkit.report.display): money as £15.00, codes with
    their words, text left and numbers right, nothing for missing values; `empty` when no rows."""
    if frame.empty:
        return f"<i class='gwkit-placeholder'>{html.escape(empty)}</i>"
    shown = display.for_people(frame)
    table = display.plain_table_html(shown, display.numeric_columns(frame, shown))
    return table.replace("class='gwkit-table'", f"class='gwkit-table {css_class}'", 1)


# The one palette: the main action of a panel, the others, and those that remove or refuse.
BUTTON_STYLES = {"primary": "primary", "secondary": "", "danger": "danger"}


def button(description: str, kind: str = "secondary", **options: Any) -> widgets.Button:
    """A button of the palette (`primary`, `secondary` or `danger`), as wide as its label
    (ipywidgets' fixed default width cuts long labels off)."""
    if kind not in BUTTON_STYLES:
        raise ValueError(f"button kind must be one of {', '.join(BUTTON_STYLES)}, not {kind!r}")
    options.setdefault("layout", widgets.Layout(width="auto", min_width="7em"))
    return widgets.Button(description=description, button_style=BUTTON_STYLES[kind], **options)
