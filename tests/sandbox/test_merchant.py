"""The demo merchant served by the sandbox: what it records, and the AUTH it completes with a token."""

from __future__ import annotations

import json
from datetime import datetime

import httpx
import pytest

from gwkit import sandbox as sandbox_module

pytestmark = pytest.mark.both_stores  # each test on SQLite and on PostgreSQL

SITE = "test_gwkit12345"
VISA = "4111111111111111"


@pytest.fixture
def gateway(db_path):
    handle = sandbox_module.start(db_path, clock_start=datetime(2026, 3, 2, 10, 0, 0))
    yield handle
    handle.stop()


@pytest.fixture
def http(gateway):
    with httpx.Client(base_url=gateway.base_url, timeout=30) as client:
        yield client


def token(http) -> str:
    request = {
        "requesttypedescriptions": ["CACHETOKENISE"],
        "sitereference": SITE,
        "pan": VISA,
        "expirymonth": "11",
        "expiryyear": "2031",
        "securitycode": "123",
    }
    return http.post("/json/", json={"request": [request]}).json()["response"][0]["cachetoken"]


def receipts(http) -> list[dict]:
    return http.get("/demo/merchant/received").json()["receipts"]


def test_the_page_has_the_stjs_form_with_unnamed_card_inputs(http, gateway):
    page = http.get("/demo/merchant?locale=fr_fr").text
    assert f'<script src="{gateway.base_url}/js/st.js"></script>' in page
    assert 'id="st-payment"' in page and 'action="/demo/merchant/pay"' in page and 'id="st-message"' in page
    for field in ("pan", "expirymonth", "expiryyear", "securitycode"):
        assert f"data-st-field='{field}' size" in page  # no name attribute in between
    assert '"fr_fr"' in page and f'"{SITE}"' in page


def test_the_page_with_named_card_inputs_says_the_card_reaches_the_merchant_and_nothing_else(http):
    page = http.get("/demo/merchant?named_card_inputs=1").text
    assert "card data will reach the merchant server" in page
    assert "posts them to the merchant server" in page and "never reach" not in page
    assert "never reach" in http.get("/demo/merchant").text


def test_the_merchant_records_exactly_what_arrived_and_completes_the_auth(http):
    body = f"orderreference=o%201&baseamount=2000&currencyiso3a=EUR&cachetoken={token(http)}"
    page = http.post(
        "/demo/merchant/pay", content=body, headers={"content-type": "application/x-www-form-urlencoded"}
    )
    assert "Payment authorised" in page.text
    [receipt] = receipts(http)
    assert receipt["body"] == body and receipt["card_data"] == []
    assert receipt["field_names"] == ["orderreference", "baseamount", "currencyiso3a", "cachetoken"]
    assert receipt["fields"]["orderreference"] == "o 1"
    auth = receipt["auth"]
    assert (auth["errorcode"], auth["baseamount"], auth["currencyiso3a"], auth["orderreference"]) == (
        "0",
        "2000",
        "EUR",
        "o 1",
    )


def test_complete_later_sends_no_auth(http):
    http.post(
        "/demo/merchant/pay",
        data={"baseamount": "100", "currencyiso3a": "GBP", "complete": "later", "cachetoken": token(http)},
    )
    [receipt] = receipts(http)
    assert receipt["auth"] is None


def test_a_used_up_token_gives_a_refused_auth_on_the_page(http):
    used = token(http)
    form = {"baseamount": "100", "currencyiso3a": "GBP", "cachetoken": used}
    assert "Payment authorised" in http.post("/demo/merchant/pay", data=form).text
    again = http.post("/demo/merchant/pay", data=form).text
    assert "Payment not authorised" in again and "30000" in again


