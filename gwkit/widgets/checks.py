"""Inputs checked as the user edits them, by the interface's own rules.

    checks = FieldChecks({"expirydate": expiry_text, "baseamount": amount_text}, client=gw,
                         on_change=update_send_button)
    widgets.HBox([checks.boxed("expirydate"), checks.boxed("baseamount")])
    checks.ok                       # False while any problem stands: keep Send disabled
    checks.check()                  # every field again, right before sending

Each field is checked with `gwkit.interface.validation.check_value` (the one rule set, the same the
client and the sandbox use) whenever its value changes, and its problems are shown right under its
input: the field's name and the rule in words, never a traceback. An expired card is a problem too,
by the sandbox's clock when there is one (the gateway refuses it with 30000).

The faults and notification-rule panels send the sandbox's own parameters, whose rules live in the
sandbox (out of the widgets' layer): `RefusalsBeside` shows the sandbox's refusal under the input
it names, and keeps the button disabled until an input changes.
"""

from __future__ import annotations

import html
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from datetime import date
from typing import Any

import ipywidgets as widgets

from ..interface.cards import expired
from ..interface.validation import Problem, check_value
from .guard import guarded

PROBLEM_STYLE = "color:#b00020;font-size:90%;line-height:1.4"
INLINE_WIDTH = "300px"  # an input with its label, as JupyterLab draws one (--jp-widgets-inline-width)


def problem_html(field: str, rules: Iterable[str]) -> str:
    """The problems of one field, to show right under its input: `expirydate: format MM/YYYY`."""
    return "".join(
        f"<div class='gwkit-problem' style='{PROBLEM_STYLE}'>"
        f"<code>{html.escape(field)}</code>: {html.escape(rule)}</div>"
        for rule in rules
    )


def not_sent_html(count: int) -> str:
    """What a send button's status says when a press found problems: nothing was sent."""
    return (
        f"<span class='gwkit-problem' style='{PROBLEM_STYLE}'>not sent: {count} problem(s) to fix "
        "first, shown beside the fields</span>"
    )


def message_under(field_input: widgets.Widget) -> widgets.HTML:
    """An empty line for the problems of `field_input`, as wide as the input at most: a long rule
    wraps under its own input instead of pushing the inputs beside it away."""
    width = getattr(field_input.layout, "width", None) or INLINE_WIDTH
    return widgets.HTML("", layout=widgets.Layout(max_width=width))


def today_for(client: Any) -> tuple[date, str]:
    """Today by the sandbox's clock when the client has a sandbox, else by the wall clock; and
    which clock that is, in words."""
    sandbox = getattr(client, "sandbox", None)
    if sandbox is not None:
        return sandbox.now().date(), "the sandbox's date"
    return date.today(), "today"


def expiry_problem(expirydate: Any, client: Any) -> Problem | None:
    """What the gateway refuses although the field's rules pass: a card expired by the client's
    clock (a card is good through the last day of its expiry month)."""
    if not isinstance(expirydate, str) or check_value("expirydate", expirydate):
        return None
    today, clock = today_for(client)
    if not expired(expirydate, today):
        return None
    return Problem(
        "expirydate",
        f"the card expired at the end of {expirydate}; {clock} is {today.isoformat()} "
        "(the gateway refuses it with 30000)",
    )


class FieldChecks:
    """Inputs named by their fields (`{"expirydate": text_widget, ...}`), each checked when its
    value changes; `messages[name]` shows its problems, `general` any other (from `show`)."""

    def __init__(
        self,
        inputs: Mapping[str, widgets.ValueWidget],
        *,
        client: Any = None,
        optional: Collection[str] = (),
        on_change: Callable[[], None] | None = None,
    ):
        self.inputs = dict(inputs)
        self.client = client
        self.optional = frozenset(optional)
        self.on_change: Callable[[], None] | None = None
        self.problems: list[Problem] = []
        self.messages = {name: message_under(widget) for name, widget in self.inputs.items()}
        self.general = widgets.HTML("")
        self._boxes = {name: widgets.VBox([w, self.messages[name]]) for name, w in self.inputs.items()}
        for widget in self.inputs.values():
            widget.observe(guarded(self._changed, self.general, context="checking the form"), names="value")
        self.check()
        self.on_change = on_change  # after the first check: the owner may not be built yet

    def boxed(self, name: str) -> widgets.VBox:
        """The input with its problems right under it (the same box each time)."""
        return self._boxes[name]

    def values(self) -> dict[str, str]:
        """Each field's value as it would be sent (trimmed); blank optional fields left out."""
        values = {name: str(widget.value).strip() for name, widget in self.inputs.items()}
        return {name: v for name, v in values.items() if v or name not in self.optional}

    @property
    def ok(self) -> bool:
        return not self.problems

    def ok_for(self, *names: str) -> bool:
        """No problem stands in these fields (what one button of several sends)."""
        return not self.problems_of(*names)

    def problems_of(self, *names: str) -> list[Problem]:
        return [p for p in self.problems if p.field in names]

    def check(self) -> list[Problem]:
        """Check every field (by the interface's rules, each seeing the others), show the problems."""
        values = self.values()
        problems = [p for name, value in values.items() for p in check_value(name, value, values)]
        expiry = expiry_problem(values.get("expirydate"), self.client)
        self.show(problems + ([expiry] if expiry else []))
        return self.problems

    def show(self, problems: Sequence[Problem]) -> None:
        """Show `problems` (from `check`, or a `ValidationError`'s): each under its input, the rest
        in `general`."""
        self.problems = list(problems)
        for name, message in self.messages.items():
            message.value = problem_html(name, [p.rule for p in self.problems if p.field == name])
        self.general.value = "".join(
            problem_html(p.field, [p.rule]) for p in self.problems if p.field not in self.messages
        )
        if self.on_change is not None:
            self.on_change()

    def _changed(self, _change: Any = None) -> None:
        self.check()


class RefusalsBeside:
    """For panels whose rules live in the sandbox (faults, notification rules), out of the widgets'
    reach: the sandbox's refusal, a ValueError whose message starts with the parameter's name
    (`seconds must be a number of seconds from 0 to 3600`), shown right under that parameter's
    input (or in `general`), and `button` kept disabled until an input changes."""

    def __init__(self, inputs: Mapping[str, widgets.ValueWidget], button: widgets.Button):
        self.inputs = dict(inputs)
        self.button = button
        self.messages = {name: message_under(widget) for name, widget in self.inputs.items()}
        self.general = widgets.HTML("")
        self._boxes = {name: widgets.VBox([w, self.messages[name]]) for name, w in self.inputs.items()}
        for widget in self.inputs.values():
            widget.observe(guarded(self._changed, self.general, context="changing the input"), names="value")

    def boxed(self, name: str) -> widgets.VBox:
        """The input with its problem right under it (the same box each time)."""
        return self._boxes[name]

    def show(self, error: ValueError) -> None:
        text = str(error)
        name, _, rule = text.partition(" ")
        name = name.rstrip(":")
        if name in self.messages:
            self.messages[name].value = problem_html(name, [rule])
        else:
            self.general.value = (
                f"<div class='gwkit-problem' style='{PROBLEM_STYLE}'>{html.escape(text)}</div>"
            )
        self.button.disabled = True

    def _changed(self, _change: Any = None) -> None:
        for message in (*self.messages.values(), self.general):
            message.value = ""
        self.button.disabled = False
