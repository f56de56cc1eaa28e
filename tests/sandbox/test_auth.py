"""AUTH over real HTTP: card fields, stored cards, record formats and test acquirer parity."""

from __future__ import annotations

import csv
import re
from pathlib import Path

import pytest

from gwkit.interface.cards import scheme_of
from support.sandbox import (
    CLOCK,
    VISA,
    VISA_DECLINED,
    all_rows,
    card_auth,
    kept_rows,
    parent_auth,
    store_request,
    update_request,
)

pytestmark = pytest.mark.both_stores  # each test on SQLite and on PostgreSQL

TEST_CARDS = list(
    csv.DictReader(
        (Path(__file__).resolve().parents[2] / "data" / "test_cards.csv")
        .read_text(encoding="utf-8")
        .splitlines()
    )
)


def expected_issuer(row: dict[str, str]) -> tuple[str | None, str]:
    """The card's issuer as the CSV names it; else the real test site's for cards it does not know
    specially (SecureTrading Test Issuer1 in ZZ; no issuer for Mastercard's 520000 test cards)."""
    if row["issuer"]:
        return row["issuer"], row["issuercountryiso2a"]
    return (None if row["pan"].startswith("520000") else "SecureTrading Test Issuer1"), "ZZ"


AUTH_RECORD_FIELDS = {  # interface 2.4 (credentialsonfile only when sent)
    "transactionstartedtimestamp",
    "livestatus",
    "issuer",
    "splitfinalnumber",
    "dccenabled",
    "settleduedate",
    "errorcode",
    "errormessage",
    "baseamount",
    "tid",
    "merchantnumber",
    "merchantcountryiso2a",
    "merchantname",
    "transactionreference",
    "paymenttypedescription",
    "orderreference",
    "accounttypedescription",
    "acquirerresponsecode",
    "requesttypedescription",
    "securityresponsesecuritycode",
    "securityresponsepostcode",
    "securityresponseaddress",
    "currencyiso3a",
    "authcode",
    "operatorname",
    "maskedpan",
    "issuercountryiso2a",
    "settlestatus",
}


def test_auth_with_card_fields_answers_every_field_of_the_interface(gateway):
    answer = gateway.envelope(card_auth(orderreference="order-1"))
    assert re.fullmatch(r"W\d+-[a-z0-9]{8}", answer["requestreference"])
    assert answer["version"] == "1.00"
    assert re.fullmatch(r"[A-Za-z0-9]{2,15}", answer["secrand"])
    (record,) = answer["response"]
    assert set(record) >= AUTH_RECORD_FIELDS
    assert all(isinstance(v, str) for v in record.values()), "every value on the wire is a string"
    assert "credentialsonfile" not in record
    assert record["errorcode"] == "0" and record["errormessage"] == "Ok"
    assert record["requesttypedescription"] == "AUTH"
    assert re.fullmatch(r"\d+-\d+-\d+", record["transactionreference"])
    assert record["maskedpan"] == "411111######1111"
    assert record["paymenttypedescription"] == "VISA"
    assert record["issuer"] == "SecureTrading Test Issuer1" and record["issuercountryiso2a"] == "US"
    assert record["acquirerresponsecode"] == "00"
    assert re.fullmatch(r"TEST\d+", record["authcode"])
    assert record["securityresponsesecuritycode"] == "2"
    assert record["settlestatus"] == "0"
    assert record["transactionstartedtimestamp"] == CLOCK.strftime("%Y-%m-%d %H:%M:%S")
    assert record["settleduedate"] == "2026-01-15"  # its own day, as captured answers show
    assert (
        record["baseamount"],
        record["currencyiso3a"],
        record["accounttypedescription"],
        record["orderreference"],
    ) == ("1050", "GBP", "ECOM", "order-1")
    assert record["operatorname"] == gateway.username


def test_request_reference_is_echoed_from_the_request_object(gateway):
    answer = gateway.envelope(card_auth(requestreference="Aq7hy2k3m"))
    assert answer["requestreference"] == "Aq7hy2k3m"


def test_credentialsonfile_is_echoed_when_sent(gateway):
    assert gateway.one(card_auth(credentialsonfile="1"))["credentialsonfile"] == "1"


