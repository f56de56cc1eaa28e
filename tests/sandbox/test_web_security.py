"""Web security of the sandbox's pages over real HTTP: CSRF (bodies must be JSON), reflected XSS,
security headers, the demo merchant paying only on its own site, and card data at rest (file
modes, nothing left after a reset), and health without credentials."""

from __future__ import annotations

import html
import json
import os
import re
import stat
from pathlib import Path

import httpx
import pytest

import gwkit.sandbox
from gwkit.sandbox.gateway.store import redacted
from gwkit.sandbox.web.pages import origin_of
from support.databases import Database
from support.sandbox import CLOCK, SITE, VISA, Gateway, all_rows, card_auth, rows

pytestmark = pytest.mark.both_stores  # each test on SQLite and on PostgreSQL

JSON_TYPE = {"content-type": "application/json"}
XSS = [
    "</script><script>alert(1)</script>",
    '"});alert(1);//',
    "<img src=x onerror=alert(1)>",
    "</SCRIPT ><svg onload=alert(1)>",
    "'><script>alert(1)</script>",
]
OTHER_ACCOUNTS = """
[[account]]
username = "gwkit_sandbox"
password = "gwkit-sandbox-password"
sitereferences = ["test_gwkit12345"]

[[account]]
username = "mallory@example.test"
password = "mallory-secret"
sitereferences = ["test_mallory12345"]
"""
MALLORY_SITE = "test_mallory12345"
DISTINCT_PAN = "4000000000001091"  # a Luhn-valid test card number used nowhere else in this file
DISTINCT_CODE = "975"


@pytest.fixture
def anonymous(sandbox):
    with httpx.Client(base_url=sandbox.base_url, timeout=30) as client:
        yield client


def token(http: httpx.Client, site: str = SITE, pan: str = VISA, securitycode: str = "123") -> str:
    request = {
        "requesttypedescriptions": ["CACHETOKENISE"],
        "sitereference": site,
        "pan": pan,
        "expirymonth": "11",
        "expiryyear": "2031",
        "securitycode": securitycode,
    }
    record = http.post("/json/", json={"request": [request]}).json()["response"][0]
    assert record["errorcode"] == "0", record
    return record["cachetoken"]


def envelope(gateway: Gateway, *objects) -> bytes:
    return json.dumps({"alias": gateway.username, "version": "1.00", "request": list(objects)}).encode()


# finding 5: CSRF -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "content_type",
    ["text/plain", "application/x-www-form-urlencoded", "multipart/form-data; boundary=x", None],
)
def test_a_payment_posted_without_json_content_type_is_refused_and_stores_nothing(
    gateway, db_path, content_type
):
    before = all_rows(db_path)
    headers = {"content-type": content_type} if content_type else {}
    response = gateway.http.post("/json/", content=envelope(gateway, card_auth()), headers=headers)
    assert response.status_code == 415
    answer = response.json()
    assert answer["error"] == "unsupported media type" and answer["accepted"] == ["application/json"]
    assert "Content-Type: application/json" in answer["detail"]
    assert all_rows(db_path) == before


def test_a_reset_posted_as_text_plain_is_refused_and_changes_nothing(sandbox, gateway, db_path):
    gateway.one(card_auth())
    before = all_rows(db_path)
    for headers in ({"content-type": "text/plain"}, {}):
        response = gateway.http.post("/_sandbox/reset", content=b"{}", headers=headers)
        assert response.status_code == 415 and response.json()["accepted"] == ["application/json"]
    assert all_rows(db_path) == before and rows(db_path) == 1


@pytest.mark.parametrize(
    "path, body",
    [
        ("/_sandbox/clock/advance", b'{"by": "P1D"}'),
        ("/_sandbox/settle", b"{}"),
        ("/_sandbox/faults", b'{"kind": "latency", "seconds": 1}'),
    ],
)
def test_every_control_post_takes_json_only(sandbox, gateway, path, body):
    refused = gateway.http.post(path, content=body, headers={"content-type": "text/plain;charset=UTF-8"})
    assert refused.status_code == 415
    assert sandbox.now() == CLOCK and gateway.http.get("/_sandbox/faults").json()["faults"] == []
    assert (
        gateway.http.post(
            path, content=body, headers={"content-type": "application/json; charset=utf-8"}
        ).status_code
        == 200
    )


