"""A subscription from creation through its life cycle, with the sandbox clock at hand.

    panel = SubscriptionPanel(gw)        # gw = gwkit.connect(); the clock controls need the sandbox
    panel                                # fill the form, "Send AUTH+SUBSCRIPTION", then move the clock

- the create form is the spec-generated `RequestForm("AUTH+SUBSCRIPTION", "card")`; or load an
  existing subscription by its reference;
- the state (pending, scheduled, suspended, stopped, declined, and what it means), the payments
  made (number, due date, date made, amount, outcome) and the next due dates;
- changes by TRANSACTIONUPDATE: amount of later payments, final number, transactionactive;
- the clock: a day, a month, a year, or to a date, moved by the sandbox handle (`advance`), which
  runs every day passed and reports its progress to the bar; the tables follow.

Business logic lives in `gwkit.subscription.Subscription` and the sandbox; the panel only calls them.
"""

from __future__ import annotations

import html
from collections.abc import Callable
from dataclasses import replace
from datetime import datetime, time, timedelta
from time import monotonic
from typing import Any

import ipywidgets as widgets
import pandas as pd
from IPython.display import display

from ..errors import ValidationError
from ..interface.currency import format_money
from ..protocols import GatewayClient
from ..report.subscriptions import STATE_COLOURS, payments_frame, schedule_frame
from ..subscription import STATE_MEANINGS, Subscription
from .cells import after_this_cell, cancel
from .checks import FieldChecks, not_sent_html
from .form import RequestForm
from .guard import guarded
from .iso_date import IsoDateInput
from .style import button, table_html

STEPS = {"+1 day": "P1D", "+1 month": "P1M", "+1 year": "P1Y"}
SCHEDULE_ROWS = 6


def frame_html(frame: pd.DataFrame, empty: str) -> str:
    return table_html(frame, empty)


LOAD_FIELDS = ("transactionreference",)


