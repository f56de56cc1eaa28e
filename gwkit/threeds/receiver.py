"""The merchant's term URL, served by gwkit: the start page that posts the customer's browser to the
ACS (interface 4.4), and POST /term where the ACS posts PaRes and MD back (v1), or `cres` and
`threeDSSessionData` (EMV 3-D Secure, v2); and for v2 the page that runs the issuer's 3DS method in
a hidden frame. One receiver per process by default, on a free loopback port."""

from __future__ import annotations

import atexit
import html
import json
import secrets
import socket
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qsl

from ..interface.masking import REDACTED

__all__ = ["TermUrlReceiver", "challenge_page", "default_receiver", "method_page", "redirect_page"]

SESSION_DATA = "threeDSSessionData"  # EMV 3DS: the merchant's key to its session, posted back with cres


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


@dataclass
class _Challenge:
    """A v2 challenge the receiver waits for, found by threeDSSessionData."""

    session_data: str
    creq: str
    acsurl: str
    on_return: Callable[[Mapping[str, str]], None]
    on_start: Callable[[], None] | None = None
    token: str = field(default_factory=lambda: secrets.token_urlsafe(12))

    def __repr__(self) -> str:
        return f"_Challenge(acsurl={self.acsurl!r}, creq={REDACTED!r})"


@dataclass
class _Method:
    """A v2 3DS method page: the browser runs it, then tells the receiver it has finished."""

    method_url: str
    method_data: str
    on_done: Callable[[], None]
    token: str = field(default_factory=lambda: secrets.token_urlsafe(12))


def redirect_page(acsurl: str, pareq: str, term_url: str, md: str, *, autosubmit: bool = True) -> str:
    """The merchant page that sends the browser to the ACS: POST of PaReq, TermUrl and MD (4.4).

    It submits itself; without JavaScript a visible button does it."""
    fields = (("PaReq", pareq), ("TermUrl", term_url), ("MD", md))
    inputs = "".join(
        f"<input type='hidden' name='{n}' value='{html.escape(v, quote=True)}'>" for n, v in fields
    )
    script = "<script>document.getElementById('gwkit-to-acs').submit();</script>" if autosubmit else ""
    button = "<button type='submit' id='gwkit-to-acs-continue'>Continue to your card issuer</button>"
    return (
        _page_head("Redirecting to your card issuer")
        + "<p>Taking you to your card issuer to confirm the payment...</p>"
        + f"<form method='post' action='{html.escape(acsurl, quote=True)}' id='gwkit-to-acs'>{inputs}"
        + (f"<noscript>{button}</noscript>" if autosubmit else button)
        + "</form>"
        + script
        + "</body></html>"
    )


def _hidden_inputs(fields: tuple[tuple[str, str], ...]) -> str:
    return "".join(
        f"<input type='hidden' name='{n}' value='{html.escape(v, quote=True)}'>" for n, v in fields
    )


def challenge_page(acsurl: str, creq: str, session_data: str, *, autosubmit: bool = True) -> str:
    """The merchant page that sends the browser to the issuer's challenge (EMV 3DS): POST of
    `creq` and `threeDSSessionData` to the ACS. It submits itself; without JavaScript, a button."""
    script = "<script>document.getElementById('gwkit-to-acs').submit();</script>" if autosubmit else ""
    button = "<button type='submit' id='gwkit-to-acs-continue'>Continue to your card issuer</button>"
    return (
        _page_head("Redirecting to your card issuer")
        + "<p>Taking you to your card issuer to confirm the payment...</p>"
        + f"<form method='post' action='{html.escape(acsurl, quote=True)}' id='gwkit-to-acs'>"
        + _hidden_inputs((("creq", creq), (SESSION_DATA, session_data)))
        + (f"<noscript>{button}</noscript>" if autosubmit else button)
        + "</form>"
        + script
        + "</body></html>"
    )


