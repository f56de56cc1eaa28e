"""A record shown as a short card: its line in plain words, the fields that matter, all behind a disclosure."""

from __future__ import annotations

from gwkit.response import KEY_FIELDS, Record, records_html

DECLINED = {
    "requesttypedescription": "AUTH",
    "errorcode": "70000",
    "errormessage": "Decline",
    "settlestatus": "3",
    "settleduedate": "2027-01-02",
    "authcode": "DECLINED",
    "baseamount": "70000",
    "currencyiso3a": "GBP",
    "maskedpan": "411111######1111",
    "issuer": "SecureTrading Test Issuer1",
    "errordata": [],
}


def test_a_decline_shows_the_fields_that_matter_in_words_and_no_settle_date():
    shown = Record(DECLINED)._repr_html_()
    card, _, every = shown.partition("<details")
    assert "Decline 70000: The bank declined the payment" in card
    assert "70000 · Decline" in card and "3 · cancelled" in card and "£700.00 · 70000 in base units" in card
    assert "settleduedate" not in card and "DECLINED" not in card  # no settle date on a decline
    assert "issuer" not in card and "issuer" in every  # the rest is one click away
    assert "all 11 fields" in every and "2027-01-02" in every  # the record keeps all its fields


def test_only_shows_just_the_fields_asked_for_in_that_order():
    shown = Record(DECLINED).only("settlestatus", "errorcode")._repr_html_()
    assert shown.index("3 · cancelled") < shown.index("70000 · Decline") and "<details" not in shown


def test_lists_read_as_text_never_as_a_python_repr():
    shown = records_html([{"errorcode": "30000", "errordata": ["pan", "expirydate"]}], fields=["errordata"])
    assert "pan, expirydate" in shown and "[" not in shown.split("</div>", 1)[1]
    assert KEY_FIELDS[0] == "requesttypedescription"
