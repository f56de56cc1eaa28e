"""A step-by-step view of 3-D Secure version 1: enrolment check, ACS, term URL, AUTH.

    stepper = ThreeDSecureStepper(gw)      # gw = gwkit.connect() or any gwkit.Client
    stepper                                # choose a card, press "Send THREEDQUERY", follow the steps

Each step shows what was sent and what came back (masked), what the fields mean and what comes
next. For an enrolled card the issuer's page (the sandbox's simulated ACS, or a real issuer's)
opens inside the notebook in an iframe, or in a new tab through the link beside it; when the ACS
posts the customer back to gwkit's term URL receiver, the stepper moves on by itself and, unless
told otherwise, sends the AUTH at once, as a merchant's term URL script would.

Without a browser (scripts, tests, notebook runs) `complete_acs(outcome)` plays the customer at
the sandbox ACS. Tests drive the stepper through its widgets' `.value` and `.click()`.
"""

from __future__ import annotations

import html
import json
from collections.abc import Collection, Mapping
from dataclasses import dataclass
from typing import Any

import ipywidgets as widgets

from ..errors import ValidationError
from ..interface.codes import record_ok
from ..interface.masking import mask_data, mask_pan
from ..interface.testcards import test_cards
from ..protocols import GatewayClient
from ..report.display import field_text
from ..threeds import (
    AUTH_WITH_PARENT,
    REDIRECT,
    RESEND_OR_AUTH,
    STANDARD_AUTH,
    TermUrlReceiver,
    ThreeDSecureFlow,
)
from .checks import FieldChecks
from .guard import guarded, show_error
from .style import button

DEFAULT_PAN = "4111110000000211"
DEFAULT_EXPIRY = "12/2049"
MAX_SHOWN = 64  # characters of a long value (pareq, PaRes) shown in the tables
FULL_LABEL = {"description_width": "initial"}  # labels shown whole ("Security code", "ACS outcome")

OUTCOME_CHOICES = (
    ("Y: authenticated", "Y"),
    ("N: not authenticated", "N"),
    ("A: attempted", "A"),
    ("U: authentication unavailable", "U"),
    ("cancel: the cardholder gives up (N)", "cancel"),
)

FIELD_MEANINGS = {
    "enrolled": "Is the card in 3-D Secure? Y yes, N no, U could not be determined.",
    "xid": "The 3-D Secure transaction identifier the service assigned.",
    "pareq": "The payer authentication request, passed unchanged to the ACS as PaReq.",
    "md": "The merchant's session reference: posted to the ACS as MD, it comes back with PaRes.",
    "acsurl": "The card issuer's Access Control Server: the customer's browser is sent there.",
    "threedversion": "The 3-D Secure protocol version.",
    "transactionreference": "This record's reference; a non-enrolled card's AUTH names it as parent.",
    "PaReq": "The THREEDQUERY's pareq, passed on unchanged.",
    "TermUrl": "The merchant's page that receives the customer back (gwkit's term URL receiver).",
    "MD": "The THREEDQUERY's md; the merchant finds its session with it.",
    "PaRes": "The issuer's signed answer; sent unchanged as pares in the AUTH.",
    "status": "Y authenticated, N not authenticated (A attempted and U unavailable in the sandbox).",
    "eci": "E-commerce indicator: 05 (Visa) / 02 (Mastercard) authenticated, 06/01 attempted.",
    "cavv": "The issuer's proof of authentication.",
    "parenttransactionreference": "The THREEDQUERY this AUTH continues.",
    "settlestatus": "0 will settle, 3 cancelled: no money moves.",
    "errorcode": "0 means success; anything else is an error (see the explanation).",
}


@dataclass(frozen=True)
class StepInfo:
    name: str  # the flow's step name
    title: str
    what: str


STEPS = (
    StepInfo(
        "THREEDQUERY",
        "1. Enrolment check (THREEDQUERY)",
        "The merchant asks the gateway whether the card is enrolled in 3-D Secure.",
    ),
    StepInfo(
        "ACS",
        "2. Redirect to the card issuer (ACS)",
        "The customer's browser posts PaReq, TermUrl and MD to the issuer's ACS, which asks the "
        "cardholder to prove who they are.",
    ),
    StepInfo(
        "TERMURL",
        "3. Back at the term URL",
        "The ACS posts the browser back to the merchant's term URL with PaRes and MD.",
    ),
    StepInfo(
        "AUTH",
        "4. Authorisation (AUTH)",
        "The merchant sends the AUTH: md and pares for an enrolled card, otherwise the THREEDQUERY "
        "reference as parenttransactionreference.",
    ),
)

