"""One input row per field, chosen from the field's table entry alone.

    choices (per-variant choices override the field's)  -> Dropdown (SelectMultiple in a filter)
    type "Date YYYY-MM-DD"                              -> Text, YYYY-MM-DD (never the browser's locale)
    sensitive (redacted) fields                         -> Password
    anything else                                       -> Text, placeholder from type and limits
    report kind AMOUNT                                  -> plus the major-unit value beside it

There is no code for any particular field: a field added to `gwkit.interface.FIELDS` gets its input
from its type class, limits, choices, label, help and report kind.
"""

from __future__ import annotations

import html
from collections.abc import Callable, Sequence
from typing import Any

import ipywidgets as widgets

from ..interface import types as t
from ..interface.currency import to_major
from ..interface.fields import AMOUNT, REDACT, Field
from .checks import problem_html
from .shared import layout, style

LABEL_WIDTH = "16em"
INPUT_WIDTH = "22em"
MISSING = ""


def limits_text(spec: Field) -> str:
    """`12-19 chars`, `max 25 chars`, `exactly 3 chars`, or '' when unlimited."""
    if spec.max_length is None:
        return ""
    if spec.min_length == spec.max_length:
        return f"exactly {spec.max_length} chars"
    if spec.min_length > 1:
        return f"{spec.min_length}-{spec.max_length} chars"
    return f"max {spec.max_length} chars"


def placeholder_for(spec: Field) -> str:
    if spec.type is t.DATE_MONTH:
        return "MM/YYYY"
    if spec.type is t.DATE_ISO:
        return "YYYY-MM-DD"
    if spec.report == AMOUNT:
        return "base units, e.g. 1050"
    limits = limits_text(spec)
    return f"{spec.type.name}" + (f", {limits}" if limits else "")


class FieldInput:
    """The input for one field: `widget` (what the user edits), `row` (label, input, hint, message)."""

    def __init__(
        self,
        name: str,
        spec: Field,
        *,
        required: bool = False,
        choices: Sequence[str] = (),
        multiple: bool = False,
        label: str | None = None,
    ):
        self.name = name
        self.spec = spec
        self.required = required
        self.choices = tuple(choices)
        self.widget = self._make_widget(multiple)
        html_style = style(widgets.HTML)
        self.hint = widgets.HTML(self._limits_hint(), layout=layout(), style=html_style)
        self.message = widgets.HTML("", layout=layout(margin="0 0 0 " + LABEL_WIDTH), style=html_style)
        self.note = widgets.HTML("", layout=layout(margin="0 0 0 " + LABEL_WIDTH), style=html_style)
        title = html.escape(label or spec.title)
        mark = " <span style='color:#b00020' title='required'>*</span>" if required else ""
        tip = html.escape(
            " ".join(p for p in (spec.help, f"Field {name}: {spec.type.name}.", limits_text(spec)) if p)
        )
        self.label = widgets.HTML(
            f"<span title='{tip}'>{title}{mark}</span>", layout=layout(width=LABEL_WIDTH), style=html_style
        )
        self.row = widgets.VBox(
            [widgets.HBox([self.label, self.widget, self.hint], layout=layout()), self.note, self.message],
            layout=layout(margin="0 0 2px 0"),
        )

    # -- the widget for this field, from its table entry ---------------------------------------
    def _make_widget(self, multiple: bool) -> widgets.Widget:
        looks = {
            "layout": layout(width=INPUT_WIDTH),
            "tooltip": self.spec.help or self.spec.type.rule or self.spec.title,
        }
        if self.choices and multiple:
            return widgets.SelectMultiple(
                options=self.choices,
                rows=min(len(self.choices), 4),
                style=style(widgets.SelectMultiple),
                **looks,
            )
        if self.choices:
            options = (
                list(self.choices)
                if self.required
                else [("(not sent)", MISSING)] + [(c, c) for c in self.choices]
            )
            return widgets.Dropdown(options=options, style=style(widgets.Dropdown), **looks)
        text_style = style(widgets.Text)
        if self.spec.sensitive == REDACT:
            return widgets.Password(placeholder=placeholder_for(self.spec), style=text_style, **looks)
        return widgets.Text(
            placeholder=placeholder_for(self.spec), style=text_style, continuous_update=True, **looks
        )

    def _limits_hint(self) -> str:
        if isinstance(self.widget, (widgets.Dropdown, widgets.SelectMultiple)):
            return ""  # the widget itself only allows valid shapes
        return f"<span style='color:#666;font-size:90%'>{html.escape(limits_text(self.spec))}</span>"

    # -- values as the wire has them -----------------------------------------------------------
    def get(self) -> str | list[str] | None:
        """The value as sent (a string; a list of strings for multiple choice), None when blank."""
        value = self.widget.value
        if isinstance(self.widget, widgets.SelectMultiple):
            return list(value) or None
        if value is None or value == MISSING:
            return None
        return str(value)

    def set(self, value: Any) -> None:
        """Set from a wire value (a string; a list for multiple choice)."""
        if isinstance(self.widget, widgets.SelectMultiple):
            self.widget.value = tuple(v for v in (value or ()) if v in self.choices)
        elif isinstance(self.widget, widgets.Dropdown):
            values = [o[1] if isinstance(o, tuple) else o for o in self.widget.options]
            self.widget.value = value if value in values else (MISSING if MISSING in values else values[0])
        else:
            self.widget.value = "" if value is None else str(value)

    def observe(self, callback: Callable[[Any], None]) -> None:
        self.widget.observe(callback, names="value")

    def show_problems(self, rules: Sequence[str]) -> None:
        """The field's problems right under its input: its name and each rule broken."""
        self.message.value = problem_html(self.name, rules)

    def show_note(self, text: str) -> None:
        """A line of information under the input (not a problem): what a test value will do."""
        self.note.value = (
            f"<div class='gwkit-note' style='color:#1a5fb4;font-size:90%'>{html.escape(text)}</div>"
            if text
            else ""
        )

    def show_major(self, currency: str | None) -> None:
        """For amounts: the major-unit value beside the base units, e.g. `= 10.50 GBP`."""
        if self.spec.report != AMOUNT:
            return
        value = self.get()
        text = ""
        if isinstance(value, str) and value.isdigit():
            text = f"= {to_major(value, currency)} {currency or ''}".strip()
        limits = html.escape(limits_text(self.spec))
        self.hint.value = (
            f"<b class='gwkit-major'>{html.escape(text)}</b> "
            f"<span style='color:#666;font-size:90%'>{limits}</span>"
        )
