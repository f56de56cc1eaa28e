"""The unknown-outcome steps: after a bank system error, a lost answer, a timeout or a gateway 5xx,
the application cannot know whether the payment was made. It must ask (a TRANSACTIONQUERY for the
order) before paying again, and pay again only when nothing was found; cancelling passes too."""

from __future__ import annotations

from typing import Any, ClassVar

from .declines import NEVER_GIVEN, after_outcome
from .payments import Payment, cancels, pays, query_found_payment, types
from .steps import FAIL, PASS, WARNING, Step, Verdict, register

WHY = (
    "The payment may have been made. A new AUTH without asking first charges the customer twice when "
    "it was (the double-charge risk: a refund, a complaint, perhaps a chargeback). Doing nothing "
    "leaves an order unknown: money taken and no goods, or goods shipped unpaid. A TRANSACTIONQUERY "
    "for the order tells which; pay again only if nothing was made."
)


class UnknownOutcome(Step):
    """Judged alike: query first, then a new AUTH only if nothing was found."""

    what: ClassVar[str]

    def judge(self, payment: Payment) -> Verdict:
        faulted, later = after_outcome(payment)
        if faulted is None:
            return self.not_seen(f"{NEVER_GIVEN}: the outcome was never given")
        found: bool | None = None
        queried = cancelled = False
        for exchange in later:
            if "TRANSACTIONQUERY" in types(exchange):
                queried, found = True, query_found_payment(exchange)
            cancelled = cancelled or cancels(exchange)
            if not pays(exchange):
                continue
            if not queried:
                return self.verdict(
                    FAIL, _double_charge(exchange.number, "without a TRANSACTIONQUERY first"), payment
                )
            if found is not False:
                how = (
                    "although the query found it made"
                    if found
                    else "although the query failed: still unknown"
                )
                return self.verdict(FAIL, _double_charge(exchange.number, how), payment)
        if cancelled:
            return self.verdict(PASS, "queried and cancelled: nothing is left unknown", payment)
        if queried and found is False and any(pays(exchange) for exchange in later):
            return self.verdict(PASS, "queried the order, found nothing made, then paid again", payment)
        if queried:
            return self.verdict(
                PASS, "queried the order before anything else, and did not pay again", payment
            )
        return self.verdict(
            WARNING, "neither a query nor a retry: the order's outcome stays unknown to the shop", payment
        )


def _double_charge(number: int, how: str) -> str:
    return f"a new AUTH for the same order (#{number}) {how}: the double-charge risk"


def _unknown_step(name: str, title: str, what: str, fault: dict[str, Any]) -> type[UnknownOutcome]:
    step = type(
        title.replace(" ", ""),
        (UnknownOutcome,),
        {
            "name": name,
            "title": title,
            "what": what,
            "instruction": f"make one payment in your shop: {what}",
            "why": WHY,
            "fault": {**fault, "requesttypes": ["AUTH"], "count": 1},
        },
    )
    return register(step)  # type: ignore[return-value]


BankErrorMade = _unknown_step(
    "bank-error-made",
    "Bank system error, payment made (60010)",
    "the gateway will answer a bank system error (60010) although the payment was made",
    {"kind": "gateway_error", "code": 60010, "made": True},
)
BankErrorNotMade = _unknown_step(
    "bank-error-not-made",
    "Bank error, payment not made (60034)",
    "the gateway will answer 60034 (manual investigation required) and the payment was not made",
    {"kind": "gateway_error", "code": 60034, "made": False},
)
DroppedAnswer = _unknown_step(
    "dropped-answer",
    "Answer lost after the payment was made",
    "the payment is made, and its answer lost (the connection closes)",
    {"kind": "drop", "process": True},
)
Timeout = _unknown_step(
    "timeout",
    "Timeout",
    "the payment is made and no answer comes until your shop gives up waiting",
    {"kind": "timeout", "process": True},
)
GatewayError5xx = _unknown_step(
    "gateway-5xx",
    "Gateway 5xx",
    "a proxy in front of the gateway answers 503 and the payment is not made",
    {"kind": "http_status", "status": 503, "process": False},
)
