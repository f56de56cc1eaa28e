"""The URL notifications panel, driven through its widgets against a real sandbox and a listener:
a rule added from the panel notifies the listener, the log shows retries waiting for the clock,
resend sends the same notificationreference again."""

from __future__ import annotations

import threading

import pytest

from gwkit.config import Target
from gwkit.connect import Connection
from gwkit.notifications import NotificationListener
from gwkit.widgets import NotificationPanel
from support.widget_tree import all_html, shown_beside

CARD = {
    "accounttypedescription": "ECOM",
    "pan": "4111111111111111",
    "expirydate": "12/2030",
    "securitycode": "123",
}


@pytest.fixture
def listener():
    with NotificationListener(password="panel-pw") as running:
        yield running


@pytest.fixture(autouse=True)
def no_rules_left(gw):
    yield
    for rule in gw.sandbox.notifications.rules():
        gw.sandbox.notifications.delete_rule(rule["id"])


def test_a_rule_added_from_the_panel_notifies_and_the_log_shows_it(gw, listener):
    panel = NotificationPanel(gw, listener)
    assert "No rules yet" in panel.rules_table.value
    assert panel.url.value == listener.url and panel.password.value == "panel-pw"
    panel.flow.value = "online"
    panel.add_button.click()
    assert "added: online" in panel.status.value and listener.url in panel.rules_table.value
    record = gw.auth(baseamount=1050, orderreference="panel-1", **CARD).record
    listener.assert_notified_once(record["transactionreference"])
    panel.refresh()
    row = panel.deliveries_frame.iloc[0]
    assert row["Transaction"] == record["transactionreference"] and row["State"] == "delivered"
    assert "verified" in panel.received_table.value


def test_retrying_deliveries_are_visible_and_resend_keeps_the_reference(gw, listener):
    panel = NotificationPanel(gw, listener)
    panel.flow.value = "offline"
    panel.add_button.click()
    listener.fail_next(1)
    record = gw.auth(baseamount=1050, orderreference="panel-2", **CARD).record
    reference = record["transactionreference"]
    (delivery,) = gw.sandbox.notifications.wait_for(reference, state="retrying", attempts=1)
    panel.refresh()
    row = panel.deliveries_frame.iloc[0]
    assert (
        row["State"] == "retrying"
        and row["Next attempt"] == delivery["next_at"].replace("T", " ")
        and row["Last answer"] == 500
    )
    panel.delivery.value = delivery["id"]
    panel.resend_button.click()
    first, second = listener.wait_for(2, transactionreference=reference)
    assert first.notificationreference == second.notificationreference and second.duplicate
    gw.sandbox.notifications.wait_for(reference, state="delivered")
    panel.refresh()
    assert panel.deliveries_frame.iloc[0]["State"] == "delivered"
    panel.rule.value = panel.rule.options[0][1]
    panel.delete_button.click()
    assert "No rules yet" in panel.rules_table.value


def test_a_bad_url_is_shown_beside_it_and_adds_nothing(gw):
    panel = NotificationPanel(gw)
    panel.url.value = "ftp://example.test/"
    panel.add_button.click()  # the sandbox's own rule refuses it: beside the URL, no traceback
    assert "<code>url</code>: must be" in shown_beside(panel, panel.url)
    assert panel.add_button.disabled and "Traceback" not in all_html(panel)
    assert "No rules yet" in panel.rules_table.value
    panel.url.value = "http://127.0.0.1:9/hook"
    assert shown_beside(panel, panel.url) == "" and not panel.add_button.disabled


def test_against_a_real_gateway_the_panel_says_so():
    target = Target("gateway", "https://gateway.invalid", "user", "test_site", "GBP", "test")
    with Connection(target, "pw") as gw:
        panel = NotificationPanel(gw)
    assert "need the embedded sandbox" in panel.status.value and panel.children == (panel.status,)


def test_the_log_redraws_by_itself_when_an_attempt_is_recorded(gw, listener):
    panel = NotificationPanel(gw, listener)
    panel.flow.value = "offline"
    panel.add_button.click()
    recorded = threading.Event()
    gw.sandbox.notifications.on_attempt(lambda reference: recorded.set())  # runs after the panel's
    record = gw.auth(baseamount=1050, orderreference="panel-3", **CARD).record
    assert recorded.wait(10)
    assert record["transactionreference"] in panel.deliveries_table.value
    assert "delivered" in panel.deliveries_table.value and "verified" in panel.received_table.value
