"""CACHETOKENISE, cache tokens and AUTH with a cachetoken in the sandbox (interface 4.6, 5.6, 8).

Against a sandbox on a real loopback port with a fixed virtual clock, on SQLite and on PostgreSQL.
"""

from __future__ import annotations

from datetime import datetime

import httpx
import pytest

from gwkit import sandbox as sandbox_module
from gwkit.sandbox.gateway.accounts import Account
from gwkit.sandbox.gateway.cachetokens import token_rows
from support.databases import Database

pytestmark = pytest.mark.both_stores  # each test on SQLite and on PostgreSQL

SITE = "test_gwkit12345"
OTHER_SITE = "test_gwkitother1"
CREDENTIALS = ("gwkit_sandbox", "gwkit-sandbox-password")
VISA = "4111111111111111"
AMEX = "340000000000017"
START = datetime(2026, 3, 2, 10, 0, 0)
ACCOUNTS = [
    Account("gwkit_sandbox", "gwkit-sandbox-password", (SITE, OTHER_SITE)),
    Account("someone_else", "another-password", ("test_someoneelse1",)),
]


@pytest.fixture
def gateway(db_path):
    handle = sandbox_module.start(db_path, clock_start=START, accounts=ACCOUNTS)
    yield handle
    handle.stop()


@pytest.fixture
def http(gateway):
    with httpx.Client(base_url=gateway.base_url, timeout=30) as client:
        yield client


def tokenise(http, origin: str | None = None, **fields) -> httpx.Response:
    """What st.js sends: an envelope without alias or credentials."""
    request = {
        "requesttypedescriptions": ["CACHETOKENISE"],
        "sitereference": SITE,
        "pan": VISA,
        "expirymonth": "11",
        "expiryyear": "2031",
        "securitycode": "123",
        **fields,
    }
    request = {name: value for name, value in request.items() if value is not None}
    return http.post(
        "/json/", json={"version": "1.00", "request": [request]}, headers={"origin": origin} if origin else {}
    )


def token_record(http, **fields) -> dict:
    response = tokenise(http, **fields)
    assert response.status_code == 200
    (record,) = response.json()["response"]
    return record


def new_token(http, **fields) -> str:
    record = token_record(http, **fields)
    assert record["errorcode"] == "0", record
    return record["cachetoken"]


def auth(http, token: str, credentials=CREDENTIALS, **fields) -> dict:
    request = {
        "requesttypedescriptions": ["AUTH"],
        "sitereference": SITE,
        "accounttypedescription": "ECOM",
        "currencyiso3a": "GBP",
        "baseamount": "1050",
        "orderreference": "o-1",
        "cachetoken": token,
        **fields,
    }
    response = http.post("/json/", json={"version": "1.00", "request": [request]}, auth=credentials)
    assert response.status_code == 200, response.text
    (record,) = response.json()["response"]
    return record


REFUSED = ("30000", "Invalid field", ["cachetoken"])


def refusal(record: dict) -> tuple:
    return record["errorcode"], record["errormessage"], record.get("errordata")


# the token --------------------------------------------------------------------------------------


def test_cachetokenise_needs_no_credentials_and_answers_the_token_only(http):
    record = token_record(http)
    assert set(record) == {"requesttypedescription", "cachetoken", "errorcode", "errormessage"}
    assert (record["requesttypedescription"], record["errorcode"], record["errormessage"]) == (
        "CACHETOKENISE",
        "0",
        "Ok",
    )
    assert record["cachetoken"].startswith("gAAAA")
    assert VISA[:6] not in record["cachetoken"] and "123" not in record["cachetoken"][:10]


def test_tokens_are_random(http):
    tokens = {new_token(http) for _ in range(5)}
    assert len(tokens) == 5


def test_auth_with_the_token_inherits_the_card_and_security_code(http):
    record = auth(http, new_token(http))
    assert record["errorcode"] == "0"
    assert (record["maskedpan"], record["paymenttypedescription"]) == ("411111######1111", "VISA")
    assert record["securityresponsesecuritycode"] == "2"  # the sealed 123 was checked
    wrong_code = auth(http, new_token(http, securitycode="999"))
    assert wrong_code["securityresponsesecuritycode"] == "4"
    no_code = auth(http, new_token(http, securitycode=None))
    assert no_code["securityresponsesecuritycode"] == "0"  # not given
    amex = auth(http, new_token(http, pan=AMEX, securitycode="1234"))
    assert (amex["paymenttypedescription"], amex["securityresponsesecuritycode"]) == ("AMEX", "2")


