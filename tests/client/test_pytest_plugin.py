"""The pytest plugin, run as a user's test suite would use it (pytester runs pytest on a test file)."""

from __future__ import annotations

from pathlib import Path

pytest_plugins = ["pytester"]

USER_TESTS = """
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


def test_notified_once_signed(gwkit_client, gwkit_notifications):
    record = gwkit_client.auth(baseamount=1050, orderreference="n", **CARD).record
    notification = gwkit_notifications.assert_notified_once(record["transactionreference"])
    assert notification["orderreference"] == "n" and notification["maskedpan"] == "411111######1111"


def test_a_wrong_password_fails_the_check(gwkit_client, gwkit_notifications):
    gwkit_notifications.password = "not-the-rule's"
    record = gwkit_client.auth(baseamount=1050, orderreference="w", **CARD).record
    with pytest.raises(gwkit.NotificationMismatch, match="signature"):
        gwkit_notifications.assert_notified_once(record["transactionreference"])
"""


def test_fixtures_and_fault_marker_in_a_user_suite(pytester):
    pytester.makepyfile(test_checkout=USER_TESTS)
    result = pytester.runpytest_subprocess(
        "-p", "gwkit.pytest_plugin", "--strict-markers", "-q", "-p", "no:cacheprovider"
    )
    result.assert_outcomes(passed=6)


def test_a_marker_with_positional_arguments_is_a_usage_error(pytester):
    pytester.makepyfile(
        test_bad="""
import pytest

@pytest.mark.gwkit_faults(1)
def test_x(gwkit_sandbox):
    pass
"""
    )
    result = pytester.runpytest_subprocess("-p", "gwkit.pytest_plugin", "-q", "-p", "no:cacheprovider")
    result.stdout.fnmatch_lines(["*gwkit_faults takes keyword arguments only*"])
    assert result.ret != 0


def test_the_documented_example_test_file_passes(pytester):
    docs = (Path(__file__).resolve().parents[2] / "docs" / "exploratory-testing.md").read_text(
        encoding="utf-8"
    )
    example = docs.split("A complete example test file")[1].split("```python")[1].split("```")[0]
    pytester.makepyfile(test_checkout=example)
    result = pytester.runpytest_subprocess("-p", "gwkit.pytest_plugin", "-q", "-p", "no:cacheprovider")
    result.assert_outcomes(passed=4)


def test_the_plugin_loads_by_itself_through_its_entry_point(pytester):
    pytester.makepyfile(
        test_auto="""
def test_fixtures_are_there(gwkit_client):
    assert gwkit_client.transaction_query(orderreference="none").record.ok
"""
    )
    result = pytester.runpytest_subprocess("-q", "-p", "no:cacheprovider")  # no -p gwkit.pytest_plugin
    result.assert_outcomes(passed=1)


KINDS_TESTS = """
import pytest
import gwkit

CARD = dict(accounttypedescription="ECOM", currencyiso3a="GBP", pan="4111111111111111",
            expirydate="12/2030", securitycode="123")


@pytest.mark.gwkit_faults(kind="gateway_error", code=60010, made=True)
def test_unknown_outcome_made(gwkit_client):
    assert gwkit_client.auth(baseamount=1050, orderreference="u", **CARD).record.errorcode == 60010
    assert len(gwkit_client.transaction_query(orderreference="u").record.query_records) == 1


@pytest.mark.gwkit_faults(kind="http_status", status=503, process=False)
@pytest.mark.gwkit_faults(kind="drop", process=True)
def test_stacked_markers_add_each_fault_outermost_first(gwkit_client):
    with pytest.raises(gwkit.HTTPStatusError):
        gwkit_client.auth(baseamount=1050, orderreference="a", **CARD)
    with pytest.raises(gwkit.TransportError):
        gwkit_client.auth(baseamount=1050, orderreference="b", **CARD)
    assert gwkit_client.auth(baseamount=1050, orderreference="c", **CARD).record.ok


@pytest.mark.gwkit_faults(kind="latency", seconds=-1)
def test_bad_fault_parameters_are_an_error(gwkit_client):
    pass
"""

