"""The faults panel, driven through its widgets against a real sandbox: what it injects is what
the next request gets, and the tables show the active faults and the fault log."""

from __future__ import annotations

import ipywidgets as widgets
import pytest

import gwkit
from gwkit.config import Target
from gwkit.connect import Connection
from gwkit.widgets import FaultsPanel
from support.widget_tree import all_html, shown_beside

CARD = {
    "accounttypedescription": "ECOM",
    "pan": "4111111111111111",
    "expirydate": "12/2030",
    "securitycode": "123",
}


@pytest.fixture(autouse=True)
def no_faults_left(gw):
    gw.sandbox.faults.clear()
    yield
    gw.sandbox.faults.clear()


def test_a_gateway_error_injected_from_the_panel_answers_the_next_auth(gw):
    panel = FaultsPanel(gw)
    assert "No active faults" in panel.active_table.value
    panel.kind.value = "gateway_error"
    panel.code.value = 60010
    panel.made.value = True
    panel.requesttypes.value = "auth"
    panel.inject_button.click()

    assert "injected: gateway_error" in panel.status.value
    assert "gateway_error" in panel.active_table.value and "code=60010" in panel.active_table.value
    (fault,) = gw.sandbox.faults.active()
    assert fault["code"] == 60010 and fault["made"] is True and fault["requesttypes"] == ["AUTH"]

    response = gw.auth(baseamount=1050, orderreference="faulted-60010", **CARD)
    assert str(response.record["errorcode"]) == "60010"
    panel.refresh()
    assert "No active faults" in panel.active_table.value  # the count of 1 is used up
    assert "faulted-60010" in panel.log_table.value and "code=60010" in panel.log_table.value
    injected = gw.sandbox.faults.log()[-1]["injected"]  # ISO with a T, as stored
    assert (
        f"<td>{injected.replace('T', ' ')}</td>" in panel.log_table.value
        and injected not in panel.log_table.value
    )


def test_the_log_shows_the_newest_first(gw):
    panel = FaultsPanel(gw)
    for order in ("older-one", "newer-one"):
        panel.kind.value = "gateway_error"
        panel.code.value = 99999
        panel.inject_button.click()
        gw.auth(baseamount=1050, orderreference=order, **CARD)
    panel.refresh()
    table = panel.log_table.value
    assert table.index("newer-one") < table.index("older-one")


def test_the_chosen_code_is_explained_beside_it(gw):
    panel = FaultsPanel(gw)
    panel.kind.value = "gateway_error"
    panel.code.value = 71000
    assert "Soft decline" in panel.code_meaning.value
    panel.code.value = 60010
    assert "Bank System Error" in panel.code_meaning.value and "not known" in panel.code_meaning.value


def test_only_the_inputs_of_the_chosen_kind_show(gw):
    panel = FaultsPanel(gw)

    def shown(box):
        return [
            leaf
            for child in box.children
            for leaf in (shown(child) if isinstance(child, widgets.Box) else [child])
        ]

    panel.kind.value = "gateway_error"
    assert panel.code in shown(panel.params) and panel.seconds not in shown(panel.params)
    panel.kind.value = "latency"
    assert panel.seconds in shown(panel.params) and panel.code not in shown(panel.params)
    panel.latency_mode.value = "range"
    assert {panel.min_seconds, panel.max_seconds} <= set(shown(panel.params))
    assert panel.seconds not in shown(panel.params)
    panel.kind.value = "malformed"
    assert panel.body in shown(panel.params) and panel.process in shown(panel.params)
    panel.kind.value = "http_status"
    assert panel.status_code in shown(panel.params) and panel.body not in shown(panel.params)


def test_a_drop_fault_makes_the_auth_fail_in_transport(gw):
    panel = FaultsPanel(gw)
    panel.kind.value = "drop"
    panel.process.value = False
    panel.inject_button.click()
    with pytest.raises(gwkit.TransportError):
        gw.auth(baseamount=1050, orderreference="dropped-by-panel", **CARD)
    panel.refresh()
    assert "dropped-by-panel" in panel.log_table.value and "drop" in panel.log_table.value


def test_bad_input_is_shown_beside_its_input_and_injects_nothing(gw):
    panel = FaultsPanel(gw)
    panel.kind.value = "latency"
    panel.seconds.value = -1
    panel.inject_button.click()  # the sandbox's own rule refuses it: beside the input, no traceback
    assert "<code>seconds</code>: must be a number of seconds from 0 to 3600" in shown_beside(
        panel, panel.seconds
    )
    assert panel.inject_button.disabled and "Traceback" not in all_html(panel)
    assert gw.sandbox.faults.active() == []
    assert "No active faults" in panel.active_table.value
    panel.seconds.value = 0.5  # a change clears it and enables the button again
    assert shown_beside(panel, panel.seconds) == "" and not panel.inject_button.disabled

    panel.kind.value = "drop"
    panel.count.value = 0
    panel.inject_button.click()
    assert "<code>count</code>: must be a whole number, 1 or more" in shown_beside(panel, panel.count)
    assert panel.inject_button.disabled and gw.sandbox.faults.active() == []
    with pytest.raises(ValueError, match="count"):  # the call itself still raises, for code
        panel.inject()


def test_clear_all_empties_the_active_table(gw):
    panel = FaultsPanel(gw)
    panel.kind.value = "latency"
    panel.latency_mode.value = "range"
    panel.min_seconds.value, panel.max_seconds.value = 1, 2
    panel.count.value = 3
    panel.inject_button.click()
    panel.kind.value = "http_status"
    panel.status_code.value = 503
    panel.inject_button.click()
    assert "latency" in panel.active_table.value and "status=503" in panel.active_table.value
    assert "count 3" in panel.active_table.value
    assert len(gw.sandbox.faults.active()) == 2

    panel.clear_button.click()
    assert "2 active faults cleared" in panel.status.value
    assert "No active faults" in panel.active_table.value
    assert gw.sandbox.faults.active() == []


def test_the_tables_escape_what_they_show(gw):
    panel = FaultsPanel(gw)
    panel.kind.value = "drop"
    panel.requesttypes.value = "<b>AUTH</b>"
    panel.inject_button.click()
    assert "<B>AUTH</B>" not in panel.active_table.value
    assert "&lt;B&gt;AUTH&lt;/B&gt;" in panel.active_table.value


def test_against_a_real_gateway_the_panel_says_faults_need_the_sandbox(sandbox):
    target = Target("gateway", sandbox.base_url, sandbox.username, sandbox.sitereference, "GBP", "test")
    with Connection(target, sandbox.password, sandbox=None) as real:
        panel = FaultsPanel(real)
    (line,) = panel.children
    assert "Faults need the embedded sandbox" in line.value
    assert not hasattr(panel, "inject_button")
    panel.refresh()  # nothing to show, and no error
    for action in (panel.inject, panel.clear):
        with pytest.raises(RuntimeError, match="faults need the embedded sandbox"):
            action()