def test_cors_lets_stjs_post_json_without_credentials_and_only_to_the_gateway(anonymous):
    origin = {
        "origin": "http://127.0.0.1:9",
        "access-control-request-method": "POST",
        "access-control-request-headers": "content-type",
    }
    preflight = anonymous.options("/json/", headers=origin)
    assert preflight.status_code == 204
    assert preflight.headers["access-control-allow-origin"] == "http://127.0.0.1:9"
    assert "content-type" in preflight.headers["access-control-allow-headers"].lower()
    assert (
        "access-control-allow-credentials" not in preflight.headers
    )  # a browser never sends Basic credentials
    control = anonymous.options("/_sandbox/reset", headers=origin)
    assert "access-control-allow-origin" not in control.headers


# finding 4: reflected XSS ----------------------------------------------------------------------

JS_STRING = r'("(?:[^"\\<>]|\\.)*")'  # a JSON string with no < or > in it
INLINE_SCRIPT = re.compile(
    r'<script nonce="[^"]+">\s*new SecureTrading\.Standard\(\{sitereference: '
    + JS_STRING
    + ", locale: "
    + JS_STRING
    + r"\}\);\s*</script>"
)


@pytest.mark.parametrize("payload", XSS)
def test_the_shop_page_never_writes_its_query_into_markup_or_script(anonymous, payload):
    page = anonymous.get("/demo/merchant", params={"locale": payload, "named_card_inputs": "1"})
    assert page.status_code == 200
    # the one inline script sets the locale to the payload as a JSON string, with no < or > in it
    ((site, locale),) = INLINE_SCRIPT.findall(page.text)
    assert (json.loads(site), json.loads(locale)) == (SITE, payload)
    assert len(re.findall(r"<script", page.text, re.IGNORECASE)) == 2  # st.js and that one
    refused = anonymous.get("/demo/merchant", params={"sitereference": payload})
    assert refused.status_code == 400 and "<script" not in refused.text.lower()
    assert payload in html.unescape(refused.text)  # shown, as text
    for text in (page.text, refused.text):
        assert not re.search(r"<(img|svg)", text, re.IGNORECASE)
        if "<" in payload:
            assert payload not in text


def test_a_locale_is_written_into_the_script_as_a_json_string(anonymous):
    page = anonymous.get("/demo/merchant", params={"locale": XSS[0]}).text
    assert 'locale: "\\u003c/script\\u003e\\u003cscript\\u003ealert(1)\\u003c/script\\u003e"' in page


# security headers ------------------------------------------------------------------------------


def csp_of(response: httpx.Response) -> dict[str, str]:
    policy = response.headers["content-security-policy"]
    return {d.split(" ", 1)[0]: d.split(" ", 1)[1] for d in (part.strip() for part in policy.split(";"))}


def test_every_html_page_sends_a_nonce_policy_nosniff_and_a_frame_policy(sandbox, anonymous):
    shop = [
        anonymous.get("/demo/merchant"),
        anonymous.get("/demo/merchant/received?format=html"),
        anonymous.post("/demo/merchant/pay", data={"complete": "later", "cachetoken": token(anonymous)}),
        anonymous.get("/demo/merchant?sitereference=other"),
    ]
    acs = [anonymous.get("/acs/v1"), anonymous.post("/acs/v1", data={"PaReq": "x"})]
    for page in shop + acs:
        assert page.headers["content-type"].startswith("text/html")
        assert page.headers["x-content-type-options"] == "nosniff"
        policy = csp_of(page)
        assert policy["default-src"] == "'none'" and policy["base-uri"] == "'none'"
        nonce = re.search(r"'nonce-([^']+)'", policy["script-src"]).group(1)
        assert policy["style-src"] == f"'nonce-{nonce}'"
        assert "unsafe-inline" not in page.headers["content-security-policy"]
        for tag in re.findall(r"<(?:script|style)\b[^>]*>", page.text):  # inline ones carry the nonce
            assert f'nonce="{nonce}"' in tag or "src=" in tag
    for page in shop:  # notebook 06 shows the shop in an iframe (JupyterLab on loopback)
        assert (
            csp_of(page)["frame-ancestors"] == "'self' http://localhost:* http://127.0.0.1:* http://[::1]:*"
        )
    for page in acs:  # framed by the merchant's page, of any origin, as 3-D Secure v1 has it
        assert "frame-ancestors" not in csp_of(page) and "x-frame-options" not in page.headers
    first, second = (csp_of(anonymous.get("/demo/merchant"))["script-src"] for _ in range(2))
    assert first != second  # a fresh nonce each time