class SubscriptionPanel(widgets.VBox):
    """`form` creates, `reference`+`load_button` loads; `state`, `payments`, `schedule` show it;
    `amount`/`final_number`/`active` with their buttons change it; `day_button`, `month_button`,
    `year_button`, `to_date`+`to_date_button` move the sandbox clock (`progress` shows how far)."""

    def __init__(
        self, client: GatewayClient, *, sandbox: Any = None, subscription: Subscription | None = None
    ):
        super().__init__()
        self.client = client
        self.sandbox = sandbox if sandbox is not None else getattr(client, "sandbox", None)
        self.subscription: Subscription | None = None
        self.payments_made: list[Any] = []  # the shown subscription's payments, as last drawn
        self.last_report: dict[str, Any] = {}
        self.message = widgets.HTML()
        self.form = RequestForm("AUTH+SUBSCRIPTION", "card", client=client)
        self.form.on_response(guarded(self._created, self.message, context="reading the new subscription"))
        self.reference = widgets.Text(
            description="Reference", placeholder="SUBSCRIPTION transactionreference"
        )
        self.load_button = button(description="Load", icon="search")
        self.load_button.on_click(guarded(self._load, self.message, context="loading the subscription"))
        self.state = widgets.HTML(
            "<i>No subscription yet: create one above or load one by its reference.</i>"
        )
        self.payments = widgets.HTML()
        self.schedule = widgets.HTML()
        self._build_changes()
        self._build_clock()
        self.children = [
            widgets.Accordion(children=[self.form], titles=("Create a subscription",), selected_index=0),
            widgets.HBox([self.checks.boxed("transactionreference"), self.load_button]),
            widgets.HTML("<h4 style='margin:6px 0 2px'>Subscription</h4>"),
            self.state,
            widgets.HTML("<b>Change (TRANSACTIONUPDATE)</b>"),
            self.changes,
            widgets.HTML("<h4 style='margin:6px 0 2px'>Sandbox clock</h4>"),
            self.clock_box,
            self.message,
            widgets.HTML("<h4 style='margin:6px 0 2px'>Payments made</h4>"),
            self.payments,
            widgets.HTML("<h4 style='margin:6px 0 2px'>Next due dates</h4>"),
            self.schedule,
        ]
        self.add_class("gwkit-subscription-panel")
        self._busy = False  # during the panel's own actions, which redraw once at their end
        on_change = getattr(client, "on_change", None)
        if on_change is not None:
            on_change(self._on_change)
        if subscription is not None:
            self.show(subscription)
        self._show_clock()

    # -- layout pieces ---------------------------------------------------------------------------
    def _build_changes(self) -> None:
        self.amount = widgets.Text(description="Amount", placeholder="base units, e.g. 1500")
        self.amount_button = button(description="Set amount")
        self.final_number = widgets.BoundedIntText(description="Final no.", min=0, max=99999)
        self.final_button = button(description="Set final number")
        self.active = widgets.Dropdown(
            description="Active",
            options=[("0: inactive (suspend)", "0"), ("1: active", "1"), ("2: pending", "2")],
            value="1",
        )
        self.active_button = button(description="Set active state")
        for control, action in (
            (self.amount_button, self._set_amount),
            (self.final_button, self._set_final),
            (self.active_button, self._set_active),
        ):
            control.on_click(guarded(action, self.message, context=f"{control.description.lower()}"))
        # A blank reference or amount is not a problem to show, only nothing to send yet.
        self.checks = FieldChecks(
            {
                "transactionreference": self.reference,
                "baseamount": self.amount,
                "subscriptionfinalnumber": self.final_number,
            },
            client=self.client,
            optional=("transactionreference", "baseamount"),
            on_change=self._show_send_state,
        )
        self._show_send_state()
        self.changes = widgets.VBox(
            [
                widgets.HBox([self.checks.boxed("baseamount"), self.amount_button]),
                widgets.HBox([self.checks.boxed("subscriptionfinalnumber"), self.final_button]),
                widgets.HBox([self.active, self.active_button]),
            ]
        )

    def _show_send_state(self) -> None:
        """Each button is disabled while a problem stands in what it sends (and, for the changes,
        while there is no subscription to change)."""
        loaded = self.subscription is not None
        self.load_button.disabled = not (self.reference.value.strip() and self.checks.ok_for(*LOAD_FIELDS))
        self.amount_button.disabled = not (
            loaded and self.amount.value.strip() and self.checks.ok_for("baseamount")
        )
        self.final_button.disabled = not (loaded and self.checks.ok_for("subscriptionfinalnumber"))
        self.active_button.disabled = not loaded

    def _build_clock(self) -> None:
        self.now = widgets.HTML()
        self.day_button, self.month_button, self.year_button = (
            button(description=label, icon="forward") for label in STEPS
        )
        for each in (self.day_button, self.month_button, self.year_button):
            each.on_click(guarded(self._step, self.message, context="moving the clock"))
        self.to_date = IsoDateInput(description="To date")
        self.to_date_button = button(description="Go", icon="calendar")
        self.to_date_button.on_click(guarded(self._go_to_date, self.message, context="moving the clock"))
        self.progress = _days_bar()
        self.progress_text = widgets.HTML()
        self.report = widgets.HTML()
        buttons = [self.day_button, self.month_button, self.year_button, self.to_date_button]
        if self.sandbox is None:
            for control in buttons:
                control.disabled = True
            self.now.value = (
                "<i>The clock controls need the embedded sandbox (a real gateway keeps real time).</i>"
            )
        self.clock_box = widgets.VBox(
            [
                self.now,
                widgets.HBox([self.day_button, self.month_button, self.year_button]),
                widgets.HBox([self.to_date, self.to_date_button]),
                widgets.HBox([self.progress, self.progress_text]),
                self.report,
            ]
        )

    # -- showing -----------------------------------------------------------------------------------
    def show(self, subscription: Subscription) -> None:
        """Show `subscription` (refetched) and enable its controls."""
        self.subscription = subscription.refresh()
        self.reference.value = subscription.reference
        self._show_send_state()
        self._show_clock()
        self._draw()

    def refresh(self) -> None:
        """Fetch the subscription, its payments and schedule again and redraw the tables."""
        self._show_clock()
        if self.subscription is None:
            return
        self.subscription.refresh()
        self._draw()

    def close(self) -> None:
        """Close the panel's widgets and stop listening to the connection's changes."""
        changes = getattr(self.client, "changes", None)
        if changes is not None:
            changes.disconnect(self._on_change)
        cancel(self._redraw_key)
        super().close()

    @property
    def _redraw_key(self) -> tuple[str, int]:
        return ("subscription panel", id(self))

    def _on_change(self, kind: str) -> None:
        """The clock moved or data changed elsewhere in the kernel (a cell, another panel): redraw,
        once the running cell has finished (a cell may change data a hundred times)."""
        if not self._busy:
            after_this_cell(
                self._redraw_key,
                guarded(lambda: self.refresh(), self.message, context=f"redrawing after a change ({kind})"),
            )

    def _draw(self) -> None:
        """Draw the subscription as last fetched; its payments are fetched once, for both tables."""
        sub = self._require()
        record, state = sub.record, sub.state
        self.amount.value = str(record.get("baseamount", ""))
        self.final_number.value = sub.final_number
        self.active.value = str(record.get("transactionactive", "2"))
        facts = [
            ("Reference", sub.reference),
            (
                "First payment (AUTH)",
                f"{sub.auth_reference} "
                f"(errorcode {sub.auth.get('errorcode') if sub.auth else '?'}, settlestatus "
                f"{sub.auth.get('settlestatus') if sub.auth else '?'})",
            ),
            ("transactionactive", record.get("transactionactive")),
            ("Amount", format_money(record.get("baseamount") or 0, record.get("currencyiso3a"))),
            (
                "Every",
                f"{record.get('subscriptionfrequency')} {str(record.get('subscriptionunit') or 'MONTH').lower()}"
                f"(s) from {record.get('subscriptionbegindate')}",
            ),
            ("Next payment number", record.get("subscriptionnumber")),
            ("Final number", f"{record.get('subscriptionfinalnumber')} (0: no end)"),
        ]
        rows = "".join(
            f"<tr><th style='text-align:left;padding-right:1em'>{html.escape(k)}</th>"
            f"<td style='text-align:left'>{html.escape(str(v))}</td></tr>"
            for k, v in facts
        )
        colour = STATE_COLOURS.get(state, "#555")
        self.state.value = (
            f"<span class='gwkit-state' style='background:{colour};color:white;padding:2px 8px;"
            f"border-radius:4px'>{html.escape(state)}</span> "
            f"<span>{html.escape(STATE_MEANINGS[state])}</span><table>{rows}</table>"
        )
        made = self.payments_made = sub.payments()
        self.payments.value = frame_html(
            payments_frame([sub], made)[
                [
                    "number",
                    "due_date",
                    "made_on",
                    "baseamount",
                    "currencyiso3a",
                    "outcome",
                    "errorcode",
                    "transactionreference",
                ]
            ].iloc[::-1],  # newest first
            "No automated payment yet.",
        )
        self.schedule.value = frame_html(
            schedule_frame(sub, SCHEDULE_ROWS, payments=made), "No payment to come."
        )

    def _show_clock(self) -> None:
        if self.sandbox is not None:
            now = self.sandbox.now()
            self.now.value = f"Sandbox clock: <b class='gwkit-now'>{now:%Y-%m-%d %H:%M:%S}</b>"
            if self.to_date.value is None or self.to_date.value <= now.date():
                # a date already passed is no destination: suggest a month ahead of the clock
                self.to_date.value = (now + timedelta(days=30)).date()

    # -- callbacks -----------------------------------------------------------------------------
    def _created(self, response: Any) -> None:
        records = response.records
        if len(records) == 2 and records[1].requesttype == "SUBSCRIPTION" and records[1].errorcode == 0:
            self.show(Subscription(self.client, records[1], records[0]))
            self.message.value = (
                "<span class='gwkit-ok'>Subscription created. Check the first payment and "
                "<code>transactionactive</code> (interface 4.2).</span>"
            )

    def _load(self, _button: Any = None) -> None:
        if self._sent(
            LOAD_FIELDS,
            lambda: self.show(Subscription.from_reference(self.client, self.reference.value.strip())),
        ):
            self.message.value = ""

    def _set_amount(self, _button: Any = None) -> None:
        if self._sent(("baseamount",), lambda: self._require().set_amount(self.amount.value.strip())):
            self._changed("amount of later payments changed")

    def _set_final(self, _button: Any = None) -> None:
        if self._sent(
            ("subscriptionfinalnumber",), lambda: self._require().set_final_number(self.final_number.value)
        ):
            self._changed("final number changed")

    def _sent(self, names: tuple[str, ...], send: Callable[[], Any]) -> bool:
        """Check the fields again (a press can race the last change), then `send()`; a problem,
        found here or by the client's check of the whole request, is shown beside its field and
        nothing is sent."""
        self.checks.check()
        if self.checks.ok_for(*names):
            try:
                send()
                return True
            except ValidationError as error:
                self.checks.show([replace(p, field=p.field.removeprefix("updates.")) for p in error.problems])
                self.message.value = not_sent_html(len(error.problems))
                return False
        self.message.value = not_sent_html(len(self.checks.problems_of(*names)))
        return False

    def _set_active(self, _button: Any = None) -> None:
        self._require().update(transactionactive=self.active.value)
        self._changed(f"transactionactive set to {self.active.value}")

    def _changed(self, what: str) -> None:
        self._draw()  # the change's TRANSACTIONUPDATE has just refetched the subscription
        self.message.value = f"<span class='gwkit-ok'>{html.escape(what)}</span>"

    def _require(self) -> Subscription:
        if self.subscription is None:
            raise RuntimeError("create or load a subscription first")
        return self.subscription

    def _step(self, button: Any) -> None:
        self.advance(by=STEPS[button.description])

    def _go_to_date(self, _button: Any = None) -> None:
        if self.to_date.value is None:
            raise ValueError("choose a date to move the clock to")
        chosen = datetime.combine(self.to_date.value, time())
        if self.sandbox is not None and chosen <= self.sandbox.now():  # without one, advance says so
            raise ValueError(
                f"the clock only moves forward: {chosen:%Y-%m-%d} is not after the sandbox's now"
            )
        self.advance(to=chosen)

    # -- the clock -----------------------------------------------------------------------------
    def advance(self, by: str | None = None, to: datetime | None = None) -> dict[str, Any]:
        """Move the sandbox clock `by` a duration or `to` a moment (the sandbox runs each day passed,
        reporting progress to the bar), and show what the daily runs did."""
        if self.sandbox is None:
            raise RuntimeError("no sandbox: the clock of a real gateway cannot be moved")
        start = self.sandbox.now()
        before = len(self.payments_made)  # as last drawn: the panel redraws on every change
        self.progress.bar_style = "info"
        self._busy = True
        progress = DayProgress(self.progress, self.progress_text)
        try:
            report = self.sandbox.advance(by=by, to=to, progress=progress)
        finally:
            self._busy = False
            progress.finish()
        totals = engine_totals(report)
        _days_done(self.progress, report["days"])
        self.last_report = totals
        self.refresh()
        own = len(self.payments_made) - before if self.subscription is not None else None
        self.report.value = summary_html(start, self.sandbox.now(), totals, own=own)
        return totals


