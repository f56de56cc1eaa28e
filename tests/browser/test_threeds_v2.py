"""EMV 3-D Secure (v2) in headless Chromium: the sandbox's challenge page clicked through as a
shop's end-to-end test would (its documented selectors), then the AUTH; and the makers' own browser
library (npm @trustpayments/3ds-sdk-js 1.2.73) running the sandbox's 3DS method and challenge pages.

The merchant's term URL is answered by Playwright's routing (no server, no network). Nothing waits
on wall-clock time: Playwright's auto-waiting and the library's own promises only.

Captures cited (real-gateway-facts.md, "3-D Secure v2"): V3 = penfold/trustpayments-public-stjs-js-payments-v3,
commit 337c1617 (test cards: tests/utils/enums/card.py; the library's calls:
src/application/core/services/three-d-verification/implementations/trust-payments/); SDK = the
package's README and dist/index.js.
"""

from __future__ import annotations

import json
import re
from html import escape
from urllib.parse import parse_qs

import pytest

pytest.importorskip("playwright.sync_api")
from playwright.sync_api import expect

from support.sandbox import Gateway
from support.threeds_sdk import sdk_script
from support.threeds_v2 import TERMURL, after_challenge, decoded, library_jwt, lookup, threedquery

pytestmark = pytest.mark.browser

SIX_DIGITS = re.compile(r"^\d{6}$")  # the one-time code the ACS page shows


@pytest.fixture(scope="module")
def api(gateway):
    client = Gateway(gateway.base_url, gateway.username, gateway.password)
    yield client
    client.close()


@pytest.fixture
def page(browser):
    context = browser.new_context()
    yield context.new_page()
    context.close()


@pytest.fixture
def term_posts(page):
    """What the browser posts to the merchant's term URL, answered by Playwright's routing."""
    posts: list[dict[str, str]] = []

    def answer(route):
        posts.append({k: v[0] for k, v in parse_qs(route.request.post_data or "").items()})
        route.fulfill(status=200, content_type="text/html", body="<p id='merchant-back'>Back at the shop</p>")

    page.route(TERMURL, answer)
    return posts


def merchant_page(record: dict) -> str:
    """The shop's page that sends the browser to the ACS with the CReq (as v1's merchant page)."""
    return (
        f"<form method='post' action='{escape(record['acsurl'])}' id='to-acs'>"
        f"<input type='hidden' name='creq' value='{escape(record['threedpayload'])}'>"
        "<input type='hidden' name='threeDSSessionData' value='c2hvcC1zZXNzaW9u'></form>"
        "<script>document.getElementById('to-acs').submit()</script>"
    )


@pytest.mark.parametrize(
    "pan, eci", [("4900490000000147", "05"), ("5591390000000645", "02"), ("340000000004118", "05")]
)
def test_the_challenge_page_clicked_through_in_chromium_then_the_auth(api, page, term_posts, pan, eci):
    """V3 card.py: the "challenge success" cards of each scheme authorise (Visa 05, Mastercard 02)."""
    (record,) = api.records(threedquery(pan, "THREEDQUERY", "AUTH"))
    page.set_content(merchant_page(record))
    code = page.get_by_test_id("acs-v2-otp-shown")
    expect(code).to_have_text(SIX_DIGITS)
    expect(page.locator("#acs2-card")).to_have_text(pan[:6] + "######" + pan[-4:])
    expect(page.locator("#acs2-amount")).to_have_text("GBP 10.50")
    page.get_by_test_id("acs-v2-otp").fill(code.inner_text())
    page.get_by_test_id("acs-v2-submit").click()
    expect(page.locator("#merchant-back")).to_be_visible()  # the ACS posted back by itself
    (posted,) = term_posts
    assert posted["threeDSSessionData"] == "c2hvcC1zZXNzaW9u"
    assert decoded(posted["cres"])["transStatus"] == "Y"
    auth = api.one(
        after_challenge(record["transactionreference"], library_jwt("SUCCESS", cres=posted["cres"]))
    )
    assert (auth["errorcode"], auth["status"], auth["eci"]) == ("0", "Y", eci) and auth["cavv"]


def test_the_fail_button_in_chromium_makes_the_auth_unauthenticated(api, page, term_posts):
    """PYT Cardinal feature: 4000000000001091 is the challenge card; failing it gives N, and the AUTH
    sent anyway 60022 (chosen, as v1's unauthenticated AUTH)."""
    (record,) = api.records(threedquery("4000000000001091", "THREEDQUERY", "AUTH"))
    page.set_content(merchant_page(record))
    page.get_by_test_id("acs-v2-fail").click()
    expect(page.locator("#merchant-back")).to_be_visible()
    cres = term_posts[0]["cres"]
    assert decoded(cres)["transStatus"] == "N"
    auth = api.one(after_challenge(record["transactionreference"], library_jwt("FAILURE", cres=cres)))
    assert (auth["errorcode"], auth["status"], auth["settlestatus"]) == ("60022", "N", "3")


# -- the makers' library ------------------------------------------------------------------------

HARNESS = "<!doctype html><html><body><div id='challenge'></div></body></html>"
INIT = """async (timeout) => {
  const sdk = new ThreeDSecure.ThreeDSecureFactory().create();
  window.sdk = sdk;
  await new Promise((ok, ko) => sdk.init$({challengeDisplayMode: "INLINE",
    challengeDisplayInlineTargetElementId: "challenge", threeDSMethodTimeout: timeout}).subscribe({next: ok, error: ko}));
}"""
METHOD = """([id, notification, method]) => new Promise((ok, ko) =>
  window.sdk.run3DSMethod$(id, notification, method).subscribe({next: ok, error: ko}))"""