def test_transaction_references_are_unique_and_requests_answered_in_order(gateway):
    objects = [card_auth(orderreference=f"o{i}", baseamount=str(1000 + i)) for i in range(30)]
    records = gateway.records(*objects)
    assert [r["orderreference"] for r in records] == [f"o{i}" for i in range(30)]
    references = [r["transactionreference"] for r in records]
    assert len(set(references)) == 30
    assert len({r.split("-")[0] for r in references}) == 1  # one prefix per database


@pytest.mark.parametrize(
    "row", TEST_CARDS, ids=[f"{r['paymenttypedescription']}-{r['outcome']}-{r['pan']}" for r in TEST_CARDS]
)
def test_every_test_card_has_its_payment_type_and_outcome(gateway, row):
    scheme = scheme_of(row["pan"])
    # e-commerce Maestro needs 3-D Secure (interface 4.3): the card itself is exercised by MOTO
    account = "MOTO" if row["paymenttypedescription"] == "MAESTRO" else "ECOM"
    code = "1234" if scheme.securitycode_length == 4 else "123"
    record = gateway.one(card_auth(pan=row["pan"], securitycode=code, accounttypedescription=account))
    assert record["paymenttypedescription"] == row["paymenttypedescription"]
    assert record["maskedpan"] == row["pan"][:6] + "######" + row["pan"][-4:]
    assert (record.get("issuer"), record["issuercountryiso2a"]) == expected_issuer(row)
    # a decline reports the code sent as not checked (1), as captured answers show
    assert record["securityresponsesecuritycode"] == ("2" if row["outcome"] == "authorised" else "1")
    if row["outcome"] == "authorised":
        assert (record["errorcode"], record["acquirerresponsecode"], record["settlestatus"]) == (
            "0",
            "00",
            "0",
        )
        assert record["authcode"].startswith("TEST")
    else:
        assert row["outcome"] == "declined"
        assert (record["errorcode"], record["errormessage"]) == ("70000", "Decline")
        assert (record["acquirerresponsecode"], record["settlestatus"]) == ("05", "3")
        assert "DECLINED" in record["authcode"]


@pytest.mark.parametrize(
    "amount, errorcode, errormessage, settlestatus",
    [
        ("70000", "70000", "Decline", "3"),
        ("60010", "60010", "Bank System Error", "3"),
        ("1050", "0", "Ok", "0"),
    ],
)
def test_magic_amounts(gateway, amount, errorcode, errormessage, settlestatus):
    record = gateway.one(card_auth(baseamount=amount))
    assert (record["errorcode"], record["errormessage"], record["settlestatus"]) == (
        errorcode,
        errormessage,
        settlestatus,
    )
    if amount == "70000":
        assert record["acquirerresponsecode"] == "05" and "DECLINED" in record["authcode"]


def test_declined_test_card(gateway):
    record = gateway.one(card_auth(pan=VISA_DECLINED))
    assert (record["errorcode"], record["acquirerresponsecode"], record["settlestatus"]) == (
        "70000",
        "05",
        "3",
    )


@pytest.mark.parametrize("code, expected", [("123", "2"), ("321", "4"), (None, "0")])
def test_security_code_check(gateway, code, expected):
    request = card_auth() if code else {k: v for k, v in card_auth().items() if k != "securitycode"}
    if code:
        request["securitycode"] = code
    record = gateway.one(request)
    assert record["errorcode"] == "0"
    assert record["securityresponsesecuritycode"] == expected


@pytest.mark.parametrize("expiry", ["01/2026", "02/2026", "12/2049", "07/2099"])
def test_any_future_expiry_is_accepted(gateway, expiry):
    assert gateway.one(card_auth(expirydate=expiry))["errorcode"] == "0"  # the clock is in January 2026


@pytest.mark.parametrize(
    "fields, invalid",
    [
        ({"expirydate": "12/2025"}, ["expirydate"]),  # expired by the sandbox clock
        ({"pan": "4111111111111112"}, ["pan"]),  # Luhn failure
        ({"pan": "9000000000000008"}, ["pan"]),  # Luhn-valid, but no supported scheme
        ({"pan": "411111111111"}, ["pan"]),  # 12 digits, Luhn failure
    ],
)
def test_refused_cards_store_nothing(gateway, db_path, fields, invalid):
    before = kept_rows(db_path)
    record = gateway.one(card_auth(**fields))
    assert (record["errorcode"], record["errormessage"]) == ("30000", "Invalid field")
    assert record["errordata"] == invalid
    assert record["transactionreference"]  # one reference used up, as the gateway's field errors do
    assert gateway.query(transactionreference=record["transactionreference"]) == []
    assert kept_rows(db_path) == before