def test_declines_follow_the_test_card(http):
    record = auth(http, new_token(http, pan="4000000000000812"))
    assert (record["errorcode"], record["maskedpan"]) == ("70000", "400000######0812")


def test_a_token_is_good_for_one_auth(http):
    token = new_token(http)
    assert auth(http, token)["errorcode"] == "0"
    assert refusal(auth(http, token)) == REFUSED


def test_a_declined_auth_uses_the_token_up_too(http):
    token = new_token(http)
    assert auth(http, token, baseamount="70000")["errorcode"] == "70000"
    assert refusal(auth(http, token)) == REFUSED


def test_the_token_lives_15_minutes_of_sandbox_clock(gateway, http):
    early, late = new_token(http), new_token(http)
    gateway.advance(by="PT14M59S")
    assert auth(http, early)["errorcode"] == "0"
    gateway.advance(by="PT2S")  # 15 minutes 1 second after it was made
    assert refusal(auth(http, late)) == REFUSED


def test_expiry_after_advancing_pt15m1s(gateway, http):
    token = new_token(http)
    gateway.advance(by="PT15M1S")
    assert refusal(auth(http, token)) == REFUSED
    [row] = token_rows(gateway.sandbox.store, gateway.sandbox.clock)
    assert row["state"] == "expired" and row["maskedpan"] == "411111######1111"


def test_an_expired_unused_token_loses_its_card_row(gateway, http):
    new_token(http)
    db = gateway.sandbox.store.connection()
    assert db.execute("SELECT COUNT(*) FROM cards").fetchone()[0] == 1
    gateway.advance(by="P1D")  # the daily job purges
    assert db.execute("SELECT COUNT(*) FROM cards").fetchone()[0] == 0
    assert db.execute("SELECT card_id FROM cachetokens").fetchone()[0] is None


def test_a_used_token_keeps_the_card_of_its_payment(gateway, http):
    reference = auth(http, new_token(http))["transactionreference"]
    gateway.advance(by="P1D")
    db = gateway.sandbox.store.connection()
    (card_id,) = db.execute(
        "SELECT card_id FROM transactions WHERE transactionreference = ?", (reference,)
    ).fetchone()
    assert db.execute("SELECT COUNT(*) FROM cards WHERE id = ?", (card_id,)).fetchone()[0] == 1
    assert token_rows(gateway.sandbox.store, gateway.sandbox.clock)[0]["state"] == "used"


def test_a_token_belongs_to_its_site_and_account(http):
    token = new_token(http)
    assert refusal(auth(http, token, sitereference=OTHER_SITE)) == REFUSED
    other = auth(
        http, token, credentials=("someone_else", "another-password"), sitereference="test_someoneelse1"
    )
    assert refusal(other) == REFUSED
    assert auth(http, token)["errorcode"] == "0", "refused attempts do not use the token up"


@pytest.mark.parametrize("change", ["flip", "truncate", "unknown", "base64json"])
def test_forged_or_unknown_tokens_are_refused(http, change):
    token = new_token(http)
    forged = {
        "flip": token[:40] + ("A" if token[40] != "A" else "B") + token[41:],
        "truncate": token[:-8],
        "unknown": "gAAAAA" + "x" * 100,
        "base64json": "eyJjYWNoZXRva2VuIjogIngifQ==",
    }[change]
    assert refusal(auth(http, forged)) == REFUSED


def test_the_database_never_holds_the_token_pan_or_security_code(gateway, http, db_path):
    token = new_token(http, pan=AMEX, securitycode="4321")
    database = Database(db_path)
    raw = database.at_rest()
    assert token.encode() not in raw and AMEX.encode() not in raw
    # Four digits turn up by chance in a file's random bytes (encrypted cards, the WAL's copies of
    # them): the security code is looked for as JSON would hold it, and in every text value kept.
    assert b'"4321"' not in raw and b'"securitycode"' not in raw
    texts = [
        value
        for table in database.tables()
        for row in database.rows(f'SELECT * FROM "{table}"')
        for value in row
        if isinstance(value, str)
    ]
    assert texts and not [value for value in texts if "4321" in value]
    columns = database.columns("cachetokens")
    assert "securitycode" not in columns and "pan" not in columns


# the official Python client unwraps base64 JSON tokens: ours must pass through unchanged ----------


def test_the_official_client_sends_our_tokens_as_given(http):
    securetrading = pytest.importorskip("securetrading")
    for _ in range(20):
        token = new_token(http)
        request = securetrading.Request()
        request._set_cachetoken(token)  # what Request.update({"cachetoken": ...}) calls
        assert request["cachetoken"] == token


# validation of CACHETOKENISE ---------------------------------------------------------------------


