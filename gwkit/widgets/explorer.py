"""The request explorer: pick a request type and variant, fill the generated form, send it, read
the answer, and go back to any exchange of the session from the history.

    RequestExplorer(gw)

The history lists every exchange the client makes, from the explorer or from code (it listens
to the client's exchange hook); selecting an entry shows that exchange again.
"""

from __future__ import annotations

from datetime import UTC
from typing import Any, Protocol

import ipywidgets as widgets
import pandas as pd

from ..exchange import ExchangeHook
from ..interface import REQUEST_TYPES
from ..interface.codes import record_ok
from ..interface.vocabulary import labelled, no_answer_words
from ..protocols import GatewayClient
from .form import RequestForm, default_variant, form_opener
from .guard import guarded
from .response_view import ResponseView
from .style import table_html

RESPONSE_PLACEHOLDER = "<i class='gwkit-placeholder'>Send a request: its answer appears here.</i>"
HISTORY_SHOWN = 20  # the newest exchanges in the history table


def exchange_label(number: int, exchange: Any) -> str:
    """`#3 12:01:02 AUTH 70000 Decline` for the history list."""
    started = getattr(exchange, "started_at", None)
    when = f"{started.astimezone(UTC):%H:%M:%S}" if started is not None else ""
    types = " ".join(getattr(exchange, "request_types", ()) or ()) or "?"
    error = getattr(exchange, "error", None)
    if error:
        return f"#{number} {when} {types} failed: {error[:60]}"
    records = (getattr(exchange, "response", None) or {}).get("response") or []
    first = records[0] if records and isinstance(records[0], dict) else {}
    mark = "ok" if records and all(isinstance(r, dict) and record_ok(r) for r in records) else "error"
    parts = [first.get("errorcode"), first.get("errormessage"), first.get("transactionreference")]
    return f"#{number} {when} {types} {mark}: " + " ".join(str(p) for p in parts if p)


def history_frame(exchanges: list[Any]) -> pd.DataFrame:
    """The exchanges of a session as a table, newest first: number, time, request, outcome."""
    rows = []
    for number, exchange in reversed(list(enumerate(exchanges, start=1))):
        started = getattr(exchange, "started_at", None)
        records = (getattr(exchange, "response", None) or {}).get("response") or []
        first = records[0] if records and isinstance(records[0], dict) else {}
        error = getattr(exchange, "error", None)
        rows.append(
            {
                "#": str(number),
                "time (UTC)": f"{started.astimezone(UTC):%H:%M:%S}" if started is not None else "",
                "request": " ".join(getattr(exchange, "request_types", ()) or ()) or "?",
                "answer": f"no answer: {no_answer_words(error)}"
                if error
                else labelled("errorcode", first.get("errorcode")),
                "transactionreference": str(first.get("transactionreference") or ""),
            }
        )
    return pd.DataFrame(rows, columns=["#", "time (UTC)", "request", "answer", "transactionreference"])


class WatchedClient(GatewayClient, Protocol):
    """A client whose exchanges can be watched: a `gwkit.Client`, or a connection."""

    def add_exchange_hook(self, hook: ExchangeHook) -> ExchangeHook: ...

    def remove_exchange_hook(self, hook: ExchangeHook) -> None: ...