def test_an_injected_proxy_page_is_never_framed_and_runs_nothing(gateway):
    gateway.http.post("/_sandbox/faults", json={"kind": "http_status", "status": 502, "process": False})
    page = gateway.http.post("/json/", json={"request": [card_auth()]})
    assert page.status_code == 502 and page.headers["content-type"].startswith("text/html")
    assert (page.headers["x-frame-options"], page.headers["x-content-type-options"]) == ("DENY", "nosniff")
    assert csp_of(page) == {
        "default-src": "'none'",
        "base-uri": "'none'",
        "form-action": "'none'",
        "frame-ancestors": "'none'",
    }


@pytest.mark.parametrize(
    "url, origin",
    [
        ("http://127.0.0.1:8000/term?x=1", "http://127.0.0.1:8000"),
        ("https://user:pw@Shop.example/t", "https://shop.example"),
        ("http://[::1]:9/t", "http://[::1]:9"),
        ("javascript:alert(1)", None),
        ("http://exämple.test/", None),
        ("http://a b/", None),
        ("http://h:99999/", None),
        ("//no-scheme/", None),
    ],
)
def test_the_term_url_origin_let_through_the_acs_form_policy_is_a_plain_ascii_origin(url, origin):
    assert origin_of(url) == origin


def test_json_answers_send_nosniff_and_unknown_pages_too(gateway, anonymous):
    for response in (
        gateway.http.post("/json/", json={"request": []}),
        gateway.http.get("/_sandbox/clock"),
        anonymous.get("/demo/merchant/received"),
        anonymous.get("/nowhere"),
    ):
        assert response.headers["x-content-type-options"] == "nosniff"


# finding 3: the demo merchant pays only on its own site ----------------------------------------


@pytest.fixture
def shared(tmp_path, db_path):
    path = tmp_path / "accounts.toml"
    path.write_text(OTHER_ACCOUNTS, encoding="utf-8")
    handle = gwkit.sandbox.start(db_path, accounts=gwkit.sandbox.load_accounts(path), clock_start=CLOCK)
    with httpx.Client(base_url=handle.base_url, timeout=30) as anonymous:
        yield handle, anonymous, db_path
    handle.stop()


def test_a_cachetoken_of_another_site_is_refused_and_nothing_is_paid_or_kept(shared):
    _handle, anonymous, db_path = shared
    foreign = token(anonymous, site=MALLORY_SITE)
    before = all_rows(db_path)
    page = anonymous.post(
        "/demo/merchant/pay", data={"cachetoken": foreign, "baseamount": "100", "currencyiso3a": "GBP"}
    )
    assert page.status_code == 400
    assert "pays only on its own site test_gwkit12345" in page.text and "another site" in page.text
    assert all_rows(db_path) == before  # no AUTH on any site, no receipt
    assert anonymous.get("/demo/merchant/received").json() == {"receipts": []}


def test_a_form_naming_another_site_is_refused_even_with_a_good_token(shared):
    _handle, anonymous, db_path = shared
    mine = token(anonymous)
    before = all_rows(db_path)
    page = anonymous.post(
        "/demo/merchant/pay",
        data={"sitereference": MALLORY_SITE, "cachetoken": mine, "baseamount": "100", "currencyiso3a": "GBP"},
    )
    assert page.status_code == 400 and "not on 'test_mallory12345'" in html.unescape(page.text)
    assert all_rows(db_path) == before
    paid = anonymous.post(
        "/demo/merchant/pay", data={"cachetoken": mine, "baseamount": "100", "currencyiso3a": "GBP"}
    )
    assert "Payment authorised" in paid.text
    assert [
        r["auth"]["sitereference"] for r in anonymous.get("/demo/merchant/received").json()["receipts"]
    ] == [SITE]