def test_card_data_that_arrives_is_flagged_and_kept_masked(http, gateway):
    form = {
        "pan": VISA,
        "expirymonth": "11",
        "expiryyear": "2031",
        "securitycode": "123",
        "note": f"x {VISA}",
    }
    page = http.post("/demo/merchant/pay", data=form).text
    assert "Card data reached the merchant server" in page and VISA not in page
    [receipt] = receipts(http)
    assert receipt["card_data"] == [
        "field pan",
        "field expirymonth",
        "field expiryyear",
        "field securitycode",
        "a card number in pan",
        "a card number in note",
    ]
    assert receipt["fields"] == {
        "pan": "411111######1111",
        "expirymonth": "[redacted]",
        "expiryyear": "[redacted]",
        "securitycode": "[redacted]",
        "note": "x 411111######1111",
    }
    assert VISA not in json.dumps(receipt)
    rows = (
        gateway.sandbox.store.connection()
        .execute("SELECT body, fields FROM demo_merchant_receipts")
        .fetchall()
    )
    assert all(VISA not in row["body"] + row["fields"] for row in rows)


def test_a_json_body_with_a_card_number_is_masked_too(http):
    http.post("/demo/merchant/pay", json={"pan": VISA})
    [receipt] = receipts(http)
    assert receipt["card_data"] == ["field pan", "a card number in pan"]
    assert VISA not in receipt["body"] and "411111######1111" in receipt["body"]


def test_a_card_number_in_other_text_is_found_and_masked(http):
    http.post(
        "/demo/merchant/pay", content=f"note: card {VISA}".encode(), headers={"content-type": "text/plain"}
    )
    [receipt] = receipts(http)
    assert receipt["card_data"] == ["a card number in the body"]
    assert VISA not in receipt["body"] and "411111######1111" in receipt["body"]


def test_a_json_body_with_only_a_security_code_is_reported_and_redacted(http, gateway):
    http.post("/demo/merchant/pay", json={"order": {"securitycode": "737"}, "orderreference": "o-1"})
    [receipt] = receipts(http)
    assert receipt["card_data"] == ["field securitycode"]
    assert "737" not in receipt["body"] and "[redacted]" in receipt["body"]
    rows = (
        gateway.sandbox.store.connection()
        .execute("SELECT body, fields FROM demo_merchant_receipts")
        .fetchall()
    )
    assert all("737" not in row["body"] + row["fields"] for row in rows)


def test_a_multipart_form_is_read_field_by_field_and_its_card_data_masked(http, gateway):
    http.post(
        "/demo/merchant/pay",
        data={"orderreference": "o-2", "complete": "later"},
        files={"pan": (None, VISA), "securitycode": (None, "737")},
    )
    [receipt] = receipts(http)
    assert receipt["content_type"].startswith("multipart/form-data")
    assert receipt["card_data"] == ["field pan", "field securitycode", "a card number in pan"]
    assert receipt["fields"]["orderreference"] == "o-2" and receipt["fields"]["securitycode"] == "[redacted]"
    rows = (
        gateway.sandbox.store.connection()
        .execute("SELECT body, fields FROM demo_merchant_receipts")
        .fetchall()
    )
    assert all(
        VISA not in row["body"] + row["fields"] and "737" not in row["body"] + row["fields"] for row in rows
    )


def test_received_as_html_and_cleared_by_reset(http, gateway):
    http.post("/demo/merchant/pay", data={"orderreference": "<b>x</b>", "complete": "later"})
    html = http.get("/demo/merchant/received", headers={"accept": "text/html"}).text
    assert "Receipt 1" in html and "&lt;b&gt;x&lt;/b&gt;" in html
    assert http.get("/demo/merchant/received?format=html").headers["content-type"].startswith("text/html")
    gateway.reset()
    assert receipts(http) == []


@pytest.mark.parametrize(
    "body", ["[" * 100_000 + "]" * 100_000, '{"a":' * 50 + "1" + "}" * 50, "[" + "9" * 5000 + "]"]
)
def test_a_json_body_past_a_limit_is_refused_by_name_not_a_500(http, body):
    response = http.post("/demo/merchant/pay", content=body, headers={"content-type": "application/json"})
    assert response.status_code == 400
    assert "breaks a limit" in response.text and (
        "nesting depth" in response.text or "number length" in response.text
    )
    assert receipts(http) == []
