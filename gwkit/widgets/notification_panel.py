"""The URL notifications panel: the site's rules, a live delivery log, resend, and what your listener got.

    listener = NotificationListener(password="s3cret")
    panel = NotificationPanel(gw, listener)
    panel.password.value = "s3cret"
    panel.add_button.click()             # a rule notifying the listener (url filled in)
    panel.deliveries_table.value         # every delivery, newest first: state, attempts, next attempt
    panel.delivery.value = delivery_id
    panel.resend_button.click()          # sent again, same notificationreference

The panel holds no notification logic: it calls `gw.sandbox.notifications` (docs/notifications.md)
and redraws when an attempt is recorded, when the listener receives one, when the clock moves and
on Refresh. Against a real
gateway (`gw.sandbox is None`) it is one line saying notifications need the sandbox.
"""

from __future__ import annotations

import html
import threading
from typing import Any

import ipywidgets as widgets
import pandas as pd

from ..interface.vocabulary import labelled
from ..notifications import Notification, NotificationListener
from .checks import RefusalsBeside
from .guard import guarded
from .style import button, table_html

FLOWS = ("offline", "online", "failover")
NO_SANDBOX = (
    "URL notifications need the embedded sandbox: a real gateway's rules are set in its merchant "
    'portal. Use <code>gwkit.connect(target="sandbox")</code> to try them.'
)
STYLE = {"description_width": "initial"}


class NotificationPanel(widgets.VBox):
    """`url`, `flow`, `requesttypes`, `password` and `add_button` add a rule; `rule` and
    `delete_button` remove one; `rules_table` and `deliveries_table` show them; `delivery` and
    `resend_button` send one again; `received_table` is what the listener got; `status` says what
    happened."""

    def __init__(self, gw: Any, listener: NotificationListener | None = None):
        super().__init__()
        self.gw, self.listener = gw, listener
        # redraws come from the sender's and the listener's threads too: one at a time, each reading
        # and drawing the state as it is then, so the last one drawn is never older than another
        self._drawing = threading.Lock()
        sandbox = getattr(gw, "sandbox", None)
        self.notifications: Any = sandbox.notifications if sandbox is not None else None
        self.status = widgets.HTML()
        if self.notifications is None:
            self.status.value = NO_SANDBOX
            self.children = (self.status,)
            return
        self.url = widgets.Text(
            value=listener.url if listener else "", description="URL", style=STYLE, layout=_wide()
        )
        self.flow = widgets.Dropdown(options=FLOWS, value="offline", description="Flow", style=STYLE)
        self.requesttypes = widgets.Text(
            value="AUTH",
            description="Request types (comma-separated, empty: any)",
            style=STYLE,
            layout=_wide(),
        )
        self.password = widgets.Password(
            value=listener.password if listener and listener.password else "",
            description="Notification password",
            style=STYLE,
        )
        self.add_button = self._button("Add rule", "plus", self._add_pressed, "adding the rule")
        self.refusals = RefusalsBeside(
            {
                "url": self.url,
                "flow": self.flow,
                "requesttypes": self.requesttypes,
                "password": self.password,
            },
            self.add_button,
        )
        self.rule = widgets.Dropdown(options=[], description="Rule", style=STYLE, layout=_wide())
        self.delete_button = self._button("Delete rule", "trash", self._delete, "deleting the rule")
        self.delivery = widgets.Dropdown(options=[], description="Delivery", style=STYLE, layout=_wide())
        self.resend_button = self._button("Resend", "repeat", self._resend, "resending")
        self.refresh_button = self._button("Refresh", "refresh", self.refresh, "listing the deliveries")
        self.rules_table = widgets.HTML()
        self.deliveries_table = widgets.HTML()
        self.received_table = widgets.HTML()
        self.children = (  # type: ignore[assignment]
            widgets.HTML("<b>Rules</b>"),
            widgets.HBox([self.refusals.boxed("url"), self.refusals.boxed("flow")]),
            widgets.HBox(
                [self.refusals.boxed("requesttypes"), self.refusals.boxed("password"), self.add_button]
            ),
            self.refusals.general,
            self.rules_table,
            widgets.HBox([self.rule, self.delete_button]),
            widgets.HTML("<b>Deliveries</b> (sandbox clock; retries wait for the clock to move)"),
            self.deliveries_table,
            widgets.HBox([self.delivery, self.resend_button, self.refresh_button]),
            widgets.HTML("<b>Received by your listener</b>"),
            self.received_table,
            self.status,
        )
        redraw = guarded(lambda *_: self.refresh(), self.status, context="redrawing the notifications")
        self.notifications.on_attempt(redraw)  # each attempt's answer, as it is recorded
        if listener is not None:
            listener.on_notification(redraw)
        if hasattr(gw, "on_change"):
            gw.on_change(redraw)
        self.refresh()

    def _button(self, label: str, icon: str, action: Any, context: str) -> widgets.Button:
        made = button(label, icon=icon)
        made.on_click(guarded(lambda _: action(), self.status, context=context))
        return made

    def _add_pressed(self) -> None:
        """The Add button: a rule the sandbox refuses is shown beside the input it names."""
        try:
            self._add()
        except ValueError as refused:
            self.refusals.show(refused)
            self.status.value = ""

    def _add(self) -> None:
        types = [t.strip().upper() for t in self.requesttypes.value.split(",") if t.strip()]
        rule = self.notifications.add_rule(
            self.url.value.strip(),
            flow=self.flow.value,
            requesttypes=types,
            password=self.password.value or None,
        )
        self.refresh()
        self.status.value = (
            f"Rule {html.escape(rule['id'])} added: {html.escape(rule['flow'])} to {html.escape(rule['url'])}"
        )

    def _delete(self) -> None:
        if not self.rule.value:
            raise ValueError("pick a rule to delete")
        chosen = self.rule.value
        self.notifications.delete_rule(chosen)
        self.refresh()
        self.status.value = f"Rule {html.escape(chosen)} deleted"

    def _resend(self) -> None:
        if not self.delivery.value:
            raise ValueError("pick a delivery to resend")
        self.notifications.resend(self.delivery.value)
        self.status.value = (
            f"Delivery {html.escape(self.delivery.value)} sent again (same notificationreference)"
        )
        self.refresh()

    @property
    def deliveries_frame(self) -> pd.DataFrame:
        """The deliveries as shown: one row each, newest first."""
        return deliveries_frame(self.notifications.deliveries())

    def refresh(self) -> None:
        with self._drawing:
            self._draw()

    def _draw(self) -> None:
        rules = self.notifications.rules()
        self.rules_table.value = table_html(rules_frame(rules), "No rules yet: add one above.")
        self.rule.options = [(f"{r['id']} ({r['flow']}, {r['url']})", r["id"]) for r in rules]
        deliveries = self.notifications.deliveries()
        self.deliveries_table.value = table_html(
            deliveries_frame(deliveries), "No deliveries yet: make a payment."
        )
        chosen = self.delivery.value
        self.delivery.options = [
            (f"{d['id']} ({d['transactionreference']}, {d['state']})", d["id"]) for d in deliveries
        ]
        if chosen in {d["id"] for d in deliveries}:
            self.delivery.value = chosen
        if self.listener is not None:
            self.received_table.value = table_html(
                received_frame(self.listener.received), "Nothing received yet."
            )


