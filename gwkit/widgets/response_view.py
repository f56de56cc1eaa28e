"""A response, readable: records as a table (masked), success or error highlighted with what the
error means, the raw JSON one click away, and buttons for the follow-ups a record suggests.

    ResponseView(response, client=gw)     # a gwkit Response, an Exchange, a journal entry or a dict

A follow-up that opens a form (use a stored card, AUTH after 3-D Secure) needs `open_form`, a
function of the action returning the widget to show (`gwkit.widgets.form.form_opener(gw)`); the
request form, the explorer and the panels pass it.
"""

from __future__ import annotations

import html
import json
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import ipywidgets as widgets
import pandas as pd

from ..errors import GwkitError
from ..interface import FIELDS
from ..interface.codes import record_ok
from ..interface.masking import mask_data
from ..interface.outcome import in_words
from ..interface.vocabulary import Cause, applies, cause_of, labelled
from ..protocols import GatewayClient
from ..response import KEY_FIELDS, value_text
from .actions import QUERY, Action, follow_ups
from .guard import error_html, guarded
from .style import table_html

# Fields shown first, in this order (those that apply to the record); every field is one click away.
FIRST_FIELDS = KEY_FIELDS
QUERY_COLUMNS = (
    "transactionreference",
    "requesttypedescription",
    "transactionstartedtimestamp",
    "baseamount",
    "currencyiso3a",
    "errorcode",
    "settlestatus",
    "transactionactive",
    "maskedpan",
    "orderreference",
    "parenttransactionreference",
)
MAX_QUERY_ROWS = 50
OK_COLOUR, ERROR_COLOUR = "#1b7f3b", "#b00020"
FormOpener = Callable[[Action], widgets.Widget]


def _source_parts(
    source: Any,
) -> tuple[Mapping[str, Any] | None, Mapping[str, Any] | None, str | None, float | None]:
    """(response envelope, request envelope, error text, seconds) of whatever is to be shown."""
    if source is None:
        return None, None, None, None
    if hasattr(source, "raw") and hasattr(source, "records"):  # gwkit.Response
        return source.raw, getattr(source, "request", None), None, getattr(source, "elapsed", None)
    if hasattr(source, "response") and hasattr(source, "request"):  # Exchange or JournalEntry
        elapsed = getattr(source, "elapsed", None)
        if elapsed is None and getattr(source, "elapsed_ms", None) is not None:
            elapsed = source.elapsed_ms / 1000.0
        return source.response, source.request, getattr(source, "error", None), elapsed
    if isinstance(source, Mapping):
        return source, None, None, None
    raise TypeError(
        f"ResponseView shows a gwkit Response, Exchange, journal entry or envelope dict, "
        f"not {type(source).__name__}"
    )


