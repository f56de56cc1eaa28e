"""The sandbox's simulated issuer ACS (interface 4.4), served at the THREEDQUERY's `acsurl`.

    POST /acs/v1            PaReq, TermUrl, MD (names case-sensitive), as the merchant page posts
                            them: an issuer-like page where the tester chooses what the cardholder does
    POST /acs/v1/complete   the chosen outcome: a page that posts PaRes and MD back to TermUrl by
                            itself (a Continue button does it when JavaScript is off)

Outcomes (PaRes `status`): Y authenticated; N not authenticated; A attempted (the issuer could
not authenticate but proves the attempt); U authentication unavailable; "cancel" is the
cardholder giving up, answered as N. Anything missing, changed or out of date is refused with a
page that says what is wrong (HTTP 400), and nothing changes.
"""

from __future__ import annotations

import html
from dataclasses import dataclass

from ...interface.currency import to_major
from ..gateway.core import Gateway
from ..gateway.threeds import (ACS_PATH, USED, BadToken, Session, issue_pares, mark_answered, session_by_md,
                               signing_key, verify)
from ..http import SandboxRequest, SandboxResponse
from .pages import html_document
from .served import Served

FORM_FIELDS = ("PaReq", "TermUrl", "MD")
COMPLETE_PATH = ACS_PATH + "/complete"


@dataclass(frozen=True)
class Outcome:
    value: str  # the form value of the button
    status: str  # the PaRes status it gives
    label: str
    meaning: str


OUTCOMES: tuple[Outcome, ...] = (
    Outcome("Y", "Y", "Authenticate", "The cardholder proves who they are: authenticated (status Y)."),
    Outcome("N", "N", "Fail authentication", "Wrong password: not authenticated (status N, AUTH 60022)."),
    Outcome("A", "A", "Attempted", "The issuer cannot authenticate but proves the attempt (status A)."),
    Outcome("U", "U", "Unavailable", "The ACS cannot authenticate right now (status U, no cavv)."),
    Outcome("cancel", "N", "Cancel", "The cardholder gives up: answered as not authenticated (N)."),
)
OUTCOME_BY_VALUE = {o.value: o for o in OUTCOMES}

_PROGRAMMES = {"VISA": "Verified by Visa", "DELTA": "Verified by Visa", "ELECTRON": "Verified by Visa",
               "PURCHASING": "Verified by Visa", "VPAY": "Verified by Visa",
               "MASTERCARD": "Mastercard SecureCode", "MASTERCARDDEBIT": "Mastercard SecureCode",
               "MAESTRO": "Maestro SecureCode", "AMEX": "American Express SafeKey", "JCB": "J/Secure"}


class AcsError(ValueError):
    """A post the ACS refuses; the message is shown to the tester."""


def _amount(baseamount: str, currency: str) -> str:
    return f"{currency} {to_major(baseamount, currency)}"


def _checked(gateway: Gateway, conn, form: dict[str, str]) -> tuple[Session, dict[str, str]]:
    """The session a post is for, with its PaReq's content; AcsError when anything is wrong."""
    missing = [name for name in FORM_FIELDS if not form.get(name)]
    if missing:
        near = [f"'{k}'" for k in form if k.lower() in {m.lower() for m in missing} and k not in FORM_FIELDS]
        hint = f" Received {', '.join(near)}: the names are case-sensitive." if near else ""
        raise AcsError(f"The ACS needs the form fields PaReq, TermUrl and MD. Missing: {', '.join(missing)}.{hint}")
    try:
        pareq = verify(signing_key(gateway.store, conn), "pareq", form["PaReq"])
    except BadToken:
        raise AcsError("PaReq is not the value the THREEDQUERY answered as 'pareq': it was changed.") from None
    session = session_by_md(conn, form["MD"])
    if session is None:
        raise AcsError("MD does not belong to any 3-D Secure session: send the 'md' of the THREEDQUERY "
                       "unchanged.")
    if pareq.get("ref") != session.transactionreference:
        raise AcsError("PaReq and MD come from different THREEDQUERY answers.")
    if form["TermUrl"] != session.termurl:
        raise AcsError("TermUrl is not the 'termurl' sent in the THREEDQUERY.")
    if session.state == USED:
        raise AcsError("This authentication has already completed a payment (an md is used once).")
    if session.expired(gateway.clock.now(session.sitereference)):
        raise AcsError("This authentication started more than two hours ago on the sandbox clock; "
                       "send a new THREEDQUERY.")
    return session, pareq