def rules_frame(rules: list[dict[str, Any]]) -> pd.DataFrame:
    return pd.DataFrame(
        [
            {
                "Rule": r["id"],
                "Flow": r["flow"],
                "URL": r["url"],
                "Request types": ", ".join(r["requesttypes"]) or "any",
                "Error codes": ", ".join(r["errorcodes"]) or "any",
                "On settlestatus": ", ".join(r["settlestatuses"]),
                "Signed": "yes" if r["password"] else "no",
            }
            for r in rules
        ],
        columns=["Rule", "Flow", "URL", "Request types", "Error codes", "On settlestatus", "Signed"],
    )


def deliveries_frame(deliveries: list[dict[str, Any]]) -> pd.DataFrame:
    rows = []
    for d in deliveries:
        last = d["attempts"][-1] if d["attempts"] else {}
        rows.append(
            {
                "Delivery": d["id"],
                "Made": _shown_time(d["created"]),
                "Transaction": d["transactionreference"],
                "Event": d["event"],
                "Flow": d["flow"],
                "State": d["state"],
                "Attempts": len(d["attempts"]),
                "Last answer": last.get("status") or last.get("error") or "",
                "Next attempt": _shown_time(d["next_at"]),
            }
        )
    columns = [
        "Delivery",
        "Made",
        "Transaction",
        "Event",
        "Flow",
        "State",
        "Attempts",
        "Last answer",
        "Next attempt",
    ]
    return pd.DataFrame(rows, columns=columns)


def received_frame(received: list[Notification]) -> pd.DataFrame:
    return pd.DataFrame(
        [
            {
                "Notification": n.notificationreference,
                "Transaction": n.transactionreference,
                "Request type": n.fields.get("requesttypedescription", ""),
                "Error code": labelled("errorcode", n.fields.get("errorcode", "")),
                "Signature": {True: "verified", False: "WRONG", None: "not checked"}[n.verified],
                "Repeat": "yes" if n.duplicate else "",
                "Answered": n.answered,
            }
            for n in received
        ],
        columns=[
            "Notification",
            "Transaction",
            "Request type",
            "Error code",
            "Signature",
            "Repeat",
            "Answered",
        ],
    )


def _wide() -> widgets.Layout:
    return widgets.Layout(width="40em")


def _shown_time(moment: str | None) -> str:
    """A sandbox-clock time as a person reads it: `2026-11-26 09:44:14`, not ISO's `T`."""
    return (moment or "").replace("T", " ")
