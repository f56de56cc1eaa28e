"""The sandbox's simulated issuer for EMV 3-D Secure (v2): the 3DS method page and the challenge
page (the ACS), and the gateway's method notification page. The flow is gateway/threeds_v2.py's.

    POST /acs/v2/method          threeDSMethodData (base64 JSON: threeDSServerTransID,
                                 threeDSMethodNotificationURL), as the browser posts it in a hidden
                                 frame: a page that posts threeDSMethodData on to the notification
                                 URL by itself (never, for the "3DS method not completed" cards)
    POST /acs/v2/method/notify   threeDSMethodData: records "method completed" and tells the frame's
                                 parent (the makers' browser library listens: TP_METHOD_URL_RESPONSE)
    POST /acs/v2                 creq (the THREEDQUERY's threedpayload), threeDSSessionData: the
                                 challenge, with a one-time code and buttons
    POST /acs/v2/complete        the cardholder's answer: a page that tells the frame's parent
                                 (TP_CHALLENGE_RESPONSE) and posts cres and threeDSSessionData back to
                                 the THREEDQUERY's termurl by itself

These are browser form posts, as a real issuer's pages take them (routes.py says why they may be):
each checks a transaction ID the gateway made, so a forged post changes nothing but what the
cardholder of that transaction could. Anything missing, changed or out of date is refused with a
page that says what is wrong (HTTP 400), and nothing changes. The selectors a shop's end-to-end
tests click are listed in docs/threeds.md ("v2 in the sandbox").
"""

from __future__ import annotations

import base64
import json
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from ...interface.currency import to_major
from ..gateway import threeds, threeds_v2
from ..gateway.core import Gateway
from ..gateway.payments import MERCHANT
from ..gateway.threeds_v2 import V2Session
from ..http import SandboxRequest, SandboxResponse
from .acs import PROGRAMMES, AcsError, error_page, page, posted_form
from .pages import origin_of
from .served import Served

COMPLETE_PATH = threeds_v2.ACS_PATH + "/complete"
FORM_PATHS = (threeds_v2.METHOD_PATH, threeds_v2.NOTIFY_PATH, threeds_v2.ACS_PATH, COMPLETE_PATH)
MAX_SESSION_DATA = 1024  # threeDSSessionData: the requestor's own, returned unchanged
SUBMIT, FAIL, CANCEL = "submit", "fail", "cancel"
METHOD_FIELDS = "threeDSMethodData"
CHALLENGE_FIELDS = "creq and threeDSSessionData (and the cardholder's answer)"


@dataclass(frozen=True)
class Challenge:
    """A checked challenge post: its session and the fields it came with."""

    session: V2Session
    termurl: str
    baseamount: str
    currencyiso3a: str
    creq: str
    session_data: str


def _printable(text: str) -> bool:
    return all(" " <= c <= "~" for c in text)


def _method_data(form: dict[str, str]) -> dict[str, Any]:
    data = threeds_v2.decode_json(form.get("threeDSMethodData"))
    if data is None or not isinstance(data.get("threeDSServerTransID"), str):
        raise AcsError(
            "The 3DS method needs threeDSMethodData: base64 of JSON with threeDSServerTransID "
            "(the THREEDLOOKUP's threedstransactionid) and threeDSMethodNotificationURL."
        )
    return data


def _method_session(gateway: Gateway, conn: Any, data: dict[str, Any]) -> V2Session:
    session = threeds_v2.session_by_id(conn, data["threeDSServerTransID"])
    if session is None or session.method == threeds_v2.METHOD_NONE:
        raise AcsError(
            "threeDSServerTransID names no THREEDLOOKUP that answered a threedmethodurl: "
            "send the look-up's threedstransactionid unchanged."
        )
    if session.expired(gateway.clock.now(session.sitereference)):
        raise AcsError(
            "This look-up started more than two hours ago on the sandbox clock; send a new THREEDLOOKUP."
        )
    return session


