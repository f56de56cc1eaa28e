"""gwkit.DemoShop without a browser: it sends what st.js would send, and says so."""

from __future__ import annotations

from datetime import datetime

import pytest

import gwkit
from gwkit import sandbox as sandbox_module

VISA = "4111111111111111"
CARD = {"pan": VISA, "expirymonth": "11", "expiryyear": "2031", "securitycode": "123"}


@pytest.fixture
def handle(tmp_path):
    started = sandbox_module.start(tmp_path / "s.db", clock_start=datetime(2026, 3, 2, 10))
    yield started
    started.stop()


@pytest.fixture
def shop(handle, tmp_path):
    return gwkit.DemoShop(handle.base_url, handle.sitereference, chromium=tmp_path / "no-chromium-here")


def test_without_a_browser_the_shop_gets_what_st_js_would_post(shop, handle):
    with pytest.raises(LookupError, match="received nothing yet"):
        shop.last_receipt()

    payment = shop.pay(CARD)

    assert payment.via == "st.js emulation" and payment.screenshots == []
    assert "not installed" in payment._repr_html_()
    receipt = shop.last_receipt()
    assert receipt["card_data"] == [] and "cachetoken" in receipt["fields"]
    assert VISA not in receipt["body"]
    token = receipt["fields"]["cachetoken"]
    client = gwkit.Client(
        base_url=handle.base_url,
        username=handle.username,
        password=handle.password,
        sitereference=handle.sitereference,
    )
    assert (
        client.auth(
            cachetoken=token, accounttypedescription="ECOM", baseamount="1050", currencyiso3a="GBP"
        ).record.errorcode
        == 0
    )
    assert [row["state"] for row in handle.cachetokens()] == ["used"]


def test_without_a_browser_named_card_inputs_still_reach_the_shop_masked(shop):
    shop.pay(CARD, named_card_inputs=True)

    receipt = shop.last_receipt()
    assert "field pan" in receipt["card_data"] and VISA not in receipt["body"]


def test_a_card_the_gateway_refuses_is_reported_and_nothing_reaches_the_shop(shop):
    payment = shop.pay({**CARD, "expirymonth": "13"})

    assert "Invalid field" in payment.page_message and "expirymonth" in payment.page_message
    assert shop.receipts() == []


def test_the_form_source_has_card_inputs_without_names_and_the_st_js_set_up(shop):
    source = shop.form_source()

    assert source.startswith("<form") and source.endswith("</script>")
    assert "data-st-field='pan'" in source and "name='pan'" not in source
    assert "SecureTrading.Standard" in source


def test_without_a_browser_the_page_is_offered_as_links(shop):
    shown = shop.page()._repr_html_()

    assert "Open the demo shop in a new tab" in shown and "<iframe" not in shown
    assert shop.page_url(named_card_inputs=True, locale="fr_fr").endswith("?locale=fr_fr&named_card_inputs=1")
