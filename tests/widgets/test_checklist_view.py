"""`ChecklistView` over a real loopback run: a checklist in front of the module's sandbox, and the
reference shop paying through it, driven through the view's public surface (.value, .click())."""

from __future__ import annotations

import pytest

from gwkit import checklist
from gwkit.checklist.shop import ShopSettings, serve_shop
from gwkit.proxy import SandboxUpstream
from gwkit.widgets import ChecklistView
from gwkit.widgets.checklist_view import state_words

CARD = {
    "pan": "4000000000000721",
    "expirydate": "12/2030",
    "securitycode": "123",
    "baseamount": "1050",
    "currencyiso3a": "GBP",
}


@pytest.fixture
def run(sandbox):
    """run(behaviour, steps) -> (handle, shop): a checklist on loopback and the shop paying through it."""
    started = []

    def start(behaviour: str, steps: list[str]):
        handle = checklist.start(SandboxUpstream(sandbox.sandbox), steps=checklist.steps_named(steps))
        shop = serve_shop(ShopSettings(handle.base_url, behaviour=behaviour, timeout=0.5))
        started.append((handle, shop))
        return handle, shop

    yield start
    for handle, shop in started:
        shop.stop()
        handle.stop()


def test_the_view_follows_the_run_step_by_step(run):
    handle, shop = run("right", ["decline", "soft-decline", "validation"])
    view = ChecklistView(handle)

    assert view.states() == {"decline": "watching", "soft-decline": "waiting", "validation": "waiting"}
    assert (
        "Watching: Decline (70000)." in view.now.value and "Make one payment in your shop" in view.now.value
    )
    assert "No step judged yet" in view.verdict.value and view.step.options == ()

    shop.pay(orderreference="view-decline", **CARD)
    shop.pay(orderreference="view-soft", **CARD)  # the next payment ends the decline step
    handle.served.flush()  # the view follows the proxy from its writer thread
    assert view.states()["decline"] == "passed" and view.states()["soft-decline"] == "watching"
    assert view.step.value == "decline"
    assert (
        "Decline (70000): passed</b>: declined, and not retried: the customer is told" in view.verdict.value
    )
    assert (
        "known by its orderreference view-decline." in view.verdict.value
        and "Why it matters" in view.verdict.value
    )

    view.next_button.click()
    assert view.states()["soft-decline"] == "passed"
    assert "Every payment step has been run" in view.now.value

    view.finish_button.click()
    assert view.states() == {"decline": "passed", "soft-decline": "passed", "validation": "passed"}
    assert "every outcome handled" in view.now.value
    assert view.next_button.disabled and view.finish_button.disabled
    assert list(view.frame()["state"]) == ["passed"] * 3
    assert list(view.frame().columns) == ["step", "state", "why"]
    assert "gwkit-checklist-steps" in view.table.value
    assert view.error.value == ""


def test_a_failed_verdict_shows_its_exchanges_masked_and_each_as_code(run):
    handle, shop = run("naive", ["decline", "gateway-5xx"])
    view = ChecklistView(handle)
    shop.pay(orderreference="naive-decline", **CARD)
    view.next_button.click()

    assert view.states()["decline"] == "failed"
    assert "sent again automatically" in view.verdict.value
    first, retry = handle.checklist.verdicts["decline"].evidence
    assert view.exchange.options == (first.number, retry.number)
    assert "70000 · Decline" in view.evidence.value and "fault injected" in view.evidence.value
    assert "validation problems" not in view.evidence.value  # a column empty for every exchange
    shown = view.exchange_shown.value
    assert "400000######0721" in shown and "4000000000000721" not in shown
    assert "naive-decline" in shown and '"errorcode": "70000"' in shown

    view.exchange.value = retry.number
    view.style.value = "curl"
    assert view.code.value.startswith("curl") and handle.base_url in view.code.value
    assert "400000######0721" in view.code.value and "4000000000000721" not in view.code.value
    assert '"123"' not in view.code.value  # the security code is never shown

    shop.pay(orderreference="naive-5xx", **CARD)
    view.finish_button.click()
    assert view.states()["gateway-5xx"] == "failed" and view.step.value == "decline"  # the choice kept
    view.step.value = "gateway-5xx"
    assert "double-charge risk" in view.verdict.value
    view.exchange.value = view.exchange.options[0]
    assert "503" in view.evidence.value and "Service Unavailable" in view.exchange_shown.value
    assert "2 of 2 steps failed the run" in view.now.value
    assert view.error.value == ""


def test_a_step_that_never_sees_a_payment_says_so(run):
    handle, _ = run("right", ["timeout"])
    view = ChecklistView(handle)
    view.finish_button.click()
    assert view.states() == {"timeout": "no payment seen"}
    assert "no payment seen" in view.verdict.value and "No exchanges" in view.evidence.value
    assert view.exchange.options == () and view.code.value == ""


def test_an_advisory_verdict_says_so_before_its_status():
    verdict = checklist.Verdict("decline", "Decline (70000)", "fail", "sent again", advisory=True)
    assert state_words({"step": "decline", "current": None}, verdict) == "advisory (failed)"
    assert state_words({"step": "decline", "current": "decline"}, None) == "watching"
    assert state_words({"step": "decline", "current": "timeout"}, None) == "waiting"


def test_a_signal_the_run_refuses_shows_in_the_view(run, monkeypatch):
    handle, _ = run("right", ["decline"])
    view = ChecklistView(handle)
    view.finish_button.click()
    monkeypatch.delenv("GWKIT_RAISE_CALLBACK_ERRORS")
    view.next_button.click()  # the button is disabled in the page; a click from code reaches the run
    assert "ChecklistError" in view.error.value and "the run has finished" in view.error.value