def engine_totals(report: dict[str, Any]) -> dict[str, Any]:
    """The subscription engine's part of a sandbox `advance` report, with every count present."""
    done = report.get("subscriptions", {})
    return {
        "made": done.get("made", 0),
        "declined": done.get("declined", 0),
        "caught_up": done.get("caught_up", 0),
        **{
            key: list(done.get(key, []))
            for key in (
                "stopped_subscriptions",
                "started_subscriptions",
                "payments",
                "declined_payments",
                "caught_up_payments",
            )
        },
    }


def _days_bar() -> widgets.IntProgress:
    return widgets.IntProgress(value=0, min=0, max=1, description="Days", bar_style="info")


DRAW_INTERVAL = 0.1  # seconds between two draws of a clock move's progress


class DayProgress:
    """The sandbox's `progress(label, done, total)` on a bar and its text, drawn at most every
    `DRAW_INTERVAL` seconds: each draw is three messages to the browser, and a move of a year reports
    hundreds of times (drawing every report took half the move). `finish()` draws the last report."""

    def __init__(
        self, bar: widgets.IntProgress, text: widgets.HTML, *, clock: Callable[[], float] = monotonic
    ):
        self.bar, self.text, self._clock = bar, text, clock
        self._drawn_at: float | None = None
        self._waiting: tuple[str, int, int] | None = None

    def __call__(self, label: str, done: int, total: int) -> None:
        self._waiting = (label, done, total)
        now = self._clock()
        if self._drawn_at is None or now - self._drawn_at >= DRAW_INTERVAL:
            self._drawn_at = now
            self.finish()

    def finish(self) -> None:
        if self._waiting is None:
            return
        label, done, total = self._waiting
        self._waiting = None
        self.bar.max, self.bar.value = max(total, 1), done
        self.text.value = f"{html.escape(label)}: {done} of {total} subscriptions"


