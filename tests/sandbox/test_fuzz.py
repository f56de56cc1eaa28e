"""Property-based fuzzing of `/json/` and the control API over real HTTP (Hypothesis, seeded).

Envelopes are drawn from the interface's own tables (request types, their variants, required and
allowed fields, choices, field lengths), then broken: wrong types, over-long strings, nesting,
control characters, huge numbers, missing and extra fields, bad encodings, random bytes. Whatever
is sent, the sandbox answers without a 5xx, the keep-alive connection keeps serving, and a
request refused as invalid stores nothing.
"""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

import gwkit.sandbox
from gwkit.interface import FIELDS, REQUEST_TYPES
from gwkit.interface.faults import KINDS, SELECTOR_FIELDS
from gwkit.sandbox.gateway.accounts import DEFAULT_PASSWORD, DEFAULT_USERNAME
from support.sandbox import CLOCK, SITE, all_rows, kept_rows

pytestmark = pytest.mark.both_stores  # each test on SQLite and on PostgreSQL

FUZZ = settings(
    derandomize=True,
    max_examples=200,
    deadline=None,
    database=None,
    suppress_health_check=[
        HealthCheck.too_slow,
        HealthCheck.data_too_large,
        HealthCheck.function_scoped_fixture,
    ],
)

# Answers to a request that is not valid: nothing of it may be stored.
INVALID_CODES = {"10205", "30000", "60018", "60013", "60019", "20004", "20019", "20032"}

# A valid value for each field whose rule a pattern cannot give (Luhn, dates, the sandbox's site);
# choices and lengths come from the tables.
VALID = {
    "sitereference": SITE,
    "accounttypedescription": "ECOM",
    "currencyiso3a": "GBP",
    "baseamount": "1050",
    "orderreference": "fuzz-1",
    "pan": "4111111111111111",
    "expirydate": "12/2030",
    "securitycode": "123",
    "md": "md-abc123",
    "pares": "eJxVUt1ugjAUfhXS",
    "parenttransactionreference": "1-9-1",
    "credentialsonfile": "1",
    "termurl": "https://merchant.example/term",
    "accept": "text/html,*/*;q=0.8",
    "useragent": "Mozilla/5.0 (X11; Linux x86_64)",
    "browsercolordepth": "24",
    "browserlanguage": "en-GB",
    "browserscreenheight": "1080",
    "browserscreenwidth": "1920",
    "browsertz": "-60",
    "customerip": "203.0.113.7",
    "threedresponse": "eyJhbGciOiJub25lIn0.eyJQYXlsb2FkIjp7fX0.",
    "cachetoken": "eyJjYWNoZXRva2VuIjoieCJ9",
    "requestreference": "Afuzz1",
    "subscriptiontype": "RECURRING",
    "subscriptionunit": "MONTH",
    "subscriptionfrequency": "1",
    "subscriptionnumber": "1",
    "subscriptionfinalnumber": "12",
    "subscriptionbegindate": "2026-02-15",
    "transactionactive": "1",
    "billingpremise": "1",
    "billingstreet": "Test Street",
    "billingtown": "Bangor",
    "billingcounty": "Gwynedd",
    "billingcountryiso2a": "GB",
    "billingpostcode": "TE45 6ST",
    "billingemail": "test@example.com",
    "billingtelephonetype": "M",
    "billingtelephone": "+44 7700 900000",
    "billingprefixname": "Dr",
    "billingfirstname": "Ann",
    "billingmiddlename": "B",
    "billinglastname": "Example",
    "billingsuffixname": "Jr",
    "expirymonth": "12",
    "expiryyear": "2030",
    "paymenttypedescription": "VISA",
    "filter": {"sitereference": [{"value": SITE}], "orderreference": [{"value": "fuzz-1"}]},
    "updates": {"transactionactive": "0"},
}
CASES = [(rt, variant) for rt in REQUEST_TYPES.values() for variant in rt.variants]
JUNK = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(),
    st.floats(allow_nan=False),
    st.text(max_size=20),
    st.lists(st.integers(), max_size=3),
    st.dictionaries(st.text(max_size=5), st.integers(), max_size=2),
)
CONTROL = st.sampled_from(["\r", "\n", "\r\n", "\x00", "\x1b", "\x7f", "\x85", "\u2028"])
HUGE_NUMBER = "HUGE-NUMBER-PLACEHOLDER"


