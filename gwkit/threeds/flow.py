"""The 3-D Secure version 1 flow from the merchant's side (interface 3.3, 4.3 to 4.5).

    flow = ThreeDSecureFlow(client)                     # a gwkit.Client (or gwkit.connect())
    flow.query(pan="4111110000000211", expirydate="12/2030", securitycode="123", baseamount=1050)
    flow.next_step                                      # "redirect": the card is enrolled
    flow.start_url                                      # open it in a browser: it posts to the ACS
    flow.wait_for_return(timeout=600)                   # the customer comes back to the term URL
    flow.auth()                                         # AUTH with md and pares -> Record

`query()` sends THREEDQUERY with `termurl` pointing at a `TermUrlReceiver`: a small HTTP server
that gwkit runs on a loopback port of this machine. The customer's browser goes to the ACS through
the receiver's start page (an auto-submitting form of PaReq, TermUrl and MD), and the ACS posts it
back to the receiver with PaRes and MD. The receiver finds the flow by MD, records PaRes, tells the
browser to return to the notebook, and signals the flow (and its listeners, e.g. the stepper).

Against the real gateway the same code works: the ACS is the issuer's, and the term URL receiver
runs on the user's machine, reached by the user's own browser (the ACS page itself only redirects
the browser, it never calls the receiver). Against the sandbox, `complete_acs(outcome)` also
plays the customer headlessly: it posts to the ACS with httpx, chooses the outcome, and posts the
ACS's answer to the receiver, as a browser would.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import urljoin

import httpx

from ..errors import ThreeDSecureError
from ..interface.codes import explain, record_ok
from ..interface.masking import REDACTED, mask_data
from ..pooling import default_ssl_context
from ..protocols import GatewayClient
from ..response import Record
from .acs_page import read_page
from .receiver import TermUrlReceiver, default_receiver, redirect_page

__all__ = ["OUTCOMES", "Outcome", "Step", "ThreeDSecureFlow", "Verdict"]

# Outcomes the sandbox ACS offers (gwkit/sandbox/web/acs.py); a real issuer's ACS offers its own page.
OUTCOMES = ("Y", "N", "A", "U", "cancel")

# Stages of a flow, in order.
NEW, QUERIED, AT_ACS, RETURNED, AUTHORISED = "new", "queried", "at_acs", "returned", "authorised"
# What to do after the THREEDQUERY (interface 3.3).
REDIRECT, AUTH_WITH_PARENT, RESEND_OR_AUTH, STANDARD_AUTH = (
    "redirect",
    "auth",
    "resend or auth",
    "standard auth",
)

# What interface 3.3 says to do after the THREEDQUERY, by `enrolled`.
_ENROLMENT_ADVICE = {
    "Y": "the card is enrolled: send the customer's browser to the ACS.",
    "N": "the card is not enrolled: send the AUTH with parenttransactionreference.",
    "U": "enrolment could not be determined: resend the THREEDQUERY, or send the AUTH with "
    "parenttransactionreference.",
}

_THREEDQUERY_FIELDS = (
    "pan",
    "expirydate",
    "securitycode",
    "parenttransactionreference",
    "baseamount",
    "currencyiso3a",
    "orderreference",
    "sitereference",
)


@dataclass(frozen=True)
class Outcome:
    """Where a flow stands, in interface 3.3's terms: the step to take next and what to do, or how
    the flow ended."""

    next_step: str | None  # REDIRECT, AUTH_WITH_PARENT, RESEND_OR_AUTH, STANDARD_AUTH; None before and after
    via_acs: bool  # the card is enrolled (Y): the customer goes through the ACS
    advice: str  # what to do now, or how the AUTH ended
    ended: bool = False  # the AUTH was sent


@dataclass(frozen=True)
class Verdict:
    """How a flow ended, in words a person reads first (None of it before the AUTH answered).

    `tone` is "success", "warning" (paid, but without the liability shift of 3-D Secure) or
    "failure"; `headline` says what happened, `detail` why and what to do next.
    """

    tone: str
    headline: str
    detail: str


@dataclass
class Step:
    """One exchange of the flow, masked: what was sent and what came back."""

    name: str  # "THREEDQUERY", "ACS", "TERMURL", "AUTH"
    sent: dict[str, Any]
    received: dict[str, Any]


class ThreeDSecureFlow:
    """One payment through 3-D Secure v1: THREEDQUERY, the ACS, the term URL, then AUTH.

    `client` is a gwkit.Client (anything with `threedquery(**fields)` and `auth(**fields)` that
    returns a Response). Listeners added with `on_change(fn)` are called as `fn(flow)` after every
    step, also from the receiver's thread when the customer returns.
    """

    def __init__(self, client: GatewayClient, *, receiver: TermUrlReceiver | None = None):
        self.client = client
        self.receiver = receiver or default_receiver()
        self.stage = NEW
        self.steps: list[Step] = []
        self.query_record: Record | None = None
        self.auth_record: Record | None = None
        self.start_url: str | None = None
        self._query_fields: dict[str, Any] = {}
        self._pares: str | None = None
        self._returned = threading.Event()
        self._listeners: list[Callable[[ThreeDSecureFlow], None]] = []
        self._error: BaseException | None = None

    def __repr__(self) -> str:
        enrolled = self.query_record.get("enrolled") if self.query_record else None
        return f"ThreeDSecureFlow(stage={self.stage!r}, enrolled={enrolled!r}, next_step={self.next_step!r})"

    def on_change(self, listener: Callable[[ThreeDSecureFlow], None]) -> Callable[[ThreeDSecureFlow], None]:
        self._listeners.append(listener)
        return listener

    # -- what the THREEDQUERY said -------------------------------------------------------------

    @property
    def enrolled(self) -> str | None:
        return self.query_record.get("enrolled") if self.query_record else None

    @property
    def next_step(self) -> str | None:
        """What interface 3.3 says to do now: redirect (Y), auth (N), resend or auth (U),
        standard auth (the THREEDQUERY failed), or None before the query / after the AUTH."""
        if self.query_record is None or self.stage == AUTHORISED:
            return None
        if self.query_record.get("errorcode") != "0":
            return STANDARD_AUTH
        return {"Y": REDIRECT, "N": AUTH_WITH_PARENT, "U": RESEND_OR_AUTH}.get(self.enrolled or "")

    @property
    def query_advice(self) -> str:
        """What the THREEDQUERY's answer says to do ("" before it is sent)."""
        record = self.query_record
        if record is None:
            return ""
        if record.get("errorcode") != "0":
            meaning = explain(record.get("errorcode"))
            return (
                f"errorcode {record.get('errorcode')} {record.get('errormessage')}: {meaning.meaning} "
                "A standard AUTH without 3-D Secure may be sent."
            )
        return _ENROLMENT_ADVICE.get(self.enrolled or "", "")

    @property
    def outcome(self) -> Outcome:
        """The next step and what to do now; after the AUTH, how it ended."""
        via_acs = (
            self.query_record is not None
            and self.query_record.get("errorcode") == "0"
            and self.enrolled == "Y"
        )
        if self.auth_record is not None:
            return Outcome(None, via_acs, _auth_summary(self.auth_record), ended=True)
        if self.query_record is None:
            return Outcome(None, False, "send the THREEDQUERY.")
        if self.next_step == REDIRECT and self.returned:
            return Outcome(REDIRECT, True, "PaRes has arrived: send the AUTH with md and pares.")
        return Outcome(self.next_step, via_acs, self.query_advice)

    @property
    def verdict(self) -> Verdict | None:
        """How the flow ended, once the AUTH has answered; None until then."""
        record = self.auth_record
        if record is None:
            return None
        code = record.get("errorcode")
        meaning = explain(code)
        if not record_ok(record):
            headline = (
                "Declined by the bank"
                if code == "70000"
                else f"Failed: {code} {record.get('errormessage') or meaning.message}"
            )
            return Verdict("failure", headline, f"{meaning.meaning} {meaning.action}".strip())
        return _paid_verdict(self.query_record, record)

    @property
    def md(self) -> str | None:
        return self.query_record.get("md") if self.query_record else None

    @property
    def pares(self) -> str | None:
        return self._pares

    @property
    def returned(self) -> bool:
        """The ACS has posted PaRes back (listeners see it before `wait_for_return` wakes up)."""
        return self._pares is not None

    # -- the steps -----------------------------------------------------------------------------

    def query(self, **fields: Any) -> Record:
        """Send THREEDQUERY (termurl: the receiver; accounttypedescription: ECOM)."""
        if self.stage not in (NEW, QUERIED):
            raise ThreeDSecureError(f"a THREEDQUERY cannot be sent at stage {self.stage!r}; start a new flow")
        request = {"accounttypedescription": "ECOM", "termurl": self.receiver.term_url, **fields}
        self._query_fields = dict(request)
        response = self.client.threedquery(**request)
        record = response.record
        self._forget_pending()
        self.query_record, self._pares = record, None
        self._returned.clear()
        self.stage = QUERIED
        self.start_url = None
        if record.get("errorcode") == "0" and record.get("enrolled") == "Y":
            self.start_url = self.receiver.expect(
                record["md"], record["pareq"], record["acsurl"], self._receive, self._browser_started
            )
        self._record_step("THREEDQUERY", _sent(response, request), dict(record))
        return record

    def requery(self) -> Record:
        """Send the same THREEDQUERY again, as interface 3.3 allows when `enrolled` is U."""
        if not self._query_fields:
            raise ThreeDSecureError("no THREEDQUERY was sent yet")
        fields = dict(self._query_fields)
        return self.query(**fields)

    def acs_form_html(self, *, autosubmit: bool = True) -> str:
        """The page that posts the customer's browser to the ACS (PaReq, TermUrl, MD)."""
        record = self._enrolled_record()
        return redirect_page(
            record["acsurl"], record["pareq"], self.receiver.term_url, record["md"], autosubmit=autosubmit
        )

    def complete_acs(
        self, outcome: str = "Y", *, http: httpx.Client | None = None, timeout: float = 30.0
    ) -> None:
        """Play the customer at the sandbox ACS without a browser: post to the ACS, choose
        `outcome` (Y, N, A, U or cancel), and post the answer to the term URL receiver."""
        record = self._enrolled_record()
        own = http is None
        http = http or httpx.Client(timeout=timeout, verify=default_ssl_context())
        try:
            form = {"PaReq": record["pareq"], "TermUrl": self.receiver.term_url, "MD": record["md"]}
            acs = http.post(record["acsurl"], data=form)
            page = read_page(acs)
            choice = next((f for f in page.forms if outcome in f.buttons.get("outcome", [])), None)
            if choice is None:
                offered = sorted({v for f in page.forms for v in f.buttons.get("outcome", [])})
                raise ThreeDSecureError(
                    f"the ACS page offers no outcome {outcome!r}"
                    + (
                        f"; it offers {', '.join(offered)}"
                        if offered
                        else " (only the sandbox ACS can be completed headlessly)"
                    )
                )
            self._set_stage(
                AT_ACS,
                "ACS",
                {"PaReq": REDACTED, "TermUrl": self.receiver.term_url, "MD": REDACTED},
                {"page": str(acs.url), "outcome chosen": outcome},
            )
            answer = read_page(
                http.post(urljoin(str(acs.url), choice.action), data={**choice.fields, "outcome": outcome})
            )
            back = next((f for f in answer.forms if "PaRes" in f.fields), None)
            if back is None:
                raise ThreeDSecureError("the ACS did not answer with a PaRes form")
            returned = http.post(back.action, data=back.fields)  # what the browser's auto-submit does
            self._raise_pending_error()
            read_page(returned)
        finally:
            if own:
                http.close()

    def wait_for_return(self, timeout: float | None = None) -> bool:
        """Block until the ACS has posted back to the term URL (True), or `timeout` passes (False)."""
        returned = self._returned.wait(timeout)
        self._raise_pending_error()
        return returned

    def auth(self, **extra: Any) -> Record:
        """Send the AUTH this flow's state calls for, with `extra` fields (e.g. billing names)."""
        return self._authorise(self.client.auth, extra).record

    def auth_subscription(self, **fields: Any) -> Any:
        """AUTH + SUBSCRIPTION through 3-D Secure (interface 4.2): `fields` are the subscription's.
        Returns the whole Response (AUTH record, then SUBSCRIPTION record)."""
        request = {
            k: self._query_fields[k]
            for k in ("baseamount", "currencyiso3a", "orderreference")
            if self._query_fields.get(k) is not None
        }
        return self._authorise(
            self.client.auth_subscription, {"accounttypedescription": "ECOM", **request, **fields}
        )

    def run(self, outcome: str = "Y", **fields: Any) -> Record:
        """The whole flow headlessly (sandbox): query, ACS with `outcome` when enrolled, AUTH."""
        self.query(**fields)
        if self.next_step == REDIRECT:
            self.complete_acs(outcome)
        return self.auth()

    def close(self) -> None:
        """Stop waiting at the term URL receiver for this flow's customer."""
        self._forget_pending()

    # -- internals ------------------------------------------------------------------------------

    def _authorise(self, send: Callable[..., Any], extra: Mapping[str, Any]) -> Any:
        step, query = self.next_step, self.query_record
        if step is None or query is None:
            raise ThreeDSecureError(
                "send the THREEDQUERY first" if query is None else "this flow has already sent its AUTH"
            )
        if step == REDIRECT:
            if not self.returned:
                raise ThreeDSecureError("the customer has not returned from the ACS yet: no PaRes to send")
            request = {"md": self.md, "pares": self._pares, **extra}
        elif step == STANDARD_AUTH:
            request = {k: v for k, v in self._query_fields.items() if k in _THREEDQUERY_FIELDS}
            request = {"accounttypedescription": "ECOM", **request, **extra}
        else:
            request = {"parenttransactionreference": query["transactionreference"], **extra}
        response = send(**request)
        self.auth_record = response.record
        self._forget_pending()
        self._set_stage(AUTHORISED, "AUTH", _sent(response, request), dict(response.record))
        return response

    def _enrolled_record(self) -> Record:
        if self.next_step != REDIRECT or self.query_record is None:
            raise ThreeDSecureError(
                f"only an enrolled card (enrolled Y) goes to the ACS; next step is {self.next_step!r}"
            )
        return self.query_record

    def _browser_started(self) -> None:
        """A browser opened the start page: it is on its way to the ACS (receiver's thread)."""
        if self.stage == QUERIED:
            self._guarded(
                lambda: self._set_stage(
                    AT_ACS,
                    "ACS",
                    {"PaReq": REDACTED, "TermUrl": self.receiver.term_url, "MD": REDACTED},
                    {"page": "the card issuer's page, in the customer's browser"},
                )
            )

    def _guarded(self, action: Callable[[], None]) -> None:
        try:
            action()
        except BaseException as error:
            self._error = error
            raise

    def _receive(self, pares: str) -> None:
        """The receiver got the ACS's post-back for this flow (called from its thread)."""
        self._pares = pares
        try:
            self._guarded(
                lambda: self._set_stage(
                    RETURNED,
                    "TERMURL",
                    {"PaRes": REDACTED, "MD": REDACTED},
                    {"page": "you can close this page and return to the notebook"},
                )
            )
        finally:
            self._returned.set()

    def _set_stage(self, stage: str, step: str, sent: dict[str, Any], received: dict[str, Any]) -> None:
        self.stage = stage
        self._record_step(step, sent, received)

    def _record_step(self, name: str, sent: dict[str, Any], received: dict[str, Any]) -> None:
        self.steps.append(Step(name, mask_data(sent), mask_data(received)))
        for listener in tuple(self._listeners):
            listener(self)

    def _forget_pending(self) -> None:
        if self.query_record is not None and self.md:
            self.receiver.forget(self.md)

    def _raise_pending_error(self) -> None:
        if self._error is not None:
            error, self._error = self._error, None
            raise error


