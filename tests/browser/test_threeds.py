"""The 3-D Secure browser round trip in headless Chromium: the merchant page auto-posts to the
sandbox ACS, the tester chooses the outcome, the ACS auto-posts back to gwkit's term URL receiver,
then the AUTH. Also with JavaScript off (visible Continue buttons) and inside the stepper's iframe.
Nothing waits on wall-clock time: Playwright's auto-waiting and the flow's return event only."""

from __future__ import annotations

import pytest

pytest.importorskip("playwright.sync_api")
from playwright.sync_api import expect

from gwkit.threeds import ThreeDSecureFlow
from gwkit.widgets.threeds_stepper import ThreeDSecureStepper
from support.threeds import CARD

pytestmark = pytest.mark.browser

RETURN_WAIT = 30  # seconds: an upper bound for the event, never a sleep


@pytest.fixture
def page(browser):
    context = browser.new_context()
    yield context.new_page()
    context.close()


@pytest.fixture
def page_without_js(browser):
    context = browser.new_context(java_script_enabled=False)
    yield context.new_page()
    context.close()


def test_round_trip_with_javascript(client, receiver, page):
    flow = ThreeDSecureFlow(client, receiver=receiver)
    flow.query(**CARD)
    page.goto(flow.start_url)  # the merchant page: it posts itself to the ACS
    expect(page.locator("#acs-amount")).to_have_text("GBP 10.50")
    expect(page.locator("#acs-card")).to_have_text("411111######0211")
    expect(page.locator("#acs-merchant")).to_have_text("gwkit sandbox merchant")
    assert page.url == flow.query_record["acsurl"]
    page.locator("#outcome-Y").click()  # the ACS posts itself back to the term URL
    expect(page.locator("#gwkit-message")).to_contain_text("return to the notebook")
    assert page.url == receiver.term_url
    assert flow.wait_for_return(timeout=RETURN_WAIT)
    record = flow.auth()
    assert (record["errorcode"], record["status"], record["eci"]) == ("0", "Y", "05") and record["cavv"]
    assert [s.name for s in flow.steps] == ["THREEDQUERY", "ACS", "TERMURL", "AUTH"]


def test_round_trip_without_javascript(client, receiver, page_without_js):
    page = page_without_js
    flow = ThreeDSecureFlow(client, receiver=receiver)
    flow.query(**CARD)
    page.goto(flow.start_url)
    page.locator("#gwkit-to-acs-continue").click()  # visible only because JavaScript is off
    expect(page.locator("#acs-amount")).to_have_text("GBP 10.50")
    page.locator("#outcome-N").click()
    continue_button = page.locator("#acs-continue")
    expect(continue_button).to_be_visible()
    assert not flow.returned
    continue_button.click()
    expect(page.locator("#gwkit-message")).to_contain_text("return to the notebook")
    assert flow.wait_for_return(timeout=RETURN_WAIT)
    record = flow.auth()
    assert (record["errorcode"], record["status"], record["settlestatus"]) == ("60022", "N", "3")


def test_merchant_page_built_by_the_flow(client, receiver, page):
    flow = ThreeDSecureFlow(client, receiver=receiver)
    flow.query(**{**CARD, "pan": "5100000000000008", "baseamount": "70000"})
    page.set_content(flow.acs_form_html())
    expect(page.locator("#acs-amount")).to_have_text("GBP 700.00")
    page.locator("#outcome-A").click()
    expect(page.locator("#gwkit-message")).to_contain_text("return to the notebook")
    assert flow.wait_for_return(timeout=RETURN_WAIT)
    record = flow.auth()
    assert (record["errorcode"], record["status"], record["eci"]) == ("70000", "A", "01")


def test_acs_error_page_in_the_browser(client, receiver, page):
    flow = ThreeDSecureFlow(client, receiver=receiver)
    flow.query(**CARD)
    tampered = flow.acs_form_html().replace("name='MD' value='", "name='MD' value='x")
    page.set_content(tampered)
    expect(page.locator("#acs-error")).to_contain_text("MD does not belong")
    assert not flow.returned
    flow.close()


def test_stepper_iframe_moves_on_by_itself(client, receiver, page):
    stepper = ThreeDSecureStepper(client, receiver=receiver)
    stepper.query_button.click()
    assert stepper.step_states()["ACS"] == "current"
    page.set_content(f"<html><body><h1>notebook</h1>{stepper.acs_view.value}</body></html>")
    frame = page.frame_locator("iframe")
    expect(frame.locator("#acs-amount")).to_have_text("GBP 10.50")
    frame.locator("#outcome-Y").click()
    expect(frame.locator("#gwkit-message")).to_contain_text("return to the notebook")
    assert stepper.flow.wait_for_return(timeout=RETURN_WAIT)  # the AUTH was sent before the event is set
    assert stepper.step_states() == {"THREEDQUERY": "done", "ACS": "done", "TERMURL": "done", "AUTH": "done"}
    record = stepper.flow.auth_record
    assert (record["errorcode"], record["status"], record["eci"]) == ("0", "Y", "05")
    assert "cavv present" in stepper.step_views["AUTH"].value
    assert "The customer is back" in stepper.acs_view.value
