"""EMV 3-D Secure (version 2) from the merchant's side, as the makers' browser library walks it.

    flow = ThreeDSecureV2Flow(client)                    # a gwkit.Client (or gwkit.connect())
    flow.lookup(pan="4900490000000147", expirydate="12/2030", securitycode="123", baseamount=1050)
    flow.run_method()                                    # only when the issuer has a 3DS method page
    flow.query()                                         # THREEDQUERY + AUTH in one envelope
    flow.next_step                                       # None: frictionless, the AUTH has answered
                                                         # "challenge": the issuer wants to ask
    flow.start_url                                       # open it in a browser: it posts to the ACS
    flow.wait_for_return(timeout=600)                    # the ACS posts cres back to the term URL
    flow.auth()                                          # AUTH (and the rest) with threedresponse

Four parties take part: the customer's browser, the merchant (gwkit), the gateway (which runs the
3DS server) and the issuer's ACS. `lookup()` sends THREEDLOOKUP: which version the issuer runs,
the authentication's ID, and maybe a 3DS method URL, a page of the issuer's that the browser loads
in a hidden frame so that the issuer can recognise the browser. `query()` sends the THREEDQUERY
with the browser's details (and the request types that follow it, AUTH by default). The issuer
then decides: frictionless (no question asked: the AUTH is answered in the same response) or a
challenge (the envelope stops after the THREEDQUERY; the browser posts the CReq, `threedpayload`,
to `acsurl`, the cardholder answers, and the ACS posts a CRes back to the term URL). After a
challenge, `auth()` sends the remaining request types with the THREEDQUERY as parent and
`threedresponse`, the unsigned JWT the browser library builds from the CRes.

The term URL receiver is the one the v1 flow uses (`gwkit.threeds.receiver`). Against the sandbox,
`run_method()` and `complete_challenge(outcome)` play the browser and the cardholder without a
browser; against a real test site the method runs in a browser (`method_page_url`) and the
challenge is answered by hand on the issuer's page (`start_url`).
"""

from __future__ import annotations

import secrets
import threading
from collections.abc import Callable, Mapping, Sequence
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
from .flow import Outcome, Step, Verdict, _auth_summary, _sent
from .messages import decode_b64_json, method_data, threedresponse_jwt
from .receiver import SESSION_DATA, TermUrlReceiver, challenge_page, default_receiver

__all__ = [
    "BROWSER_DEFAULTS",
    "CHALLENGE",
    "CHALLENGE_OUTCOMES",
    "METHOD",
    "QUERY",
    "SEND_AUTH",
    "ThreeDSecureV2Flow",
]

# What the cardholder can do on the sandbox's challenge page (V2-CONTRACT.md: its documented
# selectors): type the one-time code and submit (Y), fail (N), or cancel. A final CRes is Y or N
# only (EMV 3DS: A, U and R are frictionless outcomes); a "challenge error" card's ACS posts an
# error message (messageType Erro) instead of a CRes.
CHALLENGE_OUTCOMES = ("Y", "N", "cancel")
_CHALLENGE_BUTTONS = {"Y": "acs2-submit", "N": "acs2-fail", "cancel": "acs2-cancel"}
_CODE_INPUT, _CODE_SHOWN, _RETURN_FORM = "acs2-otp", "acs2-otp-shown", "acs2-return"
METHOD_TIMEOUT = 10.0  # seconds: the browser library's default wait for the 3DS method

# Stages, in order.
NEW, LOOKED_UP, METHOD_RAN, QUERIED, AT_ACS, RETURNED, AUTHORISED = (
    "new",
    "looked up",
    "method ran",
    "queried",
    "at_acs",
    "returned",
    "authorised",
)
# What to do next.
METHOD, QUERY, CHALLENGE, SEND_AUTH, STANDARD_AUTH = (
    "3ds method",
    "threedquery",
    "challenge",
    "auth",
    "standard auth",
)

# What the browser library reads from the customer's browser (V3 BrowserDataProvider.ts); these
# stand in for a desktop browser when gwkit plays the customer. Pass `browser={...}` to change them.
BROWSER_DEFAULTS: dict[str, str] = {
    "browsercolordepth": "24",
    "browserjavaenabled": "false",
    "browserjavascriptenabled": "true",
    "browserlanguage": "en-GB",
    "browserscreenheight": "1080",
    "browserscreenwidth": "1920",
    "browsertz": "0",
    "useragent": "Mozilla/5.0 (X11; Linux x86_64) gwkit",
    "accept": "text/html,application/xhtml+xml",
    "customerip": "127.0.0.1",
}

