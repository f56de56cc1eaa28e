"""The Python shop's way in: the `gwkit_checklist` fixture of the pytest plugin, in a user's suite."""

from __future__ import annotations

from xml.etree import ElementTree as ET

pytest_plugins = ["pytester"]

USER_TESTS = """
import pytest
from gwkit.checklist.shop import ShopSettings, serve_shop

CARD = dict(pan="4000000000000721", expirydate="12/2030", securitycode="123", baseamount="1050",
            currencyiso3a="GBP")


@pytest.fixture(scope="session")
def my_shop(gwkit_checklist):
    with serve_shop(ShopSettings(gwkit_checklist.base_url, behaviour="{behaviour}")) as shop:
        yield shop


@pytest.mark.parametrize("step", ["bank-error-not-made", "soft-decline", "decline"])
def test_my_shop_handles(gwkit_checklist, my_shop, step):
    with gwkit_checklist.step(step) as claimed:
        my_shop.pay(orderreference=f"fixture-{{step}}", **CARD)
    assert claimed.verdict.passed, claimed.verdict.explain()
"""


def run_suite(pytester, behaviour):
    pytester.makepyfile(test_checkout=USER_TESTS.format(behaviour=behaviour))
    reports = pytester.path / "reports"
    reports.mkdir()
    result = pytester.runpytest_inprocess(
        "-q", "-p", "no:cacheprovider", f"--gwkit-checklist-report={reports}"
    )
    return result, reports


def test_a_python_shop_done_right_passes_the_steps_it_claims(pytester):
    result, reports = run_suite(pytester, "right")

    result.assert_outcomes(passed=3)
    cases = {case.get("name").split(":")[0]: case for case in ET.parse(reports / "checklist.xml").getroot()}
    assert all(
        cases[step].find("failure") is None for step in ("decline", "soft-decline", "bank-error-not-made")
    )
    assert cases["timeout"].find("error").get("message").startswith("no payment seen")  # not claimed
    assert (reports / "checklist.html").exists()


def test_a_naive_python_shop_fails_with_the_verdict_as_the_message(pytester):
    result, _ = run_suite(pytester, "naive")

    result.assert_outcomes(failed=3)
    result.stdout.fnmatch_lines(
        [
            "*Decline (70000): FAIL: the declined order was sent again automatically*",
            "*payment known by orderreference 'fixture-decline'*",
        ]
    )
