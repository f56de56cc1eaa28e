"""The card store end to end (interface 2.8, 3.2, 4.7): STORE and every billing rule over real HTTP,
the schemes, transactionactive, and the stored card as parent of AUTH, THREEDQUERY and AUTH
SUBSCRIPTION. The rules themselves live in gwkit/interface/fields.py; here the sandbox answers them.
"""

from __future__ import annotations

import csv
from datetime import datetime
from pathlib import Path

import httpx
import pytest

from gwkit import sandbox as sandbox_module

pytestmark = pytest.mark.both_stores  # each test on SQLite and on PostgreSQL

SITE = "test_gwkit12345"
CREDENTIALS = ("gwkit_sandbox", "gwkit-sandbox-password")
MASTERCARD = "5100000000000008"
ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def gateway(module_db_path):
    handle = sandbox_module.start(module_db_path, clock_start=datetime(2026, 3, 2, 10, 0, 0))
    yield handle
    handle.stop()


@pytest.fixture(scope="module")
def http(gateway):
    with httpx.Client(base_url=gateway.base_url, auth=CREDENTIALS, timeout=30) as client:
        yield client


def send(http, request: dict) -> list[dict]:
    response = http.post("/json/", json={"alias": CREDENTIALS[0], "version": "1.00", "request": [request]})
    assert response.status_code == 200, response.text
    return response.json()["response"]


def store(http, **fields) -> dict:
    request = {
        "requesttypedescriptions": ["STORE"],
        "sitereference": SITE,
        "accounttypedescription": "CARDSTORE",
        "pan": MASTERCARD,
        "expirydate": "12/2030",
        "orderreference": "card-1",
        **fields,
    }
    (record,) = send(http, {k: v for k, v in request.items() if v is not None})
    return record


def stored_count(gateway) -> int:
    return (
        gateway.sandbox.store.connection()
        .execute("SELECT COUNT(*) FROM transactions WHERE requesttypedescription = 'STORE'")
        .fetchone()[0]
    )


def query(http, reference: str) -> dict:
    (answer,) = send(
        http,
        {
            "requesttypedescriptions": ["TRANSACTIONQUERY"],
            "filter": {"transactionreference": [{"value": reference}]},
        },
    )
    (record,) = answer["records"]
    return record


def update(http, reference: str, **updates) -> dict:
    (record,) = send(
        http,
        {
            "requesttypedescriptions": ["TRANSACTIONUPDATE"],
            "filter": {"sitereference": [{"value": SITE}], "transactionreference": [{"value": reference}]},
            "updates": updates,
        },
    )
    return record


def auth_from(http, reference: str, **fields) -> dict:
    (record,) = send(
        http,
        {
            "requesttypedescriptions": ["AUTH"],
            "sitereference": SITE,
            "parenttransactionreference": reference,
            "accounttypedescription": "ECOM",
            "currencyiso3a": "GBP",
            "baseamount": "1050",
            **fields,
        },
    )
    return record


# STORE and its record ----------------------------------------------------------------------------

EVERY_BILLING_FIELD = {
    "billingpremise": "221B",
    "billingstreet": "Baker Street",
    "billingtown": "London",
    "billingcounty": "Greater London",
    "billingcountryiso2a": "GB",
    "billingpostcode": "NW1 6XE",
    "billingemail": "sherlock@example.co.uk",
    "billingtelephonetype": "H",
    "billingtelephone": "+44 (0)20 7224-3688",
    "billingprefixname": "Mr",
    "billingfirstname": "Sherlock",
    "billingmiddlename": "Scott",
    "billinglastname": "Holmes",
    "billingsuffixname": "Esq",
}


def test_store_with_every_billing_field(http):
    record = store(http, **EVERY_BILLING_FIELD)
    assert record["errorcode"] == "0"
    assert set(record) == {
        "transactionreference",
        "merchantname",
        "paymenttypedescription",
        "transactionactive",
        "orderreference",
        "transactionstartedtimestamp",
        "errormessage",
        "errorcode",
        "operatorname",
        "accounttypedescription",
        "maskedpan",
        "requesttypedescription",
        "issuercountryiso2a",
        "livestatus",
        "issuer",
    }  # no sitereference: no record names its site (as the real gateway's)
    assert (
        record["transactionactive"],
        record["accounttypedescription"],
        record["requesttypedescription"],
        record["maskedpan"],
        record["paymenttypedescription"],
    ) == ("1", "CARDSTORE", "STORE", "510000######0008", "MASTERCARD")
    kept = query(http, record["transactionreference"])
    assert kept["expirydate"] == "12/2030"
    for name, value in EVERY_BILLING_FIELD.items():
        assert kept[name] == value, name
    assert "pan" not in kept and MASTERCARD not in str(kept)