SESSION_TESTS = '''
import pytest

CARD = dict(accounttypedescription="ECOM", currencyiso3a="GBP", pan="4111111111111111",
            expirydate="12/2030", securitycode="123")


@pytest.fixture
def gwkit_scenario():
    """Every test starts with one stored card."""
    def setup(sandbox):
        import gwkit
        from gwkit.sandbox import SandboxTransport
        with gwkit.Client("http://s.test", "gwkit_sandbox", "gwkit-sandbox-password", sitereference="test_gwkit12345",
                          transport=SandboxTransport(sandbox)) as client:
            assert client.store(accounttypedescription="CARDSTORE", pan="5100000000000008", expirydate="12/2030",
                                orderreference="card").record.ok
    return setup


@pytest.mark.parametrize("order", ["one", "two", "three"])
def test_each_test_starts_from_the_same_state(gwkit_client, gwkit_sandbox, order):
    assert gwkit_client.transaction_query(requesttypedescription="AUTH").record.query_records == []
    assert len(gwkit_client.transaction_query(orderreference="card").record.query_records) == 1
    assert gwkit_client.auth(baseamount=1050, orderreference=order, **CARD).record.ok
    assert id(gwkit_sandbox) == SEEN.setdefault("id", id(gwkit_sandbox))  # one sandbox for the session


@pytest.mark.gwkit_faults(kind="drop", process=False)
def test_faults_do_not_leak_into_the_next_test(gwkit_client):
    import gwkit
    with pytest.raises(gwkit.TransportError):
        gwkit_client.auth(baseamount=1050, orderreference="x", **CARD)


def test_after_the_fault(gwkit_client):
    assert gwkit_client.auth(baseamount=1050, orderreference="y", **CARD).record.ok


SEEN = {}
'''


def test_the_marker_takes_every_fault_kind(pytester):
    pytester.makepyfile(test_kinds=KINDS_TESTS)
    result = pytester.runpytest_subprocess("-q", "-p", "no:cacheprovider")
    result.assert_outcomes(passed=2, errors=1)
    result.stdout.fnmatch_lines(["*seconds*"])


def test_session_scope_restores_the_starting_state_before_each_test(pytester):
    pytester.makepyfile(test_session=SESSION_TESTS)
    pytester.makeini("[pytest]\ngwkit_sandbox_scope = session\n")
    result = pytester.runpytest_subprocess("-q", "-p", "no:cacheprovider")
    result.assert_outcomes(passed=5)


EVERY_KIND = """
import httpx
import pytest
import gwkit
from gwkit.reconcile import reconcile

CARD = dict(accounttypedescription="ECOM", currencyiso3a="GBP", pan="4111111111111111",
            expirydate="12/2030", securitycode="123")


def pay(client, order):
    return client.auth(baseamount=1050, orderreference=order, **CARD)


@pytest.mark.gwkit_faults(kind="drop", process=True)
def test_drop_after_processing(gwkit_client, gwkit_sandbox):
    with pytest.raises(gwkit.TransportError):
        pay(gwkit_client, "drop")
    assert reconcile(gwkit_client, orderreference="drop").paid  # made once, never re-sent
    assert len(gwkit_client.transaction_query(orderreference="drop").record.query_records) == 1


@pytest.mark.gwkit_faults(kind="timeout", process=False)
def test_timeout(gwkit_client):
    with pytest.raises(gwkit.RequestTimeoutError):
        pay(gwkit_client, "timeout")
    assert not reconcile(gwkit_client, orderreference="timeout").exists


@pytest.mark.gwkit_faults(kind="latency", seconds=0.01)
def test_latency(gwkit_client):
    assert pay(gwkit_client, "latency").record.ok


@pytest.mark.gwkit_faults(kind="gateway_error", code=99999, made=False)
def test_gateway_error(gwkit_client):
    assert pay(gwkit_client, "g").record.errorcode == 99999
    assert not reconcile(gwkit_client, orderreference="g").exists


@pytest.mark.gwkit_faults(kind="http_status", status=504, process=True)
def test_http_status(gwkit_client):
    with pytest.raises(gwkit.HTTPStatusError):
        pay(gwkit_client, "h")
    assert reconcile(gwkit_client, orderreference="h").paid


@pytest.mark.gwkit_faults(kind="malformed", body="garbage", process=True)
def test_malformed(gwkit_client):
    with pytest.raises(gwkit.ResponseFormatError):
        pay(gwkit_client, "m")
    assert reconcile(gwkit_client, orderreference="m").paid
"""


def test_every_fault_kind_through_the_marker(pytester):
    pytester.makepyfile(test_every_kind=EVERY_KIND)
    result = pytester.runpytest_subprocess("-q", "-p", "no:cacheprovider")
    result.assert_outcomes(passed=6)
