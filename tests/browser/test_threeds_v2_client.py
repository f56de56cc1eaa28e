"""gwkit's side of EMV 3-D Secure in headless Chromium, against the sandbox's pages
(V2-CONTRACT.md): the receiver's start page posts the CReq to the sandbox's ACS, the cardholder
types the one-time code, the ACS posts the CRes back to gwkit's term URL receiver, then the AUTH
with threedresponse; and the receiver's method page runs the issuer's 3DS method in a hidden frame
and reports when the gateway's notification page says so (its TP_METHOD_URL_RESPONSE message).
Nothing waits on wall-clock time: Playwright's auto-waiting and the flow's events only."""

from __future__ import annotations

import pytest

pytest.importorskip("playwright.sync_api")
from playwright.sync_api import expect

from gwkit.interface import testcards
from gwkit.threeds import ThreeDSecureV2Flow
from support.threeds import START

pytestmark = pytest.mark.browser

RETURN_WAIT = 30  # seconds: an upper bound for the event, never a sleep


def card(case: str) -> dict:
    pan = next(
        c.pan
        for c in testcards.test_cards().values()
        if (c.threedscase, c.paymenttypedescription, c.threedversion) == (case, "DELTA", "2.1.0")
    )
    return {"pan": pan, "expirydate": f"12/{START.year + 3}", "securitycode": "123", "baseamount": "1050"}


@pytest.fixture
def page(browser):
    context = browser.new_context()
    yield context.new_page()
    context.close()


def test_a_challenge_answered_in_the_browser(client, receiver, page):
    flow = ThreeDSecureV2Flow(client, receiver=receiver, method_timeout=0)
    flow.lookup(**card("challenge-success"))
    flow.query()
    page.goto(flow.start_url)  # gwkit's page: it posts creq and threeDSSessionData to the ACS
    code = page.locator("#acs2-otp-shown")
    expect(code).not_to_be_empty()
    assert page.url == flow.query_record["acsurl"]
    page.locator("#acs2-otp").fill(code.inner_text().strip())
    page.locator("#acs2-submit").click()  # the ACS posts the CRes back to the term URL by itself
    expect(page.locator("#gwkit-message")).to_contain_text("return to the notebook")
    assert flow.wait_for_return(timeout=RETURN_WAIT)
    assert (flow.trans_status, flow.action_code) == ("Y", "SUCCESS")
    record = flow.auth()
    assert (record["errorcode"], record["status"], record["eci"]) == ("0", "Y", "05") and record["cavv"]


@pytest.mark.parametrize(
    "case,result", [("frictionless-method-url", "SUCCESS"), ("method-not-completed", None)]
)
def test_the_method_page_reports_only_what_the_notification_says(client, receiver, page, case, result):
    flow = ThreeDSecureV2Flow(client, receiver=receiver, method_timeout=0)
    flow.lookup(**card(case))
    page.goto(flow.method_page())
    frame = page.frame_locator("#gwkit-method-frame")
    if result == "SUCCESS":
        expect(page.locator("#gwkit-method-status")).to_have_text(
            "Your card issuer has checked this browser."
        )
        assert flow.wait_for_method(timeout=RETURN_WAIT) == "SUCCESS"
    else:
        # the method page has loaded in the hidden frame, and never sends the browser on
        expect(frame.locator("body")).to_be_attached()
        assert flow.wait_for_method(timeout=0) == "UNCOMPLETED"
    flow.close()
