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

import atexit
import html
import secrets
import threading
from dataclasses import dataclass, field
from html.parser import HTMLParser
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Callable, Mapping
from urllib.parse import parse_qsl, urljoin

import httpx

from .errors import GwkitError
from .response import Record
from .interface.masking import REDACTED, mask_data

__all__ = ["OUTCOMES", "ThreeDSecureError", "ThreeDSecureFlow", "TermUrlReceiver", "default_receiver"]

# Outcomes the sandbox ACS offers (gwkit/sandbox/acs.py); a real issuer's ACS offers its own page.
OUTCOMES = ("Y", "N", "A", "U", "cancel")

# Stages of a flow, in order.
NEW, QUERIED, AT_ACS, RETURNED, AUTHORISED = "new", "queried", "at_acs", "returned", "authorised"
# What to do after the THREEDQUERY (interface 3.3).
REDIRECT, AUTH_WITH_PARENT, RESEND_OR_AUTH, STANDARD_AUTH = "redirect", "auth", "resend or auth", "standard auth"

_THREEDQUERY_FIELDS = ("pan", "expirydate", "securitycode", "parenttransactionreference", "baseamount",
                       "currencyiso3a", "orderreference", "sitereference")


class ThreeDSecureError(GwkitError):
    """A 3-D Secure step that cannot be taken now, or an ACS that refused the browser's post."""


# -- the term URL receiver -----------------------------------------------------------------------

@dataclass
class _Pending:
    """An authentication the receiver waits for, found by MD."""

    md: str
    pareq: str
    acsurl: str
    term_url: str
    on_return: Callable[[str], None]
    on_start: Callable[[], None] | None = None
    token: str = field(default_factory=lambda: secrets.token_urlsafe(12))

    def __repr__(self) -> str:
        return f"_Pending(acsurl={self.acsurl!r}, md={REDACTED!r})"


def redirect_page(acsurl: str, pareq: str, term_url: str, md: str, *, autosubmit: bool = True) -> str:
    """The merchant page that sends the browser to the ACS: POST of PaReq, TermUrl and MD (4.4).

    It submits itself; without JavaScript a visible button does it."""
    fields = (("PaReq", pareq), ("TermUrl", term_url), ("MD", md))
    inputs = "".join(f"<input type='hidden' name='{n}' value='{html.escape(v, quote=True)}'>" for n, v in fields)
    script = "<script>document.getElementById('gwkit-to-acs').submit();</script>" if autosubmit else ""
    button = "<button type='submit' id='gwkit-to-acs-continue'>Continue to your card issuer</button>"
    return (_page_head("Redirecting to your card issuer")
            + "<p>Taking you to your card issuer to confirm the payment...</p>"
            + f"<form method='post' action='{html.escape(acsurl, quote=True)}' id='gwkit-to-acs'>{inputs}"
            + (f"<noscript>{button}</noscript>" if autosubmit else button) + "</form>" + script + "</body></html>")


def _page_head(title: str) -> str:
    return (f"<!doctype html><html lang='en'><head><meta charset='utf-8'><title>{html.escape(title)}</title>"
            "<style>body{font-family:system-ui,sans-serif;max-width:32em;margin:2em auto;padding:0 1em}"
            ".error{border-left:4px solid #b00020;background:#fdecee;padding:.75em 1em}</style></head><body>")


