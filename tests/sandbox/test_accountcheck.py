"""ACCOUNTCHECK over real HTTP: a card checked without taking money, test cards honoured, and the
check as the parent of an AUTH or a subscription."""

from __future__ import annotations

import pytest

import gwkit
from support.sandbox import SITE, kept_rows, store_request

pytestmark = pytest.mark.both_stores  # each test on SQLite and on PostgreSQL

CARD = {
    "sitereference": SITE,
    "accounttypedescription": "ECOM",
    "currencyiso3a": "GBP",
    "pan": "4111111111111111",
    "expirydate": "12/2030",
    "securitycode": "123",
}


def check(**fields):
    return {"requesttypedescriptions": ["ACCOUNTCHECK"], **CARD, **fields}


def kept(gateway, reference):
    (record,) = gateway.query(transactionreference=reference)
    return record


@pytest.mark.parametrize("amount", [None, "0"])
def test_a_good_card_is_checked_and_no_money_is_taken(sandbox, gateway, amount):
    record = gateway.one(check(**({"baseamount": amount} if amount else {}), orderreference="check-1"))
    assert (record["requesttypedescription"], record["errorcode"], record["errormessage"]) == (
        "ACCOUNTCHECK",
        "0",
        "Ok",
    )
    assert (record["acquirerresponsecode"], record["securityresponsesecuritycode"], record["baseamount"]) == (
        "00",
        "2",
        "0",
    )
    assert record["authcode"].startswith("TEST") and record["maskedpan"] == "411111######1111"
    assert (record["paymenttypedescription"], record["issuer"]) == ("VISA", "SecureTrading Test Issuer1")
    # as the real service answers (captured answers), though no money moves
    assert (record["settlestatus"], record["settleduedate"]) == (
        "0",
        record["transactionstartedtimestamp"][:10],
    )
    sandbox.advance(by="P3D")
    assert kept(gateway, record["transactionreference"])["settlestatus"] == "0"  # nothing ever settles
    assert sandbox.advance(by="P1D").get("settlement", {}).get("settled", []) == []


def test_a_declining_test_card_declines(gateway):
    record = gateway.one(check(pan="4000000000000812"))
    assert (
        record["errorcode"],
        record["errormessage"],
        record["acquirerresponsecode"],
        record["settlestatus"],
    ) == ("70000", "Decline", "05", "3")
    assert record["authcode"] == "DECLINED"


def test_the_security_code_is_checked(gateway):
    assert gateway.one(check(securitycode="999"))["securityresponsesecuritycode"] == "4"
    without = {k: v for k, v in check().items() if k != "securitycode"}
    assert gateway.one(without)["securityresponsesecuritycode"] == "0"  # not given


@pytest.mark.parametrize(
    "fields, named",
    [
        ({"baseamount": "-1"}, ["baseamount"]),
        ({"baseamount": "01"}, ["baseamount"]),
        ({"expirydate": "12/2025"}, ["expirydate"]),
        ({"pan": "4111111111111112"}, ["pan"]),
        ({"currencyiso3a": None}, ["currencyiso3a"]),
        ({"accounttypedescription": "CARDSTORE"}, ["accounttypedescription"]),
    ],
)
def test_bad_fields_are_30000_and_keep_nothing(gateway, db_path, fields, named):
    before = kept_rows(db_path)
    request = {k: v for k, v in check(**fields).items() if v is not None}
    record = gateway.one(request)
    assert (record["requesttypedescription"], record["errorcode"], record["errordata"]) == (
        "ERROR",
        "30000",
        named,
    )
    assert kept_rows(db_path) == before  # a reference is used up (the record names it), nothing kept