def method_page(method_url: str, method_data: str, done_url: str) -> str:
    """The page that runs the issuer's 3DS method: it posts `threeDSMethodData` to the method URL in
    a hidden frame and, when the gateway's notification page in that frame says the method ran (a
    `TP_METHOD_URL_RESPONSE` message to its parent, what the makers' browser library listens for),
    tells gwkit with a JSON POST to `done_url`. A method page that never notifies is never
    reported: the flow stops waiting after its `method_timeout`."""
    script = (
        "(function(){var reported=false;"
        "window.addEventListener('message',function(event){var message=event.data;"
        "if(typeof message==='string'){try{message=JSON.parse(message);}catch(e){return;}}"
        "if(reported||!message||message.type!=='TP_METHOD_URL_RESPONSE'){return;}reported=true;"
        f"fetch({json.dumps(done_url)},{{method:'POST',headers:{{'content-type':'application/json'}},body:'{{}}'}})"
        ".then(function(){document.getElementById('gwkit-method-status').textContent="
        "'Your card issuer has checked this browser.';});});"
        "document.getElementById('gwkit-method-form').submit();})();"
    )
    return (
        _page_head("Checking your browser with your card issuer")
        + "<p id='gwkit-method-status'>Your card issuer is checking this browser...</p>"
        + "<iframe name='gwkit-method-frame' id='gwkit-method-frame' title='3DS method' "
        + "style='display:none'></iframe>"
        + f"<form method='post' action='{html.escape(method_url, quote=True)}' target='gwkit-method-frame' "
        + "id='gwkit-method-form'>"
        + _hidden_inputs((("threeDSMethodData", method_data),))
        + f"</form><script>{script}</script>"
        + "</body></html>"
    )


def _page_head(title: str) -> str:
    return (
        f"<!doctype html><html lang='en'><head><meta charset='utf-8'><title>{html.escape(title)}</title>"
        "<style>body{font-family:system-ui,sans-serif;max-width:32em;margin:2em auto;padding:0 1em}"
        ".error{border-left:4px solid #b00020;background:#fdecee;padding:.75em 1em}</style></head><body>"
    )


