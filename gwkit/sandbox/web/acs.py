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

from dataclasses import dataclass
from urllib.parse import parse_qsl

from ...interface.currency import to_major
from ...interface.errors import GwkitError
from ..gateway.core import Gateway
from ..gateway.threeds import (
    ACS_PATH,
    USED,
    BadToken,
    Session,
    issue_pares,
    mark_answered,
    session_by_md,
    signing_key,
    verify,
)
from ..http import SandboxRequest, SandboxResponse
from .pages import ANY_FRAMER, origin_of, render
from .served import Served

FORM_FIELDS = ("PaReq", "TermUrl", "MD")
FORM_TYPE = "application/x-www-form-urlencoded"
MAX_FORM_FIELDS = 32
COMPLETE_PATH = ACS_PATH + "/complete"


@dataclass(frozen=True)
class AcsButton:
    value: str  # the form value of the button
    status: str  # the PaRes status it gives
    label: str
    meaning: str


OUTCOMES: tuple[AcsButton, ...] = (
    AcsButton("Y", "Y", "Authenticate", "The cardholder proves who they are: authenticated (status Y)."),
    AcsButton("N", "N", "Fail authentication", "Wrong password: not authenticated (status N, AUTH 60022)."),
    AcsButton("A", "A", "Attempted", "The issuer cannot authenticate but proves the attempt (status A)."),
    AcsButton("U", "U", "Unavailable", "The ACS cannot authenticate right now (status U, no cavv)."),
    AcsButton("cancel", "N", "Cancel", "The cardholder gives up: answered as not authenticated (N)."),
)
OUTCOME_BY_VALUE = {o.value: o for o in OUTCOMES}

PROGRAMMES = {
    "VISA": "Verified by Visa",
    "DELTA": "Verified by Visa",
    "ELECTRON": "Verified by Visa",
    "PURCHASING": "Verified by Visa",
    "VPAY": "Verified by Visa",
    "MASTERCARD": "Mastercard SecureCode",
    "MASTERCARDDEBIT": "Mastercard SecureCode",
    "MAESTRO": "Maestro SecureCode",
    "AMEX": "American Express SafeKey",
    "JCB": "J/Secure",
}


class AcsError(GwkitError, ValueError):
    """A post the ACS refuses; the message is shown to the tester."""


def _amount(baseamount: str, currency: str) -> str:
    return f"{currency} {to_major(baseamount, currency)}"


def _checked(gateway: Gateway, conn, form: dict[str, str]) -> tuple[Session, dict[str, str]]:
    """The session a post is for, with its PaReq's content; AcsError when anything is wrong."""
    missing = [name for name in FORM_FIELDS if not form.get(name)]
    if missing:
        near = [f"'{k}'" for k in form if k.lower() in {m.lower() for m in missing} and k not in FORM_FIELDS]
        hint = f" Received {', '.join(near)}: the names are case-sensitive." if near else ""
        raise AcsError(
            f"The ACS needs the form fields PaReq, TermUrl and MD. Missing: {', '.join(missing)}.{hint}"
        )
    try:
        pareq = verify(signing_key(gateway.store, conn), "pareq", form["PaReq"])
    except BadToken:
        raise AcsError(
            "PaReq is not the value the THREEDQUERY answered as 'pareq': it was changed."
        ) from None
    session = session_by_md(conn, form["MD"])
    if session is None:
        raise AcsError(
            "MD does not belong to any 3-D Secure session: send the 'md' of the THREEDQUERY unchanged."
        )
    if pareq.get("ref") != session.transactionreference:
        raise AcsError("PaReq and MD come from different THREEDQUERY answers.")
    if form["TermUrl"] != session.termurl:
        raise AcsError("TermUrl is not the 'termurl' sent in the THREEDQUERY.")
    if session.state == USED:
        raise AcsError("This authentication has already completed a payment (an md is used once).")
    if session.expired(gateway.clock.now(session.sitereference)):
        raise AcsError(
            "This authentication started more than two hours ago on the sandbox clock; "
            "send a new THREEDQUERY."
        )
    return session, pareq


