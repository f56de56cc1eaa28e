"""The decline steps: a card declined (70000) and a soft decline (71000, the issuer asks for 3-D Secure)."""

from __future__ import annotations

from typing import Any, ClassVar

from ..proxy import ProxyExchange
from .payments import Payment, pays, types, with_3ds
from .steps import FAIL, PASS, WARNING, Step, Verdict, register

# The outcome is armed for a request whose one type is AUTH (the fault book's selector); an AUTH sent
# combined with a THREEDQUERY in one object is not given it in this phase.
NEVER_GIVEN = "no AUTH of its own seen for the payment (THREEDQUERY + AUTH in one object is not armed)"


def after_outcome(payment: Payment) -> tuple[ProxyExchange | None, list[ProxyExchange]]:
    """The AUTH that got the armed outcome, and every exchange of the payment after it."""
    for position, exchange in enumerate(payment.exchanges):
        if pays(exchange) and exchange.fault:
            return exchange, payment.exchanges[position + 1 :]
    return None, []


@register
class Decline(Step):
    name = "decline"
    title = "Decline (70000)"
    instruction = "make one payment in your shop: it will be declined (70000)"
    why = (
        "A decline is the bank's final answer. Sending the same order again is declined again, costs a "
        "fee per attempt, and repeated attempts on a declined card look like card testing to the "
        "schemes. The customer should be told, and choose another card."
    )
    fault: ClassVar[dict[str, Any] | None] = {
        "kind": "gateway_error",
        "code": 70000,
        "requesttypes": ["AUTH"],
        "count": 1,
    }

    def judge(self, payment: Payment) -> Verdict:
        declined, later = after_outcome(payment)
        if declined is None:
            return self.not_seen(f"{NEVER_GIVEN}: the decline was never given")
        retries = [exchange for exchange in later if pays(exchange)]
        if retries:
            numbers = ", ".join(f"#{e.number}" for e in retries)
            return self.verdict(
                FAIL,
                f"the declined order was sent again automatically ({numbers}): a decline is final",
                payment,
            )
        return self.verdict(PASS, "declined, and not retried: the customer is told", payment)


@register
class SoftDecline(Step):
    name = "soft-decline"
    title = "Soft decline (71000)"
    instruction = "make one payment in your shop: the issuer will ask for 3-D Secure (soft decline, 71000)"
    why = (
        "A soft decline means the issuer wants strong customer authentication. Retried with 3-D Secure, "
        "the payment usually goes through and the liability for fraud shifts to the issuer; retried "
        "without it, it is declined again (or, worse, authorised with the shop liable for fraud). Not "
        "retried at all, the sale is lost."
    )
    fault: ClassVar[dict[str, Any] | None] = {
        "kind": "gateway_error",
        "code": 71000,
        "requesttypes": ["AUTH"],
        "count": 1,
    }

    def judge(self, payment: Payment) -> Verdict:
        declined, later = after_outcome(payment)
        if declined is None:
            return self.not_seen(f"{NEVER_GIVEN}: the soft decline was never given")
        authenticated = False
        for exchange in later:
            authenticated = authenticated or "THREEDQUERY" in types(exchange)
            if pays(exchange) and not (authenticated or with_3ds(exchange)):
                return self.verdict(
                    FAIL,
                    f"retried without 3-D Secure (#{exchange.number}): the issuer asked for it; declined "
                    "again, or authorised with no liability shift",
                    payment,
                )
        if authenticated:
            return self.verdict(PASS, "retried with 3-D Secure (a THREEDQUERY before any new AUTH)", payment)
        return self.verdict(
            WARNING, "not retried: the customer is not offered 3-D Secure, the sale is lost", payment
        )