def test_a_security_code_is_accepted_as_the_real_service_does_and_never_kept(gateway, http):
    """The real test site answers 0 (the official client's module test_store sends one) and keeps no
    code; gwkit's own client still refuses to send it (tests/interface/test_requests.py)."""
    before = stored_count(gateway)
    record = store(http, securitycode="739", orderreference="with-code")
    assert record["errorcode"] == "0" and "securitycode" not in record
    assert stored_count(gateway) == before + 1
    rows = gateway.sandbox.store.connection().execute("SELECT * FROM transactions").fetchall()
    assert all("739" not in str(value) for row in rows for value in tuple(row) if value is not None)
    assert "securitycode" not in query(http, record["transactionreference"])


def test_other_refusals(http):
    assert store(http, accounttypedescription="ECOM")["errordata"] == ["accounttypedescription"]
    assert store(http, pan="5100000000000009")["errordata"] == ["pan"]  # Luhn
    assert store(http, pan="9000000000000001")["errordata"] == ["pan"]  # no supported scheme
    assert store(http, expirydate="02/2026")["errordata"] == ["expirydate"]  # expired by the sandbox clock
    assert store(http, expirydate="13/2030")["errordata"] == ["expirydate"]
    assert store(http, expirydate="03/2026")["errorcode"] == "0"  # good to the end of the month


def _test_cards() -> dict[str, str]:
    """The first test card of each scheme in data/test_cards.csv."""
    with open(ROOT / "data" / "test_cards.csv", newline="", encoding="utf-8") as handle:
        cards: dict[str, str] = {}
        for row in csv.DictReader(handle):
            cards.setdefault(row["paymenttypedescription"], row["pan"])
    return cards


SUPPORTED = [
    "AMEX",
    "DINERS",
    "DISCOVER",
    "JCB",
    "MAESTRO",
    "MASTERCARD",
    "MASTERCARDDEBIT",
    "VPAY",
    "VISA",
    "DELTA",
    "ELECTRON",
    "PURCHASING",
]


def test_the_test_cards_cover_every_supported_scheme():
    assert sorted(_test_cards()) == sorted(SUPPORTED)


@pytest.mark.parametrize("scheme", SUPPORTED)
def test_every_supported_scheme_is_recognised(http, scheme):
    pan = _test_cards()[scheme]
    record = store(http, pan=pan)
    assert (record["errorcode"], record["paymenttypedescription"]) == ("0", scheme)
    assert record["maskedpan"] == pan[:6] + "######" + pan[-4:]
    # MOTO: an e-commerce Maestro payment would need 3-D Secure.
    auth = auth_from(http, record["transactionreference"], accounttypedescription="MOTO")
    assert (auth["errorcode"], auth["paymenttypedescription"]) in {("0", scheme), ("70000", scheme)}


# every billing rule, end to end ------------------------------------------------------------------

VALID = [
    {"billingcountryiso2a": "US", "billingcounty": "NY"},
    {"billingcountryiso2a": "US", "billingcounty": "ny"},
    {"billingcountryiso2a": "US", "billingcounty": "New York"},
    {"billingcountryiso2a": "US", "billingcounty": "district of columbia"},
    {"billingcountryiso2a": "GB", "billingcounty": "Narnia"},  # a county is only checked for the US
    {"billingcounty": "Anything at all"},
    {"billingcountryiso2a": "US", "billingpostcode": "10001"},
    {"billingcountryiso2a": "US", "billingpostcode": "10001-1234"},
    {"billingcountryiso2a": "GB", "billingpostcode": "SW1A 1AA"},
    {"billingcountryiso2a": "GB", "billingpostcode": "ec1a1bb"},
    {"billingcountryiso2a": "CA", "billingpostcode": "K1A 0B1"},
    {"billingcountryiso2a": "DE", "billingpostcode": "not checked 1"},  # other countries: not validated
    {"billingcountryiso2a": "PT", "billingpostcode": "1000-001"},
    {"billingpostcode": "12"},
    {"billingemail": "a" * 64 + "@example.com"},
    {"billingemail": "first.last+tag@example.co.uk"},
    {"billingtelephone": "+44 (0) 20-7946 0000", "billingtelephonetype": "M"},
    {"billingtelephonetype": "W"},
    {"billingtelephonetype": "H"},
    {"billingpremise": "x" * 25, "billingprefixname": "y" * 25, "billingsuffixname": "z" * 25},
    {"billingstreet": "s" * 127, "billingtown": "t" * 127, "billingcounty": "c" * 127},
    {"billingfirstname": "Zoë", "billingmiddlename": "d'Artagnan-Łukasz", "billinglastname": "O'Brien 3rd"},
]

