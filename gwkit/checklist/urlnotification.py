"""The URL notification steps (`--listener URL`, the sandbox as upstream): for the step's payment, an
online rule notifies the shop's listener of its AUTH, and the sandbox's delivery says what the
listener answered.

- `notification`: the notification, signed with the listener's password (`--listener-password`;
  unsigned without one), must be answered 2xx within the rule's timeout (8 s).
- `notification-signature` (advisory): the notification is signed with a wrong password; the
  listener should not answer it as accepted (2xx). Advisory, since a listener may answer 200 to
  anything and simply ignore a notification whose signature is wrong: the proxy cannot see what it
  did with it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from .payments import Payment, pays
from .steps import FAIL, PASS, WARNING, Step, Verdict, register

WRONG_PASSWORD = "gwkit-checklist-not-your-password"  # signs the notification-signature step's rule


def delivery_of(payment: Payment) -> Mapping[str, Any] | None:
    """The notification of the payment's first AUTH that was made (its delivery, by the step's rule)."""
    for exchange in payment.exchanges:
        if not pays(exchange):
            continue
        for record in exchange.records:
            found = payment.deliveries.get(str(record.get("transactionreference")))
            if found:
                return found[0]
    return None


def last_attempt(delivery: Mapping[str, Any]) -> Mapping[str, Any]:
    attempts = delivery.get("attempts") or [{}]
    return attempts[-1] if isinstance(attempts[-1], Mapping) else {}


def answered(attempt: Mapping[str, Any]) -> str:
    status = attempt.get("status")
    return f"HTTP {status}" if status is not None else f"no answer ({attempt.get('error') or 'none'})"


class NotificationStep(Step):
    needs_listener = True

    def unnotified(self, payment: Payment) -> Verdict:
        if payment.rule_refused:
            return self.verdict(FAIL, f"no notification: {payment.rule_refused}", payment)
        if not any(pays(exchange) for exchange in payment.exchanges):
            return self.not_seen("no AUTH seen for the payment: nothing to notify")
        return self.verdict(
            FAIL, "no notification was made for the payment's AUTH (was it refused by the gateway?)", payment
        )


@register
class Notification(NotificationStep):
    name = "notification"
    title = "URL notification to your listener"
    instruction = "make one payment in your shop: the gateway will notify your listener of it"
    why = (
        "The notification tells the shop's server about a payment even when the customer's browser never "
        "comes back (closed, lost connection): orders are fulfilled, and settlements and refunds seen. "
        "A listener that does not answer 2xx in time has the gateway retry (or give up): the shop "
        "misses the payment, or processes it twice unless it drops repeats of a notificationreference."
    )

    def judge(self, payment: Payment) -> Verdict:
        delivery = delivery_of(payment)
        if delivery is None:
            return self.unnotified(payment)
        attempt = last_attempt(delivery)
        if delivery.get("state") == "delivered":
            return self.verdict(
                PASS,
                f"your listener answered the notification {delivery.get('id')} with {answered(attempt)} "
                "within the rule's timeout",
                payment,
            )
        return self.verdict(
            FAIL,
            f"your listener did not accept the notification {delivery.get('id')}: {answered(attempt)}; "
            "a 2xx within the rule's timeout (8 s) is needed",
            payment,
        )


@register
class NotificationSignature(NotificationStep):
    name = "notification-signature"
    title = "URL notification with a wrong signature (advisory)"
    instruction = (
        "make one payment in your shop: your listener will get its notification signed with a wrong password"
    )
    why = (
        "The notification's signature (responsesitesecurity) proves it comes from the gateway. A listener "
        "that acts on an unsigned or wrongly signed notification lets anyone mark orders paid. Advisory: "
        "a listener may answer 200 to anything and simply ignore a notification whose signature is "
        "wrong, and the proxy cannot see what it did with it; refusing it (a 4xx) shows it plainly."
    )

    @property
    def rule_password(self) -> str | None:
        return WRONG_PASSWORD

    def judge(self, payment: Payment) -> Verdict:
        return replace(self._judged(payment), advisory=True)

    def _judged(self, payment: Payment) -> Verdict:
        delivery = delivery_of(payment)
        if delivery is None:
            return self.unnotified(payment)
        attempt = last_attempt(delivery)
        if delivery.get("state") == "delivered":
            return self.verdict(
                WARNING,
                f"your listener answered {answered(attempt)} to a notification with a wrong signature, as "
                "if accepted: if it ignored it, fine, but the proxy cannot see what it did with it; "
                "refuse it (4xx) to show it plainly",
                payment,
            )
        status = attempt.get("status")
        if status is not None:
            return self.verdict(
                PASS,
                f"your listener refused the notification with a wrong signature ({answered(attempt)})",
                payment,
            )
        return self.verdict(
            WARNING,
            f"your listener did not answer the notification with a wrong signature ({answered(attempt)}): "
            "refused, or down?",
            payment,
        )
