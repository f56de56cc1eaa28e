"""The test amounts over real HTTP: 70000 declines and 60010 is a bank error (the real test
environment's), 71000 a soft decline and 60034 an unknown outcome (gwkit's own, documented in
docs/sandbox.md)."""

from __future__ import annotations

import pytest

from gwkit.interface.codes import ERROR_CODES
from gwkit.sandbox.gateway.acquirer import TEST_AMOUNTS
from support.sandbox import SITE, card_auth

pytestmark = pytest.mark.both_stores  # each test on SQLite and on PostgreSQL


def kept(gateway, reference):
    (record,) = gateway.query(transactionreference=reference)
    return record


def test_every_test_amount_answers_a_code_of_the_table(gateway):
    for amount, code in TEST_AMOUNTS.items():
        record = gateway.one(card_auth(baseamount=amount))
        assert (record["errorcode"], record["errormessage"]) == (str(code), ERROR_CODES[code].message), amount


def test_71000_is_a_soft_decline_of_an_ecommerce_payment_without_3ds(gateway):
    record = gateway.one(card_auth(baseamount="71000"))
    assert (record["errorcode"], record["errormessage"], record["settlestatus"]) == (
        "71000",
        "Soft decline",
        "3",
    )
    assert record["acquirerresponsecode"] == "1A" and record["authcode"] == ""
    assert kept(gateway, record["transactionreference"])["errorcode"] == "71000"  # kept, as a decline is
    assert ERROR_CODES[71000].action == "Resubmit the payment with 3-D Secure."


@pytest.mark.parametrize("accounttype", ["MOTO", "RECUR"])
def test_71000_outside_strong_authentication_is_authorised(gateway, accounttype):
    record = gateway.one(card_auth(baseamount="71000", accounttypedescription=accounttype))
    assert (record["errorcode"], record["settlestatus"]) == ("0", "0")


def test_71000_continues_with_3ds_and_is_authorised(gateway):
    soft = gateway.one(card_auth(baseamount="71000", pan="4000000000000721"))
    assert soft["errorcode"] == "71000"
    query, auth = gateway.records(
        {
            "requesttypedescriptions": ["THREEDQUERY", "AUTH"],
            "sitereference": SITE,
            "accounttypedescription": "ECOM",
            "currencyiso3a": "GBP",
            "baseamount": "71000",
            "termurl": "https://merchant.example/term",
            "pan": "4000000000000721",
            "expirydate": "12/2030",
        }
    )
    assert query["enrolled"] == "N"
    assert (auth["errorcode"], auth["settlestatus"], auth["parenttransactionreference"]) == (
        "0",
        "0",
        query["transactionreference"],
    )


def test_60034_is_answered_unknown_but_the_payment_exists(sandbox, gateway):
    record = gateway.one(card_auth(baseamount="60034", orderreference="unknown-1"))
    assert (record["errorcode"], record["errormessage"]) == ("60034", ERROR_CODES[60034].message)
    assert record["transactionreference"]
    assert ERROR_CODES[60034].unknown_outcome
    (found,) = gateway.query(orderreference="unknown-1")  # what the merchant must do: query before retrying
    assert (found["transactionreference"], found["errorcode"], found["settlestatus"]) == (
        record["transactionreference"],
        "0",
        "0",
    )
    sandbox.advance(by="P1D")
    assert kept(gateway, record["transactionreference"])["settlestatus"] == "100"  # the money was taken


def test_60010_is_answered_and_nothing_was_taken(gateway):
    record = gateway.one(card_auth(baseamount="60010", orderreference="unknown-2"))
    assert record["errorcode"] == "60010"
    (found,) = gateway.query(orderreference="unknown-2")
    assert (found["errorcode"], found["settlestatus"]) == ("60010", "3")


def test_4242424242424242_declines_as_on_the_real_test_site(gateway):
    record = gateway.one(card_auth(pan="4242424242424242"))
    assert (record["errorcode"], record["errormessage"], record["settlestatus"]) == ("70000", "Decline", "3")
