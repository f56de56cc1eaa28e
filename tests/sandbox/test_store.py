"""STORE over real HTTP: the card store record, billing fields, and what is refused."""

from __future__ import annotations

import csv
import re
from pathlib import Path

import pytest

from support.sandbox import kept_rows, store_request

pytestmark = pytest.mark.both_stores  # each test on SQLite and on PostgreSQL

STORE_RECORD_FIELDS = {  # interface 2.8
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
}
BILLING = {
    "billingpremise": "221B",
    "billingstreet": "Baker Street",
    "billingtown": "London",
    "billingcounty": "Greater London",
    "billingcountryiso2a": "GB",
    "billingpostcode": "NW1 6XE",
    "billingemail": "sherlock@example.com",
    "billingtelephonetype": "H",
    "billingtelephone": "+44 (20) 7224-3688",
    "billingprefixname": "Mr",
    "billingfirstname": "Sherlock",
    "billingmiddlename": "S",
    "billinglastname": "Holmes",
    "billingsuffixname": "Esq",
}
ONE_CARD_PER_SCHEME = {
    row["paymenttypedescription"]: row["pan"]
    for row in csv.DictReader(
        (Path(__file__).resolve().parents[2] / "data" / "test_cards.csv")
        .read_text(encoding="utf-8")
        .splitlines()
    )
    if row["outcome"] == "authorised"
}


def test_store_answers_the_card_store_record(gateway):
    record = gateway.one(store_request(orderreference="store-1", **BILLING))
    assert set(record) >= STORE_RECORD_FIELDS
    assert all(isinstance(v, str) for v in record.values())
    assert (record["errorcode"], record["errormessage"]) == ("0", "Ok")
    assert (record["requesttypedescription"], record["accounttypedescription"]) == ("STORE", "CARDSTORE")
    assert record["transactionactive"] == "1"
    assert record["maskedpan"] == "510000######0008" and record["paymenttypedescription"] == "MASTERCARD"
    assert record["orderreference"] == "store-1"
    assert record["transactionstartedtimestamp"] == "2026-01-15 10:00:00"
    assert re.fullmatch(r"\d+-\d+-\d+", record["transactionreference"])
    assert "settlestatus" not in record and "authcode" not in record  # the bank is not contacted


def test_billing_fields_are_kept_and_queried(gateway):
    reference = gateway.one(store_request(**BILLING))["transactionreference"]
    (found,) = gateway.query(transactionreference=reference)
    assert {k: found[k] for k in BILLING} == BILLING
    assert found["maskedpan"] == "510000######0008"


def test_every_scheme_of_the_card_store_list(gateway):
    assert len(ONE_CARD_PER_SCHEME) == 12  # interface 2.8: twelve supported card types
    for code, pan in ONE_CARD_PER_SCHEME.items():
        record = gateway.one(store_request(pan=pan))
        assert (record["errorcode"], record["paymenttypedescription"]) == ("0", code), pan


@pytest.mark.parametrize(
    "fields, invalid",
    [
        # (a securitycode is accepted as the real service does and never kept: test_cardstore.py)
        ({"accounttypedescription": "ECOM"}, ["accounttypedescription"]),
        ({"expirydate": "11/2025"}, ["expirydate"]),
        ({"pan": "5100000000000009"}, ["pan"]),
        ({"billingemail": "not-an-email"}, ["billingemail"]),
        ({"billingcountryiso2a": "US", "billingpostcode": "SW1A 1AA"}, ["billingpostcode"]),
        ({"billingtelephonetype": "X"}, ["billingtelephonetype"]),
    ],
)
def test_refused_store_keeps_nothing(gateway, db_path, fields, invalid):
    before = kept_rows(db_path)
    record = gateway.one(store_request(**fields))
    assert (record["errorcode"], record["errordata"]) == ("30000", invalid)
    assert kept_rows(db_path) == before  # only a reference is used up (the ERROR record names it)
