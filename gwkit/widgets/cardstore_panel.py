"""The card store panel: store cards from a form, list them, enable or disable them, use one.

    panel = CardStorePanel(gw)
    panel.form.fields["pan"].value = "340000000000017"
    panel.form.send_button.click()     # STORE; the table refreshes
    panel.frame                        # the stored cards (masked) as a DataFrame
    panel.card.value = ref             # pick a card, then:
    panel.disable_button.click()       # or enable_button, pay_button, subscribe_button

The panel holds no card store logic: the form is the spec-generated STORE form, listing and
actions are `gwkit.cardstore`, the table is `gwkit.report.cardstore.cards_frame`.
"""

from __future__ import annotations

import html
from typing import Any

import ipywidgets as widgets
import pandas as pd

from .. import cardstore
from ..protocols import GatewayClient
from ..report.cardstore import cards_frame
from .checks import FieldChecks, not_sent_html
from .form import RequestForm, form_opener
from .guard import guarded
from .response_view import ResponseView
from .style import button, table_html

TABLE_COLUMNS = {
    "transactionreference": "Reference",
    "maskedpan": "Card",
    "scheme": "Scheme",
    "expirydate": "Expiry",
    "billingname": "Billing name",
    "billingcountryiso2a": "Country",
    "active": "Active",
    "uses": "Uses",
    "stored": "Stored",
}


PAY_FIELDS = ("baseamount",)
SUBSCRIBE_FIELDS = ("baseamount", "subscriptionfinalnumber")