class ResponseView(widgets.VBox):
    """`headline` (one line per record in plain words: what happened, what to do next), `summary`,
    `table` (records), `raw` (an Accordion with the masked JSON), `action_buttons`
    (one per follow-up), `follow_up` (where a follow-up's result or form appears)."""

    def __init__(
        self,
        source: Any = None,
        *,
        client: GatewayClient | None = None,
        title: str | None = None,
        open_form: FormOpener | None = None,
    ):
        super().__init__()
        envelope, request, error, elapsed = _source_parts(source)
        self.client = client
        self.open_form = open_form
        self.envelope = mask_data(dict(envelope)) if envelope is not None else None
        self.request = mask_data(dict(request)) if request is not None else None
        self.records: list[dict[str, Any]] = _records(self.envelope)
        self.headline = widgets.HTML(self._headline_html())
        self.summary = widgets.HTML(self._summary_html(title, error, elapsed))
        self.table = widgets.HTML(self._records_html())
        self.raw = self._raw_accordion()
        self.actions = [a for record in self.records for a in follow_ups(record)]
        self.action_status = widgets.HTML()
        self.action_buttons = [self._button(action) for action in self.actions]
        self.follow_up = widgets.VBox()
        self.children = [
            self.headline,
            self.summary,
            self.table,
            widgets.HBox(self.action_buttons, layout=widgets.Layout(flex_flow="row wrap")),
            self.action_status,
            self.raw,
            self.follow_up,
        ]
        self.add_class("gwkit-response-view")

    # -- HTML --------------------------------------------------------------------------------
    def _headline_html(self) -> str:
        lines = []
        for record in self.records:
            ok = record_ok(record)
            words = in_words(record, self.cause(record))
            lines.append(
                f"<div class='gwkit-headline {'gwkit-ok' if ok else 'gwkit-error'}' style='font-size:110%;"
                f"color:{OK_COLOUR if ok else ERROR_COLOUR}'>{html.escape(words)}</div>"
            )
        return "".join(lines)

    def cause(self, record: Mapping[str, Any]) -> Cause | None:
        """The specific cause of a failure, looking up a refused parent when a client is at hand
        (a disabled stored card, or no such transaction)."""
        if str(record.get("errorcode")) != "30000" or record.get("errordata") != [
            "parenttransactionreference"
        ]:
            return cause_of(record)
        sent = ((self.request or {}).get("request") or [{}])[0]
        parent = sent.get("parenttransactionreference") if isinstance(sent, Mapping) else None
        if self.client is None or not isinstance(parent, str):
            return cause_of(record)
        try:
            found = self.client.transaction_query(transactionreference=parent).record.get("records") or []
        except GwkitError:
            return cause_of(record)
        stored = next((r for r in found if r.get("requesttypedescription") == "STORE"), None)
        return cause_of(record, parent=stored, parent_found=bool(found), parent_reference=parent)

    def _summary_html(self, title: str | None, error: str | None, elapsed: float | None) -> str:
        head = f"<b>{html.escape(title)}</b> " if title else ""
        if error:
            return (
                f"<div class='gwkit-failed' style='color:{ERROR_COLOUR}'>{head}<b>No answer:</b> "
                f"{html.escape(error)}</div>"
            )
        if not self.records:
            return f"<div>{head}<i>No response records.</i></div>"
        ok = all(record_ok(r) for r in self.records)
        colour, word = (OK_COLOUR, "Success") if ok else (ERROR_COLOUR, "Error")
        reference = (self.envelope or {}).get("requestreference")
        timing = f" in {elapsed * 1000:.0f} ms" if elapsed is not None else ""
        return (
            f"<div class='{'gwkit-ok' if ok else 'gwkit-error'}' style='color:{colour}'>{head}"
            f"<b>{word}</b>: {len(self.records)} record(s), request {html.escape(str(reference))}"
            f"{timing}</div>"
        )

    def _records_html(self) -> str:
        if not self.records:
            return ""
        names = _ordered_fields(self.records)
        main = [n for n in names if n in FIRST_FIELDS and any(applies(n, r) for r in self.records)]
        parts = [
            "<table class='gwkit-records' style='border-collapse:collapse'>",
            "<tr><th style='text-align:left'>Field</th>",
        ]
        parts += [_status_cell(r) for r in self.records]
        parts.append("</tr>")
        parts += [_field_row(name, self.records, only_applying=True) for name in main]
        parts.append("</table>")
        # every field, one click away, so the essentials stay readable
        parts.append(
            f"<details class='gwkit-more-fields'><summary>all {len(names)} fields</summary>"
            "<table style='border-collapse:collapse'>"
            + "".join(_field_row(name, self.records) for name in names)
            + "</table></details>"
        )
        parts += [_query_table(r) for r in self.records if isinstance(r.get("records"), list)]
        return "".join(parts)

    def _raw_accordion(self) -> widgets.Accordion:
        children, titles = [], []
        if self.envelope is not None:
            children.append(widgets.HTML(_pre(self.envelope)))
            titles.append("Raw JSON response (masked)")
        if self.request is not None:
            children.append(widgets.HTML(_pre(self.request)))
            titles.append("Request sent (masked)")
        accordion = widgets.Accordion(children=children, titles=tuple(titles))
        accordion.selected_index = None
        return accordion

    # -- follow-up actions ---------------------------------------------------------------------
    def _button(self, action: Action) -> widgets.Button:
        usable = self.client is not None and (action.kind == QUERY or self.open_form is not None)
        button = widgets.Button(
            description=action.label,
            disabled=not usable,
            tooltip=action.label if usable else "no client to send with, or no form to open",
            layout=widgets.Layout(width="auto"),
        )
        button.on_click(
            guarded(lambda _b, a=action: self.run_action(a), self.action_status, context=action.label)
        )
        return button

    def run_action(self, action: Action) -> Any:
        """Carry out a follow-up: a query is sent and shown, a form is opened pre-filled."""
        self.action_status.value = ""
        if action.kind == QUERY:
            if self.client is None:
                raise RuntimeError(f"{action.label} sends a query: create the view with client=")
            try:
                response = self.client.transaction_query(transactionreference=action.reference)
            except GwkitError as error:
                self.action_status.value = error_html(error, action.label)
                return None
            shown: widgets.Widget = ResponseView(
                response, client=self.client, title=action.label, open_form=self.open_form
            )
        else:
            if self.open_form is None:
                raise RuntimeError(f"{action.label} opens a form: create the view with open_form=")
            shown = self.open_form(action)
        self.follow_up.children = [shown]
        return shown


