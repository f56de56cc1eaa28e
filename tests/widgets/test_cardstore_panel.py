"""The card store panel, helpers and report, driven through `.value` and `.click()` against the sandbox."""

from __future__ import annotations

from datetime import date, datetime
from types import SimpleNamespace

import matplotlib
import pytest

matplotlib.use("Agg")

import gwkit
from gwkit import cardstore
from gwkit.report.cardstore import (
    cards_by_scheme_and_country,
    cards_by_scheme_and_country_table,
    cards_frame,
    expiring_cards,
    expiring_cards_table,
)
from gwkit.sandbox import Sandbox, SandboxTransport
from gwkit.widgets.cardstore_panel import CardStorePanel
from support.widget_tree import shown_beside

SITE = "test_gwkit12345"


@pytest.fixture
def sandbox(tmp_path):
    made = Sandbox(tmp_path / "s.db", clock_start=datetime(2026, 3, 2, 10, 0, 0))
    yield made
    made.close()


@pytest.fixture
def gw(sandbox):
    with gwkit.Client(
        "http://sandbox.test",
        "gwkit_sandbox",
        "gwkit-sandbox-password",
        sitereference=SITE,
        currencyiso3a="GBP",
        transport=SandboxTransport(sandbox),
    ) as client:
        yield client


def store(gw, pan="5100000000000008", expirydate="12/2030", **billing) -> str:
    response = gw.store(accounttypedescription="CARDSTORE", pan=pan, expirydate=expirydate, **billing)
    return response.raise_for_errors().record["transactionreference"]


# helpers ----------------------------------------------------------------------------------------


def test_stored_cards_lists_masked_cards_with_their_uses(gw):
    first = store(gw, billingfirstname="Ann", billinglastname="Lee", billingcountryiso2a="GB")
    second = store(gw, pan="340000000000017", expirydate="05/2026")
    assert cardstore.pay_with(gw, first).ok
    assert cardstore.pay_with(gw, first, baseamount="70000").record["errorcode"] == "70000"  # still a use
    rows = {row["transactionreference"]: row for row in cardstore.stored_cards(gw)}
    assert rows[first]["uses"] == 2 and rows[second]["uses"] == 0
    assert (rows[first]["billingname"], rows[first]["billingcountryiso2a"], rows[first]["maskedpan"]) == (
        "Ann Lee",
        "GB",
        "510000######0008",
    )
    assert rows[second]["billingname"] is None and rows[second]["expirydate"] == "05/2026"
    assert "5100000000000008" not in str(rows)
    # records name no site (as the real gateway's): the row's site is the one queried
    assert {row["sitereference"] for row in rows.values()} == {SITE}
    assert {row["sitereference"] for row in cardstore.stored_cards(gw, SITE)} == {SITE}


def test_usage_counts_beyond_one_answer(gw, monkeypatch):
    reference = store(gw)
    for _ in range(3):
        cardstore.pay_with(gw, reference)
    monkeypatch.setattr("gwkit.sandbox.gateway.query.MAX_RECORDS", 2)  # the answer holds fewer than found
    assert cardstore.usage_counts(gw, [reference]) == {reference: 3}


def test_disable_and_enable(gw):
    reference = store(gw)
    cardstore.disable(gw, reference)
    assert cardstore.stored_cards(gw)[0]["transactionactive"] == "0"
    refused = cardstore.pay_with(gw, reference)
    assert (refused.record.errorcode, refused.record.errordata) == (30000, ["parenttransactionreference"])
    cardstore.enable(gw, reference)
    assert cardstore.pay_with(gw, reference).ok


def test_subscribe_with_a_stored_card(gw, sandbox, monkeypatch):
    monkeypatch.setattr(
        gw, "sandbox", SimpleNamespace(now=sandbox.clock.now), raising=False
    )  # as gwkit.connect()
    reference = store(gw, pan="4111111111111111")
    response = cardstore.subscribe_with(
        gw, reference, baseamount="999", subscriptionfinalnumber="2", transactionactive="1"
    )
    auth, subscription = response.records
    assert auth.ok and auth["parenttransactionreference"] == reference
    assert subscription["subscriptionbegindate"] == "2026-04-02"  # a month after the sandbox's today
    assert (
        cardstore.subscribe_with(gw, reference, today=date(2026, 3, 31)).records[1]["subscriptionbegindate"]
        == "2026-04-30"
    )  # month ends clamp


# report -----------------------------------------------------------------------------------------

ROWS = [
    {
        "transactionreference": "1-9-1",
        "maskedpan": "510000######0008",
        "paymenttypedescription": "MASTERCARD",
        "expirydate": "04/2026",
        "billingname": "Ann",
        "billingcountryiso2a": "GB",
        "transactionactive": "1",
        "uses": 2,
        "transactionstartedtimestamp": "2026-03-01 10:00:00",
    },
    {
        "transactionreference": "1-9-2",
        "maskedpan": "340000######0017",
        "paymenttypedescription": "AMEX",
        "expirydate": "04/2026",
        "billingcountryiso2a": "US",
        "transactionactive": "0",
        "uses": 0,
        "transactionstartedtimestamp": "2026-03-01 11:00:00",
    },
    {
        "transactionreference": "1-9-3",
        "maskedpan": "411111######1111",
        "paymenttypedescription": "VISA",
        "expirydate": "12/2030",
        "transactionactive": "1",
        "uses": 1,
        "transactionstartedtimestamp": "2026-03-02 09:00:00",
    },
    {
        "transactionreference": "1-9-4",
        "maskedpan": "510000######0016",
        "paymenttypedescription": "MASTERCARD",
        "expirydate": "03/2026",
        "billingcountryiso2a": "GB",
        "transactionactive": "1",
        "uses": 0,
        "transactionstartedtimestamp": "2026-03-02 09:30:00",
    },
]