def value_for(name: str, variant) -> Any:
    choices = variant.choices.get(name) or (FIELDS[name].choices if name in FIELDS else None)
    return choices[0] if choices else VALID[name]


@st.composite
def valid_objects(draw) -> dict[str, Any]:
    rt, variant = draw(st.sampled_from(CASES))
    optional = draw(st.sets(st.sampled_from(variant.allowed))) if variant.allowed else set()
    names = [n for n in variant.allowed if n in variant.required or n in optional]
    return {"requesttypedescriptions": list(rt.types), **{n: value_for(n, variant) for n in names}}


@st.composite
def mutated_objects(draw) -> dict[str, Any]:
    request = draw(valid_objects())
    for _ in range(draw(st.integers(1, 3))):
        if not request:
            break
        name = draw(st.sampled_from(sorted(request)))
        mutation = draw(
            st.sampled_from(["type", "long", "nest", "control", "huge", "drop", "extra", "unicode"])
        )
        value = request.get(name)
        if mutation == "type":
            request[name] = draw(JUNK)
        elif mutation == "long":
            limit = FIELDS[name].max_length if name in FIELDS and FIELDS[name].max_length else 100
            request[name] = "9" * draw(st.sampled_from([limit + 1, limit * 3, 70_000]))
        elif mutation == "nest":
            for _ in range(draw(st.integers(1, 60))):
                value = [value]
            request[name] = value
        elif mutation == "control" and isinstance(value, str):
            at = draw(st.integers(0, len(value)))
            request[name] = value[:at] + draw(CONTROL) + value[at:]
        elif mutation == "huge":
            request[name] = HUGE_NUMBER
        elif mutation == "drop":
            request.pop(name, None)
        elif mutation == "extra":
            request[draw(st.text(min_size=1, max_size=30))] = draw(JUNK)
        elif mutation == "unicode":
            request[name] = draw(st.text(min_size=1, max_size=40))
    return request


def encoded(envelope: Any, digits: int) -> bytes:
    """The envelope as JSON, a placeholder swapped for a number of `digits` digits (not a Python int:
    past 4300 digits even the test could not make it)."""
    return json.dumps(envelope).replace(json.dumps(HUGE_NUMBER), "7" * digits).encode("utf-8")


@st.composite
def gateway_bodies(draw) -> bytes:
    shape = draw(st.sampled_from(["objects", "objects", "objects", "envelope", "encoding", "bytes"]))
    objects = draw(st.lists(st.one_of(valid_objects(), mutated_objects()), min_size=1, max_size=4))
    envelope: Any = {"alias": DEFAULT_USERNAME, "version": "1.00", "request": objects}
    if shape == "envelope":
        key = draw(st.sampled_from(["alias", "version", "request", "extra"]))
        envelope[key] = draw(st.one_of(JUNK, st.just(HUGE_NUMBER)))
        envelope = draw(st.sampled_from([envelope, [envelope], objects, "AUTH"]))
    body = encoded(envelope, draw(st.sampled_from([5, 101, 4301, 20_000])))
    if shape == "encoding":
        at = draw(st.integers(0, len(body)))
        broken = draw(
            st.sampled_from([b"\xff", b"\xc3\x28", b"\xed\xa0\x80", b"\x00", b"\\ud800", b"{", b"]"])
        )
        body = draw(
            st.sampled_from(
                [
                    body[:at] + broken + body[at:],
                    body[:at],
                    json.dumps(envelope).encode("utf-16"),
                    json.dumps(envelope, ensure_ascii=False).encode("latin-1", "replace"),
                ]
            )
        )
    if shape == "bytes":
        body = draw(st.binary(max_size=200))
    return body