_CARD_FIELDS = ("pan", "expirydate", "securitycode")
_LOOKUP_FIELDS = (*_CARD_FIELDS, "baseamount", "currencyiso3a", "orderreference", "sitereference")
# The fields the remaining request types take again after a challenge (the card is inherited).
_CARRIED_OVER = ("accounttypedescription", "baseamount", "currencyiso3a", "orderreference")
# The envelopes the browser library sends with the look-up's cachetoken in place of the card; a
# longer one (ACCOUNTCHECK first, or AUTH with SUBSCRIPTION) carries the card, as the interface's
# variants for those types take no cachetoken.
_CACHETOKEN_ENVELOPES = frozenset({("THREEDQUERY",), ("THREEDQUERY", "AUTH")})
# Fields of the THREEDQUERY alone, never sent again with the remaining request types.
_QUERY_ONLY = frozenset({"termurl", "cachetoken", *_CARD_FIELDS, *BROWSER_DEFAULTS})


class ThreeDSecureV2Flow:
    """One payment through EMV 3-D Secure: THREEDLOOKUP, the 3DS method, THREEDQUERY (and AUTH in
    the same envelope), then, for a challenge, the ACS, the term URL and the AUTH with
    `threedresponse`.

    `method_timeout` is how long `run_method()` and `wait_for_method()` wait for the issuer's
    method page to report back (the browser library's 10 s by default; 0 in tests). Listeners
    added with `on_change(fn)` are called as `fn(flow)` after every step, also from the
    receiver's thread when the customer returns.
    """

    def __init__(
        self,
        client: GatewayClient,
        *,
        receiver: TermUrlReceiver | None = None,
        method_timeout: float = METHOD_TIMEOUT,
    ):
        self.client = client
        self.receiver = receiver or default_receiver()
        self.method_timeout = method_timeout
        self.stage = NEW
        self.steps: list[Step] = []
        self.lookup_record: Record | None = None
        self.query_record: Record | None = None
        self.auth_record: Record | None = None
        self.records: list[Record] = []  # every record of the THREEDQUERY's envelope and the AUTH's
        self.method_result: str | None = None  # SUCCESS or UNCOMPLETED once the method ran
        self.method_page_url: str | None = None
        self.start_url: str | None = None
        self._request: dict[str, Any] = {}
        self._remaining: tuple[str, ...] = ()
        self._query_extra: dict[str, Any] = {}  # fields given to query() that the rest sends again
        self._session_data: str | None = None
        self._answer: dict[str, str] | None = None
        self._method_done = threading.Event()
        self._returned = threading.Event()
        self._listeners: list[Callable[[ThreeDSecureV2Flow], None]] = []
        self._error: BaseException | None = None

    def __repr__(self) -> str:
        return (
            f"ThreeDSecureV2Flow(stage={self.stage!r}, threedversion={self.threedversion!r}, "
            f"next_step={self.next_step!r})"
        )

    def on_change(
        self, listener: Callable[[ThreeDSecureV2Flow], None]
    ) -> Callable[[ThreeDSecureV2Flow], None]:
        self._listeners.append(listener)
        return listener

    # -- what the gateway said -------------------------------------------------------------------

    @property
    def threedversion(self) -> str | None:
        """The EMV 3-D Secure version the issuer runs (from the THREEDLOOKUP, then the THREEDQUERY);
        None for a card that is not in v2."""
        for record in (self.query_record, self.lookup_record):
            if record is not None and record.get("threedversion"):
                return record["threedversion"]
        return None

    @property
    def method_url(self) -> str | None:
        return self.lookup_record.get("threedmethodurl") if self.lookup_record else None

    @property
    def challenged(self) -> bool:
        """The issuer asked for a challenge: the THREEDQUERY answered an `acsurl`."""
        record = self.query_record
        return record is not None and record.get("errorcode") == "0" and bool(record.get("acsurl"))

    @property
    def frictionless(self) -> bool:
        """The issuer decided without asking the cardholder: enrolled Y and no `acsurl`."""
        record = self.query_record
        return (
            record is not None
            and record.get("errorcode") == "0"
            and record.get("enrolled") == "Y"
            and not record.get("acsurl")
        )

    @property
    def creq(self) -> dict[str, Any] | None:
        """The challenge request for the ACS (`threedpayload`, decoded)."""
        if not self.challenged or self.query_record is None:
            return None
        return decode_b64_json(self.query_record["threedpayload"], "threedpayload")

    @property
    def cres(self) -> dict[str, Any] | None:
        """The ACS's challenge response (decoded), once the browser is back; None after an error."""
        message = self._acs_message()
        return message if message is not None and message.get("messageType") != "Erro" else None

    @property
    def challenge_error(self) -> str | None:
        """What went wrong when the challenge broke: the ACS's error message (messageType Erro),
        or whatever it posted instead of a CRes."""
        if self._answer is None:
            return None
        message = self._acs_message()
        if message is not None and message.get("messageType") != "Erro":
            return None
        if message is not None:
            parts = (message.get("errorCode"), message.get("errorDescription"), message.get("errorDetail"))
            return " ".join(str(p) for p in parts if p) or "the ACS answered with an error message"
        fields = {k: v for k, v in self._answer.items() if k not in (SESSION_DATA, "cres")}
        return "; ".join(f"{k}: {v}" for k, v in fields.items()) or "the ACS answered without a CRes"

    @property
    def trans_status(self) -> str | None:
        """The CRes's transStatus: Y authenticated, N not authenticated."""
        cres = self.cres
        return cres.get("transStatus") if cres else None

    @property
    def action_code(self) -> str | None:
        """What the browser library would report: SUCCESS, FAILURE or ERROR after a challenge."""
        if self._answer is None:
            return None
        if self.cres is None:
            return "ERROR"
        return "SUCCESS" if self.trans_status == "Y" else "FAILURE"

    @property
    def returned(self) -> bool:
        """The ACS has posted its answer back to the term URL."""
        return self._answer is not None

    @property
    def next_step(self) -> str | None:
        """METHOD, QUERY, CHALLENGE, SEND_AUTH (after the challenge, or a frictionless THREEDQUERY
        sent alone), STANDARD_AUTH (the THREEDQUERY failed), or None before the look-up and once
        the flow has ended."""
        if self.lookup_record is None or self.stage == AUTHORISED:
            return None
        if self.query_record is None:
            if self.method_url and self.method_result is None:
                return METHOD
            return QUERY
        if self.auth_record is not None:
            return None
        if self.query_record.get("errorcode") != "0":
            return STANDARD_AUTH
        if self.challenged and not self.returned:
            return CHALLENGE
        return SEND_AUTH

    @property
    def advice(self) -> str:
        """What to do now, in words."""
        step = self.next_step
        if self.lookup_record is None:
            return "send the THREEDLOOKUP."
        if self.lookup_record.get("errorcode") != "0":
            return _failed(self.lookup_record, "THREEDLOOKUP")
        if step == METHOD:
            return (
                "the issuer has a 3DS method page: load it in a hidden frame of the customer's browser "
                f"(gwkit waits {self.method_timeout:g} s at most), then send the THREEDQUERY."
            )
        if step == QUERY:
            if not self.threedversion:
                return (
                    "the card's issuer does not run EMV 3-D Secure (no threedversion): the THREEDQUERY "
                    "is answered as version 1 (walk it with ThreeDSecureFlow)."
                )
            return f"send the THREEDQUERY (EMV 3-D Secure {self.threedversion}) with the browser's details."
        if step == CHALLENGE:
            return "the issuer wants to ask the cardholder: send the browser to the ACS with the CReq."
        if step == STANDARD_AUTH and self.query_record is not None:
            return (
                _failed(self.query_record, "THREEDQUERY") + " A standard AUTH without 3-D Secure may be sent."
            )
        if step == SEND_AUTH and self.returned:
            if self.action_code == "SUCCESS":
                return (
                    "the cardholder passed the challenge (transStatus Y): send the AUTH with threedresponse."
                )
            return (
                f"the challenge ended {self.action_code} ("
                + (f"transStatus {self.trans_status}" if self.cres else self.challenge_error or "")
                + "): the browser library stops here (its error 50003) and sends no AUTH; sent anyway, "
                "the gateway answers 60022 Unauthenticated."
            )
        if step == SEND_AUTH:
            return "frictionless: send the AUTH with the THREEDQUERY as parent."
        if self.auth_record is not None:
            return _auth_summary(self.auth_record)
        return ""

    @property
    def outcome(self) -> Outcome:
        if self.auth_record is not None:
            return Outcome(None, self.challenged, _auth_summary(self.auth_record), ended=True)
        return Outcome(self.next_step, self.challenged, self.advice)

    @property
    def verdict(self) -> Verdict | None:
        """How the flow ended, once the AUTH has answered (or the THREEDQUERY refused); None before."""
        record = self.auth_record
        if record is None:
            return None
        code = record.get("errorcode")
        meaning = explain(code)
        if code == "60022":
            return Verdict(
                "failure",
                "Not authenticated: no payment",
                "The issuer did not authenticate the cardholder (status "
                f"{record.get('status') or 'N'}); the AUTH was cancelled (settlestatus 3) and no money moves.",
            )
        if not record_ok(record):
            headline = (
                "Declined by the bank"
                if code == "70000"
                else f"Failed: {code} {record.get('errormessage') or meaning.message}"
            )
            return Verdict("failure", headline, f"{meaning.meaning} {meaning.action}".strip())
        return _paid_verdict(record, self.challenged)

    # -- the steps -------------------------------------------------------------------------------

    def lookup(self, **fields: Any) -> Record:
        """Send THREEDLOOKUP with the card, the amount and the currency (accounttypedescription ECOM)."""
        if self.stage != NEW:
            raise ThreeDSecureError(
                f"a THREEDLOOKUP cannot be sent at stage {self.stage!r}; start a new flow"
            )
        request = {"accounttypedescription": "ECOM", **fields}
        self._request = {k: v for k, v in request.items() if v is not None}
        response = self.client.send(self.client.build_request("THREEDLOOKUP", self._request))
        self.lookup_record = response.record
        self.stage = LOOKED_UP
        self._record_step("THREEDLOOKUP", _sent(response, request), dict(response.record))
        return response.record

    def run_method(self, *, http: httpx.Client | None = None, timeout: float = 30.0) -> str:
        """Play the browser's hidden frame: post `threeDSMethodData` to the method URL and, when its
        page sends the browser on to the notification URL (an auto-submitting form), follow it.
        A page that never does so leaves the method UNCOMPLETED after `method_timeout`, as the
        browser library does. Returns SUCCESS or UNCOMPLETED."""
        url, record = self._method_target()
        own = http is None
        http = http or httpx.Client(timeout=timeout, verify=default_ssl_context())
        data = method_data(record["threedstransactionid"], record.get("threednotificationurl") or "")
        try:
            page = read_page(http.post(url, data={"threeDSMethodData": data}))
            notify = next((f for f in page.forms if f.action), None)
            if notify is not None:
                read_page(http.post(urljoin(url, notify.action), data=notify.fields))
                self._method_done.set()
        finally:
            if own:
                http.close()
        return self.wait_for_method()

    def method_page(self) -> str:
        """For a real browser: the URL of gwkit's page that runs the method in a hidden frame (an
        iframe of it in the notebook is enough). Then `wait_for_method()`."""
        url, record = self._method_target()
        if self.method_page_url is None:
            data = method_data(record["threedstransactionid"], record.get("threednotificationurl") or "")
            self.method_page_url = self.receiver.expect_method(url, data, self._method_done.set)
        return self.method_page_url

    def wait_for_method(self, timeout: float | None = None) -> str:
        """Wait for the method to report back (at most `method_timeout` unless told): SUCCESS, or
        UNCOMPLETED when it does not; either way the THREEDQUERY may now be sent."""
        self._method_target()
        done = self._method_done.wait(self.method_timeout if timeout is None else timeout)
        if self.method_page_url is not None:
            self.receiver.forget_method(self.method_page_url)
        self.method_result = "SUCCESS" if done else "UNCOMPLETED"
        self._set_stage(
            METHOD_RAN,
            "METHOD",
            {"threeDSMethodData": REDACTED, "to": self.method_url or ""},
            {"result": self.method_result},
        )
        return self.method_result

    def query(
        self,
        *,
        requesttypes: Sequence[str] = ("THREEDQUERY", "AUTH"),
        browser: Mapping[str, Any] | None = None,
        **fields: Any,
    ) -> Record:
        """Send THREEDQUERY (with the request types that follow it in `requesttypes`, AUTH by
        default) with the look-up's cachetoken, the browser's details and the term URL. Returns the
        THREEDQUERY's record; a frictionless AUTH is in `auth_record` at once."""
        step = self.next_step
        if step not in (QUERY, METHOD):
            raise ThreeDSecureError(
                "send the THREEDLOOKUP first"
                if self.lookup_record is None
                else f"a THREEDQUERY cannot be sent at stage {self.stage!r}; start a new flow"
            )
        types = tuple(requesttypes)
        if "THREEDQUERY" not in types:
            raise ThreeDSecureError("requesttypes must include THREEDQUERY")
        self._remaining = types[types.index("THREEDQUERY") + 1 :]
        self._query_extra = {k: v for k, v in fields.items() if k not in _QUERY_ONLY}
        request = self._query_request(types, browser, fields)
        response = self.client.send(self.client.build_request(types, request))
        records = list(response.records)
        query = next((r for r in records if r.get("requesttypedescription") == "THREEDQUERY"), None)
        self.query_record = query or response.record
        self.records = records
        self.stage = QUERIED
        after = records[records.index(self.query_record) + 1 :] if self.query_record in records else []
        auth = next((r for r in after if r.get("requesttypedescription") == "AUTH"), None)
        if self.challenged:
            self._expect_challenge()
        self._record_step("THREEDQUERY", _sent(response, request), dict(self.query_record))
        if auth is not None:
            self.auth_record = auth
            self._set_stage(AUTHORISED, "AUTH", {"(same envelope)": " ".join(types)}, dict(auth))
        return self.query_record

    def challenge_form_html(self, *, autosubmit: bool = True) -> str:
        """The page that posts the customer's browser to the ACS (creq and threeDSSessionData)."""
        record = self._challenged_record()
        assert self._session_data is not None
        return challenge_page(
            record["acsurl"], record["threedpayload"], self._session_data, autosubmit=autosubmit
        )

    def complete_challenge(
        self, outcome: str = "Y", *, http: httpx.Client | None = None, timeout: float = 30.0
    ) -> None:
        """Play the cardholder at the sandbox's ACS without a browser: post the CReq, then `outcome`:
        Y types the one-time code the page shows and submits it, N fails the authentication,
        cancel gives up; then post the ACS's answer to the term URL receiver, as a browser would.
        The card decides the rest: a "challenge failed" card answers N whatever is typed, a
        "challenge error" card an error message."""
        record = self._challenged_record()
        assert self._session_data is not None
        if outcome not in _CHALLENGE_BUTTONS:
            raise ThreeDSecureError(
                f"challenge outcome {outcome!r}: expected one of {', '.join(CHALLENGE_OUTCOMES)}"
            )
        own = http is None
        http = http or httpx.Client(timeout=timeout, verify=default_ssl_context())
        try:
            form = {"creq": record["threedpayload"], SESSION_DATA: self._session_data}
            acs = http.post(record["acsurl"], data=form)
            page = read_page(acs)
            button_id = _CHALLENGE_BUTTONS[outcome]
            choice = page.form_with(button_id)
            if choice is None:
                raise ThreeDSecureError(
                    f"the ACS page has no #{button_id} button (only the sandbox's ACS can be completed headlessly)"
                )
            answer_fields = dict(choice.fields)
            name, value = choice.ids[button_id]
            if name:
                answer_fields[name] = value
            code_name = choice.ids.get(_CODE_INPUT, ("", ""))[0]
            if outcome == "Y" and code_name:
                answer_fields[code_name] = page.text_by_id.get(_CODE_SHOWN, "").strip()
            if self.stage == QUERIED:
                self._set_stage(
                    AT_ACS,
                    "ACS",
                    {"creq": REDACTED, SESSION_DATA: REDACTED},
                    {"page": str(acs.url), "outcome chosen": outcome},
                )
            answer = read_page(http.post(urljoin(str(acs.url), choice.action), data=answer_fields))
            back = answer.form_with(_RETURN_FORM) or next(
                (f for f in answer.forms if SESSION_DATA in f.fields), None
            )
            if back is None:
                raise ThreeDSecureError("the ACS did not answer with a form for the term URL")
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
        """Send what the flow's state calls for (the remaining request types, AUTH by default) and
        return the AUTH's record; `extra` fields are added (e.g. billing names)."""
        response = self._authorise(extra)
        auth = next((r for r in response.records if r.get("requesttypedescription") == "AUTH"), None)
        return auth or response.record

    def run(
        self, outcome: str = "Y", *, requesttypes: Sequence[str] = ("THREEDQUERY", "AUTH"), **fields: Any
    ) -> Record:
        """The whole flow headlessly (sandbox): look-up, method, THREEDQUERY, the challenge with
        `outcome` when the issuer asks, AUTH. Returns the AUTH's record (or the THREEDQUERY's when
        no AUTH was sent)."""
        self.lookup(**fields)
        if self.next_step == METHOD:
            self.run_method()
        self.query(requesttypes=requesttypes)
        if self.next_step == CHALLENGE:
            self.complete_challenge(outcome)
        if self.next_step in (SEND_AUTH, STANDARD_AUTH) and (self._remaining or self.challenged):
            return self.auth()
        ended = self.auth_record or self.query_record
        assert ended is not None  # query() has answered
        return ended

    def close(self) -> None:
        """Stop waiting at the term URL receiver for this flow's customer."""
        self._forget_pending()

    # -- internals -------------------------------------------------------------------------------

    def _acs_message(self) -> dict[str, Any] | None:
        if self._answer is None or not self._answer.get("cres"):
            return None
        try:
            return decode_b64_json(self._answer["cres"], "cres")
        except ThreeDSecureError:
            return None

    def _query_request(
        self, types: tuple[str, ...], browser: Mapping[str, Any] | None, fields: Mapping[str, Any]
    ) -> dict[str, Any]:
        assert self.lookup_record is not None
        base = {k: v for k, v in self._request.items() if k in _LOOKUP_FIELDS}
        token = self.lookup_record.get("cachetoken")
        if (
            token and types in _CACHETOKEN_ENVELOPES
        ):  # as the browser library: the token stands in for the card
            base = {k: v for k, v in base.items() if k not in _CARD_FIELDS}
            base["cachetoken"] = token
        return {
            "accounttypedescription": "ECOM",
            "termurl": self.receiver.term_url,
            **base,
            **BROWSER_DEFAULTS,
            **dict(browser or {}),
            **fields,
        }

    def _authorise(self, extra: Mapping[str, Any]) -> Any:
        step, query = self.next_step, self.query_record
        if step not in (SEND_AUTH, STANDARD_AUTH) or query is None:
            if query is None:
                raise ThreeDSecureError("send the THREEDQUERY first")
            if step == CHALLENGE:
                raise ThreeDSecureError("the customer has not returned from the ACS yet: no CRes to send")
            raise ThreeDSecureError("this flow has already sent its AUTH")
        types = self._remaining or ("AUTH",)
        carried = {k: v for k, v in self._request.items() if k in _CARRIED_OVER}
        if step == STANDARD_AUTH:
            card = {k: v for k, v in self._request.items() if k in (*_CARD_FIELDS, *_CARRIED_OVER)}
            request = {"accounttypedescription": "ECOM", **card, **extra}
        elif self.challenged:
            assert self.action_code is not None
            jwt = threedresponse_jwt(
                self.action_code,
                cres=(self._answer or {}).get("cres"),
                description=self.challenge_error or "",
            )
            request = {
                "parenttransactionreference": query["transactionreference"],
                "threedresponse": jwt,
                **carried,
                **self._query_extra,
                **extra,
            }
        else:  # frictionless, THREEDQUERY sent alone
            request = {
                "parenttransactionreference": query["transactionreference"],
                **carried,
                **self._query_extra,
                **extra,
            }
        response = self.client.send(self.client.build_request(types, request))
        auth = next((r for r in response.records if r.get("requesttypedescription") == "AUTH"), None)
        self.auth_record = auth or response.record
        self.records = [*self.records, *response.records]
        self._forget_pending()
        self._set_stage(AUTHORISED, "AUTH", _sent(response, request), dict(self.auth_record))
        return response

    def _method_target(self) -> tuple[str, Record]:
        record = self.lookup_record
        url = self.method_url
        if record is None or not url or self.query_record is not None:
            raise ThreeDSecureError(
                "the 3DS method runs between the THREEDLOOKUP and the THREEDQUERY, "
                "and only when the look-up answered a threedmethodurl"
            )
        return url, record

    def _expect_challenge(self) -> None:
        record = self.query_record
        assert record is not None
        self._session_data = secrets.token_urlsafe(16)
        self._answer = None
        self._returned.clear()
        self.start_url = self.receiver.expect_challenge(
            self._session_data,
            record["threedpayload"],
            record["acsurl"],
            self._receive,
            self._browser_started,
        )

    def _challenged_record(self) -> Record:
        if self.next_step != CHALLENGE or self.query_record is None:
            raise ThreeDSecureError(
                f"only a THREEDQUERY that answered a challenge goes to the ACS; next step is {self.next_step!r}"
            )
        return self.query_record

    def _browser_started(self) -> None:
        """A browser opened the start page: it is on its way to the ACS (receiver's thread)."""
        if self.stage == QUERIED:
            self._guarded(
                lambda: self._set_stage(
                    AT_ACS,
                    "ACS",
                    {"creq": REDACTED, SESSION_DATA: REDACTED},
                    {"page": "the card issuer's page, in the customer's browser"},
                )
            )

    def _receive(self, form: Mapping[str, str]) -> None:
        """The receiver got the ACS's post-back for this flow (called from its thread)."""
        self._answer = dict(form)
        try:
            received: dict[str, Any] = {"page": "you can close this page and return to the notebook"}
            if self.cres is not None:
                received["transStatus"] = self.trans_status
            else:
                received["error"] = self.challenge_error
            self._guarded(
                lambda: self._set_stage(
                    RETURNED, "TERMURL", {"cres": REDACTED, SESSION_DATA: REDACTED}, received
                )
            )
        finally:
            self._returned.set()

    def _guarded(self, action: Callable[[], None]) -> None:
        try:
            action()
        except BaseException as error:
            self._error = error
            raise

    def _set_stage(self, stage: str, step: str, sent: dict[str, Any], received: dict[str, Any]) -> None:
        self.stage = stage
        self._record_step(step, sent, received)

    def _record_step(self, name: str, sent: dict[str, Any], received: dict[str, Any]) -> None:
        self.steps.append(Step(name, mask_data(sent), mask_data(received)))
        for listener in tuple(self._listeners):
            listener(self)

    def _forget_pending(self) -> None:
        if self._session_data is not None:
            self.receiver.forget(self._session_data)
        if self.method_page_url is not None:
            self.receiver.forget_method(self.method_page_url)

    def _raise_pending_error(self) -> None:
        if self._error is not None:
            error, self._error = self._error, None
            raise error