class CardStorePanel(widgets.VBox):
    """`form` stores a card, `frame` lists the stored cards, `card` picks one for the buttons,
    `last_response` is the answer to the last action (also shown below the buttons)."""

    def __init__(self, client: GatewayClient, *, sitereference: str | None = None):
        super().__init__()
        self.client = client
        self.sitereference = sitereference
        self.frame = cards_frame([])
        self.last_response: Any = None
        self.status = widgets.HTML()
        self.form = RequestForm("STORE", client=client)
        self.form.on_response(guarded(self._stored, self.status, context="listing the stored cards"))
        self.table = widgets.HTML()
        self.result = widgets.VBox()
        self.card = widgets.Dropdown(
            description="Stored card",
            options=[],
            layout=widgets.Layout(width="32em"),
            style={"description_width": "initial"},
        )
        self.amount = widgets.Text(
            value="1050",
            description="Amount (base units)",
            style={"description_width": "initial"},
            layout=widgets.Layout(width="16em"),
        )
        self.finalnumber = widgets.Text(
            value="12",
            description="Payments in the subscription",
            style={"description_width": "initial"},
            layout=widgets.Layout(width="18em"),
        )
        self.refresh_button = self._button("Refresh", "refresh", self.refresh, "listing the stored cards")
        self.enable_button = self._button("Enable", "check", lambda: self._update(True), "enabling the card")
        self.disable_button = self._button(
            "Disable", "ban", lambda: self._update(False), "disabling the card", kind="danger"
        )
        self.pay_button = self._button(
            "Pay with it (AUTH)", "credit-card", self.pay, "paying with the card", kind="primary"
        )
        self.subscribe_button = self._button(
            "Start a subscription", "calendar", self.subscribe, "starting a subscription"
        )
        self.checks = FieldChecks(
            {"baseamount": self.amount, "subscriptionfinalnumber": self.finalnumber},
            client=client,
            on_change=self._show_send_state,
        )
        self.children = [
            widgets.HTML("<h3 style='margin:4px 0'>Card store</h3>"),
            widgets.Accordion(children=[self.form], titles=("Store a card (STORE)",), selected_index=0),
            widgets.HBox([widgets.HTML("<b>Stored cards</b>"), self.refresh_button]),
            self.table,
            self.card,
            widgets.HBox([self.enable_button, self.disable_button]),
            widgets.HBox([self.checks.boxed("baseamount"), self.pay_button]),
            widgets.HBox([self.checks.boxed("subscriptionfinalnumber"), self.subscribe_button]),
            self.status,
            self.result,
        ]
        self.add_class("gwkit-cardstore-panel")
        self._show_send_state()
        self.refresh()

    def _show_send_state(self) -> None:
        """Pay and subscribe are disabled while a problem stands in what they send."""
        self.pay_button.disabled = not self.checks.ok_for(*PAY_FIELDS)
        self.subscribe_button.disabled = not self.checks.ok_for(*SUBSCRIBE_FIELDS)

    def _button(
        self, text: str, icon: str, action: Any, context: str, kind: str = "secondary"
    ) -> widgets.Button:
        made = button(description=text, kind=kind, icon=icon)
        made.on_click(guarded(lambda _button: action(), self.status, context=context))
        return made

    # -- listing -----------------------------------------------------------------------------
    def refresh(self) -> pd.DataFrame:
        """List the site's stored cards again (after any change the panel makes)."""
        self.frame = cards_frame(cardstore.stored_cards(self.client, self.sitereference))
        self.table.value = self._table_html()
        chosen = self.card.value
        self.card.options = [
            (
                f"{r.transactionreference}  {r.maskedpan}  {r.scheme}  "
                f"{'active' if r.active else 'disabled'}",
                r.transactionreference,
            )
            for r in self.frame.itertuples()
        ]
        references = [value for _, value in self.card.options]
        if references:  # keep the choice; else the newest card (the one just stored)
            self.card.value = chosen if chosen in references else references[0]
        return self.frame

    def _stored(self, response: Any) -> None:
        """After the form's STORE: list again and pick the card just stored."""
        self.refresh()
        reference = response.record.get("transactionreference") if response.ok else None
        if reference in {value for _, value in self.card.options}:
            self.card.value = reference

    def _table_html(self) -> str:
        if self.frame.empty:
            return "<i>No stored cards yet: store one with the form above.</i>"
        return table_html(
            self.frame[list(TABLE_COLUMNS)].rename(columns=TABLE_COLUMNS),
            "No stored cards yet.",
            css_class="gwkit-cardstore-table",
        )

    # -- actions -----------------------------------------------------------------------------
    def _chosen(self) -> str:
        if not self.card.value:
            raise ValueError("choose a stored card first (store one with the form if there is none)")
        return self.card.value

    def _update(self, active: bool) -> Any:
        return self._show(
            cardstore.set_active(self.client, self._chosen(), active),
            f"card {'enabled' if active else 'disabled'}",
        )

    def pay(self) -> Any:
        if not self._checked(PAY_FIELDS):
            return None
        return self._show(
            cardstore.pay_with(self.client, self._chosen(), baseamount=self.amount.value.strip()), "AUTH sent"
        )

    def subscribe(self) -> Any:
        if not self._checked(SUBSCRIBE_FIELDS):
            return None
        return self._show(
            cardstore.subscribe_with(
                self.client,
                self._chosen(),
                baseamount=self.amount.value.strip(),
                subscriptionfinalnumber=self.finalnumber.value.strip(),
            ),
            "AUTH SUBSCRIPTION sent",
        )

    def _checked(self, names: tuple[str, ...]) -> bool:
        """Check the fields again before sending (a press can race the last change)."""
        self.checks.check()
        if self.checks.ok_for(*names):
            return True
        self.status.value = not_sent_html(len(self.checks.problems_of(*names)))
        return False

    def _show(self, response: Any, what: str) -> Any:
        self.last_response = response
        verdict = "ok" if response.ok else "the gateway answered an error"
        self.status.value = (
            f"<span class='gwkit-{'ok' if response.ok else 'error'}'>{html.escape(what)}: {verdict}</span>"
        )
        self.result.children = [
            ResponseView(response, client=self.client, open_form=form_opener(self.client))
        ]
        self.refresh()
        return response
