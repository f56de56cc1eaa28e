"""The sandbox's pages under their Content-Security-Policy in headless Chromium: they still work
(st.js tokenises and pays, the ACS posts back to the term URL), nothing of theirs is refused by
the policy, and a script smuggled into the shop's query never runs (finding 4).
Nothing waits on wall-clock time: Playwright's auto-waiting and the flow's return event only."""

from __future__ import annotations

import pytest

pytest.importorskip("playwright.sync_api")
from playwright.sync_api import expect

from gwkit.threeds import ThreeDSecureFlow
from support.threeds import CARD

pytestmark = pytest.mark.browser

RETURN_WAIT = 30  # seconds: an upper bound for the event, never a sleep
XSS = ["</script><script>alert(1)</script>", '"});alert(1);//', "<img src=x onerror=alert(1)>"]


@pytest.fixture
def watched(browser):
    """A page, and what it reported: dialogs opened, page errors, CSP refusals on the console."""
    context = browser.new_context()
    page = context.new_page()
    seen: dict[str, list[str]] = {"dialogs": [], "errors": [], "refused": []}
    page.on("dialog", lambda dialog: (seen["dialogs"].append(dialog.message), dialog.dismiss()))
    page.on("pageerror", lambda error: seen["errors"].append(str(error)))
    page.on(
        "console",
        lambda message: (
            seen["refused"].append(message.text) if "Content Security Policy" in message.text else None
        ),
    )
    yield page, seen
    context.close()


@pytest.mark.parametrize("payload", XSS)
def test_a_script_in_the_shops_query_never_runs(gateway, watched, payload):
    page, seen = watched
    page.goto(f"{gateway.base_url}/demo/merchant?locale={payload}")
    expect(page.locator("#st-payment")).to_be_visible()
    page.locator("#pay").click()  # st.js started with the page: it checks the empty card
    expect(page.locator("#st-message")).not_to_be_empty()
    page.goto(f"{gateway.base_url}/demo/merchant?sitereference={payload}")
    expect(page.locator("#merchant-error")).to_contain_text("sells on site")
    assert seen["dialogs"] == [] and seen["refused"] == []


def test_the_shop_pays_under_its_policy(gateway, watched):
    page, seen = watched
    page.goto(f"{gateway.base_url}/demo/merchant")
    for field, value in {
        "pan": "4111111111111111",
        "expirymonth": "11",
        "expiryyear": "2031",
        "securitycode": "123",
    }.items():
        page.fill(f"[data-st-field={field}]", value)
    page.click("#pay")
    expect(page.locator("#auth-result")).to_have_text("Payment authorised")
    page.goto(f"{gateway.base_url}/demo/merchant/received?format=html")
    expect(page.locator("section.receipt")).to_have_count(1)
    assert seen == {"dialogs": [], "errors": [], "refused": []}


def test_the_acs_posts_back_to_the_term_url_under_its_policy(client, receiver, watched):
    page, seen = watched
    flow = ThreeDSecureFlow(client, receiver=receiver)
    flow.query(**CARD)
    page.goto(flow.start_url)
    expect(page.locator("#acs-amount")).to_have_text("GBP 10.50")
    page.locator("#outcome-Y").click()  # the ACS's own script (with its nonce) posts to the term URL
    expect(page.locator("#gwkit-message")).to_contain_text("return to the notebook")
    assert flow.wait_for_return(timeout=RETURN_WAIT)
    assert flow.auth()["errorcode"] == "0"
    assert seen == {"dialogs": [], "errors": [], "refused": []}