_STYLE = ("body{font-family:system-ui,sans-serif;max-width:32em;margin:2em auto;padding:0 1em;"
          "color:#1d2733}.box{border:1px solid #c5ccd6;border-radius:8px;padding:1em 1.25em}"
          "dt{color:#5b6675;font-size:90%}dd{margin:0 0 .6em 0;font-weight:600}"
          "button{font-size:100%;margin:.25em .25em .25em 0;padding:.45em .9em;border-radius:6px;"
          "border:1px solid #6b7788;background:#f4f6f9;cursor:pointer}button.primary{background:#1f5fbf;"
          "color:white;border-color:#1f5fbf}.error{border-left:4px solid #b00020;background:#fdecee;"
          "padding:.75em 1em}small{color:#5b6675}")


def _page(title: str, body: str, status: int = 200) -> SandboxResponse:
    return SandboxResponse.html(html_document(title, body, _STYLE), status, headers={"cache-control": "no-store"})


def _error_page(message: str, status: int = 400) -> SandboxResponse:
    return _page("3-D Secure: request refused", "<h1>3-D Secure: request refused</h1>"
                 f"<p class='error' id='acs-error'>{html.escape(message)}</p>"
                 "<p><small>gwkit sandbox ACS (simulated issuer). Nothing was changed.</small></p>", status)


def _hidden(form: dict[str, str]) -> str:
    return "".join(f"<input type='hidden' name='{name}' value='{html.escape(form[name], quote=True)}'>"
                   for name in FORM_FIELDS)


def acs_get(sandbox: Served, request: SandboxRequest) -> SandboxResponse:
    return _error_page("The ACS is reached by the cardholder's browser with an HTTP POST of PaReq, TermUrl "
                       "and MD (interface 4.4), not by opening its address.", 405)


def acs_page(sandbox: Served, request: SandboxRequest) -> SandboxResponse:
    gateway = sandbox.gateway
    form = request.form()
    try:
        with gateway.store.read() as conn:
            session, pareq = _checked(gateway, conn, form)
    except AcsError as error:
        return _error_page(str(error))
    programme = _PROGRAMMES.get(pareq.get("type", ""), "3-D Secure")
    facts = (("Merchant", pareq.get("merchant", "")), ("Amount", _amount(session.baseamount, session.currencyiso3a)),
             ("Card", pareq.get("pan", "")), ("Date", gateway.clock.now(session.sitereference).strftime("%d %B %Y %H:%M")))
    rows = "".join(f"<dt>{k}</dt><dd id='acs-{k.lower()}'>{html.escape(v)}</dd>" for k, v in facts)
    buttons = "".join(
        f"<button type='submit' name='outcome' value='{o.value}' id='outcome-{o.value}' "
        f"class='{'primary' if o.value == 'Y' else ''}' title='{html.escape(o.meaning, quote=True)}'>"
        f"{html.escape(o.label)}</button>" for o in OUTCOMES)
    meanings = "".join(f"<li><b>{html.escape(o.label)}</b>: {html.escape(o.meaning)}</li>" for o in OUTCOMES)
    body = (f"<div class='box'><h1 style='font-size:130%'>{html.escape(pareq.get('issuer', 'gwkit Test Issuer'))}"
            f"</h1><p><b>{html.escape(programme)}</b> (simulated by the gwkit sandbox)</p>"
            "<p>Please confirm this purchase.</p>"
            f"<dl>{rows}</dl>"
            f"<form method='post' action='{COMPLETE_PATH}' id='acs-form'>{_hidden(form)}{buttons}</form>"
            f"<details><summary><small>What the buttons do</small></summary><ul>{meanings}</ul></details></div>")
    return _page(f"{programme}: confirm your purchase", body)


def acs_complete(sandbox: Served, request: SandboxRequest) -> SandboxResponse:
    gateway = sandbox.gateway
    form = request.form()
    outcome = OUTCOME_BY_VALUE.get(form.get("outcome", ""))
    if outcome is None:
        return _error_page(f"Choose an outcome: one of {', '.join(OUTCOME_BY_VALUE)}.")
    try:
        with gateway.store.write() as conn:  # checked and answered at once: a used session stays used
            session, pareq = _checked(gateway, conn, form)
            pares = issue_pares(signing_key(gateway.store, conn), session, outcome.status, pareq.get("type"))
            mark_answered(conn, session, outcome.status, pares, gateway.clock.now(session.sitereference))
    except AcsError as error:
        return _error_page(str(error))
    action = html.escape(session.termurl, quote=True)
    body = ("<p>Returning you to the merchant...</p>"
            f"<form method='post' action='{action}' id='acs-return'>"
            f"<input type='hidden' name='PaRes' value='{html.escape(pares, quote=True)}'>"
            f"<input type='hidden' name='MD' value='{html.escape(form['MD'], quote=True)}'>"
            "<noscript><p>JavaScript is off: press Continue to return to the merchant.</p>"
            "<button type='submit' id='acs-continue'>Continue</button></noscript></form>"
            "<script>document.getElementById('acs-return').submit();</script>")
    return _page("3-D Secure: returning to the merchant", body)