def test_a_stored_card_can_be_checked(gateway):
    stored = gateway.one(store_request(billingfirstname="Ada"))["transactionreference"]
    request = {
        "requesttypedescriptions": ["ACCOUNTCHECK"],
        "sitereference": SITE,
        "currencyiso3a": "GBP",
        "parenttransactionreference": stored,
    }
    assert gateway.one(request)["errordata"] == ["accounttypedescription"]
    record = gateway.one({**request, "accounttypedescription": "MOTO"})
    assert (record["errorcode"], record["maskedpan"], record["parenttransactionreference"]) == (
        "0",
        "510000######0008",
        stored,
    )
    assert kept(gateway, record["transactionreference"])["billingfirstname"] == "Ada"


def test_an_auth_from_an_accountcheck_takes_its_card_currency_and_account_type(gateway):
    parent = gateway.one(check(orderreference="checked-first"))["transactionreference"]
    auth = gateway.one(
        {
            "requesttypedescriptions": ["AUTH"],
            "sitereference": SITE,
            "baseamount": "1999",
            "parenttransactionreference": parent,
        }
    )
    assert (auth["errorcode"], auth["maskedpan"], auth["currencyiso3a"], auth["accounttypedescription"]) == (
        "0",
        "411111######1111",
        "GBP",
        "ECOM",
    )
    assert (auth["baseamount"], auth["settlestatus"], auth["orderreference"]) == (
        "1999",
        "0",
        "checked-first",
    )


def test_an_auth_from_an_accountcheck_of_no_amount_must_name_its_amount(gateway):
    parent = gateway.one(check())["transactionreference"]
    record = gateway.one(
        {"requesttypedescriptions": ["AUTH"], "sitereference": SITE, "parenttransactionreference": parent}
    )
    assert (record["errorcode"], record["errordata"]) == ("30000", ["baseamount"])


def test_a_declined_accountcheck_lends_no_card(gateway):
    parent = gateway.one(check(pan="4000000000000812"))["transactionreference"]
    record = gateway.one(
        {
            "requesttypedescriptions": ["AUTH"],
            "sitereference": SITE,
            "baseamount": "100",
            "parenttransactionreference": parent,
        }
    )
    assert (record["errorcode"], record["errordata"]) == ("30000", ["parenttransactionreference"])


def test_a_subscription_from_an_accountcheck_pays_on_its_schedule(sandbox, gateway):
    parent = gateway.one(check())["transactionreference"]
    subscription = gateway.one(
        {
            "requesttypedescriptions": ["SUBSCRIPTION"],
            "sitereference": SITE,
            "parenttransactionreference": parent,
            "baseamount": "1200",
            "subscriptiontype": "RECURRING",
            "subscriptionunit": "MONTH",
            "subscriptionfrequency": "1",
            "subscriptionnumber": "1",
            "subscriptionfinalnumber": "2",
            "subscriptionbegindate": "2026-01-20",
        }
    )
    assert (
        subscription["errorcode"],
        subscription["transactionactive"],
        subscription["subscriptionnumber"],
    ) == ("0", "2", "1")
    sandbox.advance(to="2026-03-01T10:00:00")
    payments = gateway.query(parenttransactionreference=subscription["transactionreference"])
    assert [
        (p["subscriptionnumber"], p["transactionstartedtimestamp"][:10], p["baseamount"]) for p in payments
    ] == [("2", "2026-02-20", "1200"), ("1", "2026-01-20", "1200")]


def test_gwkits_client_makes_an_accountcheck_and_validates_it_first(sandbox):
    with gwkit.Client(
        sandbox.base_url, sandbox.username, sandbox.password, sitereference=SITE, currencyiso3a="GBP"
    ) as client:
        answer = client.accountcheck(
            accounttypedescription="ECOM", pan="4111111111111111", expirymonth="11", expiryyear="2031"
        )
        assert (answer.record["requesttypedescription"], answer.record.errorcode) == ("ACCOUNTCHECK", 0)
        with pytest.raises(gwkit.ValidationError, match="expirymonth"):
            client.accountcheck(
                accounttypedescription="ECOM", pan="4111111111111111", expirymonth="13", expiryyear="2031"
            )