@pytest.fixture(scope="module")
def served(module_db_path, store_kind):
    db_path = module_db_path
    handle = gwkit.sandbox.start(db_path, clock_start=CLOCK)
    client = httpx.Client(
        base_url=handle.base_url,
        auth=(DEFAULT_USERNAME, DEFAULT_PASSWORD),
        timeout=30,
        headers={"content-type": "application/json"},
    )
    yield client, db_path, store_kind
    client.close()
    handle.stop()


def assert_served_and_still_serving(client: httpx.Client, response: httpx.Response) -> None:
    assert response.status_code < 500, response.text[:500]
    assert response.headers.get("connection", "").lower() != "close"
    assert response.headers["content-type"].startswith("application/json")
    after = client.get("/_sandbox/health")
    assert after.status_code == 200
    assert client_address(after) == client_address(response)  # the same keep-alive connection


def client_address(response: httpx.Response) -> Any:
    return response.extensions["network_stream"].get_extra_info("client_addr")


def records_of(response: httpx.Response) -> list[dict[str, Any]]:
    assert response.status_code in (200, 401), response.text[:500]
    return response.json()["response"] if response.status_code == 200 else []


@FUZZ
@given(body=gateway_bodies())
def test_no_body_gets_a_5xx_drops_the_connection_or_stores_an_invalid_request(served, body):
    client, db_path, _ = served
    before = kept_rows(db_path)
    response = client.post("/json/", content=body)
    assert_served_and_still_serving(client, response)
    records = records_of(response)
    event(f"HTTP {response.status_code}, errorcodes {sorted({r.get('errorcode') for r in records})}")
    if all(r.get("errorcode") in INVALID_CODES for r in records):  # a field error uses up a reference only
        assert kept_rows(db_path) == before
    assert not any(r.get("errorcode") == "99999" for r in records), records


CONTROL_PATHS = [
    "/_sandbox/faults",
    "/_sandbox/faults/clear",
    "/_sandbox/settle",
    "/_sandbox/snapshots",
    "/_sandbox/snapshots/restore",
    "/_sandbox/snapshots/delete",
]
CONTROL_KEYS = sorted(
    {
        "kind",
        "drop_next",
        "process",
        "sitereference",
        "name",
        "all",
        *SELECTOR_FIELDS,
        *(param for params in KINDS.values() for param in params),
    }
)
NUMBERS = st.one_of(st.integers(-(10**99), 10**99), st.floats(allow_nan=False, allow_infinity=False))


@st.composite
def control_bodies(draw) -> bytes:
    keys = st.one_of(st.sampled_from(CONTROL_KEYS), st.text(max_size=10))
    values = st.one_of(
        JUNK,
        NUMBERS,
        st.sampled_from(sorted(KINDS)),
        st.just(HUGE_NUMBER),
        st.just(SITE),
        st.recursive(JUNK, lambda inner: st.lists(inner, max_size=2), max_leaves=40),
    )
    payload = draw(st.one_of(st.dictionaries(keys, values, max_size=4), JUNK))
    body = encoded(payload, draw(st.sampled_from([5, 101, 4301])))
    if draw(st.integers(0, 9)) == 0:
        body = draw(st.binary(max_size=100))
    return body


@FUZZ
@given(path=st.sampled_from(CONTROL_PATHS), body=control_bodies())
def test_the_control_api_answers_any_body_without_a_5xx(served, path, body):
    client, db_path, _ = served
    before = all_rows(db_path)
    response = client.post(path, content=body)
    assert_served_and_still_serving(client, response)
    event(f"HTTP {response.status_code}")
    if 400 <= response.status_code < 500:
        assert response.json()["error"] and all_rows(db_path) == before
    client.post(
        "/_sandbox/faults/clear", json={}
    )  # a fault added here must not drop the gateway fuzz's answers
