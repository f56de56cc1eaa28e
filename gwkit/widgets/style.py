"""One small stylesheet for every panel's tables, and buttons that show their whole label."""

from __future__ import annotations

import html
from typing import Any

import ipywidgets as widgets
import pandas as pd

from ..report.people import for_people

STYLESHEET = """<style>
.gwkit-table { border-collapse: collapse; margin: 4px 0 8px; font-size: 92%; }
.gwkit-table th { text-align: left; background: #eef1f5; border-bottom: 2px solid #c5ccd6; padding: 4px 12px; }
.gwkit-table td { text-align: left; border-bottom: 1px solid #e3e7ed; padding: 4px 12px; white-space: nowrap; }
.gwkit-table tr:nth-child(even) td { background: #f8f9fb; }
</style>"""


def table_html(frame: pd.DataFrame, empty: str, *, css_class: str = "gwkit-table") -> str:
    """A panel's table: the frame for people (money as £15.00, nothing for missing values), styled."""
    if frame.empty:
        return f"<i>{html.escape(empty)}</i>"
    table = for_people(frame).to_html(index=False, border=0, classes=["gwkit-table", css_class])
    return STYLESHEET + table


def button(description: str, **options: Any) -> widgets.Button:
    """A button as wide as its label (ipywidgets' fixed default width cuts long labels off)."""
    options.setdefault("layout", widgets.Layout(width="auto", min_width="7em"))
    return widgets.Button(description=description, **options)