def test_auth_from_a_stored_card_inherits_card_and_billing(gateway):
    stored = gateway.one(
        store_request(
            billingfirstname="Ada",
            billinglastname="Lovelace",
            billingtown="London",
            billingcountryiso2a="GB",
            billingpostcode="SW1A 1AA",
        )
    )
    assert stored["errorcode"] == "0"
    record = gateway.one(parent_auth(stored["transactionreference"], orderreference="from-store"))
    assert record["errorcode"] == "0"
    assert record["parenttransactionreference"] == stored["transactionreference"]
    assert record["maskedpan"] == "510000######0008" and record["paymenttypedescription"] == "MASTERCARD"
    assert record["baseamount"] == "2500"
    assert record["securityresponsesecuritycode"] == "0"  # not given: never stored, not sent
    (found,) = gateway.query(transactionreference=record["transactionreference"])
    assert (found["billingfirstname"], found["billinglastname"], found["billingtown"]) == (
        "Ada",
        "Lovelace",
        "London",
    )


def test_auth_from_a_stored_card_may_send_the_security_code_and_add_billing(gateway):
    stored = gateway.one(store_request(billingfirstname="Ada"))
    record = gateway.one(
        parent_auth(stored["transactionreference"], securitycode="123", billingemail="ada@example.com")
    )
    assert record["securityresponsesecuritycode"] == "2"
    (found,) = gateway.query(transactionreference=record["transactionreference"])
    assert (found["billingfirstname"], found["billingemail"]) == ("Ada", "ada@example.com")


def test_a_disabled_stored_card_is_refused_until_enabled_again(gateway, db_path):
    stored = gateway.one(store_request())["transactionreference"]
    assert gateway.one(update_request(stored, transactionactive="0"))["errorcode"] == "0"
    before = all_rows(db_path)
    refused = gateway.one(parent_auth(stored))
    assert (refused["errorcode"], refused["errordata"]) == ("30000", ["parenttransactionreference"])
    assert all_rows(db_path) == before
    assert gateway.one(update_request(stored, transactionactive="1"))["errorcode"] == "0"
    assert gateway.one(parent_auth(stored))["errorcode"] == "0"


def test_unknown_parent_and_card_fields_with_a_parent_are_refused(gateway):
    unknown = gateway.one(parent_auth("99-9-99999"))
    assert (unknown["errorcode"], unknown["errordata"]) == ("30000", ["parenttransactionreference"])
    stored = gateway.one(store_request())["transactionreference"]
    both = gateway.one(parent_auth(stored, pan=VISA, expirydate="12/2030"))
    assert both["errorcode"] == "30000" and set(both["errordata"]) == {"pan", "expirydate"}


def test_a_stored_card_lends_amount_fields_only_from_the_request(gateway):
    stored = gateway.one(store_request())["transactionreference"]
    request = parent_auth(stored)
    del request["baseamount"]
    record = gateway.one(request)
    assert (record["errorcode"], record["errordata"]) == ("30000", ["baseamount"])


def test_auth_of_a_site_of_the_account_only(gateway):
    record = gateway.one(card_auth(sitereference="test_someoneelse123"))
    assert (record["errorcode"], record["errordata"]) == ("30000", ["sitereference"])


def test_auth_and_query_in_one_request_object_are_answered_in_order(gateway):
    request = {
        **card_auth(orderreference="multi-1"),
        "requesttypedescriptions": ["AUTH", "TRANSACTIONQUERY"],
        "filter": {"orderreference": [{"value": "multi-1"}]},
    }
    auth, query = gateway.records(request)
    assert (auth["requesttypedescription"], query["requesttypedescription"]) == ("AUTH", "TRANSACTIONQUERY")
    assert [r["transactionreference"] for r in query["records"]] == [auth["transactionreference"]]