def test_the_shop_page_is_only_for_the_merchants_own_site(shared):
    _, anonymous, _ = shared
    assert anonymous.get("/demo/merchant", params={"sitereference": SITE}).status_code == 200
    other = anonymous.get("/demo/merchant", params={"sitereference": MALLORY_SITE})
    assert other.status_code == 400 and "sells on site test_gwkit12345 only" in other.text


def test_received_lists_only_the_merchants_own_payments(shared):
    handle, anonymous, _db_path = shared
    anonymous.post(
        "/demo/merchant/pay",
        data={"cachetoken": token(anonymous), "baseamount": "100", "currencyiso3a": "GBP"},
    )
    # a receipt of a payment on another site, as the merchant made them before it was fixed
    with handle.sandbox.store.write() as conn:
        conn.execute(
            "INSERT INTO demo_merchant_receipts (received, content_type, body, fields, card_data, auth) "
            "VALUES ('2026-01-15 10:00:00', 'x', '', '[]', '[]', ?)",
            ('{"sitereference": "test_mallory12345", "errorcode": "0"}',),
        )
    receipts = anonymous.get("/demo/merchant/received").json()["receipts"]
    assert [r["auth"]["sitereference"] for r in receipts] == [SITE]
    assert MALLORY_SITE not in anonymous.get("/demo/merchant/received?format=html").text


# bad form bodies get a page that says what is wrong ---------------------------------------------

NESTED = (
    b'--outer\r\nContent-Disposition: form-data; name="inner"\r\n'
    b"Content-Type: multipart/mixed; boundary=inner\r\n\r\n"
    b"--inner\r\nContent-Type: text/plain\r\n\r\nx\r\n--inner--\r\n--outer--\r\n"
)


@pytest.mark.parametrize(
    "path, content_type, body, says",
    [
        ("/acs/v1", "application/x-www-form-urlencoded", b"PaReq=\xff\xfe&MD=1", "not UTF-8"),
        ("/acs/v1/complete", "application/x-www-form-urlencoded", b"outcome=Y&MD=\xc3", "not UTF-8"),
        (
            "/acs/v1",
            "application/x-www-form-urlencoded",
            b"&".join(b"f%d=1" % i for i in range(100)),
            "more than",
        ),
        ("/demo/merchant/pay", "application/x-www-form-urlencoded", b"cachetoken=\xff", "not UTF-8"),
        ("/demo/merchant/pay", "multipart/form-data; boundary=outer", NESTED, "itself multipart"),
        (
            "/demo/merchant/pay",
            "multipart/form-data; boundary=b",
            b'--b\r\nContent-Disposition: form-data; name="x"\r\n\r\n\xff\r\n--b--\r\n',
            "not UTF-8",
        ),
    ],
)
def test_a_bad_form_body_gets_a_400_page_and_the_connection_stays_usable(
    sandbox, db_path, anonymous, path, content_type, body, says
):
    before = all_rows(db_path)
    page = anonymous.post(path, content=body, headers={"content-type": content_type})
    assert page.status_code == 400 and page.headers["content-type"].startswith("text/html")
    assert says in page.text
    assert all_rows(db_path) == before
    assert anonymous.get("/_sandbox/health").status_code == 200  # same keep-alive connection


def test_the_acs_takes_form_posts_only(anonymous):
    response = anonymous.post("/acs/v1", json={"PaReq": "x", "TermUrl": "y", "MD": "z"})
    assert response.status_code == 415 and response.json()["accepted"] == [
        "application/x-www-form-urlencoded"
    ]


# finding 9: data at rest, health ---------------------------------------------------------------


def test_the_database_its_wal_and_the_vault_key_are_readable_by_their_owner_only(
    sandbox, gateway, db_path, store_kind
):
    gateway.one(card_auth())
    if store_kind == "postgresql":  # the server's files are its own; the card key is the sandbox's file
        files = [Path(os.environ["GWKIT_SANDBOX_KEY_FILE"])]
    else:
        files = [
            db_path,
            db_path.with_name("sandbox.db-wal"),
            db_path.with_name("sandbox.db-shm"),
            db_path.with_name("sandbox.db.key"),
        ]
    for path in files:
        assert stat.S_IMODE(path.stat().st_mode) == 0o600, path