def _auth_summary(record: Mapping[str, Any]) -> str:
    """How the AUTH ended: its code and meaning, the 3-D Secure evidence, and what to do."""
    code = record.get("errorcode")
    meaning = explain(code)
    parts = [f"errorcode {code} {record.get('errormessage', '')}: {meaning.meaning.rstrip('.')}"]
    if record.get("status"):
        parts.append(f"3-D Secure status {record['status']}")
    if record.get("eci"):
        parts.append(f"eci {record['eci']}")
    if record.get("cavv"):
        parts.append("cavv present (liability shift evidence)")
    if record.get("settlestatus") is not None:
        parts.append(f"settlestatus {record['settlestatus']}")
    return "; ".join(parts) + f". {meaning.action}"


def _paid_verdict(query: Mapping[str, Any] | None, auth: Mapping[str, Any]) -> Verdict:
    """An authorised AUTH: with or without 3-D Secure, and why (interface 3.3)."""
    status = auth.get("status")
    if status == "Y":
        return Verdict(
            "success",
            "Authenticated and authorised",
            "The cardholder proved who they are at the issuer's ACS (status Y) and the bank "
            "authorised the payment: the liability for fraud shifts to the issuer.",
        )
    if status == "A":
        return Verdict(
            "success",
            "Authentication attempted, authorised",
            "The issuer could not authenticate but attested the attempt (status A); the bank "
            "authorised the payment.",
        )
    if status == "U":
        return Verdict(
            "warning",
            "Authentication unavailable, authorised",
            "The issuer's ACS could not authenticate (status U, no cavv); the bank authorised the "
            "payment without the liability shift of 3-D Secure.",
        )
    if query is None or query.get("errorcode") != "0":
        return Verdict(
            "warning",
            "Paid without 3-D Secure (the THREEDQUERY failed)",
            f"errorcode {query.get('errorcode') if query else '?'} on the enrolment check; a "
            "standard AUTH was sent and authorised, with no liability shift.",
        )
    enrolled = query.get("enrolled")
    why = {"N": "Not enrolled", "U": "Enrolment unknown"}.get(enrolled or "", f"Enrolled {enrolled}")
    return Verdict(
        "warning",
        f"{why}: paid without 3-D Secure",
        f"The THREEDQUERY answered enrolled {enrolled}; the AUTH named it as parent and was "
        "authorised, with no liability shift.",
    )


def _sent(response: Any, fields: Mapping[str, Any]) -> dict[str, Any]:
    """The request object as sent (from the Response when it has it), else the fields given."""
    request = getattr(response, "request", None)
    if isinstance(request, Mapping) and request.get("request"):
        return dict(request["request"][0])
    return dict(fields)
