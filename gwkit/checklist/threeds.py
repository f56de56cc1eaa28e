"""The EMV 3-D Secure (version 2) steps: the issuer asks for a challenge on the next THREEDQUERY
(`3ds-v2`), or says the cardholder is not authenticated (`3ds-failed`: no AUTH without 3-D Secure after).

The shop must send the customer to the issuer's ACS (`acsurl`) with the `creq`, and, once the
customer is back, send the AUTH naming the THREEDQUERY with the browser library's `threedresponse`.
The browser's part never passes through the proxy: it is judged from what the sandbox's ACS saw of
that THREEDQUERY (`GET /_sandbox/threeds/{reference}`, read by the ChecklistProxy when the AUTH came).
A THREEDQUERY answered frictionless (no `acsurl`) continues: its AUTH in the same answer, or after it.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar

from ..proxy import ProxyExchange
from ..proxy.answers import objects_of, types_of
from .payments import Payment, pays
from .steps import FAIL, PASS, WARNING, Step, Verdict, register

# The proxy selects a fault by each object's request types as one (`THREEDQUERY+AUTH`): the
# THREEDQUERY alone, or with the AUTH after it in the same object.
QUERIES = ["THREEDQUERY", "THREEDQUERY+AUTH"]
UNAUTHENTICATED = "60022"  # the AUTH refused: the cardholder not authenticated
ANSWERED_AT_ACS = ("answered", "used")  # the ACS session's states once the cardholder answered


def query_record(exchange: ProxyExchange) -> Mapping[str, Any] | None:
    """The THREEDQUERY record of an answer, if it has one."""
    return next((r for r in exchange.records if r.get("requesttypedescription") == "THREEDQUERY"), None)


def answered_auth(exchange: ProxyExchange) -> bool:
    """Did this answer carry an AUTH record (the AUTH sent in the THREEDQUERY's own object)?"""
    return any(r.get("requesttypedescription") == "AUTH" for r in exchange.records)


def naming(exchange: ProxyExchange, reference: Any) -> list[Mapping[str, Any]]:
    """The AUTH objects of a request that name the THREEDQUERY `reference` as their parent."""
    return [
        obj
        for obj in objects_of(exchange.request)
        if "AUTH" in types_of(obj) and obj.get("parenttransactionreference") == reference
    ]


@register
class ThreeDSecureV2(Step):
    name = "3ds-v2"
    title = "EMV 3-D Secure: a challenge"
    instruction = (
        "make one payment with 3-D Secure in your shop: the issuer will ask for a challenge; "
        "complete it as the customer"
    )
    why = (
        "An issuer may ask the cardholder to prove who they are (a challenge at its ACS). Sent there "
        "with the creq and back with the threedresponse, the payment is authenticated and the "
        "liability for fraud shifts to the issuer. A shop that stops at the challenge loses the sale; "
        "one that pays without it bears the fraud, and in Europe (strong customer authentication) is "
        "declined."
    )
    fault: ClassVar[dict[str, Any] | None] = {
        "kind": "threeds",
        "outcome": "challenge",
        "requesttypes": QUERIES,
        "count": 1,
    }

    def judge(self, payment: Payment) -> Verdict:
        position = next((i for i, e in enumerate(payment.exchanges) if query_record(e)), None)
        if position is None:
            paid = next((e for e in payment.exchanges if pays(e)), None)
            if paid is None:
                return self.not_seen("no THREEDQUERY seen for the payment: the challenge was never given")
            return self.verdict(
                FAIL,
                f"paid without 3-D Secure (#{paid.number}): no THREEDQUERY, so no authentication and no "
                "liability shift",
                payment,
            )
        queried = payment.exchanges[position]
        record = query_record(queried) or {}
        reference = record.get("transactionreference")
        later = payment.exchanges[position + 1 :]
        if not record.get("acsurl"):
            return self._frictionless(payment, queried, later, reference)
        paid = next((e for e in later if pays(e)), None)
        if paid is None:
            return self.verdict(
                FAIL,
                "the payment stopped at the challenge: no AUTH came back with a threedresponse (the "
                "customer was not sent to the acsurl with the creq, or the return page sent nothing)",
                payment,
            )
        if not any(obj.get("threedresponse") for obj in naming(paid, reference)):
            return self.verdict(
                FAIL,
                f"paid without the challenge (#{paid.number}): an AUTH without the threedresponse of "
                f"THREEDQUERY {reference}: no liability shift",
                payment,
            )
        return self._browser_part(payment, paid, reference)

    def _frictionless(
        self, payment: Payment, queried: ProxyExchange, later: list[ProxyExchange], reference: Any
    ) -> Verdict:
        if answered_auth(queried) or any(naming(e, reference) for e in later):
            return self.verdict(PASS, "frictionless: authenticated without a challenge, and paid", payment)
        return self.verdict(WARNING, "frictionless, but no AUTH followed: the sale is lost", payment)

    def _browser_part(self, payment: Payment, paid: ProxyExchange, reference: Any) -> Verdict:
        session = payment.acs.get(str(reference))
        if session is None:
            return self.verdict(
                WARNING,
                f"the AUTH came with a threedresponse (#{paid.number}); the browser's part is not seen: "
                "only a sandbox upstream tells what its ACS saw",
                payment,
            )
        if session.get("state") not in ANSWERED_AT_ACS:
            return self.verdict(
                FAIL,
                f"the AUTH came with a threedresponse (#{paid.number}), but the issuer's ACS never had "
                "the challenge answered: the customer was not sent to the acsurl with the creq",
                payment,
            )
        return self.verdict(
            PASS,
            f"the challenge was opened at the acsurl with the creq and answered (transStatus "
            f"{session.get('transstatus')}), and the AUTH came with the threedresponse (#{paid.number})",
            payment,
        )


def unauthenticated(exchange: ProxyExchange) -> bool:
    """Did the answer say the cardholder was not authenticated (an AUTH refused 60022)?"""
    return any(
        r.get("requesttypedescription") == "AUTH" and str(r.get("errorcode")) == UNAUTHENTICATED
        for r in exchange.records
    )


def without_3ds(exchange: ProxyExchange) -> bool:
    """An AUTH that carries no 3-D Secure: no THREEDQUERY in its object, no results of one, no parent."""
    return any(
        "AUTH" in types_of(obj)
        and "THREEDQUERY" not in types_of(obj)
        and not any(obj.get(name) for name in ("threedresponse", "pares", "md", "parenttransactionreference"))
        for obj in objects_of(exchange.request)
    )


@register
class ThreeDSecureFailed(Step):
    name = "3ds-failed"
    title = "3-D Secure: authentication failed"
    instruction = (
        "make one payment with 3-D Secure in your shop: the issuer will say the cardholder is not "
        "authenticated"
    )
    why = (
        "When the issuer says the cardholder is not authenticated, the gateway refuses the AUTH "
        "(60022). Paying the same card again without 3-D Secure goes around the issuer's answer: if it "
        "is authorised, the shop bears any fraud (no liability shift), and it is how card testers get "
        "through. The customer should be told, and may try another card."
    )
    fault: ClassVar[dict[str, Any] | None] = {
        "kind": "threeds",
        "outcome": "failed",
        "requesttypes": QUERIES,
        "count": 1,
    }

    def judge(self, payment: Payment) -> Verdict:
        position = next((i for i, e in enumerate(payment.exchanges) if query_record(e)), None)
        if position is None:
            return self.not_seen(
                "no THREEDQUERY seen for the payment: the failed authentication was never given"
            )
        later = payment.exchanges[position:]
        failed = next((i for i, e in enumerate(later) if unauthenticated(e)), None)
        if failed is None:
            return self.verdict(
                WARNING, "no AUTH was refused as unauthenticated: the shop never asked to pay", payment
            )
        around = next((e for e in later[failed + 1 :] if pays(e) and without_3ds(e)), None)
        if around is not None:
            return self.verdict(
                FAIL,
                f"paid without 3-D Secure after the authentication failed (#{around.number}): around the "
                "issuer's answer, with no liability shift",
                payment,
            )
        return self.verdict(PASS, "the failed authentication was final: no AUTH without 3-D Secure", payment)
