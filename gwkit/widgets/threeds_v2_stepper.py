"""A step-by-step view of EMV 3-D Secure (version 2): look-up, 3DS method, THREEDQUERY, the
issuer's challenge, the term URL, AUTH.

    stepper = ThreeDSecureV2Stepper(gw)    # gw = gwkit.connect() or any gwkit.Client
    stepper                                # choose a card, press "Send THREEDLOOKUP", follow the steps

The same picture as the v1 stepper's (`threeds_stepper`), with v2's parties and messages: the
browser's part (the hidden 3DS method frame, the challenge) is drawn. For a challenge the issuer's
page opens inside the notebook in an iframe (or a new tab); when the ACS posts the CRes back to
gwkit's term URL receiver, the stepper moves on and, unless told otherwise, sends the AUTH with
`threedresponse` at once. Without a browser `complete_challenge(outcome)` plays the cardholder at
the sandbox's ACS. Tests drive it through its widgets' `.value` and `.click()`.
"""

from __future__ import annotations

import html
from dataclasses import dataclass

import ipywidgets as widgets

from ..errors import ValidationError
from ..interface.codes import record_ok
from ..interface.masking import mask_pan
from ..interface.testcards import TestCard, test_cards
from ..protocols import GatewayClient
from ..threeds import CHALLENGE, METHOD, QUERY, SEND_AUTH, TermUrlReceiver, ThreeDSecureV2Flow
from ..threeds.v2 import STANDARD_AUTH
from .guard import guarded, show_error
from .style import button
from .threeds_stepper import (
    _BADGES,
    DEFAULT_EXPIRY,
    FULL_LABEL,
    KEY_STEP_FIELDS,
    _meanings,
    _table,
    card_checks,
    issuer_frame,
    send_tooltip,
    sequence_svg,
    step_head,
    verdict_banner,
)

__all__ = ["CASE_WORDS", "LANES", "MESSAGES", "STEPS", "ThreeDSecureV2Stepper", "v2_card_choices"]

DEFAULT_PAN = "4900490000000147"  # Visa (DELTA) 2.1.0: a challenge the cardholder passes

# What the cardholder does on the sandbox's challenge page; the card decides the rest (a "challenge
# failed" card answers N whatever is typed, a "challenge error" card breaks).
CHALLENGE_CHOICES = (
    ("Y: types the one-time code", "Y"),
    ("N: fails the authentication", "N"),
    ("cancel: gives up (N)", "cancel"),
)

# Each test card's story in a few words (data/test_cards.csv, column threedscase).
CASE_WORDS = {
    "frictionless-success": "frictionless, authenticated",
    "frictionless-failed": "frictionless, not authenticated",
    "attempted": "frictionless, attempt proven (A)",
    "unavailable": "authentication unavailable (U)",
    "rejected": "the issuer rejects it (R)",
    "ds-unavailable": "the card scheme's directory is down",
    "improper-ares": "the directory's answer is malformed",
    "method-not-completed": "the 3DS method never reports back",
    "frictionless-method-url": "3DS method, then frictionless",
    "challenge-method-url": "3DS method, then a challenge",
    "challenge-success": "challenge",
    "challenge-failed": "challenge the cardholder fails",
    "challenge-error": "challenge that breaks",
    "not-enrolled": "not enrolled in 3-D Secure",
}

FIELD_MEANINGS = {
    "threedversion": "The EMV 3-D Secure version the issuer runs (2.1.0 or 2.2.0); absent for a v1 card.",
    "threedstransactionid": "The ID of this authentication at the 3DS server (a UUID).",
    "threedmethodurl": "The issuer's 3DS method page: the browser loads it in a hidden frame.",
    "threednotificationurl": "Where the method page reports that it has run.",
    "cachetoken": "Stands in for the card in the THREEDQUERY (never shown).",
    "enrolled": "Y: the card takes part in 3-D Secure; N: it does not.",
    "acsurl": "Only for a challenge: the issuer's page the browser posts the CReq to.",
    "threedpayload": "The challenge request (CReq) for the ACS (never shown).",
    "creq": "The THREEDQUERY's threedpayload, posted to the ACS.",
    "cres": "The challenge response: transStatus Y or N (never shown).",
    "threeDSSessionData": "The merchant's key to its session, posted back with the CRes.",
    "transStatus": "The CRes's verdict: Y the cardholder passed, N failed.",
    "threedresponse": "The browser library's unsigned JWT carrying the CRes, sent with the AUTH.",
    "status": "Y authenticated, A attempt proven, U unavailable, N not authenticated, R rejected.",
    "eci": "E-commerce indicator: Visa/Amex 05 authenticated, 06 attempted, 07 none; Mastercard 02, 01, 00.",
    "cavv": "The issuer's proof of authentication: the liability shift's evidence.",
    "authmethod": "FINAL: the AUTH is for the final amount.",
    "parenttransactionreference": "The THREEDQUERY this AUTH continues.",
    "settlestatus": "0 will settle, 3 cancelled: no money moves.",
    "errorcode": "0 means success; anything else is an error (see the explanation).",
    "result": "SUCCESS: the method page reported back; UNCOMPLETED: it did not in time.",
}
_KEY_FIELDS = (*FIELD_MEANINGS, *KEY_STEP_FIELDS, "paymenttypedescription", "page", "outcome chosen", "error")


