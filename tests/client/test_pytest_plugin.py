"""The pytest plugin, run as a user's test suite would use it (pytester runs pytest on a test file)."""

from __future__ import annotations

from pathlib import Path

pytest_plugins = ["pytester"]

USER_TESTS = '''
import pytest
import gwkit
from gwkit.reconcile import reconcile

CARD = dict(accounttypedescription="ECOM", currencyiso3a="GBP", pan="4111111111111111",
            expirydate="12/2030", securitycode="123")


def test_pays(gwkit_client):
    assert gwkit_client.auth(baseamount=1050, orderreference="a", **CARD).record.ok


def test_each_test_gets_a_fresh_sandbox(gwkit_client):
    assert gwkit_client.transaction_query(orderreference="a").record.query_records == []


@pytest.mark.gwkit_faults(drop_next=1, process=True)
def test_lost_answer_then_reconcile(gwkit_client, gwkit_sandbox):
    with pytest.raises(gwkit.TransportError):
        gwkit_client.auth(baseamount=1050, orderreference="lost", **CARD)
    assert reconcile(gwkit_client, orderreference="lost").paid


@pytest.mark.gwkit_faults(drop_next=1, process=False)
def test_dropped_before_processing(gwkit_client):
    with pytest.raises(gwkit.TransportError):
        gwkit_client.auth(baseamount=1050, orderreference="gone", **CARD)
    assert not reconcile(gwkit_client, orderreference="gone").exists
'''


def test_fixtures_and_fault_marker_in_a_user_suite(pytester):
    pytester.makepyfile(test_checkout=USER_TESTS)
    result = pytester.runpytest_subprocess("-p", "gwkit.pytest_plugin", "--strict-markers", "-q",
                                           "-p", "no:cacheprovider")
    result.assert_outcomes(passed=4)


def test_a_marker_with_positional_arguments_is_a_usage_error(pytester):
    pytester.makepyfile(test_bad='''
import pytest

@pytest.mark.gwkit_faults(1)
def test_x(gwkit_sandbox):
    pass
''')
    result = pytester.runpytest_subprocess("-p", "gwkit.pytest_plugin", "-q", "-p", "no:cacheprovider")
    result.stdout.fnmatch_lines(["*gwkit_faults takes keyword arguments only*"])
    assert result.ret != 0


def test_the_documented_example_test_file_passes(pytester):
    docs = (Path(__file__).resolve().parents[2] / "docs" / "exploratory-testing.md").read_text(encoding="utf-8")
    example = docs.split("A complete example test file")[1].split("```python")[1].split("```")[0]
    pytester.makepyfile(test_checkout=example)
    result = pytester.runpytest_subprocess("-p", "gwkit.pytest_plugin", "-q", "-p", "no:cacheprovider")
    result.assert_outcomes(passed=3)


def test_the_plugin_loads_by_itself_through_its_entry_point(pytester):
    pytester.makepyfile(test_auto='''
def test_fixtures_are_there(gwkit_client):
    assert gwkit_client.transaction_query(orderreference="none").record.ok
''')
    result = pytester.runpytest_subprocess("-q", "-p", "no:cacheprovider")  # no -p gwkit.pytest_plugin
    result.assert_outcomes(passed=1)