def method_page(sandbox: Served, request: SandboxRequest) -> SandboxResponse:
    """The issuer's 3DS method page: it posts on to the gateway's notification URL at once."""
    form = posted_form(request, METHOD_FIELDS)
    if isinstance(form, SandboxResponse):
        return form
    try:
        data = _method_data(form)
        with sandbox.gateway.store.read() as conn:
            session = _method_session(sandbox.gateway, conn, data)
        notification = data.get("threeDSMethodNotificationURL")
        if not isinstance(notification, str) or urlsplit(notification).path != threeds_v2.NOTIFY_PATH:
            raise AcsError(
                "threeDSMethodNotificationURL must be the THREEDLOOKUP's threednotificationurl, unchanged."
            )
    except AcsError as error:
        return error_page(str(error))
    silent = session.threedscase == threeds_v2.SILENT_METHOD
    target = origin_of(notification)
    return page(
        "acs_v2_method.html",
        title="3-D Secure: the issuer's 3DS method",
        form_action=f"'self' {target}" if target and not silent else "'self'",
        silent=silent,
        notification=notification,
        method_data=threeds_v2.encode_json({"threeDSServerTransID": session.threedstransactionid}),
        transaction_id=session.threedstransactionid,
    )


def method_notification(sandbox: Served, request: SandboxRequest) -> SandboxResponse:
    """The gateway's notification page: "method completed", told to the frame's parent too."""
    form = posted_form(request, METHOD_FIELDS)
    if isinstance(form, SandboxResponse):
        return form
    try:
        data = _method_data(form)
        with sandbox.gateway.store.write() as conn:
            session = _method_session(sandbox.gateway, conn, data)
            threeds_v2.mark_method_completed(conn, session)
    except AcsError as error:
        return error_page(str(error))
    message = {
        "threeDSServerTransID": session.threedstransactionid,
        "actionCode": "SUCCESS",
        "errorDescription": "3DS method completed",
    }
    return page(
        "acs_v2_notify.html",
        title="3-D Secure: 3DS method completed",
        transaction_id=session.threedstransactionid,
        message_type="TP_METHOD_URL_RESPONSE",
        message=_btoa_json(message),
    )


def _btoa_json(data: dict[str, Any]) -> str:
    """As the browser's btoa(JSON.stringify(data)): what the makers' library decodes with atob."""
    return base64.b64encode(json.dumps(data, separators=(",", ":")).encode("ascii")).decode("ascii")


def _checked_challenge(gateway: Gateway, conn: Any, form: dict[str, str]) -> Challenge:
    """The challenge a post is for; AcsError when anything is wrong."""
    creq_text = form.get("creq", "")
    creq = threeds_v2.decode_json(creq_text)
    if creq is None or creq.get("messageType") != "CReq":
        raise AcsError(
            "The ACS needs the form field creq: the THREEDQUERY's threedpayload, unchanged (a base64url CReq)."
        )
    session_data = form.get("threeDSSessionData", "")
    if len(session_data) > MAX_SESSION_DATA or not _printable(session_data):
        raise AcsError(f"threeDSSessionData must be printable text of at most {MAX_SESSION_DATA} characters.")
    session = threeds_v2.session_by_id(conn, creq.get("threeDSServerTransID"))
    if session is None or session.acstransid is None or creq.get("acsTransID") != session.acstransid:
        raise AcsError(
            "creq names no challenge of the sandbox: send the THREEDQUERY's threedpayload unchanged."
        )
    if session.state == threeds_v2.USED:
        raise AcsError("This authentication has already completed a payment.")
    v1 = threeds.session_by_reference(conn, session.transactionreference or "")
    if v1 is None or session.expired(gateway.clock.now(session.sitereference)):
        raise AcsError(
            "This authentication started more than two hours ago on the sandbox clock; send a new THREEDQUERY."
        )
    return Challenge(session, v1.termurl, v1.baseamount, v1.currencyiso3a, creq_text, session_data)


