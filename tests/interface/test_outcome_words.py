"""Money for people and one line in plain words per record."""

from __future__ import annotations

import pytest

from gwkit.interface.codes import ERROR_CODES
from gwkit.interface.currency import format_money
from gwkit.interface.outcome import in_words


@pytest.mark.parametrize(
    "amount, currency, shown",
    [
        (1500, "GBP", "£15.00"),
        ("123456789", "JPY", "¥123,456,789"),
        (1050, "BHD", "1.050 BHD"),
        (-150000, "GBP", "-£1,500.00"),
        (5, "XYZ", "0.05 XYZ"),
        (100, None, "1.00"),
        (99999999, "EUR", "€999,999.99"),
    ],
)
def test_money_is_major_units_with_symbol_and_thousands(amount, currency, shown):
    assert format_money(amount, currency) == shown


def test_an_authorised_auth_in_words():
    words = in_words(
        {
            "requesttypedescription": "AUTH",
            "errorcode": "0",
            "baseamount": "1500",
            "currencyiso3a": "GBP",
            "maskedpan": "411111######1111",
            "settlestatus": "0",
            "transactionreference": "1-9-3",
            "settleduedate": "2027-01-02",
        }
    )
    assert words == "Authorised: £15.00 from 411111######1111 (transaction 1-9-3); it settles on 2027-01-02."


def test_a_subscription_says_the_auth_was_payment_one_and_the_gateway_makes_the_next():
    record = {
        "requesttypedescription": "SUBSCRIPTION",
        "errorcode": "0",
        "transactionreference": "1-9-4",
        "subscriptionnumber": "2",  # the next payment's number (interface 4.2)
        "subscriptionbegindate": "2026-12-31",
    }
    assert in_words(record) == (
        "Subscription set up (transaction 1-9-4): the AUTH sent with it is payment 1; the gateway makes "
        "payment 2 and the ones after it on their dates, starting on 2026-12-31."
    )
    assert "payment 2 is this AUTH" not in in_words(record)


def test_a_cancelled_auth_is_not_called_authorised():
    words = in_words(
        {
            "requesttypedescription": "AUTH",
            "errorcode": "0",
            "settlestatus": "3",
            "baseamount": "100",
            "currencyiso3a": "EUR",
        }
    )
    assert words.startswith("Cancelled: €1.00 will not settle")


@pytest.mark.parametrize("code", sorted(c for c in ERROR_CODES if c != 0))
def test_every_error_in_words_comes_from_the_code_table(code):
    entry = ERROR_CODES[code]
    words = in_words({"requesttypedescription": "AUTH", "errorcode": str(code)})
    assert str(code) in words and entry.meaning in words and entry.action in words


def test_an_invalid_field_is_named():
    words = in_words({"requesttypedescription": "AUTH", "errorcode": "30000", "errordata": ["expirydate"]})
    assert "(field: expirydate)" in words


@pytest.mark.parametrize(
    "enrolled, advice",
    [("Y", "send the customer to the issuer's ACS"), ("N", "not enrolled"), ("U", "enrolment is unknown")],
)
def test_threedquery_words_follow_interface_3_3(enrolled, advice):
    words = in_words({"requesttypedescription": "THREEDQUERY", "errorcode": "0", "enrolled": enrolled})
    assert advice in words


@pytest.mark.parametrize(
    "extra,words",
    [
        ({"acsurl": "https://acs.example/v2"}, "the issuer wants to ask the cardholder (a challenge)"),
        ({}, "frictionless, decided without a question"),
    ],
)
def test_an_emv_3ds_threedquery_says_frictionless_or_challenge_not_redirect(extra, words):
    record = {
        "requesttypedescription": "THREEDQUERY",
        "errorcode": "0",
        "enrolled": "Y",
        "threedversion": "2.2.0",
    }
    said = in_words({**record, **extra, "transactionreference": "1-9-3"})
    assert said.startswith("EMV 3-D Secure 2.2.0 (transaction 1-9-3): ") and words in said
    assert "send the customer to the issuer's ACS" not in said  # v1's words


def test_a_lookup_says_the_version_and_the_method():
    lookup = {"requesttypedescription": "THREEDLOOKUP", "errorcode": "0", "threedversion": "2.1.0"}
    assert in_words(lookup) == "Looked up: the issuer runs EMV 3-D Secure 2.1.0. Then send the THREEDQUERY."
    with_method = in_words({**lookup, "threedmethodurl": "https://acs.example/method"})
    assert "First load its 3DS method page in a hidden frame." in with_method
    assert "does not run EMV 3-D Secure" in in_words({**lookup, "threedversion": None})