@dataclass(frozen=True)
class StepInfo:
    name: str
    title: str
    what: str


STEPS = (
    StepInfo(
        "THREEDLOOKUP",
        "1. Look-up (THREEDLOOKUP)",
        "The merchant asks the gateway's 3DS server which 3-D Secure version the card's issuer runs.",
    ),
    StepInfo(
        "METHOD",
        "2. 3DS method (a hidden frame in the browser)",
        "When the issuer has a method page, the browser loads it unseen so that the issuer can "
        "recognise the device; the merchant waits 10 s at most.",
    ),
    StepInfo(
        "THREEDQUERY",
        "3. Authentication (THREEDQUERY, and the AUTH with it)",
        "The merchant sends the browser's details; the issuer decides: frictionless (answered at "
        "once, the AUTH too) or a challenge.",
    ),
    StepInfo(
        "ACS",
        "4. Challenge at the card issuer (ACS)",
        "Only for a challenge: the browser posts the CReq to the issuer's ACS, which asks the "
        "cardholder to prove who they are.",
    ),
    StepInfo(
        "TERMURL",
        "5. Back at the term URL (CRes)",
        "The ACS posts the browser back to the merchant's term URL with the CRes.",
    ),
    StepInfo(
        "AUTH",
        "6. Authorisation (AUTH)",
        "Frictionless: already answered with the THREEDQUERY. After a challenge: the AUTH with the "
        "THREEDQUERY as parent and threedresponse.",
    ),
)

LANES = ("Browser", "Merchant server", "Gateway (3DS server)", "Issuer's ACS")
MESSAGES = (
    ("THREEDLOOKUP", 1, 2, "THREEDLOOKUP (card, amount)"),
    ("THREEDLOOKUP", 2, 1, "threedversion, method URL, cachetoken"),
    ("METHOD", 1, 0, "hidden frame: the 3DS method"),
    ("METHOD", 0, 3, "threeDSMethodData (device check)"),
    ("THREEDQUERY", 1, 2, "THREEDQUERY (browser data) + AUTH"),
    ("THREEDQUERY", 2, 3, "AReq, through the card scheme's DS"),
    ("THREEDQUERY", 3, 2, "ARes: frictionless, or a challenge"),
    ("THREEDQUERY", 2, 1, "frictionless: AUTH answered; else acsurl, CReq"),
    ("ACS", 1, 0, "page that posts the CReq to acsurl"),
    ("ACS", 0, 3, "creq, threeDSSessionData"),
    ("TERMURL", 3, 0, "cres (transStatus Y or N)"),
    ("TERMURL", 0, 1, "cres to the term URL"),
    ("AUTH", 1, 2, "AUTH (parent, threedresponse)"),
    ("AUTH", 2, 1, "AUTH record: status, eci, cavv"),
)
LANE_WIDTH = 200

_TEST_CODES = ("123", "1234")  # the test codes the stepper fills in; a code the user typed stays
_V2_BADGES = {**_BADGES, "not completed": ("#8a5a00", "not completed")}


def v2_card_choices() -> list[tuple[str, str]]:
    """The EMV 3-D Secure test cards (version column 2.x), as (masked number, scheme, version and
    story; number), in the order of the card list."""
    return [(_label(c), c.pan) for c in test_cards().values() if c.threedversion.startswith("2.")]


def _label(card: TestCard) -> str:
    story = CASE_WORDS.get(card.threedscase, card.threedscase.replace("-", " "))
    return f"{mask_pan(card.pan)} {card.paymenttypedescription} {card.threedversion}: {story}"