def acs_get(sandbox: Served, request: SandboxRequest) -> SandboxResponse:
    return error_page(
        "This page is reached by the cardholder's browser with an HTTP POST (of creq, or of "
        "threeDSMethodData for the 3DS method), not by opening its address.",
        405,
    )


def challenge_page(sandbox: Served, request: SandboxRequest) -> SandboxResponse:
    gateway = sandbox.gateway
    form = posted_form(request, CHALLENGE_FIELDS)
    if isinstance(form, SandboxResponse):
        return form
    try:
        with gateway.store.read() as conn:
            challenge = _checked_challenge(gateway, conn, form)
            session = challenge.session
            maskedpan, paymenttype = threeds_v2.card_shown(conn, session)
            code = threeds_v2.one_time_code(gateway.store, conn, session)
    except AcsError as error:
        return error_page(str(error))
    programme = PROGRAMMES.get(paymenttype or "", "3-D Secure")
    facts = (
        ("Merchant", MERCHANT["merchantname"]),
        ("Amount", f"{challenge.currencyiso3a} {to_major(challenge.baseamount, challenge.currencyiso3a)}"),
        ("Card", maskedpan),
        ("Date", gateway.clock.now(session.sitereference).strftime("%d %B %Y %H:%M")),
    )
    return page(
        "acs_v2_challenge.html",
        title=f"{programme}: confirm your purchase",
        programme=programme,
        version=session.threedversion or "",
        facts=facts,
        code=code,
        case=session.threedscase or "",
        action=COMPLETE_PATH,
        hidden=[("creq", challenge.creq), ("threeDSSessionData", challenge.session_data)],
    )


def _answer(
    gateway: Gateway, conn: Any, session: V2Session, form: dict[str, str]
) -> tuple[str, dict[str, str]]:
    """(session outcome, the message posted back) for the cardholder's choice."""
    if session.threedscase == threeds_v2.ERROR_CHALLENGE:
        return threeds_v2.ERRO, threeds_v2.erro_of(session)
    choice = form.get("outcome")
    if choice == CANCEL:
        return "N", threeds_v2.cres_of(session, "N", cancelled=True)
    right = form.get("otp", "").strip() == threeds_v2.one_time_code(gateway.store, conn, session)
    status = "Y" if choice == SUBMIT and right and session.threedscase != threeds_v2.FAILED_CHALLENGE else "N"
    return status, threeds_v2.cres_of(session, status)


_ACTION_CODES = {"Y": "SUCCESS", "N": "FAILURE", threeds_v2.ERRO: "ERROR"}


def challenge_complete(sandbox: Served, request: SandboxRequest) -> SandboxResponse:
    gateway = sandbox.gateway
    form = posted_form(request, CHALLENGE_FIELDS)
    if isinstance(form, SandboxResponse):
        return form
    if form.get("outcome") not in (SUBMIT, FAIL, CANCEL):
        return error_page(f"Choose an outcome: one of {SUBMIT}, {FAIL}, {CANCEL}.")
    try:
        with gateway.store.write() as conn:  # checked and answered at once: a used session stays used
            challenge = _checked_challenge(gateway, conn, form)
            status, message = _answer(gateway, conn, challenge.session, form)
            cres = threeds_v2.encode_json(message)
            now = gateway.clock.now(challenge.session.sitereference)
            threeds_v2.mark_answered(conn, challenge.session, status, cres, now)
    except AcsError as error:
        return error_page(str(error))
    told = {
        "threeDSServerTransID": challenge.session.threedstransactionid,
        "actionCode": _ACTION_CODES[status],
        "errorDescription": message.get("errorDescription", "Challenge completed"),
        "cres": message,
    }
    term_origin = origin_of(challenge.termurl)
    return page(
        "acs_v2_return.html",
        title="3-D Secure: returning to the merchant",
        form_action=f"'self' {term_origin}" if term_origin else "'self'",
        termurl=challenge.termurl,
        cres=cres,
        session_data=challenge.session_data,
        message_type="TP_CHALLENGE_RESPONSE",
        message=_btoa_json(told),
    )
