"""A date typed and shown as ISO `YYYY-MM-DD`, whatever the browser's locale.

ipywidgets' DatePicker draws the browser's own date input, which shows the reader's locale (US
readers see 11/26/2026); the gateway and every table of the kit write 2026-11-26. `IsoDateInput` is
a text box holding the ISO date, checked while typing, with the rule shown under it when the text
is not a date:

    to_date = IsoDateInput(description="To date")
    to_date.value = date(2026, 12, 1)        # the box shows 2026-12-01
    to_date.text.value = "2026-13-01"        # to_date.value is None; to_date.error names the rule
"""

from __future__ import annotations

import html
import re
from datetime import date
from typing import Any

import ipywidgets as widgets
import traitlets

from .shared import layout, style

ISO_DATE = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}")
RULE = "a date as YYYY-MM-DD, e.g. 2026-12-01"


def parse_iso_date(text: str) -> date:
    """`text` (surrounding spaces ignored) as a date; ValueError saying the rule when it is not one."""
    text = text.strip()
    if not ISO_DATE.fullmatch(text):
        raise ValueError(f"write {RULE}")
    try:
        return date.fromisoformat(text)
    except ValueError:
        raise ValueError(f"{text} is not a day of the calendar: write {RULE}") from None


class IsoDateInput(widgets.VBox):
    """`value` is a `datetime.date` or None (blank or not a date); `text` is the box the reader
    types in; `error` the inline message (empty when the text is a date or blank)."""

    value = traitlets.Instance(date, allow_none=True)

    def __init__(self, description: str = "", value: date | None = None, **box: Any):
        self.text = widgets.Text(
            description=description,
            placeholder="YYYY-MM-DD",
            tooltip=RULE,
            continuous_update=True,
            layout=layout(width="16em"),
            style=style(widgets.Text),
        )
        self.error = widgets.HTML("", style=style(widgets.HTML))
        super().__init__([self.text, self.error], **box)
        self.add_class("gwkit-iso-date")
        self.text.observe(self._typed, names="value")
        self.observe(self._chosen, names="value")
        self.value = value

    @property
    def description(self) -> str:
        return self.text.description

    def _typed(self, change: dict[str, Any]) -> None:
        text = change["new"].strip()
        try:
            chosen = parse_iso_date(text) if text else None
        except ValueError as problem:
            self.error.value = (
                f"<span class='gwkit-problem' style='color:#b00020;font-size:90%'>"
                f"{html.escape(self.description or 'date')}: {html.escape(str(problem))}</span>"
            )
            self.value = None
            return
        self.error.value = ""
        self.value = chosen

    def _chosen(self, change: dict[str, Any]) -> None:
        if change["new"] is None:
            if not self.error.value:
                self.text.value = ""  # cleared by the program; a text being corrected stays as typed
            return
        shown = change["new"].isoformat()
        if self.text.value.strip() != shown:
            self.text.value = shown