def test_cards_frame_types():
    frame = cards_frame(ROWS)
    assert str(frame["expiry"].dtype) == "period[M]" and str(frame["active"].dtype) == "boolean"
    assert str(frame["uses"].dtype) == "Int64" and str(frame["scheme"].dtype) == "category"
    assert list(frame["scheme"]) == ["Mastercard", "American Express", "Visa", "Mastercard"]
    assert list(frame["active"]) == [True, False, True, True]
    assert frame["stored"].iloc[0] == datetime(2026, 3, 1, 10, 0, 0)
    assert cards_frame([]).empty


def test_cards_by_scheme_and_country():
    table = cards_by_scheme_and_country_table(cards_frame(ROWS))
    assert table.loc["Mastercard", "GB"] == 2 and table.loc["American Express", "US"] == 1
    assert table.loc["Visa", "unknown"] == 1
    assert int(table.to_numpy().sum()) == 4
    ax = cards_by_scheme_and_country(cards_frame(ROWS))
    assert (ax.get_xlabel(), ax.get_ylabel()) == ("Stored cards", "Scheme") and ax.get_title()
    with pytest.raises(ValueError, match="no stored cards"):
        cards_by_scheme_and_country(cards_frame([]))


def test_expiring_cards():
    table = expiring_cards_table(cards_frame(ROWS), date(2026, 3, 2), months=3)
    assert list(table.index) == ["2026-03", "2026-04", "2026-05"]
    assert table.loc["2026-03"].tolist() == [1, 0]
    assert table.loc["2026-04"].tolist() == [1, 1]
    assert table.loc["2026-05"].tolist() == [0, 0]
    ax = expiring_cards(cards_frame(ROWS), date(2026, 3, 2))
    assert (ax.get_xlabel(), ax.get_ylabel()) == ("Expiry month", "Stored cards")
    assert expiring_cards_table(cards_frame([]), date(2026, 3, 2)).to_numpy().sum() == 0
    with pytest.raises(ValueError):
        expiring_cards_table(cards_frame(ROWS), date(2026, 3, 2), months=0)


# the panel --------------------------------------------------------------------------------------


def test_panel_stores_lists_disables_and_uses_a_card(gw):
    panel = CardStorePanel(gw)
    assert panel.frame.empty and "No stored cards" in panel.table.value
    panel.form.fields["pan"].value = "340000000000017"
    panel.form.fields["billinglastname"].value = "Panel"
    panel.form.fields["billingcountryiso2a"].value = "US"
    panel.form.send_button.click()
    assert len(panel.frame) == 1
    row = panel.frame.iloc[0]
    assert (
        row["maskedpan"],
        row["scheme"],
        row["billingname"],
        row["billingcountryiso2a"],
        bool(row["active"]),
    ) == ("340000######0017", "American Express", "Panel", "US", True)
    assert "340000######0017" in panel.table.value and "340000000000017" not in panel.table.value
    reference = row["transactionreference"]
    assert panel.card.value == reference

    panel.disable_button.click()
    assert not panel.frame.iloc[0]["active"] and "card disabled" in panel.status.value
    panel.pay_button.click()
    assert panel.last_response.record.errorcode == 30000
    assert "answered an error" in panel.status.value

    panel.enable_button.click()
    panel.amount.value = "2000"
    panel.pay_button.click()
    assert panel.last_response.ok and panel.last_response.record["baseamount"] == "2000"
    panel.finalnumber.value = "6"
    panel.subscribe_button.click()
    assert panel.last_response.records[1]["subscriptionfinalnumber"] == "6"
    assert panel.frame.iloc[0]["uses"] == 2

    panel.form.fields["pan"].value = "4111111111111111"
    panel.form.send_button.click()
    newest = panel.frame.iloc[0]
    assert len(panel.frame) == 2 and panel.card.value == newest["transactionreference"] != reference
    panel.card.value = reference
    panel.refresh()
    assert panel.card.value == reference  # a refresh keeps the choice


def test_panel_form_refuses_a_security_code(gw):
    panel = CardStorePanel(gw)
    assert "securitycode" not in panel.form.fields  # the STORE form has no input for it
    panel.form.fields["billingemail"].value = "a" * 65 + "@example.com"
    assert panel.form.send_button.disabled
    assert any(p.field == "billingemail" for p in panel.form.problems)


def test_panel_button_without_a_card_shows_the_error(gw):
    panel = CardStorePanel(gw)
    with pytest.raises(ValueError, match="choose a stored card"):
        panel.pay_button.click()
    assert "choose a stored card" in panel.status.value


def test_panel_amount_and_final_number_are_checked_beside_them_and_gate_their_buttons(gw, monkeypatch):
    panel = CardStorePanel(gw)
    sent = []
    monkeypatch.setattr(cardstore, "pay_with", lambda *args, **kwargs: sent.append(kwargs))
    panel.amount.value = "10.50"
    assert "<code>baseamount</code>: Numeric: digits 0-9 only" in shown_beside(panel, panel.amount)
    assert panel.pay_button.disabled and panel.subscribe_button.disabled
    panel.pay_button.click()  # pressed anyway: checked again, nothing sent
    assert sent == [] and "not sent" in panel.status.value
    panel.amount.value = "1050"
    panel.finalnumber.value = "1x"
    assert "subscriptionfinalnumber</code>: Numeric" in shown_beside(panel, panel.finalnumber)
    assert shown_beside(panel, panel.amount) == ""
    assert not panel.pay_button.disabled and panel.subscribe_button.disabled
    panel.finalnumber.value = "12"
    assert not panel.subscribe_button.disabled and shown_beside(panel, panel.finalnumber) == ""
