"""The checklist against the reference shop: done right, every step passes; naive, the expected steps
fail, each with the exchanges that show why."""

from __future__ import annotations

import httpx
import pytest

from gwkit import checklist

PAYMENT_STEPS = [step.name for step in checklist.steps_named() if step.fault is not None]  # by default
THREEDS_STEPS = ("3ds-v2", "3ds-failed")
UNKNOWN_OUTCOME_STEPS = ["bank-error-made", "bank-error-not-made", "dropped-answer", "timeout", "gateway-5xx"]


def test_the_phase_has_its_steps_in_order():
    assert list(checklist.REGISTER) == [
        "decline",
        "soft-decline",
        "3ds-v2",
        "3ds-failed",
        "3ds-v1-enrolled",  # named only: off by default
        "3ds-v1-not-enrolled",
        *UNKNOWN_OUTCOME_STEPS,
        "notification",  # given the shop's listener
        "notification-signature",
        "validation",
    ]


def pay(shop, order: str, step: str) -> list[str]:
    """The customer pays as the step asks: with 3-D Secure for the 3-D Secure steps."""
    return shop.pay_with_3ds(order) if step.startswith("3ds-") else shop.pay(order)["did"]


def test_the_shop_done_right_passes_every_step(run):
    shop = run("right")
    outcomes = [pay(shop, f"right-{step}", step) for step in PAYMENT_STEPS]
    result = shop.handle.finish()

    assert result.passed, result.summary()
    assert [v.status for v in result.verdicts] == ["pass"] * len(result.verdicts)
    assert outcomes == [
        ["AUTH"],  # declined: told, not retried
        ["AUTH", "THREEDQUERY+AUTH"],  # soft decline: with 3-D Secure
        ["THREEDQUERY+AUTH", "AUTH+threedresponse"],  # challenged: the AUTH after the ACS
        ["THREEDQUERY+AUTH"],  # not authenticated (60022): told, not paid again
        ["AUTH", "TRANSACTIONQUERY"],  # 60010, made: the query finds it paid
        ["AUTH", "TRANSACTIONQUERY", "AUTH"],  # 60034, not made: paid again after the query
        ["AUTH", "TRANSACTIONQUERY"],  # dropped, made
        ["AUTH", "TRANSACTIONQUERY"],  # timeout, made
        ["AUTH", "TRANSACTIONQUERY", "AUTH"],  # 503, not made
    ]
    for step in PAYMENT_STEPS:
        verdict = result.verdict(step)
        assert str(verdict.key) == f"orderreference 'right-{step}'"
        assert verdict.evidence[0].fault is not None  # the outcome armed, on the payment's first AUTH
    assert (
        result.verdict("bank-error-not-made").reason
        == "queried the order, found nothing made, then paid again"
    )
    assert (
        result.verdict("validation").reason
        == f"all {len(result.exchanges)} requests pass the interface's rules"
    )


def test_the_naive_shop_fails_the_expected_steps_each_with_its_exchanges(run):
    shop = run("naive")
    for step in PAYMENT_STEPS:
        pay(shop, f"naive-{step}", step)
    result = shop.handle.finish()

    assert not result.passed
    assert [v.step for v in result.failures] == PAYMENT_STEPS
    decline = result.verdict("decline")
    assert decline.reason.startswith("the declined order was sent again automatically")
    assert [e.request_types for e in decline.evidence] == [("AUTH",), ("AUTH",)]
    assert decline.evidence[0].errorcodes == ("70000",) and decline.evidence[1].fault is None
    soft = result.verdict("soft-decline")
    assert soft.reason.startswith(f"retried without 3-D Secure (#{soft.evidence[1].number})")
    challenged = result.verdict("3ds-v2")
    assert challenged.reason.startswith(f"paid without the challenge (#{challenged.evidence[1].number})")
    assert [e.request_types for e in challenged.evidence] == [("THREEDQUERY+AUTH",), ("AUTH",)]
    failed = result.verdict("3ds-failed")
    assert failed.reason.startswith(
        f"paid without 3-D Secure after the authentication failed (#{failed.evidence[1].number})"
    )
    for step in UNKNOWN_OUTCOME_STEPS:
        verdict = result.verdict(step)
        retry = verdict.evidence[1]
        assert verdict.status == "fail"
        assert verdict.reason == (
            f"a new AUTH for the same order (#{retry.number}) without a TRANSACTIONQUERY first: the double-charge risk"
        )
        assert [e.request_types for e in verdict.evidence] == [("AUTH",), ("AUTH",)]
    assert result.verdict("validation").status == "pass"
    assert "Decline (70000): FAIL" in "\n".join(shop.lines)


@pytest.mark.parametrize("behaviour", ["right", "naive"])
def test_the_reports_of_a_run(run, tmp_path, behaviour):
    shop = run(behaviour, steps=["decline", "validation"])
    shop.pay("<script>alert(1)</script>")
    result = shop.handle.finish()
    written = checklist.write_reports(result, junit=tmp_path / "r.xml", html=tmp_path / "r.html")

    page = (tmp_path / "r.html").read_text()
    xml = (tmp_path / "r.xml").read_text()
    assert written == {"junit": str(tmp_path / "r.xml"), "html": str(tmp_path / "r.html")}
    for text in (page, xml):
        assert "4000000000000721" not in text and '"123"' not in text  # masked; no security code
    assert "400000######0721" in page and "securitycode&#34;: &#34;[redacted]" in page
    assert "<script>alert" not in page and "&lt;script&gt;alert(1)&lt;/script&gt;" in page
    failures = 0 if behaviour == "right" else 1
    assert f'failures="{failures}"' in xml and 'tests="2"' in xml


def test_the_reference_shop_refuses_bad_orders_naming_the_field(run):
    shop = run("right", steps=["decline"]).shop
    url = f"{shop.base_url}/pay"

    listed = httpx.post(url, json=[1])
    missing = httpx.post(url, json={"orderreference": "o-1", "pan": 4111111111111111})
    form = httpx.post(url, data={"orderreference": "o-1"})
    assert (listed.status_code, listed.json()) == (400, {"error": "body: must be a JSON object (the order)"})
    assert missing.status_code == 400
    assert missing.json() == {
        "error": "pan, expirydate, securitycode, baseamount, currencyiso3a: required (text)"
    }
    assert form.status_code == 415