INVALID = [
    ({"billingcountryiso2a": "US", "billingcounty": "Narnia"}, ["billingcounty"]),
    ({"billingcountryiso2a": "US", "billingcounty": "N"}, ["billingcounty"]),
    ({"billingcountryiso2a": "US", "billingpostcode": "1000"}, ["billingpostcode"]),
    ({"billingcountryiso2a": "US", "billingpostcode": "10001-12"}, ["billingpostcode"]),
    ({"billingcountryiso2a": "GB", "billingpostcode": "12345"}, ["billingpostcode"]),
    ({"billingcountryiso2a": "CA", "billingpostcode": "K1A 0B"}, ["billingpostcode"]),
    ({"billingcountryiso2a": "CA", "billingpostcode": "D1A 0B1"}, ["billingpostcode"]),  # D is not used
    ({"billingcountryiso2a": "gb"}, ["billingcountryiso2a"]),
    ({"billingcountryiso2a": "GBR"}, ["billingcountryiso2a"]),
    ({"billingcountryiso2a": "G1"}, ["billingcountryiso2a"]),
    ({"billingemail": "a" * 65 + "@example.com"}, ["billingemail"]),
    ({"billingemail": "no-at-sign.example.com"}, ["billingemail"]),
    ({"billingemail": "a@b"}, ["billingemail"]),
    ({"billingemail": "x" * 250 + "@e.com"}, ["billingemail"]),  # 255 at most
    ({"billingtelephone": "020.7946.0000"}, ["billingtelephone"]),
    ({"billingtelephone": "ext 12"}, ["billingtelephone"]),
    ({"billingtelephone": "1" * 21}, ["billingtelephone"]),
    ({"billingtelephonetype": "X"}, ["billingtelephonetype"]),
    ({"billingtelephonetype": "HM"}, ["billingtelephonetype"]),
    ({"billingtelephonetype": "h"}, ["billingtelephonetype"]),
    ({"billingpremise": "x" * 26}, ["billingpremise"]),
    ({"billingprefixname": "y" * 26}, ["billingprefixname"]),
    ({"billingsuffixname": "z" * 26}, ["billingsuffixname"]),
    ({"billingstreet": "s" * 128}, ["billingstreet"]),
    ({"billingtown": "t" * 128}, ["billingtown"]),
    ({"billingcounty": "c" * 128}, ["billingcounty"]),
    ({"billingfirstname": "f" * 128}, ["billingfirstname"]),
    ({"billingmiddlename": "m" * 128}, ["billingmiddlename"]),
    ({"billinglastname": "l\x00"}, ["billinglastname"]),  # control character
    ({"billingpostcode": "A" * 26}, ["billingpostcode"]),
    (
        {
            "billingcountryiso2a": "US",
            "billingcounty": "Narnia",
            "billingpostcode": "x",
            "billingemail": "@",
            "billingtelephone": "?",
        },
        ["billingcounty", "billingpostcode", "billingemail", "billingtelephone"],
    ),
]


@pytest.mark.parametrize(
    "fields", VALID, ids=[" ".join(f"{k}={v[:12]}" for k, v in f.items()) for f in VALID]
)
def test_billing_values_that_obey_the_rules_are_stored(http, fields):
    record = store(http, **fields)
    assert record["errorcode"] == "0", record
    kept = query(http, record["transactionreference"])
    assert {k: kept[k] for k in fields} == fields


@pytest.mark.parametrize(
    "fields, errordata", INVALID, ids=[" ".join(f"{k}={v[:12]!r}" for k, v in f.items()) for f, _ in INVALID]
)
def test_billing_values_that_break_a_rule_are_refused(gateway, http, fields, errordata):
    before = stored_count(gateway)
    record = store(http, **fields)
    assert (record["errorcode"], record["errormessage"]) == ("30000", "Invalid field")
    assert record["errordata"] == errordata
    assert stored_count(gateway) == before


# transactionactive and the stored card as a parent -------------------------------------------------


def test_transactionactive_changes_with_transactionupdate(http):
    reference = store(http)["transactionreference"]
    assert query(http, reference)["transactionactive"] == "1"
    assert update(http, reference, transactionactive="0")["errorcode"] == "0"
    assert query(http, reference)["transactionactive"] == "0"
    assert update(http, reference, transactionactive="1")["errorcode"] == "0"
    assert query(http, reference)["transactionactive"] == "1"
    assert update(http, reference, transactionactive="2")["errordata"] == ["transactionactive"]
    assert update(http, reference, baseamount="100")["errordata"] == ["baseamount"]
    assert query(http, reference)["transactionactive"] == "1"


