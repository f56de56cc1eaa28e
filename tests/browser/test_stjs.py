"""st.js in headless Chromium against a sandbox on 127.0.0.1 (interface 4.9, 5.5, 5.6).

The demo merchant page is served by the sandbox itself; other test pages come from a second
loopback server (another port, so another origin: every call to /json/ is a real cross-origin
request with a CORS preflight). Nothing waits on wall-clock time: Playwright's auto-waiting only.
"""

from __future__ import annotations

import json
import threading
from datetime import datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import ClassVar

import httpx
import pytest

playwright_api = pytest.importorskip("playwright.sync_api")
from playwright.sync_api import expect  # noqa: E402

from gwkit import sandbox as sandbox_module  # noqa: E402

pytestmark = pytest.mark.browser

SITE = "test_gwkit12345"
CREDENTIALS = ("gwkit_sandbox", "gwkit-sandbox-password")
VISA = "4111111111111111"
CARD_VALUES = {"pan": VISA, "expirymonth": "11", "expiryyear": "2031", "securitycode": "123"}

MESSAGES = {
    "en_gb": {
        "pan": "Invalid card number",
        "expirymonth": "Invalid expiry month",
        "expiryyear": "Invalid expiry year",
        "expired": "The card has expired",
        "securitycode": "Invalid security code",
        "connection": "no connection to the payment gateway",
    },
    "fr_fr": {
        "pan": "Numéro de carte invalide",
        "expirymonth": "Mois d'expiration invalide",
        "expiryyear": "Année d'expiration invalide",
        "expired": "La carte a expiré",
        "securitycode": "Code de sécurité invalide",
        "connection": "pas de connexion à la passerelle de paiement",
    },
    "de_de": {
        "pan": "Ungültige Kartennummer",
        "expirymonth": "Ungültiger Ablaufmonat",
        "expiryyear": "Ungültiges Ablaufjahr",
        "expired": "Die Karte ist abgelaufen",
        "securitycode": "Ungültiger Sicherheitscode",
        "connection": "keine Verbindung zum Zahlungsgateway",
    },
}
# (the field marked st-error, the message key, the card values that break it)
INVALID = [
    ("pan", "pan", {"pan": "4111111111111112"}),  # fails Luhn
    ("pan", "pan", {"pan": "41111"}),  # too short
    ("expirymonth", "expirymonth", {"expirymonth": "13"}),
    ("expiryyear", "expiryyear", {"expiryyear": "20x1"}),
    ("expiryyear", "expired", {"expiryyear": "2001"}),  # in the past by the browser's date
    ("securitycode", "securitycode", {"securitycode": "12"}),
    ("securitycode", "securitycode", {"securitycode": "1234"}),  # 4 digits on a Visa
    ("securitycode", "securitycode", {"pan": "340000000000017", "securitycode": "123"}),  # 3 on an Amex
]


@pytest.fixture(scope="module")
def gateway(tmp_path_factory):
    handle = sandbox_module.start(
        tmp_path_factory.mktemp("stjs") / "s.db", clock_start=datetime(2026, 3, 2, 10, 0, 0)
    )
    yield handle
    handle.stop()


@pytest.fixture(autouse=True)
def clean(gateway):
    gateway.reset()


@pytest.fixture
def page(browser):
    context = browser.new_context()
    opened = context.new_page()
    errors: list[str] = []
    opened.on("pageerror", lambda error: errors.append(str(error)))
    yield opened
    context.close()
    assert errors == [], f"JavaScript errors on the page: {errors}"


class _Pages(BaseHTTPRequestHandler):
    pages: ClassVar[dict[str, str]] = {}

    def do_GET(self):
        body = self.pages.get(self.path.split("?")[0])
        self.send_response(200 if body else 404)
        self.send_header("content-type", "text/html; charset=utf-8")
        self.end_headers()
        self.wfile.write((body or "not found").encode("utf-8"))

    def log_message(self, *args):
        pass