@pytest.mark.parametrize(
    "fields, errordata",
    [
        ({"pan": "4111111111111112"}, ["pan"]),  # Luhn
        ({"pan": "9000000000000001"}, ["pan"]),  # no supported scheme
        ({"expirymonth": "13"}, ["expirymonth"]),
        ({"expirymonth": "00"}, ["expirymonth"]),
        ({"expirymonth": "2"}, ["expirymonth"]),  # two digits on the wire
        ({"expiryyear": "2025"}, ["expiryyear"]),  # before the sandbox's 2026
        ({"expiryyear": "2026", "expirymonth": "02"}, ["expirymonth"]),  # Feb 2026 is over by 2 Mar 2026
        ({"securitycode": "1234"}, ["securitycode"]),  # 3 digits for Visa
        ({"pan": AMEX, "securitycode": "123"}, ["securitycode"]),  # 4 for American Express
        ({"paymenttypedescription": "MASTERCARD"}, ["paymenttypedescription"]),
        ({"pan": None}, ["pan"]),
    ],
)
def test_invalid_card_fields_are_refused(http, fields, errordata):
    record = token_record(http, **fields)
    assert (record["errorcode"], record["errordata"]) == ("30000", errordata)
    assert "cachetoken" not in record


def test_the_card_expiring_this_month_is_still_good(http):
    assert new_token(http, expirymonth="03", expiryyear="2026")
    assert new_token(http, paymenttypedescription="VISA")


def test_an_unknown_site_gets_no_token(http):
    response = tokenise(http, sitereference="test_nobody12345")
    assert response.status_code == 401


def test_credentials_are_needed_for_anything_but_cachetokenise(http):
    request = {
        "requesttypedescriptions": ["AUTH"],
        "sitereference": SITE,
        "accounttypedescription": "ECOM",
        "currencyiso3a": "GBP",
        "baseamount": "1050",
        "cachetoken": "gAAAA",
    }
    assert http.post("/json/", json={"request": [request]}).status_code == 401


# CORS and the origin rule of interface 5.5 ---------------------------------------------------------


def test_preflight_from_a_merchant_origin(http):
    response = http.options(
        "/json/",
        headers={
            "origin": "https://shop.example",
            "access-control-request-method": "POST",
            "access-control-request-headers": "content-type",
        },
    )
    assert response.status_code == 204
    assert response.headers["access-control-allow-origin"] == "https://shop.example"
    assert "POST" in response.headers["access-control-allow-methods"]
    assert "content-type" in response.headers["access-control-allow-headers"].lower()
    assert "Origin" in response.headers["vary"]
    assert "access-control-allow-credentials" not in response.headers


def test_preflight_allows_a_private_network_request(http):
    response = http.options(
        "/json/",
        headers={
            "origin": "https://shop.example",
            "access-control-request-method": "POST",
            "access-control-request-private-network": "true",
        },
    )
    assert response.headers["access-control-allow-private-network"] == "true"


def test_answers_to_browsers_carry_cors_headers(http):
    response = tokenise(http, origin="http://127.0.0.1:8000")
    assert response.status_code == 200
    assert response.headers["access-control-allow-origin"] == "http://127.0.0.1:8000"
    assert response.json()["response"][0]["errorcode"] == "0"


def test_server_to_server_calls_get_no_cors_headers(http):
    response = tokenise(http)
    assert "access-control-allow-origin" not in response.headers


@pytest.mark.parametrize(
    "origin", ["https://localhost", "https://LOCALHOST", "https://localhost:443", "https://localhost/"]
)
def test_https_localhost_is_rejected(gateway, http, origin):
    response = tokenise(http, origin=origin)
    assert response.status_code == 403
    assert response.json()["error"] == "origin rejected"
    assert not any(name.startswith("access-control-") for name in response.headers)
    preflight = http.options("/json/", headers={"origin": origin, "access-control-request-method": "POST"})
    assert preflight.status_code == 403
    assert not any(name.startswith("access-control-") for name in preflight.headers)
    assert token_rows(gateway.sandbox.store, gateway.sandbox.clock) == []


@pytest.mark.parametrize(
    "origin", ["http://localhost", "https://localhost:8443", "https://localhost.example"]
)
def test_only_https_localhost_itself_is_rejected(http, origin):
    response = tokenise(http, origin=origin)
    assert response.status_code == 200 and response.headers["access-control-allow-origin"] == origin


def test_stjs_is_served_as_javascript(http):
    response = http.get("/js/st.js")
    assert response.status_code == 200
    assert response.headers["content-type"].startswith("application/javascript")
    assert "SecureTrading" in response.text and "CACHETOKENISE" in response.text