_BADGES = {
    "done": ("#1b7f3b", "done"),
    "current": ("#1f5fbf", "now"),
    "waiting": ("#6b7788", "waiting"),
    "skipped": ("#9aa3ad", "not needed"),
    "failed": ("#b3261e", "failed"),
    "not authenticated": ("#b3261e", "not authenticated"),
    "unavailable": ("#8a5a00", "unavailable"),
}
# The outcome banner's colours by Verdict.tone: (border and heading, background).
_TONES = {
    "success": ("#1b7f3b", "#e8f5ec"),
    "warning": ("#8a5a00", "#fff4dc"),
    "failure": ("#b3261e", "#fdecea"),
}


ENROLMENT_ORDER = {"Y": 0, "N": 1, "U": 2}  # the 3-D Secure cards first, the others after


def card_choices() -> list[tuple[str, str]]:
    """Test cards as (masked number and what it does, number), from the sandbox's card list: the
    cards that show a 3-D Secure v1 case first (enrolled, not enrolled, unknown), then the others
    without 3-D Secure; the EMV 3-D Secure cards (version 2.x) belong to the v2 stepper."""
    v1 = [c for c in test_cards().values() if not c.emv3ds]
    cards = sorted(v1, key=lambda c: ENROLMENT_ORDER.get(c.enrolled, len(ENROLMENT_ORDER)))
    return [(f"{mask_pan(c.pan)} {c.paymenttypedescription}: {c.notes}", c.pan) for c in cards]


# The sequence diagram of notebook 03, drawn in SVG: (step, from, to, what is sent).
LANES = ("Browser", "Merchant server", "Gateway", "Issuer's ACS")
MESSAGES = (
    ("THREEDQUERY", 1, 2, "THREEDQUERY (card, amount, termurl)"),
    ("THREEDQUERY", 2, 1, "enrolled, acsurl, pareq, md"),
    ("ACS", 1, 0, "page that posts to acsurl"),
    ("ACS", 0, 3, "PaReq, TermUrl, MD"),
    ("TERMURL", 3, 0, "PaRes, MD"),
    ("TERMURL", 0, 1, "PaRes, MD to the term URL"),
    ("AUTH", 1, 2, "AUTH (md, pares, or the query as parent)"),
    ("AUTH", 2, 1, "AUTH record: status, eci, errorcode"),
)
LANE_WIDTH, ROW_HEIGHT, TOP = 180, 30, 34
_ARROW_COLOURS = {
    "current": "#1f5fbf",
    "done": "#1b7f3b",
    "failed": "#b3261e",
    "not authenticated": "#b3261e",
}