class ThreeDSecureV2Stepper(widgets.VBox):
    """The six steps of EMV 3-D Secure as panels, with the controls to walk through them.

    Controls: `card`, `expirydate`, `securitycode`, `baseamount`, `currency`, `lookup_button`,
    `method_button` (gwkit plays the browser's hidden frame), `query_button`, `outcome` and
    `complete_button` (the sandbox's ACS without a browser), `auto_auth`, `auth_button`,
    `restart_button`. Views: `issuer_box` (`acs_view`, the issuer's challenge in an iframe, and the
    challenge controls), `diagram`, `step_views`, `outcome_banner`, `message`. `checks` checks each
    input as it changes (its problems right under it, `lookup_button` disabled while one stands).
    `flow` is the current `gwkit.threeds.ThreeDSecureV2Flow`; `method_timeout` is passed to it.
    """

    def __init__(
        self,
        client: GatewayClient,
        *,
        receiver: TermUrlReceiver | None = None,
        pan: str = DEFAULT_PAN,
        baseamount: str = "1050",
        method_timeout: float = 10.0,
        iframe_height: str = "480px",
    ):
        super().__init__()
        self.client = client
        self.receiver = receiver
        self.method_timeout = method_timeout
        self.iframe_height = iframe_height
        self.flow = self._new_flow()
        self.card = widgets.Dropdown(
            options=v2_card_choices(),
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
        self.lookup_button = button(description="Send THREEDLOOKUP", kind="primary")
        self.method_button = button(
            description="Run the 3DS method", tooltip="gwkit plays the browser's hidden frame"
        )
        self.query_button = button(description="Send THREEDQUERY + AUTH", kind="primary")
        self.outcome = widgets.Dropdown(
            options=CHALLENGE_CHOICES,
            value="Y",
            description="Challenge outcome",
            style=FULL_LABEL,
            layout=widgets.Layout(width="26em"),
        )
        self.complete_button = button(
            description="Complete the challenge here",
            tooltip="Play the cardholder at the sandbox's ACS without a browser",
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
        actions = (
            (self.lookup_button, self.send_lookup, "sending THREEDLOOKUP"),
            (self.method_button, self.run_method, "running the 3DS method"),
            (self.query_button, self.send_query, "sending THREEDQUERY"),
            (
                self.complete_button,
                lambda: self.flow.complete_challenge(self.outcome.value),
                "completing the challenge",
            ),
            (self.auth_button, self.send_auth, "sending AUTH"),
            (self.restart_button, self.restart, "starting again"),
        )
        for widget, action, context in actions:
            widget.on_click(guarded(lambda _, act=action: act(), self.message, context=context))
        self.card.observe(
            guarded(self._code_for_card, self.message, context="choosing a card"), names="value"
        )
        self.checks = card_checks(self)
        inputs = widgets.VBox(
            [
                self.checks.boxed("pan"),
                widgets.HBox([self.checks.boxed("expirydate"), self.checks.boxed("securitycode")]),
                widgets.HBox([self.checks.boxed("baseamount"), self.checks.boxed("currencyiso3a")]),
                self.checks.general,
                widgets.HBox(
                    [self.lookup_button, self.method_button, self.query_button, self.restart_button]
                ),
            ]
        )
        self.issuer_box = widgets.VBox([self.acs_view, widgets.HBox([self.outcome, self.complete_button])])
        self.children = [
            inputs,
            self.issuer_box,
            self.diagram,
            *(self.step_views[s.name] for s in STEPS[:5]),
            widgets.HBox([self.auth_button, self.auto_auth]),
            self.step_views["AUTH"],
            self.outcome_banner,
            self.message,
        ]
        self.refresh()

    # -- actions (also what the buttons do) -----------------------------------------------------

    def _code_for_card(self, change: dict) -> None:
        """A test security code of the right length for the card: 4 digits for American Express."""
        if self.securitycode.value in _TEST_CODES:
            self.securitycode.value = "1234" if str(change["new"])[:2] in ("34", "37") else "123"

    def send_lookup(self) -> None:
        """Check every field again, then send the THREEDLOOKUP; problems are shown beside their
        fields and nothing is sent."""
        self.message.value = ""
        if self.checks.check():
            return
        try:
            self.flow.lookup(**self.checks.values())
        except ValidationError as error:  # a rule of the whole request: shown beside its field
            self.checks.show(error.problems)

    def run_method(self) -> None:
        self.message.value = ""
        self.flow.run_method()

    def send_query(self) -> None:
        self.message.value = ""
        self.flow.query()

    def complete_challenge(self, outcome: str = "Y") -> None:
        """Without a browser: choose `outcome` and press "Complete the challenge here"."""
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

    # -- showing the flow -----------------------------------------------------------------------

    def _new_flow(self) -> ThreeDSecureV2Flow:
        flow = ThreeDSecureV2Flow(self.client, receiver=self.receiver, method_timeout=self.method_timeout)
        flow.on_change(self._flow_changed)
        return flow

    def _flow_changed(self, flow: ThreeDSecureV2Flow) -> None:
        """Called after every step, also from the term URL receiver's thread."""
        if flow is not self.flow:
            return
        try:
            self.refresh()
            if flow.challenged and flow.returned and flow.next_step == SEND_AUTH and self.auto_auth.value:
                flow.auth()
        except Exception as error:
            show_error(self.message, error, "continuing after the customer returned")
            raise

    def refresh(self) -> None:
        flow = self.flow
        states = self.step_states()
        for info in STEPS:
            self.step_views[info.name].value = self._step_html(info, states[info.name])
        self.diagram.value = sequence_svg(states, lanes=LANES, messages=MESSAGES, lane_width=LANE_WIDTH)
        self.acs_view.value = self._acs_html()
        self.outcome_banner.value = verdict_banner(self.flow.verdict)
        step = flow.next_step
        self._show_send_state()
        self.method_button.disabled = step != METHOD
        self.query_button.disabled = step not in (QUERY, METHOD)
        self.complete_button.disabled = step != CHALLENGE
        self.outcome.disabled = self.complete_button.disabled
        self.auth_button.disabled = step not in (SEND_AUTH, STANDARD_AUTH)

    def _show_send_state(self) -> None:
        """Send is disabled once sent, and while a field's problem stands."""
        self.lookup_button.disabled = self.flow.lookup_record is not None or not self.checks.ok
        self.lookup_button.tooltip = send_tooltip(self.checks)

    def step_states(self) -> dict[str, str]:
        """done, current, waiting, skipped, failed, not authenticated, unavailable or not completed
        for each step: what actually happened."""
        flow = self.flow
        states = dict.fromkeys((s.name for s in STEPS), "waiting")
        lookup = flow.lookup_record
        if lookup is None:
            return {**states, "THREEDLOOKUP": "current"}
        if lookup.get("errorcode") != "0":
            return {**states, "THREEDLOOKUP": "failed"}
        states["THREEDLOOKUP"] = "done"
        if not flow.method_url:
            states["METHOD"] = "skipped"
        elif flow.method_result is None:
            states["METHOD"] = "current"
        else:
            states["METHOD"] = "done" if flow.method_result == "SUCCESS" else "not completed"
        query = flow.query_record
        if query is None:
            if states["METHOD"] != "current":
                states["THREEDQUERY"] = "current"
            return states
        states["THREEDQUERY"] = "done" if query.get("errorcode") == "0" else "failed"
        auth = flow.auth_record
        auth_state = "current" if auth is None else ("done" if record_ok(auth) else "failed")
        if flow.challenged:
            states["ACS"] = _challenge_state(flow) if flow.returned else "current"
            states["TERMURL"] = "done" if flow.returned else "waiting"
            states["AUTH"] = auth_state if flow.returned else "waiting"
        else:
            states.update(ACS="skipped", TERMURL="skipped", AUTH=auth_state)
            if auth is not None and auth.get("errorcode") == "60022":
                states["AUTH"] = "not authenticated"
        return states

    def _latest(self, name: str):
        return next((s for s in reversed(self.flow.steps) if s.name == name), None)

    def _step_html(self, step: StepInfo, state: str) -> str:
        head = step_head(step, *_V2_BADGES[state])
        shown = self._latest(step.name)
        body = ""
        if shown is not None:
            body = (
                "<div style='display:flex;gap:2em;flex-wrap:wrap'>"
                + _table("Sent", shown.sent, _KEY_FIELDS)
                + _table("Received", shown.received, _KEY_FIELDS)
                + "</div>"
                + _meanings(shown.sent, shown.received, meanings=FIELD_MEANINGS)
            )
        if state == "current" or (step.name == "AUTH" and self.flow.auth_record is not None):
            body += f"<div style='margin-top:4px'><b>Next:</b> {html.escape(self.flow.advice)}</div>"
        return head + body + "</div>"

    def _acs_html(self) -> str:
        flow = self.flow
        if flow.start_url is None or not flow.challenged:
            return ""
        if flow.returned:
            return "<div><i>The customer is back from the ACS; the issuer's page is closed.</i></div>"
        return issuer_frame(
            flow.start_url, "<b>Step 4: the card issuer's challenge</b> (the ACS), as", self.iframe_height
        )


def _challenge_state(flow: ThreeDSecureV2Flow) -> str:
    code = flow.action_code
    return {"SUCCESS": "done", "FAILURE": "not authenticated"}.get(code or "", "failed")
