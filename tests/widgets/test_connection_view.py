"""The connection's rich output: what it talks to, and a button that resets the sandbox."""

from __future__ import annotations

import gwkit
from gwkit.widgets import ConnectionView


def pay(gw):
    return gw.auth(
        accounttypedescription="ECOM",
        baseamount=1050,
        pan="4111111111111111",
        expirydate=f"12/{gw.sandbox.now().year + 2}",
        securitycode="123",
    )


def test_the_reset_button_asks_first_and_cancel_deletes_nothing(gw):
    reference = pay(gw).record["transactionreference"]
    view = ConnectionView(gw)
    assert "SANDBOX" in view.table.value and view.reset_button.description == "Reset the sandbox…"
    assert view.confirmation.layout.display == "none"
    view.reset_button.click()
    assert view.confirmation.layout.display is None, "the question is shown"
    assert "cannot be undone" in view.question.value and f"{gw.sandbox.now():%Y-%m-%d}" in view.question.value
    assert gw.transaction_query(transactionreference=reference).record.get("found") == "1"
    view.cancel_button.click()
    assert view.confirmation.layout.display == "none" and "Nothing was deleted" in view.status.value
    assert gw.transaction_query(transactionreference=reference).record.get("found") == "1"


def test_deleting_the_data_keeps_the_clock_and_says_so(gw):
    reference = pay(gw).record["transactionreference"]
    gw.sandbox.advance(by="P3D")
    moved = gw.sandbox.now()
    view = ConnectionView(gw)
    view.reset_button.click()
    view.keep_clock_button.click()
    assert gw.transaction_query(transactionreference=reference).record.get("found") == "0"
    assert gw.sandbox.now() == moved
    assert "Reset: no transactions left; the clock stays at" in view.status.value
    assert f"{moved:%Y-%m-%d}" in view.status.value and view.confirmation.layout.display == "none"


def test_starting_afresh_puts_the_clock_back_at_the_start_and_payments_work_again(gw):
    start = gw.sandbox.start()
    reference = pay(gw).record["transactionreference"]
    gw.sandbox.advance(by="P1M")
    view = ConnectionView(gw)
    view.reset_button.click()
    assert f"back to {start:%Y-%m-%d %H:%M}" in view.question.value
    view.afresh_button.click()
    assert gw.sandbox.now() == start
    assert gw.transaction_query(transactionreference=reference).record.get("found") == "0"
    assert f"the clock back at its start, {start:%Y-%m-%d %H:%M:%S}" in view.status.value
    again = pay(gw).record
    assert again["errorcode"] == "0" and again["settleduedate"] == f"{start:%Y-%m-%d}"
    gw.sandbox.advance(by="P1D")
    [settled] = gw.transaction_query(transactionreference=again["transactionreference"]).query_records
    assert settled["settlestatus"] == "100", "the daily jobs run again from the start"


def test_a_notebook_connection_has_its_own_fresh_sandbox(tmp_path, monkeypatch):
    monkeypatch.setenv("GWKIT_SANDBOX_DB", str(tmp_path / "sandbox.db"))
    for name in ("GWKIT_BASE_URL", "GWKIT_TARGET", "GWKIT_CONFIG"):
        monkeypatch.delenv(name, raising=False)
    first = gwkit.connect(notebook="04_subscriptions", journal=False)
    assert first.sandbox.db_path == (tmp_path / "sandbox-04_subscriptions.db").resolve()
    reference = pay(first).record["transactionreference"]
    again = gwkit.connect(notebook="04_subscriptions", journal=False)  # the cell runs again: afresh
    assert not first.sandbox.running and again.sandbox.running
    assert again.transaction_query(transactionreference=reference).record.get("found") == "0"
    other = gwkit.connect(notebook="05_card_store", journal=False)  # beside it, untouched by it
    assert other.sandbox.db_path != again.sandbox.db_path and again.sandbox.running
    view = ConnectionView(again)
    assert view.reset_button.description == "Reset this notebook's sandbox…"
    assert "this notebook&#x27;s own, started afresh" in view.table.value
    for connection in (again, other):
        connection.sandbox.stop()


def test_a_notebook_name_must_be_a_plain_name(tmp_path, monkeypatch):
    import pytest

    monkeypatch.setenv("GWKIT_SANDBOX_DB", str(tmp_path / "sandbox.db"))
    monkeypatch.delenv("GWKIT_BASE_URL", raising=False)
    with pytest.raises(gwkit.ConfigError, match="notebook must be 1 to 64 letters"):
        gwkit.connect(notebook="../elsewhere", journal=False)


def test_ipython_displays_a_connection_as_its_view(gw):
    from IPython.core.interactiveshell import InteractiveShell

    from gwkit.widgets import show_connections_as_widgets

    shell = InteractiveShell.instance()
    try:
        assert show_connections_as_widgets()
        shown = []
        shell.display_pub.publish = lambda data, **kw: shown.append(data)  # what the notebook would receive
        shell.display_formatter.format(gw)
        assert any("application/vnd.jupyter.widget-view+json" in d for d in shown)
    finally:
        InteractiveShell.clear_instance()