def _records(envelope: Mapping[str, Any] | None) -> list[dict[str, Any]]:
    records = (envelope or {}).get("response")
    return [r for r in records if isinstance(r, dict)] if isinstance(records, list) else []


def _ordered_fields(records: Sequence[Mapping[str, Any]]) -> list[str]:
    present = dict.fromkeys(name for r in records for name in r if name != "records")
    return [n for n in FIRST_FIELDS if n in present] + [n for n in present if n not in FIRST_FIELDS]


def _field_row(name: str, records: Sequence[Mapping[str, Any]], *, only_applying: bool = False) -> str:
    spec = FIELDS.get(name)
    label = html.escape(spec.title) if spec else ""
    cells = "".join(
        f"<td style='text-align:left;padding-right:1em'>"
        f"{_cell(name, r) if not only_applying or applies(name, r) else ''}</td>"
        for r in records
    )
    return (
        f"<tr><td style='text-align:left;padding-right:1em'>{label} "
        f"<code style='color:#666'>{html.escape(name)}</code></td>{cells}</tr>"
    )


def _status_cell(record: Mapping[str, Any]) -> str:
    """The record's column head: its type and code in words (the headline above says the rest)."""
    kind = html.escape(str(record.get("requesttypedescription", "record")))
    code = html.escape(labelled("errorcode", record.get("errorcode")))
    if record_ok(record):
        return f"<th class='gwkit-record-ok' style='text-align:left;color:{OK_COLOUR}'>&#10004; {kind} {code}</th>"
    cancelled = " (cancelled: no money moves)" if str(record.get("errorcode")) == "0" else ""
    return (
        f"<th class='gwkit-record-error' style='text-align:left;color:{ERROR_COLOUR}'>&#10008; {kind} "
        f"{code}{cancelled}</th>"
    )


def _cell(name: str, record: Mapping[str, Any]) -> str:
    return html.escape(value_text(name, record)) if name in record else ""


def _query_table(record: Mapping[str, Any]) -> str:
    """The records a query found, in the one table style (money as £10.50, codes in words)."""
    found = [r for r in record["records"] if isinstance(r, dict)]
    if not found:
        return "<p class='gwkit-query-records'><i>The query found no records.</i></p>"
    columns = [c for c in QUERY_COLUMNS if any(c in r for r in found)]
    frame = pd.DataFrame([{c: r.get(c) for c in columns} for r in found[:MAX_QUERY_ROWS]], columns=columns)
    more = (
        f"<p><i>{len(found) - MAX_QUERY_ROWS} more record(s) not shown; use gwkit.report for all.</i></p>"
        if len(found) > MAX_QUERY_ROWS
        else ""
    )
    return (
        f"<p><b>{len(found)} transaction record(s) found</b></p>"
        f"{table_html(frame, '', css_class='gwkit-query-records')}{more}"
    )


def _pre(data: Any) -> str:
    text = json.dumps(data, indent=2, ensure_ascii=False, default=str)
    return f"<pre class='gwkit-raw-json' style='font-size:85%;max-height:30em;overflow:auto'>{html.escape(text)}</pre>"