class TermUrlReceiver:
    """The merchant's term URL, served by gwkit on a loopback port in a background thread.

        GET  /start/<token>   the page that auto-posts the browser to the ACS (for an iframe or a tab)
        POST /term            where the ACS posts PaRes and MD back (interface 4.4, step 3)

    `public_url` replaces `http://host:port` in the URLs handed out, for a browser that reaches
    this machine under another name (a forwarded port, for example).
    """

    def __init__(self, host: str = "127.0.0.1", port: int = 0, *, public_url: str | None = None):
        self._pending: dict[str, _Pending] = {}
        self._by_token: dict[str, _Pending] = {}
        self._lock = threading.Lock()
        self._server = ThreadingHTTPServer((host, port), _handler_for(self))
        self._server.daemon_threads = True
        bound_host, bound_port = self._server.server_address[:2]
        self.base_url = (public_url or f"http://{bound_host}:{bound_port}").rstrip("/")
        self._thread = threading.Thread(target=self._server.serve_forever, name="gwkit-term-url", daemon=True)
        self._thread.start()

    def __repr__(self) -> str:
        return f"TermUrlReceiver({self.base_url!r}, waiting={len(self._pending)})"

    @property
    def term_url(self) -> str:
        return self.base_url + "/term"

    @property
    def running(self) -> bool:
        return self._thread.is_alive()

    def expect(self, md: str, pareq: str, acsurl: str, on_return: Callable[[str], None],
               on_start: Callable[[], None] | None = None) -> str:
        """Wait for the ACS to post back `md`; returns the start page's URL for the browser.
        `on_return(pares)` runs when it arrives, `on_start()` when a browser opens the start page."""
        pending = _Pending(md, pareq, acsurl, self.term_url, on_return, on_start)
        with self._lock:
            self._pending[md] = pending
            self._by_token[pending.token] = pending
        return f"{self.base_url}/start/{pending.token}"

    def forget(self, md: str) -> None:
        with self._lock:
            pending = self._pending.pop(md, None)
            if pending is not None:
                self._by_token.pop(pending.token, None)

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=10)

    def __enter__(self) -> "TermUrlReceiver":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.stop()

    # called from the server's threads

    def _start_page(self, token: str) -> tuple[int, str]:
        with self._lock:
            pending = self._by_token.get(token)
        if pending is None:
            return 404, _message_page("Unknown 3-D Secure start page", "This link does not belong to a "
                                      "3-D Secure authentication that gwkit is waiting for.", error=True)
        if pending.on_start is not None:
            try:
                pending.on_start()
            except Exception:  # noqa: BLE001 - kept by the flow; the browser still goes to the ACS
                pass
        return 200, redirect_page(pending.acsurl, pending.pareq, pending.term_url, pending.md)

    def _post_back(self, form: Mapping[str, str]) -> tuple[int, str]:
        missing = [name for name in ("PaRes", "MD") if not form.get(name)]
        if missing:
            return 400, _message_page("3-D Secure return refused",
                                      f"The card issuer's post-back lacks {', '.join(missing)}.", error=True)
        with self._lock:
            pending = self._pending.get(form["MD"])
        if pending is None:
            return 400, _message_page("3-D Secure return refused", "No 3-D Secure authentication with this MD "
                                      "is waiting here (it was changed, or already finished).", error=True)
        try:
            pending.on_return(form["PaRes"])
        except Exception:  # noqa: BLE001 - the flow keeps the error and raises it in the caller's thread
            return 500, _message_page("3-D Secure return failed", "gwkit received the card issuer's answer but "
                                      "could not process it: see the notebook.", error=True)
        return 200, _message_page("Authentication finished", "Your card issuer has answered. You can close "
                                  "this page and return to the notebook.")


def _message_page(title: str, text: str, *, error: bool = False) -> str:
    css = " class='error'" if error else ""
    return (_page_head(title) + f"<h1 style='font-size:130%'>{html.escape(title)}</h1>"
            f"<p id='gwkit-message'{css}>{html.escape(text)}</p></body></html>")


