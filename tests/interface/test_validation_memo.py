"""Validation remembers values found valid (a client sends the same site and currency again and
again), but never card data, and never a verdict that depends on the rest of the request."""

from __future__ import annotations

from gwkit.interface import validation
from gwkit.interface.validation import validate_request

VISA, AMEX = "4111111111111111", "378282246310005"


def auth(**fields: str) -> dict:
    return {
        "requesttypedescriptions": ["AUTH"],
        "sitereference": "test_site12345",
        "accounttypedescription": "ECOM",
        "currencyiso3a": "GBP",
        "baseamount": "1050",
        "pan": VISA,
        "expirydate": "12/2030",
        "securitycode": "123",
        **fields,
    }


def test_a_remembered_value_is_judged_the_same_and_card_data_is_never_remembered():
    assert validate_request(auth()) == []
    assert validate_request(auth()) == []  # the second time from memory
    remembered = {value for _, value, _ in validation._KNOWN_VALID}
    assert {"test_site12345", "GBP", "1050"} <= remembered
    assert not {VISA, "123", AMEX} & remembered


def test_a_verdict_that_depends_on_other_fields_is_not_taken_from_memory():
    assert validate_request(auth(pan=VISA, securitycode="123")) == []
    problems = validate_request(auth(pan=AMEX, securitycode="123"))  # Amex needs 4 digits
    assert [p.field for p in problems] == ["securitycode"]


def test_an_invalid_value_is_refused_every_time():
    for _ in range(2):
        assert [p.field for p in validate_request(auth(currencyiso3a="gbp"))] == ["currencyiso3a"]


def test_a_request_type_replaced_in_the_tables_is_validated_by_its_new_entry(monkeypatch):
    from dataclasses import replace

    from gwkit.interface import types as t
    from gwkit.interface.fields import FIELDS, Field
    from gwkit.interface.requests import REQUEST_TYPES

    assert validate_request(auth()) == []  # the entries of ["AUTH"] are now remembered
    monkeypatch.setitem(FIELDS, "giftmessage", Field("giftmessage", t.ALPHANUMERIC, 30))
    entry = REQUEST_TYPES["AUTH"]
    monkeypatch.setitem(
        REQUEST_TYPES,
        "AUTH",
        replace(
            entry, variants=tuple(replace(v, optional=v.optional + ("giftmessage",)) for v in entry.variants)
        ),
    )
    assert validate_request(auth(giftmessage="Happy birthday")) == []
    assert [p.field for p in validate_request(auth(giftmessage="x" * 31))] == ["giftmessage"]