class TermUrlReceiver:
    """The merchant's term URL, served by gwkit on a loopback port in a background thread.

        GET  /start/<token>   the page that auto-posts the browser to the ACS (for an iframe or a tab)
        POST /term            where the ACS posts PaRes and MD back (interface 4.4, step 3), or
                              (v2) cres and threeDSSessionData
        GET  /method/<token>  (v2) the page that runs the issuer's 3DS method in a hidden frame
        POST /method/<token>/done  (v2, JSON) that page reports the method's answer arrived

    `public_url` replaces `http://host:port` in the URLs handed out, for a browser that reaches
    this machine under another name (a forwarded port, for example).
    """

    def __init__(self, host: str = "127.0.0.1", port: int = 0, *, public_url: str | None = None):
        self._pending: dict[str, _Pending] = {}
        self._by_token: dict[str, _Pending | _Challenge] = {}
        self._challenges: dict[str, _Challenge] = {}
        self._methods: dict[str, _Method] = {}
        self._lock = threading.Lock()
        self._server = ThreadingHTTPServer((host, port), _handler_for(self))
        self._server.daemon_threads = True
        bound_host, bound_port = self._address = self._server.socket.getsockname()[:2]
        self.base_url = (public_url or f"http://{bound_host}:{bound_port}").rstrip("/")
        self._stopping = threading.Event()
        self._thread = threading.Thread(target=self._serve, name="gwkit-term-url", daemon=True)
        self._thread.start()

    def _serve(self) -> None:
        # Not `serve_forever`: its `shutdown()` waits for a poll that comes every 0.5 s, and the
        # receiver is stopped when every kernel that used it exits. Here each request is awaited
        # without a timeout, and `stop()` wakes the loop with a connection of its own.
        while not self._stopping.is_set():
            self._server.handle_request()

    def __repr__(self) -> str:
        return f"TermUrlReceiver({self.base_url!r}, waiting={len(self._pending)})"

    @property
    def term_url(self) -> str:
        return self.base_url + "/term"

    @property
    def running(self) -> bool:
        return self._thread.is_alive()

    def expect(
        self,
        md: str,
        pareq: str,
        acsurl: str,
        on_return: Callable[[str], None],
        on_start: Callable[[], None] | None = None,
    ) -> str:
        """Wait for the ACS to post back `md`; returns the start page's URL for the browser.
        `on_return(pares)` runs when it arrives, `on_start()` when a browser opens the start page."""
        pending = _Pending(md, pareq, acsurl, self.term_url, on_return, on_start)
        with self._lock:
            self._pending[md] = pending
            self._by_token[pending.token] = pending
        return f"{self.base_url}/start/{pending.token}"

    def expect_challenge(
        self,
        session_data: str,
        creq: str,
        acsurl: str,
        on_return: Callable[[Mapping[str, str]], None],
        on_start: Callable[[], None] | None = None,
    ) -> str:
        """(v2) Wait for the ACS to post back `threeDSSessionData` = `session_data`; returns the
        start page's URL. `on_return(form)` gets the post-back's fields (`cres`, or the ACS's error)."""
        pending = _Challenge(session_data, creq, acsurl, on_return, on_start)
        with self._lock:
            self._challenges[session_data] = pending
            self._by_token[pending.token] = pending
        return f"{self.base_url}/start/{pending.token}"

    def expect_method(self, method_url: str, method_data: str, on_done: Callable[[], None]) -> str:
        """(v2) Serve the page that runs a 3DS method; `on_done()` when the browser reports it ran."""
        method = _Method(method_url, method_data, on_done)
        with self._lock:
            self._methods[method.token] = method
        return f"{self.base_url}/method/{method.token}"

    def forget(self, md: str) -> None:
        """Stop waiting for `md` (v1) or for the challenge with this threeDSSessionData (v2)."""
        with self._lock:
            pending = self._pending.pop(md, None) or self._challenges.pop(md, None)
            if pending is not None:
                self._by_token.pop(pending.token, None)

    def forget_method(self, url: str) -> None:
        with self._lock:
            self._methods.pop(url.rsplit("/", 1)[-1], None)

    def stop(self) -> None:
        if not self._stopping.is_set():
            self._stopping.set()
            try:  # wake the loop, which then sees it is stopping
                socket.create_connection(self._address, timeout=5).close()
            except OSError:
                pass
        self._thread.join(timeout=10)
        self._server.server_close()

    def __enter__(self) -> TermUrlReceiver:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.stop()

    # called from the server's threads

    def _start_page(self, token: str) -> tuple[int, str]:
        with self._lock:
            pending = self._by_token.get(token)
        if pending is None:
            return 404, _message_page(
                "Unknown 3-D Secure start page",
                "This link does not belong to a 3-D Secure authentication that gwkit is waiting for.",
                error=True,
            )
        if pending.on_start is not None:
            try:
                pending.on_start()
            except Exception:
                pass
        if isinstance(pending, _Challenge):
            return 200, challenge_page(pending.acsurl, pending.creq, pending.session_data)
        return 200, redirect_page(pending.acsurl, pending.pareq, pending.term_url, pending.md)

    def _method_page(self, token: str) -> tuple[int, str]:
        with self._lock:
            method = self._methods.get(token)
        if method is None:
            return 404, _message_page(
                "Unknown 3DS method page",
                "This link does not belong to a 3DS method that gwkit is running.",
                error=True,
            )
        done_url = f"{self.base_url}/method/{token}/done"
        return 200, method_page(method.method_url, method.method_data, done_url)

    def _method_done(self, token: str) -> tuple[int, str]:
        with self._lock:
            method = self._methods.pop(token, None)
        if method is None:
            return 404, json.dumps({"error": "no 3DS method is waiting for this token"})
        try:
            method.on_done()
        except Exception:
            return 500, json.dumps({"error": "gwkit could not record the 3DS method's end: see the notebook"})
        return 200, json.dumps({"ok": True})

    def _post_back(self, form: Mapping[str, str]) -> tuple[int, str]:
        if SESSION_DATA in form:
            return self._challenge_back(form)
        missing = [name for name in ("PaRes", "MD") if not form.get(name)]
        if missing:
            return 400, _message_page(
                "3-D Secure return refused",
                f"The card issuer's post-back lacks {', '.join(missing)}.",
                error=True,
            )
        with self._lock:
            pending = self._pending.get(form["MD"])
        if pending is None:
            return 400, _message_page(
                "3-D Secure return refused",
                "No 3-D Secure authentication with this MD "
                "is waiting here (it was changed, or already finished).",
                error=True,
            )
        try:
            pending.on_return(form["PaRes"])
        except Exception:
            return 500, _message_page(
                "3-D Secure return failed",
                "gwkit received the card issuer's answer but could not process it: see the notebook.",
                error=True,
            )
        return 200, _message_page(
            "Authentication finished",
            "Your card issuer has answered. You can close this page and return to the notebook.",
        )

    def _challenge_back(self, form: Mapping[str, str]) -> tuple[int, str]:
        """(v2) The ACS's post-back: `cres` (or an error message) with threeDSSessionData."""
        with self._lock:
            pending = self._challenges.get(form[SESSION_DATA])
        if pending is None:
            return 400, _message_page(
                "3-D Secure return refused",
                "No 3-D Secure challenge with this threeDSSessionData "
                "is waiting here (it was changed, or already finished).",
                error=True,
            )
        try:
            pending.on_return(dict(form))
        except Exception:
            return 500, _message_page(
                "3-D Secure return failed",
                "gwkit received the card issuer's answer but could not process it: see the notebook.",
                error=True,
            )
        return 200, _message_page(
            "Authentication finished",
            "Your card issuer has answered. You can close this page and return to the notebook.",
        )