def sequence_svg(
    states: Mapping[str, str],
    *,
    lanes: tuple[str, ...] = LANES,
    messages: tuple[tuple[str, int, int, str], ...] = MESSAGES,
    lane_width: int = LANE_WIDTH,
) -> str:
    """Who talks to whom (3-D Secure v1 unless told other `lanes` and `messages`), the messages of
    the current step highlighted, those of skipped steps faint: the stepper's picture of where the
    payment is."""
    width, height = lane_width * len(lanes), TOP + ROW_HEIGHT * len(messages) + 12
    centre = [lane_width * i + lane_width // 2 for i in range(len(lanes))]
    parts = [
        f"<svg class='gwkit-sequence' xmlns='http://www.w3.org/2000/svg' width='{width}' height='{height}' "
        f"viewBox='0 0 {width} {height}' style='font:12px sans-serif;max-width:100%'>",
        "<defs><marker id='gwkit-arrow' viewBox='0 0 10 10' refX='10' refY='5' markerWidth='7' markerHeight='7' "
        "orient='auto-start-reverse'><path d='M0,0 L10,5 L0,10 z' fill='context-stroke'/></marker></defs>",
    ]
    for x, name in zip(centre, lanes, strict=True):
        parts.append(
            f"<text x='{x}' y='14' text-anchor='middle' font-weight='bold'>{html.escape(name)}</text>"
        )
        parts.append(
            f"<line x1='{x}' y1='20' x2='{x}' y2='{height - 4}' stroke='#c5ccd6' stroke-dasharray='3,3'/>"
        )
    for row, (step, source, target, what) in enumerate(messages):
        state = states.get(step, "waiting")
        y = TOP + ROW_HEIGHT * row + 16
        colour = _ARROW_COLOURS.get(state, "#9aa3ad")
        current = state == "current"
        if current:
            parts.append(f"<rect x='0' y='{y - 20}' width='{width}' height='{ROW_HEIGHT}' fill='#e8f0fb'/>")
        dash = " stroke-dasharray='5,4'" if state == "skipped" else ""
        parts.append(
            f"<line x1='{centre[source]}' y1='{y}' x2='{centre[target]}' y2='{y}' stroke='{colour}' "
            f"stroke-width='{2.5 if current else 1.5}' marker-end='url(#gwkit-arrow)'{dash}/>"
        )
        middle = (centre[source] + centre[target]) // 2
        weight = " font-weight='bold'" if current else ""
        parts.append(
            f"<text x='{middle}' y='{y - 5}' text-anchor='middle' fill='{colour}'{weight} "
            f"style='paint-order:stroke;stroke:#ffffff;stroke-width:4px'>{html.escape(what)}</text>"
        )
    parts.append("</svg>")
    return "".join(parts)


def _shown(value: Any) -> str:
    text = value if isinstance(value, str) else json.dumps(value, default=str)  # as on the wire, never a repr
    return text if len(text) <= MAX_SHOWN else text[: MAX_SHOWN - 3] + "..."


def _in_words(name: str, value: Any, fields: Mapping[str, Any]) -> str:
    """A code with its words (`0 · Ok`, `Y · authenticated`), an amount with its currency; long
    values cut short."""
    return _shown(field_text(name, value, fields) if isinstance(value, str) else value)


KEY_STEP_FIELDS = (
    *FIELD_MEANINGS,
    "errorcode",
    "errormessage",
    "errordata",
    "baseamount",
    "currencyiso3a",
    "maskedpan",
    "pan",
    "termurl",
)


def _table(title: str, data: Mapping[str, Any], key_fields: Collection[str] = KEY_STEP_FIELDS) -> str:
    """The key fields of what a step sent or received; every field one click away."""

    def rows(items: list[tuple[str, Any]]) -> str:
        return "".join(
            f"<tr><td style='padding-right:1em'><code>{html.escape(k)}</code></td>"
            f"<td><code>{html.escape(_in_words(k, v, fields))}</code></td></tr>"
            for k, v in items
        )

    fields = mask_data(dict(data))
    masked = list(fields.items())
    key = [(k, v) for k, v in masked if k in key_fields]
    every = (
        f"<details><summary>all {len(masked)} fields</summary><table style='font-size:90%'>{rows(masked)}"
        "</table></details>"
        if len(key) < len(masked)
        else ""
    )
    return f"<div><b>{html.escape(title)}</b><table style='font-size:90%'>{rows(key)}</table>{every}</div>"


def _meanings(*records: Mapping[str, Any], meanings: Mapping[str, str] = FIELD_MEANINGS) -> str:
    names = [n for n in meanings if any(n in r for r in records)]
    if not names:
        return ""
    items = "".join(f"<li><code>{n}</code>: {html.escape(meanings[n])}</li>" for n in names)
    return (
        f"<details><summary>What these fields mean</summary><ul style='font-size:90%'>{items}</ul></details>"
    )


class ThreeDSecureStepper(widgets.VBox):
    """The four steps of 3-D Secure v1 as panels, with the controls to walk through them.

    Controls: `card`, `expirydate`, `securitycode`, `baseamount`, `currency`, `query_button`,
    `requery_button`, `outcome` and `complete_button` (the sandbox ACS without a browser),
    `auto_auth`, `auth_button`, `restart_button`. Views: `issuer_box` (right under the buttons:
    `acs_view`, the issuer's page in an iframe with a link, and the ACS controls), `diagram` (who
    talks to whom, the current step highlighted), `step_views` (one HTML per step), `outcome_banner`
    (how the flow ended, in words), `message` (errors). `checks` checks each input as it changes
    (the interface's rules; its problems right under it, `query_button` disabled while one stands).
    `flow` is the current `gwkit.threeds.ThreeDSecureFlow`.
    """

    def __init__(
        self,
        client: GatewayClient,
        *,
        receiver: TermUrlReceiver | None = None,
        pan: str = DEFAULT_PAN,
        baseamount: str = "1050",
        iframe_height: str = "480px",
    ):
        super().__init__()
        self.client = client
        self.receiver = receiver
        self.iframe_height = iframe_height
        self.flow = self._new_flow()
        self.card = widgets.Dropdown(
            options=card_choices(),
            value=pan,
            description="Card",
            style=FULL_LABEL,
            layout=widgets.Layout(width="44em"),
        )
        self.expirydate = widgets.Text(DEFAULT_EXPIRY, description="Expiry", style=FULL_LABEL)
        self.securitycode = widgets.Password(value="123", description="Security code", style=FULL_LABEL)
        self.baseamount = widgets.Text(
            str(baseamount), description="Amount", placeholder="base units, e.g. 1050", style=FULL_LABEL
        )
        self.currency = widgets.Text(
            getattr(client, "currencyiso3a", None) or "GBP", description="Currency", style=FULL_LABEL
        )
        self.query_button = button(description="Send THREEDQUERY", kind="primary")
        self.requery_button = button(description="Resend THREEDQUERY")
        self.outcome = widgets.Dropdown(
            options=OUTCOME_CHOICES, value="Y", description="ACS outcome", style=FULL_LABEL
        )
        self.complete_button = button(
            description="Complete the ACS here",
            tooltip=("Play the customer at the sandbox ACS without a browser"),
        )
        self.auto_auth = widgets.Checkbox(
            True,
            description="Send the AUTH as soon as the customer returns",
            indent=False,
            layout=widgets.Layout(width="auto"),
        )
        self.auth_button = button(description="Send AUTH", kind="primary")
        self.restart_button = button(description="Start again")
        self.message = widgets.HTML()
        self.outcome_banner = widgets.HTML()
        self.acs_view = widgets.HTML()
        self.diagram = widgets.HTML()
        self.step_views = {step.name: widgets.HTML() for step in STEPS}
        self.query_button.on_click(
            guarded(lambda _: self.send_query(), self.message, context="sending THREEDQUERY")
        )
        self.requery_button.on_click(
            guarded(lambda _: self.resend_query(), self.message, context="resending THREEDQUERY")
        )
        self.complete_button.on_click(
            guarded(
                lambda _: self.flow.complete_acs(self.outcome.value),
                self.message,
                context="completing the ACS",
            )
        )
        self.auth_button.on_click(guarded(lambda _: self.send_auth(), self.message, context="sending AUTH"))
        self.restart_button.on_click(
            guarded(lambda _: self.restart(), self.message, context="starting again")
        )
        self.checks = card_checks(self)
        inputs = widgets.VBox(
            [
                self.checks.boxed("pan"),
                widgets.HBox([self.checks.boxed("expirydate"), self.checks.boxed("securitycode")]),
                widgets.HBox([self.checks.boxed("baseamount"), self.checks.boxed("currencyiso3a")]),
                self.checks.general,
                widgets.HBox([self.query_button, self.requery_button, self.restart_button]),
            ]
        )
        # The issuer's page opens right under the button that opened it, where the reader is
        # looking (an HTML widget cannot scroll the notebook to it); the picture and steps follow.
        self.issuer_box = widgets.VBox([self.acs_view, widgets.HBox([self.outcome, self.complete_button])])
        self.children = [
            inputs,
            self.issuer_box,
            self.diagram,
            self.step_views["THREEDQUERY"],
            self.step_views["ACS"],
            self.step_views["TERMURL"],
            widgets.HBox([self.auth_button, self.auto_auth]),
            self.step_views["AUTH"],
            self.outcome_banner,
            self.message,
        ]
        self.refresh()

    # -- actions (also what the buttons do) -------------------------------------------------------

    def send_query(self) -> None:
        """Check every field again, then send the THREEDQUERY; problems are shown beside their
        fields and nothing is sent."""
        self.message.value = ""
        if self.checks.check():
            return
        try:
            self.flow.query(**self.checks.values())
        except ValidationError as error:  # a rule of the whole request: shown beside its field
            self.checks.show(error.problems)

    def resend_query(self) -> None:
        self.message.value = ""
        self.flow.requery()

    def complete_acs(self, outcome: str = "Y") -> None:
        """Without a browser: choose `outcome` and press "Complete the ACS here"."""
        self.outcome.value = outcome
        self.complete_button.click()

    def send_auth(self) -> None:
        self.message.value = ""
        self.flow.auth()

    def restart(self) -> None:
        self.flow.close()
        self.flow = self._new_flow()
        self.message.value = ""
        self.acs_view.value = ""
        self.refresh()

    # -- showing the flow ----------------------------------------------------------------------

    def _new_flow(self) -> ThreeDSecureFlow:
        flow = ThreeDSecureFlow(self.client, receiver=self.receiver)
        flow.on_change(self._flow_changed)
        return flow

    def _flow_changed(self, flow: ThreeDSecureFlow) -> None:
        """Called after every step, also from the term URL receiver's thread."""
        if flow is not self.flow:
            return
        try:
            self.refresh()
            if flow.next_step == REDIRECT and flow.returned and self.auto_auth.value:
                flow.auth()
        except Exception as error:
            show_error(self.message, error, "continuing after the customer returned")
            raise

    def refresh(self) -> None:
        flow = self.flow
        states = self.step_states()
        for step in STEPS:
            self.step_views[step.name].value = self._step_html(step, states[step.name])
        self.diagram.value = sequence_svg(states)
        self.acs_view.value = self._acs_html()
        self.outcome_banner.value = verdict_banner(self.flow.verdict)
        next_step = flow.next_step
        self._show_send_state()
        self.requery_button.disabled = next_step != RESEND_OR_AUTH
        self.complete_button.disabled = not (next_step == REDIRECT and not flow.returned)
        self.outcome.disabled = self.complete_button.disabled
        self.auth_button.disabled = not (
            next_step in (AUTH_WITH_PARENT, RESEND_OR_AUTH, STANDARD_AUTH)
            or (next_step == REDIRECT and flow.returned)
        )

    def _show_send_state(self) -> None:
        """Send is disabled once sent, and while a field's problem stands."""
        self.query_button.disabled = self.flow.query_record is not None or not self.checks.ok
        self.query_button.tooltip = send_tooltip(self.checks)

    def step_states(self) -> dict[str, str]:
        """done, current, waiting, skipped, failed or not authenticated, for each step: what
        actually happened, so a refused THREEDQUERY or AUTH is never shown as done."""
        flow = self.flow
        if flow.query_record is None:
            return {"THREEDQUERY": "current", "ACS": "waiting", "TERMURL": "waiting", "AUTH": "waiting"}
        outcome = flow.outcome
        enrolled_path, done = outcome.via_acs, outcome.ended
        states = {"THREEDQUERY": "done" if flow.query_record.get("errorcode") == "0" else "failed"}
        auth_state = "current"
        if flow.auth_record is not None:  # the AUTH answered: `done`
            auth_state = "done" if record_ok(flow.auth_record) else "failed"
        if enrolled_path:
            states["ACS"] = _acs_state(flow) if flow.returned else "current"
            states["TERMURL"] = "done" if flow.returned else "waiting"
            states["AUTH"] = auth_state if done or flow.returned else "waiting"
        else:
            states.update(ACS="skipped", TERMURL="skipped", AUTH=auth_state)
        return states

    def _latest(self, name: str):
        return next((s for s in reversed(self.flow.steps) if s.name == name), None)

    def _step_html(self, step: StepInfo, state: str) -> str:
        head = step_head(step, *_BADGES[state])
        shown = self._latest(step.name)
        body = ""
        if shown is not None:
            body = (
                "<div style='display:flex;gap:2em;flex-wrap:wrap'>"
                + _table("Sent", shown.sent)
                + _table("Received", shown.received)
                + "</div>"
                + _meanings(shown.sent, shown.received)
            )
            count = sum(1 for s in self.flow.steps if s.name == step.name)
            if count > 1:
                body += f"<div><small>Sent {count} times; the latest is shown.</small></div>"
        nxt = self._next_text(step.name, state)
        if nxt:
            body += f"<div style='margin-top:4px'><b>Next:</b> {nxt}</div>"
        return head + body + "</div>"

    def _next_text(self, name: str, state: str) -> str:
        flow = self.flow
        if name == "THREEDQUERY":
            return html.escape(flow.query_advice)
        if name == "ACS" and state == "current":
            return (
                "the cardholder answers on the issuer's page, open under the <i>Send THREEDQUERY</i> "
                "button (or press <i>Complete the ACS here</i> to choose an outcome without a browser)."
            )
        outcome = flow.outcome
        back_with_pares = name == "TERMURL" and state == "done" and outcome.next_step == REDIRECT
        if back_with_pares or (name == "AUTH" and outcome.ended):
            return html.escape(outcome.advice)
        return ""

    def _acs_html(self) -> str:
        flow = self.flow
        if flow.start_url is None:
            return ""
        if flow.returned:
            return "<div><i>The customer is back from the ACS; the issuer's page is closed.</i></div>"
        if flow.next_step != REDIRECT:
            return ""
        return issuer_frame(
            flow.start_url, "<b>Step 2: the card issuer's page</b> (the ACS), as", self.iframe_height
        )


def verdict_banner(verdict: Any) -> str:
    """A flow's verdict (v1 or v2) as the coloured banner under a stepper; nothing before there is one."""
    if verdict is None:
        return ""
    colour, background = _TONES[verdict.tone]
    return (
        f"<div class='gwkit-outcome gwkit-outcome-{verdict.tone}' style='border:2px solid {colour};"
        f"background:{background};border-radius:6px;padding:8px 12px;margin:8px 0'>"
        f"<div style='font-size:120%;font-weight:bold;color:{colour}'>{html.escape(verdict.headline)}</div>"
        f"<div>{html.escape(verdict.detail)}</div></div>"
    )


def step_head(step: Any, colour: str, label: str) -> str:
    """The start of a step's card (`step` has a `title` and says `what` it does): its title and its
    state as a coloured badge. The caller adds the body and closes the card's div."""
    return (
        f"<div style='border-left:4px solid {colour};padding:4px 10px;margin:6px 0'>"
        f"<b>{html.escape(step.title)}</b> <span style='background:{colour};color:white;"
        f"padding:1px 6px;border-radius:4px;font-size:85%'>{label}</span>"
        f"<div style='color:#444'>{html.escape(step.what)}</div>"
    )


def issuer_frame(start_url: str, title_html: str, height: str) -> str:
    """The card issuer's page (v1's ACS, v2's challenge) in a frame, with a link to open it in a tab.
    `title_html` is trusted markup that ends where "the customer sees it" goes on."""
    url = html.escape(start_url, quote=True)
    return (
        f"<div class='gwkit-issuer-page'>{title_html} the customer sees it: answer it here, or "
        f"<a href='{url}' target='_blank' rel='noopener'>open it in a new tab</a>.</div>"
        f"<iframe src='{url}' title='Card issuer (ACS)' "
        f"style='width:100%;height:{height};border:1px solid #c5ccd6;border-radius:6px'>"
        "</iframe>"
    )


def card_checks(stepper: Any) -> FieldChecks:
    """The checks of a stepper's card, expiry, security code (optional), amount and currency;
    a change re-draws its send button's state."""
    return FieldChecks(
        {
            "pan": stepper.card,
            "expirydate": stepper.expirydate,
            "securitycode": stepper.securitycode,
            "baseamount": stepper.baseamount,
            "currencyiso3a": stepper.currency,
        },
        client=stepper.client,
        optional=("securitycode",),
        on_change=stepper._show_send_state,
    )


def send_tooltip(checks: FieldChecks) -> str:
    count = len(checks.problems)
    return f"{count} problem(s) to fix first: see under the fields" if count else ""


def _acs_state(flow: ThreeDSecureFlow) -> str:
    """The ACS step once the customer is back: its status is known from the AUTH's answer."""
    status = flow.auth_record.get("status", "") if flow.auth_record is not None else ""
    return {"N": "not authenticated", "U": "unavailable"}.get(status, "done")
