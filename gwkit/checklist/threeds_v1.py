"""The 3-D Secure version 1 steps, off by default (real test sites no longer run version 1; name them
in `--steps`): a card enrolled (Y) goes to the `acsurl` and comes back with `md` and `pares`; a card
not enrolled (N) is paid with an AUTH naming the THREEDQUERY as its parent (or in its own request)."""

from __future__ import annotations

from typing import Any, ClassVar

from ..proxy import ProxyExchange
from ..proxy.answers import objects_of, types_of
from .payments import Payment, pays
from .steps import FAIL, PASS, WARNING, Step, Verdict, register
from .threeds import QUERIES, answered_auth, naming, query_record


def with_pares(exchange: ProxyExchange) -> bool:
    return any(
        "AUTH" in types_of(obj) and obj.get("md") and obj.get("pares") for obj in objects_of(exchange.request)
    )


class VersionOne(Step):
    off_by_default = True
    outcome: ClassVar[str]

    def queried(self, payment: Payment) -> tuple[Any, list[ProxyExchange]] | Verdict:
        """The THREEDQUERY's record and the exchanges after it; else the verdict (none was sent)."""
        position = next((i for i, e in enumerate(payment.exchanges) if query_record(e)), None)
        if position is None:
            paid = next((e for e in payment.exchanges if pays(e)), None)
            if paid is None:
                return self.not_seen("no THREEDQUERY seen for the payment: the outcome was never given")
            return self.verdict(
                FAIL, f"paid without 3-D Secure (#{paid.number}): no THREEDQUERY, no liability shift", payment
            )
        return query_record(payment.exchanges[position]), payment.exchanges[position:]


@register
class VersionOneEnrolled(VersionOne):
    name = "3ds-v1-enrolled"
    title = "3-D Secure v1: card enrolled (Y)"
    instruction = (
        "make one payment with 3-D Secure in your shop: the card is enrolled; authenticate at the ACS"
    )
    why = (
        "An enrolled card's customer must authenticate at the issuer's ACS; back with the PaRes, the "
        "AUTH (md and pares) is authenticated and the liability for fraud shifts to the issuer. Paid "
        "without them, the shop bears the fraud; stopped at the ACS, the sale is lost."
    )
    fault: ClassVar[dict[str, Any] | None] = {
        "kind": "threeds",
        "outcome": "enrolled",
        "requesttypes": QUERIES,
        "count": 1,
    }

    def judge(self, payment: Payment) -> Verdict:
        queried = self.queried(payment)
        if isinstance(queried, Verdict):
            return queried
        record, later = queried
        paid = next((e for e in later[1:] if pays(e)), None)
        if paid is None:
            return self.verdict(
                FAIL, "the payment stopped at the ACS: no AUTH came back with md and pares", payment
            )
        if not with_pares(paid):
            return self.verdict(
                FAIL,
                f"paid without authentication (#{paid.number}): an AUTH without md and pares after "
                f"enrolled {record.get('enrolled')}: no liability shift",
                payment,
            )
        return self.verdict(
            PASS, f"sent to the acsurl, and back with md and pares in the AUTH (#{paid.number})", payment
        )


@register
class VersionOneNotEnrolled(VersionOne):
    name = "3ds-v1-not-enrolled"
    title = "3-D Secure v1: card not enrolled (N)"
    instruction = "make one payment with 3-D Secure in your shop: the card is not enrolled"
    why = (
        "A card not enrolled cannot be authenticated; the AUTH goes on, naming the THREEDQUERY as its "
        "parent, so the payment keeps the enrolment check (for a Visa or Mastercard the scheme may still "
        "shift the liability: an attempt). A new AUTH with the card alone loses it."
    )
    fault: ClassVar[dict[str, Any] | None] = {
        "kind": "threeds",
        "outcome": "not-enrolled",
        "requesttypes": QUERIES,
        "count": 1,
    }

    def judge(self, payment: Payment) -> Verdict:
        queried = self.queried(payment)
        if isinstance(queried, Verdict):
            return queried
        record, later = queried
        if answered_auth(later[0]):
            return self.verdict(
                PASS, "not enrolled: the AUTH went on in the THREEDQUERY's own request", payment
            )
        reference = record.get("transactionreference")
        paid = next((e for e in later[1:] if pays(e)), None)
        if paid is None:
            return self.verdict(WARNING, "not enrolled, and no AUTH followed: the sale is lost", payment)
        if naming(paid, reference):
            return self.verdict(
                PASS, f"not enrolled: the AUTH named the THREEDQUERY {reference} as its parent", payment
            )
        return self.verdict(
            FAIL,
            f"a new AUTH with the card (#{paid.number}), not naming the THREEDQUERY {reference} as its "
            "parent: the enrolment check is lost from the payment",
            payment,
        )