CHALLENGE = """([version, payload, acsurl, cardType]) => {
  window.challengeResult = new Promise((ok, ko) => window.sdk.doChallenge$(
    new ThreeDSecure.ThreeDSecureVersion(version), payload, acsurl, cardType).subscribe({next: ok, error: ko}));
}"""


@pytest.fixture(scope="module")
def sdk():
    return sdk_script()


def library_page(page, sdk, method_timeout: int = 10000):
    page.set_content(HARNESS)
    page.add_script_tag(path=str(sdk))
    page.evaluate(INIT, method_timeout)
    return page


def by_token(cachetoken: str) -> dict:
    request = threedquery("", "THREEDQUERY", "AUTH", cachetoken=cachetoken)
    return {k: v for k, v in request.items() if k not in ("pan", "expirydate", "securitycode")}


def test_the_makers_library_runs_the_method_and_the_challenge_then_the_auth(api, page, term_posts, sdk):
    """SDK 1.2.73 README: run3DSMethod$(transactionId, notificationURL, methodURL) answers SUCCESS when
    the method page reports back; doChallenge$(version, threedpayload, challengeURL, cardType) answers
    the challenge's result with the CRes. V3 ThreeDSecureVerificationService: THREEDLOOKUP, method,
    THREEDQUERY with the cachetoken, challenge, then the AUTH with the threedresponse it builds."""
    found = api.one(lookup("4900490000000063"))  # Visa 2.1, challenge with method URL
    library_page(page, sdk)
    method = page.evaluate(
        METHOD, [found["threedstransactionid"], found["threednotificationurl"], found["threedmethodurl"]]
    )
    assert (method["status"], method["transactionId"]) == ("SUCCESS", found["threedstransactionid"])
    (record,) = api.records(by_token(found["cachetoken"]))
    assert (
        record["acsurl"]
        and decoded(record["threedpayload"])["threeDSServerTransID"] == found["threedstransactionid"]
    )
    page.evaluate(CHALLENGE, [record["threedversion"], record["threedpayload"], record["acsurl"], "DELTA"])
    acs = page.frame_locator("#tp-3ds-challenge-iframe")
    shown = acs.get_by_test_id("acs-v2-otp-shown")
    expect(shown).to_have_text(SIX_DIGITS)
    acs.get_by_test_id("acs-v2-otp").fill(shown.inner_text())
    acs.get_by_test_id("acs-v2-submit").click()
    result = page.evaluate("window.challengeResult")
    assert result["status"] == "SUCCESS" and result["transactionId"] == found["threedstransactionid"]
    cres = json.loads(page.evaluate("(text) => atob(text)", result["data"]["cres"]))  # as V3's converter
    assert cres["transStatus"] == "Y"
    jwt = library_jwt("SUCCESS", cres=result["data"]["cres"], pares_status=cres["transStatus"])
    auth = api.one(after_challenge(record["transactionreference"], jwt))
    assert (auth["errorcode"], auth["status"], auth["eci"], auth["threedversion"]) == (
        "0",
        "Y",
        "05",
        "2.1.0",
    )


def test_the_makers_library_sees_a_failed_challenge_as_failure(api, page, term_posts, sdk):
    """V3 ChallengeResultHandler: FAILURE (and ERROR) end in error 50003 with no AUTH."""
    (record,) = api.records(threedquery("5591390000000579", "THREEDQUERY", "AUTH"))  # challenge failed, 2.2
    library_page(page, sdk)
    page.evaluate(
        CHALLENGE, [record["threedversion"], record["threedpayload"], record["acsurl"], "MASTERCARD"]
    )
    acs = page.frame_locator("#tp-3ds-challenge-iframe")
    acs.get_by_test_id("acs-v2-otp").fill(acs.get_by_test_id("acs-v2-otp-shown").inner_text())
    acs.get_by_test_id("acs-v2-submit").click()
    result = page.evaluate("window.challengeResult")
    assert result["status"] == "FAILURE"
    assert json.loads(page.evaluate("(text) => atob(text)", result["data"]["cres"]))["transStatus"] == "N"


def test_the_makers_library_sees_a_challenge_error_as_error(api, page, term_posts, sdk):
    """V3 card.py: 340000000003144 is an Amex "challenge error" card; V3 ChallengeResultHandler: ERROR
    ends in error 50003 with no AUTH."""
    (record,) = api.records(
        threedquery("340000000003144", "THREEDQUERY", "AUTH")
    )  # challenge error, Amex 2.1
    library_page(page, sdk)
    page.evaluate(CHALLENGE, [record["threedversion"], record["threedpayload"], record["acsurl"], "AMEX"])
    page.frame_locator("#tp-3ds-challenge-iframe").get_by_test_id("acs-v2-submit").click()
    result = page.evaluate("window.challengeResult")
    assert result["status"] == "ERROR"
    assert json.loads(page.evaluate("(text) => atob(text)", result["data"]["cres"]))["messageType"] == "Erro"


def test_the_makers_library_gives_up_on_a_method_that_never_completes(api, page, sdk):
    """SDK README: a method page that does not report back resolves UNCOMPLETED after
    threeDSMethodTimeout (1 ms here: the page never reports, so the outcome does not depend on time);
    the THREEDQUERY then goes on (V3 card.py: "3DS method not completed" is authorised)."""
    found = api.one(lookup("5591390000000165"))
    library_page(page, sdk, method_timeout=1)
    method = page.evaluate(
        METHOD, [found["threedstransactionid"], found["threednotificationurl"], found["threedmethodurl"]]
    )
    assert method["status"] == "UNCOMPLETED"
    query, auth = api.records(by_token(found["cachetoken"]))
    assert "acsurl" not in query and (auth["errorcode"], auth["status"], auth["eci"]) == ("0", "Y", "02")