def test_a_snapshot_is_readable_by_its_owner_only(sandbox, gateway, db_path, store_kind):
    if store_kind == "postgresql":
        pytest.skip(
            "on PostgreSQL a snapshot is rows of the database, not a file (docs/sandbox.md#snapshots)"
        )
    gateway.one(card_auth())
    gateway.http.post("/_sandbox/snapshots", json={"name": "private"})
    [snapshot] = list(db_path.parent.glob("sandbox.db.snapshots/*/private.db"))
    assert stat.S_IMODE(snapshot.stat().st_mode) == 0o600
    assert stat.S_IMODE(snapshot.parent.stat().st_mode) == 0o700


def test_after_a_reset_neither_the_database_nor_the_wal_holds_card_data(
    sandbox, gateway, db_path, anonymous, store_kind
):
    gateway.one(card_auth(pan=DISTINCT_PAN, securitycode=DISTINCT_CODE))
    token(anonymous, pan=DISTINCT_PAN, securitycode=DISTINCT_CODE)
    # a shop that names its card inputs: the merchant server receives card data (kept masked)
    anonymous.post(
        "/demo/merchant/pay",
        data={
            "pan": DISTINCT_PAN,
            "securitycode": DISTINCT_CODE,
            "expirymonth": "11",
            "expiryyear": "2031",
            "complete": "later",
        },
    )
    anonymous.post("/demo/merchant/pay", json={"pan": DISTINCT_PAN, "securitycode": DISTINCT_CODE})
    assert gateway.http.post("/_sandbox/reset", json={}).status_code == 200
    masked = f"{DISTINCT_PAN[:6]}######{DISTINCT_PAN[-4:]}"
    secrets = (DISTINCT_PAN, f'"{DISTINCT_CODE}"', f"={DISTINCT_CODE}", masked)
    if store_kind == "postgresql":
        # The tables are truncated; the server's own files (its WAL, until recycled) are PostgreSQL's to
        # keep (docs/team-sandbox.md, card data at rest), so what the store holds is what is checked.
        kept = Database(db_path).at_rest()
        assert not [secret for secret in secrets if secret.encode() in kept]
        return
    files = [db_path, db_path.with_name("sandbox.db-wal")]
    for path in files:
        data = path.read_bytes() if path.exists() else b""
        for secret in secrets:  # deleted rows are overwritten too
            assert secret.encode() not in data, (path.name, secret)
    assert db_path.with_name("sandbox.db-wal").stat().st_size == 0  # checkpointed and emptied


def test_health_without_credentials_says_only_that_it_is_up(sandbox, gateway, anonymous, db_path):
    gateway.one(card_auth())
    bare = anonymous.get("/_sandbox/health")
    assert bare.status_code == 200 and bare.json() == {"status": "ok"}
    assert str(db_path) not in bare.text
    full = gateway.http.get("/_sandbox/health").json()
    assert full["transactions"] == 1 and full["database"] == redacted(
        str(db_path)
    )  # a URL without its password


@pytest.mark.parametrize("path", ["/", "/_sandbox/", "/_sandbox"])
def test_the_root_and_the_control_root_say_what_the_sandbox_is(sandbox, path):
    page = httpx.get(f"{sandbox.base_url}{path}")
    assert page.status_code == 200 and page.headers["content-type"].startswith("text/html")
    assert "gwkit sandbox" in page.text and "POST /json/" in page.text and "docs/sandbox.md" in page.text
    assert "never send real card data" in page.text
    assert sandbox.password not in page.text  # says nothing a stranger could use
    assert "content-security-policy" in page.headers and page.headers["x-frame-options"] == "DENY"
    data = httpx.get(f"{sandbox.base_url}{path}", headers={"accept": "application/json"}).json()
    assert data["status"] == "ok" and any(e["where"] == "POST /json/" for e in data["endpoints"])