def _handler_for(receiver: TermUrlReceiver) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802 - http.server's naming
            if self.path.startswith("/start/"):
                self._send(*receiver._start_page(self.path[len("/start/"):]))
            else:
                self._send(404, _message_page("Not found", "gwkit's term URL receiver serves /start/<token> "
                                              "and POST /term only.", error=True))

        def do_POST(self) -> None:  # noqa: N802
            length = int(self.headers.get("content-length") or 0)
            body = self.rfile.read(min(length, 1_048_576)).decode("utf-8", "replace")
            if self.path.split("?")[0] != "/term":
                self._send(404, _message_page("Not found", "The term URL is /term.", error=True))
                return
            self._send(*receiver._post_back(dict(parse_qsl(body, keep_blank_values=True))))

        def _send(self, status: int, text: str) -> None:
            data = text.encode("utf-8")
            self.send_response(status)
            self.send_header("content-type", "text/html; charset=utf-8")
            self.send_header("cache-control", "no-store")
            self.send_header("content-length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - MD and PaRes stay out of logs
            pass

    return Handler


_DEFAULT: TermUrlReceiver | None = None
_DEFAULT_LOCK = threading.Lock()


def default_receiver() -> TermUrlReceiver:
    """One receiver per process on a free loopback port, started on first use."""
    global _DEFAULT
    with _DEFAULT_LOCK:
        if _DEFAULT is None or not _DEFAULT.running:
            _DEFAULT = TermUrlReceiver()
        return _DEFAULT


@atexit.register
def _stop_default() -> None:
    if _DEFAULT is not None:
        _DEFAULT.stop()


# -- reading the ACS's pages (headless completion) -----------------------------------------------

@dataclass
class _Form:
    action: str = ""
    fields: dict[str, str] = field(default_factory=dict)
    buttons: dict[str, list[str]] = field(default_factory=dict)  # name -> values of its submit buttons


class _FormParser(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.forms: list[_Form] = []
        self.text: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = {k: v or "" for k, v in attrs}
        if tag == "form":
            self.forms.append(_Form(a.get("action", "")))
        elif self.forms and tag == "input" and a.get("name"):
            if a.get("type", "text") == "submit":
                self.forms[-1].buttons.setdefault(a["name"], []).append(a.get("value", ""))
            else:
                self.forms[-1].fields[a["name"]] = a.get("value", "")
        elif self.forms and tag == "button" and a.get("name"):
            self.forms[-1].buttons.setdefault(a["name"], []).append(a.get("value", ""))

    def handle_data(self, data: str) -> None:
        self.text.append(data)


def _read_page(response: httpx.Response) -> _FormParser:
    parser = _FormParser()
    parser.feed(response.text)
    if response.status_code >= 400:
        message = " ".join(" ".join(parser.text).split())
        raise ThreeDSecureError(f"the page at {response.request.url} answered HTTP {response.status_code}: "
                                f"{message[-400:]}")
    return parser


# -- the flow -------------------------------------------------------------------------------------

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

    def __init__(self, client: Any, *, receiver: TermUrlReceiver | None = None):
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
        self._listeners: list[Callable[["ThreeDSecureFlow"], None]] = []
        self._error: BaseException | None = None

    def __repr__(self) -> str:
        enrolled = self.query_record.get("enrolled") if self.query_record else None
        return f"ThreeDSecureFlow(stage={self.stage!r}, enrolled={enrolled!r}, next_step={self.next_step!r})"

    def on_change(self, listener: Callable[["ThreeDSecureFlow"], None]) -> Callable[["ThreeDSecureFlow"], None]:
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
            self.start_url = self.receiver.expect(record["md"], record["pareq"], record["acsurl"], self._receive,
                                                  self._browser_started)
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
        return redirect_page(record["acsurl"], record["pareq"], self.receiver.term_url, record["md"],
                             autosubmit=autosubmit)

    def complete_acs(self, outcome: str = "Y", *, http: httpx.Client | None = None, timeout: float = 30.0) -> None:
        """Play the customer at the sandbox ACS without a browser: post to the ACS, choose
        `outcome` (Y, N, A, U or cancel), and post the answer to the term URL receiver."""
        record = self._enrolled_record()
        own = http is None
        http = http or httpx.Client(timeout=timeout)
        try:
            form = {"PaReq": record["pareq"], "TermUrl": self.receiver.term_url, "MD": record["md"]}
            acs = http.post(record["acsurl"], data=form)
            page = _read_page(acs)
            choice = next((f for f in page.forms if outcome in f.buttons.get("outcome", [])), None)
            if choice is None:
                offered = sorted({v for f in page.forms for v in f.buttons.get("outcome", [])})
                raise ThreeDSecureError(f"the ACS page offers no outcome {outcome!r}"
                                        + (f"; it offers {', '.join(offered)}" if offered else
                                           " (only the sandbox ACS can be completed headlessly)"))
            self._set_stage(AT_ACS, "ACS", {"PaReq": REDACTED, "TermUrl": self.receiver.term_url, "MD": REDACTED},
                            {"page": str(acs.url), "outcome chosen": outcome})
            answer = _read_page(http.post(urljoin(str(acs.url), choice.action),
                                          data={**choice.fields, "outcome": outcome}))
            back = next((f for f in answer.forms if "PaRes" in f.fields), None)
            if back is None:
                raise ThreeDSecureError("the ACS did not answer with a PaRes form")
            returned = http.post(back.action, data=back.fields)  # what the browser's auto-submit does
            self._raise_pending_error()
            _read_page(returned)
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
        request = {k: self._query_fields[k] for k in ("baseamount", "currencyiso3a", "orderreference")
                   if self._query_fields.get(k) is not None}
        return self._authorise(self.client.auth_subscription, {"accounttypedescription": "ECOM",
                                                               **request, **fields})

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
        step = self.next_step
        if step is None:
            raise ThreeDSecureError("send the THREEDQUERY first" if self.query_record is None
                                    else "this flow has already sent its AUTH")
        if step == REDIRECT:
            if not self.returned:
                raise ThreeDSecureError("the customer has not returned from the ACS yet: no PaRes to send")
            request = {"md": self.md, "pares": self._pares, **extra}
        elif step == STANDARD_AUTH:
            request = {k: v for k, v in self._query_fields.items() if k in _THREEDQUERY_FIELDS}
            request = {"accounttypedescription": "ECOM", **request, **extra}
        else:
            request = {"parenttransactionreference": self.query_record["transactionreference"], **extra}
        response = send(**request)
        self.auth_record = response.record
        self._forget_pending()
        self._set_stage(AUTHORISED, "AUTH", _sent(response, request), dict(response.record))
        return response

    def _enrolled_record(self) -> Record:
        if self.next_step != REDIRECT or self.query_record is None:
            raise ThreeDSecureError(f"only an enrolled card (enrolled Y) goes to the ACS; next step is "
                                    f"{self.next_step!r}")
        return self.query_record

    def _browser_started(self) -> None:
        """A browser opened the start page: it is on its way to the ACS (receiver's thread)."""
        if self.stage == QUERIED:
            self._guarded(lambda: self._set_stage(AT_ACS, "ACS", {"PaReq": REDACTED, "TermUrl": self.receiver.term_url,
                                                                   "MD": REDACTED},
                                                  {"page": "the card issuer's page, in the customer's browser"}))

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
            self._guarded(lambda: self._set_stage(RETURNED, "TERMURL", {"PaRes": REDACTED, "MD": REDACTED},
                                                  {"page": "you can close this page and return to the notebook"}))
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


def _sent(response: Any, fields: Mapping[str, Any]) -> dict[str, Any]:
    """The request object as sent (from the Response when it has it), else the fields given."""
    request = getattr(response, "request", None)
    if isinstance(request, Mapping) and request.get("request"):
        return dict(request["request"][0])
    return dict(fields)