def _days_done(bar: widgets.IntProgress, days: int) -> None:
    bar.max, bar.value, bar.bar_style = max(days, 1), days, "success"


def summary_html(start: datetime, end: datetime, totals: dict[str, Any], own: int | None = None) -> str:
    """What a clock move did: this subscription's payments first (`own`), then the whole sandbox's."""
    mine = (
        f"<b class='gwkit-own-payments'>{own}</b> payment(s) of this subscription; "
        if own is not None
        else ""
    )
    return (
        f"Moved {(end.date() - start.date()).days} day(s) to {end:%Y-%m-%d %H:%M}: {mine}in the whole sandbox "
        f"<b>{totals['made']}</b> payment(s) made, {totals['declined']} declined, "
        f"{totals['caught_up']} caught up, {len(totals['started_subscriptions'])} started, "
        f"{len(totals['stopped_subscriptions'])} stopped."
    )


def advance_with_progress(
    sandbox: Any, *, by: str | None = None, to: datetime | None = None
) -> dict[str, Any]:
    """For notebooks: move the sandbox clock with a progress bar shown while the days run
    (a year over thousands of subscriptions takes a while); returns the engine's totals."""
    bar, text = _days_bar(), widgets.HTML()
    display(widgets.HBox([bar, text]))
    start = sandbox.now()
    report = sandbox.advance(by=by, to=to, progress=DayProgress(bar, text))  # the summary replaces its text
    totals = engine_totals(report)
    _days_done(bar, report["days"])
    text.value = summary_html(start, sandbox.now(), totals)
    return totals
