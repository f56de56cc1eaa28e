"""A request form generated from the spec tables, for any request type and variant.

    form = RequestForm("AUTH", "card", client=gw)
    form.fields["baseamount"].value = "70000"
    form.problems                     # what the spec's validation says, as the user types
    form.send_button.click()          # builds the request, the client sends it

Required fields come first (marked *), then optional ones, billing fields in a collapsed group.
TRANSACTIONQUERY and TRANSACTIONUPDATE get one input per filter field (several values separated
by commas) and per updatable field; the form builds the gateway's `filter`/`updates` shape.
Each input is made from its field's table entry (`inputs.FieldInput`), each message is the spec's
rule text (`validate_request`), and the client sends what `form.request()` returns.
"""

from __future__ import annotations

import html
from collections import defaultdict
from collections.abc import Callable, Mapping
from datetime import date, timedelta
from typing import Any

import ipywidgets as widgets

from ..codegen import as_code
from ..envelope import build_request
from ..errors import GwkitError, ValidationError
from ..interface import (
    FIELDS,
    FILTER_FIELDS,
    REQUEST_TYPES,
    UPDATABLE_FIELDS,
    Field,
    Problem,
    validate_request,
)
from ..interface import types as t
from ..interface.codes import record_ok
from ..interface.fields import BILLING_FIELDS, FILTER_ONLY_FIELDS
from ..interface.requests import RequestType, Variant
from ..interface.testcards import test_card
from ..protocols import GatewayClient
from .actions import Action
from .checks import PROBLEM_STYLE, expiry_problem, not_sent_html, today_for
from .guard import error_html, guarded
from .inputs import FieldInput
from .response_view import ResponseView
from .style import button

FILTER, UPDATES = "filter", "updates"
DEFAULT_CURRENCY = "GBP"
TEST_PAN = "4111111111111111"  # Visa, authorised by the test acquirer (enrolled in 3-D Secure: Y)

# Sensible starting values, as data. Each is a string or a function of today's date (the sandbox's
# clock when there is one). Required fields always get theirs; optional ones only if listed below.
DEFAULTS: dict[str, str | Callable[[date], str]] = {
    "pan": TEST_PAN,
    "expirydate": lambda today: f"{today.month:02d}/{today.year + 3}",
    "expirymonth": lambda today: f"{today.month:02d}",
    "expiryyear": lambda today: f"{today.year + 3}",
    "securitycode": "123",
    "baseamount": "1050",
    "orderreference": lambda today: f"order-{today:%Y%m%d}",
    "subscriptionfrequency": "1",
    "subscriptionnumber": "1",
    "subscriptionfinalnumber": "12",
    "subscriptionbegindate": lambda today: (today + timedelta(days=31)).isoformat(),
    "credentialsonfile": "1",
    "termurl": "https://merchant.example.com/3ds/return",
}
OPTIONAL_DEFAULTS = frozenset({"securitycode", "baseamount", "currencyiso3a", "accounttypedescription"})
# Starting values of one request type's own: a look-up starts with an EMV 3-D Secure card (2.1.0,
# frictionless), since a v1 card's look-up answers no version.
TYPE_DEFAULTS: dict[str, dict[str, str]] = {"THREEDLOOKUP": {"pan": "4900490000000006"}}


def test_card_meaning(pan: Any) -> str:
    """What a test card does, in a line (the test cards' data file), or '' for any other number."""
    card = test_card(pan.replace(" ", "")) if isinstance(pan, str) else None
    if card is None:
        return ""
    whose = (
        "a test card of the real test environment"
        if card.source == "real test environment"
        else "a gwkit sandbox test card (a real test site may answer otherwise)"
    )
    return f"{card.paymenttypedescription}, {whose}: {card.notes}."


def default_variant(request_type: RequestType) -> Variant:
    """The variant used when none is named: the fallback one (card details, for most types)."""
    return next((v for v in request_type.variants if not v.selected_by), request_type.variants[0])


def field_spec(name: str) -> Field:
    """The table entry behind an input. Filter-only names (startdate, enddate) take the entry the
    spec's validation checks them with; anything else unknown is plain text."""
    if name in FIELDS:
        return FIELDS[name]
    return FILTER_ONLY_FIELDS.get(name) or Field(name, t.STRING, label=name)