@pytest.fixture(scope="module")
def merchant_site():
    """Another origin on loopback serving test pages: {path: html}."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Pages)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    _Pages.pages = {}
    yield f"http://127.0.0.1:{server.server_address[1]}", _Pages.pages
    server.shutdown()
    server.server_close()


def received(gateway) -> list[dict]:
    return httpx.get(f"{gateway.base_url}/demo/merchant/received").json()["receipts"]


def fill_card(page, **values):
    for field, value in {**CARD_VALUES, **values}.items():
        page.fill(f"[data-st-field={field}]", value)


def token_count(gateway) -> int:
    return gateway.sandbox.store.connection().execute("SELECT COUNT(*) FROM cachetokens").fetchone()[0]


def card_form(gateway, script: str, extra: str = "") -> str:
    """A merchant page on another origin: card inputs, order inputs, st.js, then `script`."""
    inputs = "".join(f"<input data-st-field='{f}'>" for f in CARD_VALUES)
    return (
        f"<!doctype html><html><head><meta charset='utf-8'></head><body>{extra}"
        f"<form id='st-payment' action='{gateway.base_url}/demo/merchant/pay' method='post'>"
        f"<div id='st-message'></div>{inputs}<input name='orderreference' value='o-1'>"
        f"<input name='baseamount' value='2000'><input name='currencyiso3a' value='EUR'>"
        f"<button id='pay' type='submit'>Pay</button></form>"
        f"<script src='{gateway.base_url}/js/st.js'></script><script>{script}</script></body></html>"
    )


# the demo merchant page, same origin as the gateway -------------------------------------------


def test_valid_card_posts_only_the_token_and_order_fields(gateway, page):
    calls = []
    page.on("request", lambda r: calls.append((r.method, r.url, r.post_data or "")))
    page.goto(f"{gateway.base_url}/demo/merchant")
    fill_card(page)
    page.click("#pay")
    expect(page.locator("#auth-result")).to_have_text("Payment authorised")
    expect(page.locator("table.auth")).to_contain_text("411111######1111")

    [receipt] = received(gateway)
    assert receipt["card_data"] == []
    assert set(receipt["field_names"]) == {
        "sitereference",
        "orderreference",
        "baseamount",
        "currencyiso3a",
        "billinglastname",
        "complete",
        "cachetoken",
    }
    assert receipt["fields"]["cachetoken"].startswith("gAAAA")
    everything = json.dumps({k: v for k, v in receipt.items() if k != "auth"})  # what arrived
    for card_value in (VISA, "411111", "123&", "=123", "2031", "pan=", "securitycode", "expiry"):
        assert card_value not in everything
    assert receipt["auth"]["errorcode"] == "0" and receipt["auth"]["maskedpan"] == "411111######1111"
    # The browser sent the card only to the gateway, and the merchant got the token only.
    posts = [(url, data) for method, url, data in calls if method == "POST"]
    assert [url.split(gateway.base_url)[1] for url, _ in posts] == ["/json/", "/demo/merchant/pay"]
    tokenise = json.loads(posts[0][1])
    assert "alias" not in tokenise
    assert tokenise["request"] == [
        {"requesttypedescriptions": ["CACHETOKENISE"], "sitereference": SITE, **CARD_VALUES}
    ]
    assert VISA not in posts[1][1]


def test_complete_later_keeps_the_token_for_the_merchant(gateway, page):
    page.goto(f"{gateway.base_url}/demo/merchant?locale=de_de")
    fill_card(page, pan="5100000000000008")
    page.select_option("select[name=complete]", "later")
    page.click("#pay")
    expect(page.locator("#auth-result")).to_contain_text("not completed")
    [receipt] = received(gateway)
    assert receipt["auth"] is None
    auth = {
        "requesttypedescriptions": ["AUTH"],
        "sitereference": SITE,
        "accounttypedescription": "ECOM",
        "currencyiso3a": "GBP",
        "baseamount": "1050",
        "cachetoken": receipt["fields"]["cachetoken"],
    }
    record = httpx.post(f"{gateway.base_url}/json/", json={"request": [auth]}, auth=CREDENTIALS).json()[
        "response"
    ][0]
    assert (record["errorcode"], record["paymenttypedescription"]) == ("0", "MASTERCARD")


def test_named_card_inputs_are_caught_by_the_merchant_recorder(gateway, page):
    page.goto(f"{gateway.base_url}/demo/merchant?named_card_inputs=1")
    fill_card(page)
    page.click("#pay")
    expect(page.locator(".receipt .bad")).to_contain_text("Card data reached the merchant server")
    [receipt] = received(gateway)
    assert "field pan" in receipt["card_data"]
    assert receipt["fields"]["pan"] == "411111######1111"
    assert receipt["fields"]["securitycode"] == "[redacted]"
    assert VISA not in json.dumps(receipt)


@pytest.mark.parametrize("locale", sorted(MESSAGES))
@pytest.mark.parametrize("field, key, values", INVALID, ids=[f"{k}-{v}" for _, k, v in INVALID])
def test_each_invalid_field_gives_the_localized_message(gateway, page, locale, field, key, values):
    calls = []
    page.on("request", lambda r: calls.append(r.url))
    page.goto(f"{gateway.base_url}/demo/merchant?locale={locale}")
    fill_card(page, **values)
    page.click("#pay")
    message = page.locator(f"#st-message [data-st-message-for={field}]")
    expect(message).to_have_text(MESSAGES[locale][key])
    expect(page.locator("#st-message")).to_have_class("st-error")
    expect(page.locator(f"[data-st-field={field}]")).to_have_class("st-error")
    others = [f for f in CARD_VALUES if f != field]
    for other in others:
        expect(page.locator(f"[data-st-field={other}]")).not_to_have_class("st-error")
    assert not any("/json/" in url for url in calls)
    assert received(gateway) == [] and token_count(gateway) == 0


def test_fixed_fields_clear_the_marks_and_go_through(gateway, page):
    page.goto(f"{gateway.base_url}/demo/merchant")
    fill_card(page, pan="1234", securitycode="1")
    page.click("#pay")
    expect(page.locator("#st-message .st-error-message")).to_have_count(2)
    fill_card(page)
    page.click("#pay")
    expect(page.locator("#auth-result")).to_have_text("Payment authorised")


def test_gateway_refusal_marks_the_field_it_names(gateway, page):
    # Luhn-valid but of no supported scheme: the browser lets it through, the sandbox names the pan.
    page.goto(f"{gateway.base_url}/demo/merchant?locale=fr_fr")
    fill_card(page, pan="9000000000000001")
    with page.expect_response("**/json/") as answer:
        page.click("#pay")
    assert answer.value.json()["response"][0]["errordata"] == ["pan"]
    expect(page.locator("#st-message [data-st-message-for=pan]")).to_have_text("Numéro de carte invalide")
    expect(page.locator("[data-st-field=pan]")).to_have_class("st-error")
    assert received(gateway) == []


@pytest.mark.parametrize("locale", sorted(MESSAGES))
def test_unreachable_gateway_gives_the_connection_message(gateway, page, locale):
    page.route("**/json/", lambda route: route.abort())
    page.goto(f"{gateway.base_url}/demo/merchant?locale={locale}")
    fill_card(page)
    page.click("#pay")
    expect(page.locator("#st-message")).to_contain_text(MESSAGES[locale]["connection"])
    assert received(gateway) == []


# other origins: CORS, callbacks, AMD ------------------------------------------------------------


def test_submit_form_callback_gets_the_response_instead_of_a_post(gateway, page, merchant_site):
    origin, pages = merchant_site
    pages["/callback.html"] = card_form(
        gateway,
        f"""
        new SecureTrading.Standard({{sitereference: "{SITE}", locale: "en_gb",
          submitFormCallback: function (data) {{ window.called = data; }}}});""",
    )
    preflights = []
    page.on("request", lambda r: r.method == "OPTIONS" and preflights.append(r.headers.get("origin")))
    page.goto(f"{origin}/callback.html")
    fill_card(page)
    page.click("#pay")
    page.wait_for_function("window.called !== undefined")
    token = page.evaluate("window.called[0].cachetoken")
    assert token.startswith("gAAAA")
    assert page.evaluate("window.called.response[0].cachetoken") == token
    assert page.evaluate("window.called[0].errorcode") == "0"
    assert page.url == f"{origin}/callback.html"  # nothing submitted: the callback decides
    assert received(gateway) == []
    auth = {
        "requesttypedescriptions": ["AUTH"],
        "sitereference": SITE,
        "accounttypedescription": "ECOM",
        "currencyiso3a": "GBP",
        "baseamount": "1050",
        "cachetoken": token,
    }
    record = httpx.post(f"{gateway.base_url}/json/", json={"request": [auth]}, auth=CREDENTIALS).json()[
        "response"
    ][0]
    assert record["errorcode"] == "0" and record["securityresponsesecuritycode"] == "2"


def test_cross_origin_form_post_to_the_merchant(gateway, page, merchant_site):
    origin, pages = merchant_site
    pages["/shop.html"] = card_form(gateway, f'new SecureTrading.Standard({{sitereference: "{SITE}"}});')
    page.goto(f"{origin}/shop.html")
    fill_card(page)
    page.click("#pay")
    expect(page.locator("#auth-result")).to_have_text("Payment authorised")
    [receipt] = received(gateway)
    assert set(receipt["field_names"]) == {"orderreference", "baseamount", "currencyiso3a", "cachetoken"}
    assert (receipt["auth"]["baseamount"], receipt["auth"]["currencyiso3a"]) == ("2000", "EUR")


def test_amd_loading(gateway, page, merchant_site):
    origin, pages = merchant_site
    loader = """
      (function () {  // a tiny AMD loader: anonymous define() inside scripts that require() injects
        var pending = null;
        window.define = function (deps, factory) { window.defineCalls = (window.defineCalls || 0) + 1;
          pending = typeof deps === "function" ? deps : factory; };
        window.define.amd = {};
        window.require = function (ids, callback) {
          var script = document.createElement("script");
          script.src = window.amdPaths[ids[0]] + ".js";
          script.onload = function () { var made = pending(); pending = null; callback(made); };
          document.head.appendChild(script);
        };
      }());"""
    pages["/amd.html"] = (
        "<!doctype html><html><head><meta charset='utf-8'>"
        f"<script>{loader}; window.amdPaths = {{st: '{gateway.base_url}/js/st'}};</script></head><body>"
        f"<form id='pay-form' action='{gateway.base_url}/demo/merchant/pay' method='post'>"
        "<div id='msg'></div>"
        + "".join(f"<input data-st-field='{f}'>" for f in CARD_VALUES)
        + "<button id='pay' type='submit'>Pay</button></form><script>"
        "require(['st'], function (st) { window.amdModule = st; new st.Standard({sitereference: '"
        + SITE
        + "',"
        " formId: 'pay-form', messageId: 'msg', locale: 'de_de',"
        " submitFormCallback: function (data) { window.token = data[0].cachetoken; }}); });"
        "</script></body></html>"
    )
    page.goto(f"{origin}/amd.html")
    page.wait_for_function("window.amdModule !== undefined")
    assert page.evaluate("window.defineCalls") == 1
    assert page.evaluate("typeof window.amdModule.Standard") == "function"
    fill_card(page, expirymonth="00")
    page.click("#pay")
    expect(page.locator("#msg [data-st-message-for=expirymonth]")).to_have_text("Ungültiger Ablaufmonat")
    fill_card(page)
    page.click("#pay")
    page.wait_for_function("window.token !== undefined")
    assert page.evaluate("window.token").startswith("gAAAA")


def test_error_and_validate_callbacks(gateway, page, merchant_site):
    origin, pages = merchant_site
    pages["/callbacks.html"] = card_form(
        gateway,
        f"""
        window.validations = [];
        new SecureTrading.Standard({{sitereference: "{SITE}",
          validateRequestObjectCallback: function (result) {{ window.validations.push(result);
            return window.allowSending; }},
          errorCallback: function (data) {{ window.failure = data; }},
          submitFormCallback: function (data) {{ window.called = data; }}}});""",
    )
    page.goto(f"{origin}/callbacks.html")
    fill_card(page, pan="9000000000000001")
    page.evaluate("window.allowSending = false")
    page.click("#pay")
    page.wait_for_function("window.validations.length === 1")
    assert page.evaluate("window.validations[0].valid") is True
    assert token_count(gateway) == 0 and page.locator("#st-message").inner_text() == ""
    page.evaluate("window.allowSending = true")
    page.click("#pay")
    page.wait_for_function("window.failure !== undefined")
    assert page.evaluate("window.failure[0].errorcode") == "30000"
    assert page.evaluate("window.failure[0].errordata") == ["pan"]
    assert page.evaluate("window.called") is None


def test_https_localhost_origin_is_rejected_in_the_browser(gateway, browser):
    # The page is served by Playwright under https://localhost; reaching the loopback sandbox
    # from it needs Chromium's local-network permission, granted here as a user would.
    context = browser.new_context()
    context.grant_permissions(["local-network-access"])
    page = context.new_page()
    page.route(
        "https://localhost/**",
        lambda route: route.fulfill(
            content_type="text/html",
            body=card_form(
                gateway,
                f"""
        new SecureTrading.Standard({{sitereference: "{SITE}", locale: "fr_fr",
          submitFormCallback: function (data) {{ window.called = data; }}}});""",
            ),
        ),
    )
    page.goto("https://localhost/checkout")
    fill_card(page)
    page.click("#pay")
    expect(page.locator("#st-message")).to_contain_text(MESSAGES["fr_fr"]["connection"])
    assert page.evaluate("window.called") is None
    assert token_count(gateway) == 0
    context.close()


def test_served_stjs_carries_the_spec_rules(gateway):
    from gwkit.sandbox.web.stjs import STJS_PATH, stjs_rules

    source = httpx.get(f"{gateway.base_url}/js/st.js").text
    served = json.loads(source.split("/*gwkit:rules*/")[1].split("/*gwkit:end*/")[0])
    assert served == stjs_rules()
    default = json.loads(STJS_PATH.read_text().split("/*gwkit:rules*/")[1].split("/*gwkit:end*/")[0])
    assert default == stjs_rules(), "the literal rules in st.js should match the spec tables"