class RequestExplorer(widgets.VBox):
    """`type_picker`, `variant_picker`, `form` (the current RequestForm), `response_box`,
    `history_table` (the session's exchanges as a table), `history` (a Dropdown choosing one to
    show again; its value is the index of an exchange in `exchanges`)."""

    def __init__(self, client: WatchedClient, *, request_type: str = "AUTH", variant: str | None = None):
        super().__init__()
        self.client = client
        self.errors = widgets.HTML()
        self.type_picker = widgets.Dropdown(
            options=[(f"{rt.title} ({key})", key) for key, rt in REQUEST_TYPES.items()],
            value=request_type,
            description="Request",
            layout=widgets.Layout(width="34em"),
        )
        self.variant_picker = widgets.Dropdown(description="Variant", layout=widgets.Layout(width="34em"))
        self.form_box = widgets.VBox()
        self.response_box = widgets.VBox([widgets.HTML(RESPONSE_PLACEHOLDER)])
        self.history_table = widgets.HTML()
        self.history = widgets.Dropdown(
            options=[],
            value=None,
            description="Show again",
            style={"description_width": "initial"},
            layout=widgets.Layout(width="auto", max_width="100%"),
        )
        self.exchanges: list[Any] = list(getattr(client, "exchanges", ()) or ())
        self.form: RequestForm | None = None
        self._switching = False
        self._refresh_history()
        self._set_variants(request_type, variant)
        self.type_picker.observe(
            guarded(self._type_changed, self.errors, context="choosing a request type"), names="value"
        )
        self.variant_picker.observe(
            guarded(self._variant_changed, self.errors, context="choosing a variant"), names="value"
        )
        self.history.observe(
            guarded(self._history_selected, self.errors, context="showing an exchange"), names="value"
        )
        client.add_exchange_hook(self._exchange_made)
        self.children = [
            widgets.HTML("<h3 style='margin:4px 0'>Request explorer</h3>"),
            widgets.HBox(
                [self.type_picker, self.variant_picker], layout=widgets.Layout(flex_flow="row wrap")
            ),
            self.form_box,
            self.errors,
            widgets.HTML("<h4 style='margin:8px 0 2px'>Response</h4>"),
            self.response_box,
            widgets.HTML("<h4 style='margin:8px 0 2px'>History of this session</h4>"),
            self.history_table,
            self.history,
        ]
        self.add_class("gwkit-explorer")

    # -- request type, variant, form -------------------------------------------------------------
    def _set_variants(self, request_type: str, variant: str | None = None) -> None:
        rt = REQUEST_TYPES[request_type]
        chosen = variant or default_variant(rt).name
        self._switching = True  # new options reset the variant picker; build one form, not two
        try:
            self.variant_picker.options = [(v.title, v.name) for v in rt.variants]
            self.variant_picker.value = chosen
        finally:
            self._switching = False
        self._show_form(request_type, chosen)

    def _show_form(self, request_type: str, variant: str) -> None:
        if self.form is not None and (self.form.request_type.key, self.form.variant.name) == (
            request_type,
            variant,
        ):
            return
        self.form = RequestForm(request_type, variant, client=self.client, show_response=False)
        self.form.on_response(self._show_response)
        self.form_box.children = [self.form]
        # a new request starts clean: the last answer and error belonged to the previous form
        self.response_box.children = [widgets.HTML(RESPONSE_PLACEHOLDER)]
        self.errors.value = ""

    def _type_changed(self, change: dict[str, Any]) -> None:
        self._set_variants(change["new"])

    def _variant_changed(self, change: dict[str, Any]) -> None:
        if change["new"] is not None and not self._switching:
            self._show_form(self.type_picker.value, change["new"])

    # -- responses and history ------------------------------------------------------------------
    def _show_response(self, response: Any) -> None:
        self.response_box.children = [
            ResponseView(response, client=self.client, open_form=form_opener(self.client))
        ]

    def _exchange_made(self, exchange: Any) -> None:
        self.exchanges.append(exchange)
        self._refresh_history()

    def _refresh_history(self) -> None:
        selected = self.history.value
        self.history.options = [
            (exchange_label(i + 1, e), i) for i, e in reversed(list(enumerate(self.exchanges)))
        ]
        self.history.value = selected if selected is not None and selected < len(self.exchanges) else None
        shown = history_frame(self.exchanges).head(HISTORY_SHOWN)
        self.history_table.value = table_html(shown, "No exchange yet: send a request.")

    def _history_selected(self, change: dict[str, Any]) -> None:
        index = change["new"]
        if index is None:
            return
        exchange = self.exchanges[index]
        self.response_box.children = [
            ResponseView(
                exchange,
                client=self.client,
                open_form=form_opener(self.client),
                title=exchange_label(index + 1, exchange),
            )
        ]

    def close(self) -> None:
        """Stop listening to the client, then close the widgets."""
        try:
            self.client.remove_exchange_hook(self._exchange_made)
        except (AttributeError, ValueError):
            pass
        super().close()
