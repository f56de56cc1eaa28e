"""gwkit.DemoShop in headless Chromium: a customer pays on the demo shop's page (notebook 06).

The shop plays the customer in its own thread (Playwright's sync API refuses a thread with an
event loop, as a notebook's); nothing waits on wall-clock time.
"""

from __future__ import annotations

import struct
from datetime import datetime

import pytest

pytest.importorskip("playwright.sync_api")

import gwkit
from gwkit import sandbox as sandbox_module
from gwkit.shop import CHROMIUM_ARGS, HIDE_CARD_DATA, VIEWPORT
from support.browser import CHROMIUM, require_chromium

pytestmark = pytest.mark.browser

VISA = "4111111111111111"
CARD = {"pan": VISA, "expirymonth": "11", "expiryyear": "2031", "securitycode": "123"}


@pytest.fixture(scope="module")
def handle(tmp_path_factory):
    require_chromium()
    started = sandbox_module.start(
        tmp_path_factory.mktemp("shop") / "s.db", clock_start=datetime(2026, 3, 2, 10)
    )
    yield started
    started.stop()


@pytest.fixture(scope="module")
def shop(handle):
    started = gwkit.DemoShop(handle.base_url, handle.sitereference, chromium=CHROMIUM)
    yield started
    started.close()


def png_size(png: bytes) -> tuple[int, int]:
    assert png[:8] == b"\x89PNG\r\n\x1a\n"
    return struct.unpack(">II", png[16:24])


def test_paying_in_the_browser_keeps_real_size_screenshots_and_sends_the_shop_only_a_token(shop, handle):
    payment = shop.pay(CARD)

    assert payment.via == "browser"
    assert [s.caption for s in payment.screenshots] == [
        "The page with the card typed in, before Pay",
        "After Pay: what the page shows",
    ]
    for shot in payment.screenshots:
        width, height = png_size(shot.png)
        assert width == VIEWPORT["width"] and height >= 200
    assert "not completed yet" in payment.page_message
    receipt = shop.last_receipt()
    assert receipt["card_data"] == [] and receipt["fields"]["cachetoken"].startswith("gAAAA")
    assert VISA not in receipt["body"]
    shown = payment._repr_html_()
    assert "headless Chromium" in shown and shown.count("data:image/png;base64,") == 2
    assert VISA not in shown
    assert [row["state"] for row in handle.cachetokens()] == ["live"]


def test_completing_now_makes_the_shop_send_the_auth(shop, handle):
    payment = shop.pay(CARD, complete="now")

    assert payment.page_message == "Payment authorised"
    assert shop.last_receipt()["auth"]["errorcode"] == "0"
    assert [row["state"] for row in handle.cachetokens()].count("used") == 1


def test_named_card_inputs_post_the_card_to_the_shop_and_the_recorder_flags_it(shop):
    shop.pay(CARD, named_card_inputs=True)

    receipt = shop.last_receipt()
    assert {"field pan", "field securitycode"} <= set(receipt["card_data"])
    assert VISA not in receipt["body"] and receipt["fields"]["pan"] == "411111######1111"


def test_a_card_st_js_refuses_never_leaves_the_page(shop):
    before = len(shop.receipts())
    payment = shop.pay({**CARD, "pan": "4111111111111112"})

    assert payment.page_message == "Invalid card number"
    assert len(shop.receipts()) == before


def test_the_page_is_shown_as_tall_as_it_really_is(shop):
    page = shop.page()

    assert page.height is not None and page.height > 300
    shown = page._repr_html_()
    assert f"height:{page.height}px" in shown and "fr_fr" in shown and "de_de" in shown


def test_screenshots_draw_the_card_number_and_security_code_as_dots(shop):
    """The masked page looks the same whatever the digits; unmasked, the digits show."""
    from playwright.sync_api import sync_playwright

    def screenshot(pan: str, masked: bool) -> bytes:
        page = browser.new_page(viewport=VIEWPORT)
        page.goto(shop.url)
        if masked:
            page.evaluate(HIDE_CARD_DATA)
        page.fill("[data-st-field=pan]", pan)
        page.fill("[data-st-field=securitycode]", "123")
        shot = page.screenshot(full_page=True)
        page.close()
        return shot

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=str(CHROMIUM), args=list(CHROMIUM_ARGS))
        masked_visa, masked_other = screenshot(VISA, True), screenshot("4444333322221111", True)
        clear_visa, clear_other = screenshot(VISA, False), screenshot("4444333322221111", False)
        browser.close()

    assert masked_visa == masked_other
    assert clear_visa != clear_other


def test_the_shops_own_screenshots_draw_the_card_number_and_security_code_as_dots(shop):
    """Before and after Pay (a card st.js refuses stays on the page), whatever the digits typed: the
    page hides them as it loads."""
    one = shop.pay({**CARD, "pan": "4111111111111112"})
    other = shop.pay({**CARD, "pan": "4444333322221112", "securitycode": "987"})

    assert one.page_message == other.page_message == "Invalid card number"
    assert [s.png for s in one.screenshots] == [s.png for s in other.screenshots]


def test_a_page_kept_between_payments_carries_nothing_from_one_to_the_next(shop):
    refused = shop.pay({**CARD, "pan": "4111111111111112"})
    before = len(shop.receipts())
    paid = shop.pay(CARD, complete="now")

    assert refused.page_message == "Invalid card number"
    assert paid.page_message == "Payment authorised" and len(shop.receipts()) == before + 1
    assert shop.last_receipt()["fields"]["complete"] == "now"


def test_a_failed_use_of_the_browser_drops_its_page_and_the_next_payment_gets_a_fresh_one(shop, handle):
    def fails(page):
        page.goto(f"{handle.base_url}/demo/merchant")
        page.fill("[data-st-field=pan]", VISA)
        raise RuntimeError("the work failed half way")

    with pytest.raises(RuntimeError, match="half way"):
        shop._in_browser(fails)
    assert shop._browser._page is None
    assert shop.pay(CARD).page_message == "The payment was not completed yet (no AUTH sent)."
    assert shop._browser._page is not None


def test_one_browser_serves_every_payment_and_close_stops_it(handle):
    shop = gwkit.DemoShop(handle.base_url, handle.sitereference, chromium=CHROMIUM)
    shop.pay(CARD)
    browser = shop._browser
    shop.pay(CARD)
    assert shop._browser is browser and browser._browser is not None
    shop.close()
    assert shop._browser is None and browser._browser is None
    assert shop.pay(CARD).via == "browser"  # a closed shop starts its browser again
    shop.close()