def test_auth_inherits_the_stored_card_and_billing(gateway, http):
    reference = store(http, billinglastname="Holmes", billingcountryiso2a="GB", orderreference="keep")[
        "transactionreference"
    ]
    record = auth_from(http, reference, orderreference="order-9")
    assert record["errorcode"] == "0"
    assert (record["maskedpan"], record["parenttransactionreference"], record["orderreference"]) == (
        "510000######0008",
        reference,
        "order-9",
    )
    assert query(http, record["transactionreference"])["billinglastname"] == "Holmes"


def test_a_disabled_card_is_refused_by_every_later_request(http):
    reference = store(http)["transactionreference"]
    update(http, reference, transactionactive="0")
    refused = ("30000", ["parenttransactionreference"])
    auth = auth_from(http, reference)
    assert (auth["errorcode"], auth["errordata"]) == refused
    threedquery = send(http, threedquery_from(reference))[0]
    assert (threedquery["errorcode"], threedquery["errordata"]) == refused
    records = send(http, subscription_from(reference))  # one record for the refused object
    assert [(r["requesttypedescription"], r["errorcode"], r["errordata"]) for r in records] == [
        ("ERROR", *refused)
    ]
    update(http, reference, transactionactive="1")
    assert auth_from(http, reference)["errorcode"] == "0"


def threedquery_from(reference: str) -> dict:
    return {
        "requesttypedescriptions": ["THREEDQUERY"],
        "sitereference": SITE,
        "accounttypedescription": "ECOM",
        "currencyiso3a": "GBP",
        "baseamount": "1050",
        "termurl": "https://shop.example/3ds",
        "parenttransactionreference": reference,
    }


def subscription_from(reference: str, **fields) -> dict:
    return {
        "requesttypedescriptions": ["AUTH", "SUBSCRIPTION"],
        "sitereference": SITE,
        "accounttypedescription": "ECOM",
        "currencyiso3a": "GBP",
        "baseamount": "999",
        "orderreference": "sub",
        "subscriptiontype": "RECURRING",
        "subscriptionunit": "MONTH",
        "subscriptionfrequency": "1",
        "subscriptionnumber": "1",
        "subscriptionfinalnumber": "3",
        "subscriptionbegindate": "2026-04-02",
        "credentialsonfile": "1",
        "parenttransactionreference": reference,
        **fields,
    }


def test_threedquery_with_a_stored_card(http):
    enrolled = store(http, pan="5100000000000008")["transactionreference"]
    record = send(http, threedquery_from(enrolled))[0]
    assert (
        record["errorcode"],
        record["enrolled"],
        record["maskedpan"],
        record["parenttransactionreference"],
    ) == ("0", "Y", "510000######0008", enrolled)
    assert record["acsurl"] and record["md"] and record["pareq"]
    unenrolled = store(http, pan="4000000000000721")["transactionreference"]
    query_record = send(http, threedquery_from(unenrolled))[0]
    assert query_record["enrolled"] == "N"
    # The AUTH that follows an unenrolled THREEDQUERY inherits the stored card through it.
    auth = auth_from(http, query_record["transactionreference"])
    assert (auth["errorcode"], auth["maskedpan"]) == ("0", "400000######0721")


def test_auth_subscription_with_a_stored_card_pays_on_schedule_even_once_disabled(gateway, http):
    reference = store(http, pan="4111111111111111", billinglastname="Subscriber")["transactionreference"]
    auth, subscription = send(http, subscription_from(reference, transactionactive="1"))
    assert (auth["errorcode"], auth["parenttransactionreference"], auth["maskedpan"]) == (
        "0",
        reference,
        "411111######1111",
    )
    assert (
        subscription["errorcode"],
        subscription["requesttypedescription"],
        subscription["transactionactive"],
    ) == ("0", "SUBSCRIPTION", "1")
    update(http, reference, transactionactive="0")  # the stored card only: the series has its own state
    gateway.advance(to="2026-04-02T12:00:00")
    (answer,) = send(
        http,
        {
            "requesttypedescriptions": ["TRANSACTIONQUERY"],
            "filter": {
                "parenttransactionreference": [{"value": subscription["transactionreference"]}],
                "requesttypedescription": [{"value": "AUTH"}],
            },
        },
    )
    payments = answer["records"]
    assert [(p["accounttypedescription"], p["maskedpan"], p["baseamount"]) for p in payments] == [
        ("RECUR", "411111######1111", "999")
    ]


def test_cards_of_another_account_are_not_found(gateway, http):
    reference = store(http)["transactionreference"]
    with httpx.Client(base_url=gateway.base_url, timeout=30) as anonymous:
        answer = anonymous.post(
            "/json/",
            json={
                "request": [
                    {
                        "requesttypedescriptions": ["TRANSACTIONQUERY"],
                        "filter": {"transactionreference": [{"value": reference}]},
                    }
                ]
            },
        )
    assert answer.status_code == 401