def form_opener(client: GatewayClient) -> Callable[[Action], RequestForm]:
    """What a response view calls to open the form a follow-up action names, pre-filled."""

    def open_form(action: Action) -> RequestForm:
        request_type, variant = action.form  # type: ignore[misc]
        return RequestForm(request_type, variant, client=client, values=action.values)

    return open_form


class RequestForm(widgets.VBox):
    """`fields[name]` is the input widget of a field (`filter.<name>` / `updates.<name>` for
    TRANSACTIONQUERY/UPDATE); `request()` is what would be sent; `problems` what is wrong with it;
    `send_button` sends it with `client` and shows the answer (`last_response`) below."""

    def __init__(
        self,
        request_type: str = "AUTH",
        variant: str | None = None,
        *,
        client: GatewayClient | None = None,
        values: Mapping[str, Any] | None = None,
        show_response: bool = True,
    ):
        super().__init__()
        if request_type not in REQUEST_TYPES:
            raise KeyError(f"unknown request type {request_type!r}; choose from {', '.join(REQUEST_TYPES)}")
        self.request_type = REQUEST_TYPES[request_type]
        self.variant = self.request_type.variant(variant) if variant else default_variant(self.request_type)
        self.client = client
        self.show_response = show_response
        self.inputs: dict[str, FieldInput] = {}
        self.problems: list[Problem] = []
        self.last_response: Any = None
        self._response_handlers: list[Callable[[Any], None]] = []
        self.general = widgets.HTML()
        self.status = widgets.HTML()
        self.send_button = button(
            description=f"Send {self.request_type.key}",
            kind="primary",
            icon="paper-plane",
            disabled=True,
        )
        self.send_button.on_click(
            guarded(self.submit, self.status, context=f"sending {self.request_type.key}")
        )
        self.response_box = widgets.VBox()
        self.code_style = widgets.Dropdown(
            options=[
                ("gwkit", "gwkit"),
                ("httpx", "httpx"),
                ("curl", "curl"),
                ("official client", "securetrading"),
            ],
            description="Copy as",
            layout=widgets.Layout(width="16em"),
        )
        self.code_button = button(description="Show code", icon="code")
        self.code = widgets.Textarea(layout=widgets.Layout(width="100%", height="14em"))
        self.code_button.on_click(guarded(self.show_code, self.status, context="writing the request as code"))
        self.children = self._layout()
        self._fill_defaults()
        if values:
            self.set_values(**values)
        for field_input in self.inputs.values():
            field_input.observe(guarded(self._revalidate, self.general, context="checking the form"))
        self._revalidate()
        self.add_class("gwkit-request-form")

    @property
    def fields(self) -> dict[str, widgets.Widget]:
        return {name: field_input.widget for name, field_input in self.inputs.items()}

    # -- layout ------------------------------------------------------------------------------
    def _layout(self) -> list[widgets.Widget]:
        rt, variant = self.request_type, self.variant
        help_text = " ".join(p for p in (rt.help, variant.help) if p)
        title = widgets.HTML(
            f"<h4 style='margin:4px 0'>{html.escape(rt.title)} "
            f"<small>({html.escape(rt.key)}, {html.escape(variant.title)})</small></h4>"
            f"<div style='color:#444'>{html.escape(help_text)}</div>"
            "<div style='color:#666;font-size:90%'>Fields marked "
            "<span style='color:#b00020'>*</span> are required.</div>"
        )
        names = [n for n in variant.allowed if n not in (FILTER, UPDATES)]
        required = [self._add(n, required=True) for n in names if n in variant.required]
        optional = [self._add(n) for n in names if n not in variant.required and n not in BILLING_FIELDS]
        billing = [self._add(n) for n in names if n not in variant.required and n in BILLING_FIELDS]
        parts: list[widgets.Widget] = [title, *required]
        if FILTER in variant.allowed:
            parts.append(
                self._group(
                    "Filter (several values: separate with commas)",
                    [self._add(n, prefix=FILTER, multiple=True) for n in FILTER_FIELDS],
                    open_=True,
                )
            )
        if UPDATES in variant.allowed:
            parts.append(
                self._group(
                    "Updates (leave blank what should not change)",
                    [self._add(n, prefix=UPDATES) for n in UPDATABLE_FIELDS],
                    open_=True,
                )
            )
        if optional:
            parts.append(self._group(f"Optional fields ({len(optional)})", optional, open_=True))
        if billing:
            parts.append(
                self._group(f"Billing details ({len(billing)} optional fields)", billing, open_=False)
            )
        code = self._group(
            "Copy as code (card data masked)",
            [widgets.HBox([self.code_style, self.code_button]), self.code],
            open_=False,
        )
        parts += [self.general, widgets.HBox([self.send_button, self.status]), code, self.response_box]
        return parts

    def _add(
        self, name: str, *, required: bool = False, prefix: str = "", multiple: bool = False
    ) -> widgets.Widget:
        spec = field_spec(name) if prefix else self.variant.fields.get(name) or field_spec(name)
        choices = self.variant.choices.get(name, spec.choices)
        key = f"{prefix}.{name}" if prefix else name
        self.inputs[key] = FieldInput(
            key,
            spec,
            required=required,
            choices=choices,
            multiple=multiple,
            label=spec.title if not prefix or spec.title == name else f"{spec.title} ({name})",
        )
        return self.inputs[key].row

    @staticmethod
    def _group(title: str, rows: list[widgets.Widget], *, open_: bool) -> widgets.Accordion:
        accordion = widgets.Accordion(children=[widgets.VBox(rows)], titles=(title,))
        accordion.selected_index = 0 if open_ else None
        return accordion

    # -- values ------------------------------------------------------------------------------
    def _today(self) -> date:
        return today_for(self.client)[0]

    def _fill_defaults(self) -> None:
        today = self._today()
        client_defaults = {"currencyiso3a": DEFAULT_CURRENCY, **self._filled_by_client()}
        client_filter = self.client.build_filter() if self.client is not None else {}
        for key, field_input in self.inputs.items():
            prefix, _, name = key.rpartition(".")
            if prefix == UPDATES:
                continue
            if prefix == FILTER:
                if client_filter.get(name):
                    field_input.set(", ".join(entry["value"] for entry in client_filter[name]))
                continue
            value: Any = (
                client_defaults.get(name)
                or TYPE_DEFAULTS.get(self.request_type.key, {}).get(name)
                or DEFAULTS.get(name)
            )
            if field_input.choices and (field_input.required or name in OPTIONAL_DEFAULTS) and value is None:
                value = field_input.choices[0]
            if value is None or not (field_input.required or name in OPTIONAL_DEFAULTS):
                continue
            if name in self.variant.fields and not field_input.required:
                continue  # a rule of this request type's own (an ACCOUNTCHECK's amount): left to the user
            field_input.set(value(today) if callable(value) else value)

    def _filled_by_client(self) -> dict[str, Any]:
        """The fields the client fills in by itself for this request type (its site, its currency)."""
        if self.client is None:
            return {}
        request = self.client.build_request(list(self.request_type.types))
        return {name: value for name, value in request.items() if name != "requesttypedescriptions"}

    def set_values(self, **values: Any) -> None:
        """Set inputs from wire values, e.g. `set_values(parenttransactionreference="1-2-3")`."""
        unknown = [k for k in values if k not in self.inputs]
        if unknown:
            raise KeyError(
                f"{self.request_type.key} ({self.variant.name}) has no input for {', '.join(unknown)}"
            )
        for key, value in values.items():
            self.inputs[key].set(value)

    def request(self) -> dict[str, Any]:
        """The request object the form would send (every value a string; blanks left out)."""
        fields: dict[str, Any] = {}
        grouped: dict[str, dict[str, Any]] = defaultdict(dict)
        for key, field_input in self.inputs.items():
            value = field_input.get()
            prefix, _, name = key.rpartition(".")
            if prefix == FILTER and value:
                values = (
                    value if isinstance(value, list) else [v.strip() for v in value.split(",") if v.strip()]
                )
                if values:
                    grouped[FILTER][name] = [{"value": v} for v in values]
            elif prefix == UPDATES and value is not None:
                grouped[UPDATES][name] = value
            elif not prefix and value is not None:
                fields[name] = value
        for group in (FILTER, UPDATES):
            if group in self.variant.allowed:
                fields[group] = grouped[group]
        return build_request(list(self.request_type.types), fields)

    # -- checking and sending ------------------------------------------------------------------
    def _revalidate(self, _change: Any = None) -> None:
        request = self.request()
        self._show_problems(validate_request(request, strict=True) or self._known_to_the_gateway(request))

    def _show_problems(self, problems: list[Problem]) -> None:
        """Each problem under its input (the rest above the Send button), Send disabled while any
        stands."""
        self.problems = problems
        per_input: dict[str, list[str]] = defaultdict(list)
        general: list[str] = []
        for problem in self.problems:
            if problem.field in self.inputs:
                per_input[problem.field].append(problem.rule)
            else:
                general.append(str(problem))
        for key, field_input in self.inputs.items():
            field_input.show_problems(per_input.get(key, []))
        currency = self._currency()
        for field_input in self.inputs.values():
            field_input.show_major(currency)
        if "pan" in self.inputs:
            self.inputs["pan"].show_note(test_card_meaning(self.inputs["pan"].get()))
        self.general.value = "".join(
            f"<div class='gwkit-problem' style='{PROBLEM_STYLE}'>{html.escape(p)}</div>" for p in general
        )
        self.send_button.disabled = bool(self.problems) or self.client is None
        self.send_button.tooltip = (
            "no client: pass client="
            if self.client is None
            else f"{len(self.problems)} problem(s) to fix first"
            if self.problems
            else "Send"
        )

    def _known_to_the_gateway(self, request: Mapping[str, Any]) -> list[Problem]:
        """What the gateway would refuse although the spec's field rules pass: an expired card, by
        the sandbox's clock when there is one (the gateway answers 30000 expirydate)."""
        expiry = expiry_problem(request.get("expirydate"), self.client)
        return [expiry] if expiry else []

    def _currency(self) -> str | None:
        chosen = self.inputs["currencyiso3a"].get() if "currencyiso3a" in self.inputs else None
        return (
            chosen
            if isinstance(chosen, str)
            else getattr(self.client, "currencyiso3a", None) or DEFAULT_CURRENCY
        )

    def as_code(self, style: str = "gwkit") -> str:
        """The request this form would send, as code in `style` (see `gwkit.codegen.STYLES`); card
        data masked, the password read from the environment."""
        client = self.client
        return as_code(
            self.request(),
            style,
            base_url=getattr(client, "base_url", None),
            username=getattr(client, "username", None),
        )

    def show_code(self, _button: Any = None) -> None:
        self.code.value = self.as_code(self.code_style.value)

    def on_response(self, handler: Callable[[Any], None]) -> None:
        """Call `handler(response)` after each successful send."""
        self._response_handlers.append(handler)

    def submit(self, _button: Any = None) -> Any:
        """Send the request with the client and show the answer (what the send button does)."""
        if self.client is None:
            raise RuntimeError("this form has no client; create it with RequestForm(..., client=gw)")
        self._revalidate()  # everything again: a press can race the last change
        if self.problems:
            self.status.value = not_sent_html(len(self.problems))
            return None
        self.status.value = "<i>sending...</i>"
        try:
            response = self.client.send(self.request())
        except ValidationError as error:  # a rule the form could not see: beside its field too
            self._show_problems(error.problems)
            self.status.value = not_sent_html(len(error.problems))
            return None
        except GwkitError as error:  # no connection, rejected credentials: the user's to act on
            self.status.value = error_html(error, f"sending {self.request_type.key}")
            return None
        self.last_response = response
        ok = all(record_ok(r) for r in response.raw.get("response", []))
        self.status.value = (
            f"<span class='{'gwkit-ok' if ok else 'gwkit-error'}'>"
            f"{'sent: success' if ok else 'sent: the gateway answered an error'}</span>"
        )
        if self.show_response:
            self.response_box.children = [
                ResponseView(response, client=self.client, open_form=form_opener(self.client))
            ]
        for handler in self._response_handlers:
            handler(response)
        return response