def _failed(record: Mapping[str, Any], what: str) -> str:
    meaning = explain(record.get("errorcode"))
    return f"the {what} answered errorcode {record.get('errorcode')} {record.get('errormessage')}: {meaning.meaning}"


def _paid_verdict(auth: Mapping[str, Any], challenged: bool) -> Verdict:
    """An authorised AUTH after EMV 3-D Secure: with the liability shift or without, and why."""
    status = auth.get("status")
    how = (
        "The cardholder answered the issuer's challenge"
        if challenged
        else "The issuer recognised the cardholder without a question (frictionless)"
    )
    if status == "Y":
        return Verdict(
            "success",
            "Authenticated and authorised",
            f"{how}: status Y, eci {auth.get('eci', '?')}, with a cavv. The bank authorised the "
            "payment, and the liability for fraud shifts to the issuer.",
        )
    if status == "A":
        return Verdict(
            "success",
            "Authentication attempted, authorised",
            "The issuer could not authenticate but attested the attempt (status A, eci "
            f"{auth.get('eci', '?')}); the bank authorised the payment and the liability shifts to the issuer.",
        )
    if status == "U":
        return Verdict(
            "warning",
            "Authentication unavailable, authorised",
            "The issuer could not authenticate (status U, no cavv); the bank authorised the payment "
            "without the liability shift of 3-D Secure.",
        )
    return Verdict(
        "warning",
        "Paid without 3-D Secure",
        "The AUTH was authorised without an authentication: no liability shift.",
    )