def _message_page(title: str, text: str, *, error: bool = False) -> str:
    css = " class='error'" if error else ""
    return (
        _page_head(title) + f"<h1 style='font-size:130%'>{html.escape(title)}</h1>"
        f"<p id='gwkit-message'{css}>{html.escape(text)}</p></body></html>"
    )


def _handler_for(receiver: TermUrlReceiver) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            if self.path.startswith("/start/"):
                self._send(*receiver._start_page(self.path[len("/start/") :]))
            elif self.path.startswith("/method/"):
                self._send(*receiver._method_page(self.path[len("/method/") :]))
            else:
                self._send(
                    404,
                    _message_page(
                        "Not found",
                        "gwkit's term URL receiver serves /start/<token>, /method/<token> and POST /term only.",
                        error=True,
                    ),
                )

        def do_POST(self) -> None:
            length = int(self.headers.get("content-length") or 0)
            body = self.rfile.read(min(length, 1_048_576)).decode("utf-8", "replace")
            path = self.path.split("?")[0]
            if path.startswith("/method/") and path.endswith("/done"):
                if "application/json" not in (self.headers.get("content-type") or ""):
                    self._send(415, json.dumps({"error": "send JSON"}), "application/json")
                    return
                self._send(*receiver._method_done(path[len("/method/") : -len("/done")]), "application/json")
                return
            if path != "/term":
                self._send(404, _message_page("Not found", "The term URL is /term.", error=True))
                return
            self._send(*receiver._post_back(dict(parse_qsl(body, keep_blank_values=True))))

        def _send(self, status: int, text: str, kind: str = "text/html") -> None:
            data = text.encode("utf-8")
            self.send_response(status)
            self.send_header("content-type", f"{kind}; charset=utf-8")
            self.send_header("cache-control", "no-store")
            self.send_header("content-length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, format: str, *args: Any) -> None:
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