def page(template: str, status: int = 200, form_action: str = "'self'", **context) -> SandboxResponse:
    # 3-D Secure v1 has the merchant's page frame the ACS, from any origin (the stepper's iframe
    # in a notebook output too), as a real issuer's ACS is framed
    return render(
        template,
        status=status,
        framed_by=ANY_FRAMER,
        form_action=form_action,
        headers={"cache-control": "no-store"},
        **context,
    )


def error_page(message: str, status: int = 400) -> SandboxResponse:
    return page("acs_error.html", status, title="3-D Secure: request refused", message=message)


def posted_form(
    request: SandboxRequest, fields: str = "PaReq, TermUrl and MD"
) -> dict[str, str] | SandboxResponse:
    """The browser's form post, or the error page for a body that is not a UTF-8 form of a few fields
    (`fields`: what the page reads, for the message).

    (Sandbox.answer has already refused any content type but a URL-encoded form: routes.py.)"""
    try:
        return dict(
            parse_qsl(request.body.decode("utf-8"), keep_blank_values=True, max_num_fields=MAX_FORM_FIELDS)
        )
    except UnicodeDecodeError:
        return error_page(f"The form is not UTF-8 text: the page reads {fields} as UTF-8.")
    except ValueError:
        return error_page(f"The form has more than {MAX_FORM_FIELDS} fields: the page needs {fields}.")


def acs_get(sandbox: Served, request: SandboxRequest) -> SandboxResponse:
    return error_page(
        "The ACS is reached by the cardholder's browser with an HTTP POST of PaReq, TermUrl "
        "and MD (interface 4.4), not by opening its address.",
        405,
    )


def acs_page(sandbox: Served, request: SandboxRequest) -> SandboxResponse:
    gateway = sandbox.gateway
    form = posted_form(request)
    if isinstance(form, SandboxResponse):
        return form
    try:
        with gateway.store.read() as conn:
            session, pareq = _checked(gateway, conn, form)
    except AcsError as error:
        return error_page(str(error))
    programme = PROGRAMMES.get(pareq.get("type", ""), "3-D Secure")
    facts = (
        ("Merchant", pareq.get("merchant", "")),
        ("Amount", _amount(session.baseamount, session.currencyiso3a)),
        ("Card", pareq.get("pan", "")),
        ("Date", gateway.clock.now(session.sitereference).strftime("%d %B %Y %H:%M")),
    )
    return page(
        "acs_confirm.html",
        title=f"{programme}: confirm your purchase",
        issuer=pareq.get("issuer", "gwkit Test Issuer"),
        programme=programme,
        facts=facts,
        action=COMPLETE_PATH,
        hidden=[(name, form[name]) for name in FORM_FIELDS],
        outcomes=OUTCOMES,
    )


def acs_complete(sandbox: Served, request: SandboxRequest) -> SandboxResponse:
    gateway = sandbox.gateway
    form = posted_form(request)
    if isinstance(form, SandboxResponse):
        return form
    outcome = OUTCOME_BY_VALUE.get(form.get("outcome", ""))
    if outcome is None:
        return error_page(f"Choose an outcome: one of {', '.join(OUTCOME_BY_VALUE)}.")
    try:
        with gateway.store.write() as conn:  # checked and answered at once: a used session stays used
            session, pareq = _checked(gateway, conn, form)
            pares = issue_pares(signing_key(gateway.store, conn), session, outcome.status, pareq.get("type"))
            mark_answered(conn, session, outcome.status, pares, gateway.clock.now(session.sitereference))
    except AcsError as error:
        return error_page(str(error))
    # The page posts back to the merchant's term URL, so the policy lets forms go there.
    term_origin = origin_of(session.termurl)
    return page(
        "acs_return.html",
        title="3-D Secure: returning to the merchant",
        form_action=f"'self' {term_origin}" if term_origin else "'self'",
        termurl=session.termurl,
        pares=pares,
        md=form["MD"],
    )
