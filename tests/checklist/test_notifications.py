"""The URL notification steps (`--listener URL`, the sandbox as upstream): the shop's listener gets
its payment's notification from an online rule the checklist adds, answered 2xx in time; signed with
a wrong password, it should not be accepted (advisory: the proxy cannot see what a listener did)."""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from gwkit import checklist
from gwkit.checklist.shop import ShopHandle, ShopSettings, serve_shop
from gwkit.journal import Journal
from gwkit.proxy import SandboxUpstream
from gwkit.sandbox.web.notification_controls import NotificationControls

STEPS = ["notification", "notification-signature"]
CARD = {
    "pan": "4000000000000721",
    "expirydate": "12/2030",
    "securitycode": "123",
    "baseamount": "1050",
    "currencyiso3a": "GBP",
}


@dataclass
class Listened:
    handle: checklist.ChecklistHandle
    shop: ShopHandle

    def pay(self, order: str) -> dict:
        return self.shop.pay(orderreference=order, **CARD)


@pytest.fixture
def listened(box, tmp_path):
    """listened(behaviour, listener=None) -> the reference shop, its listener given to a checklist of
    the notification steps in front of the module's sandbox (the shop's own listener by default)."""
    started: list[Listened] = []

    def start(behaviour: str, listener: str | None = None) -> Listened:
        settings = ShopSettings("http://127.0.0.1:9", behaviour=behaviour)  # its gateway: set below
        shop = serve_shop(settings)
        steps = checklist.steps_named(
            STEPS,
            listener=listener or f"{shop.base_url}/notifications",
            listener_password=settings.notification_password,
        )
        handle = checklist.start(SandboxUpstream(box), steps=steps, journal=Journal(tmp_path / "j.db"))
        settings.gateway_url = handle.base_url  # the shop pays through the checklist
        started.append(Listened(handle, shop))
        return started[-1]

    yield start
    for each in started:
        each.shop.stop()
        each.handle.stop()


def test_the_shop_done_right_answers_its_notification_and_refuses_a_wrong_signature(listened, box):
    run = listened("right")
    run.pay("notified-1")
    run.pay("notified-2")
    result = run.handle.finish()

    assert result.passed, result.summary()
    notified, signature = result.verdict("notification"), result.verdict("notification-signature")
    notifications = NotificationControls(box.gateway, box.default_account)
    (delivery,) = notifications.deliveries(
        transactionreference=notified.evidence[0].records[0]["transactionreference"]
    )
    assert notified.status == "pass" and not notified.advisory
    assert notified.reason == (
        f"your listener answered the notification {delivery['id']} with HTTP 200 within the rule's timeout"
    )
    assert signature.status == "pass" and signature.advisory
    assert signature.reason == "your listener refused the notification with a wrong signature (HTTP 403)"
    assert notifications.rules() == []  # each rule went with its payment: nothing else is notified


def test_the_naive_listener_accepts_a_wrong_signature_an_advisory_warning(listened):
    run = listened("naive")
    run.pay("naive-1")
    run.pay("naive-2")
    result = run.handle.finish()

    signature = result.verdict("notification-signature")
    assert result.passed  # advisory: a listener may answer 200 and ignore it
    assert (signature.status, signature.advisory) == ("warning", True)
    assert signature.reason.startswith(
        "your listener answered HTTP 200 to a notification with a wrong signature, as if accepted: "
        "if it ignored it, fine, but the proxy cannot see what it did with it"
    )
    assert "(advisory)" in signature.explain()


def test_a_listener_that_does_not_answer_fails_naming_the_attempt(listened):
    run = listened("right", listener="http://127.0.0.1:9/nobody-listens")
    run.pay("unheard-1")
    verdict = run.handle.next()

    assert verdict is not None and verdict.status == "fail"
    assert verdict.reason.startswith("your listener did not accept the notification nt")
    assert "no answer (" in verdict.reason and verdict.reason.endswith(
        "a 2xx within the rule's timeout (8 s) is needed"
    )


def test_the_notification_steps_run_only_given_a_listener():
    default = [step.name for step in checklist.steps_named()]
    listening = [step.name for step in checklist.steps_named(listener="http://127.0.0.1:8000/hook")]

    assert "notification" not in default
    assert listening[-3:] == ["notification", "notification-signature", "validation"]
    with pytest.raises(
        checklist.ChecklistError, match="--steps notification-signature: needs --listener URL"
    ):
        checklist.steps_named(["notification-signature"])


def test_a_rule_the_sandbox_refuses_is_named_in_the_verdict(listened):
    run = listened("right", listener="ftp://127.0.0.1/hook")
    run.pay("refused-1")
    verdict = run.handle.next()

    assert verdict is not None and verdict.status == "fail"
    assert verdict.reason.startswith(
        "no notification: the sandbox refused the rule for ftp://127.0.0.1/hook: "
    )
    assert "url" in verdict.reason
