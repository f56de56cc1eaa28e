"""A Response shown in a notebook reads as words and a masked table, never as a raw repr."""

from __future__ import annotations

from gwkit.response import Response


def envelope(*records):
    return {"requestreference": "Aabc12345", "version": "1.00", "response": list(records), "secrand": "x"}


def test_a_response_in_a_notebook_leads_with_plain_words():
    response = Response(
        envelope(
            {
                "requesttypedescription": "AUTH",
                "errorcode": "0",
                "baseamount": "1050",
                "currencyiso3a": "GBP",
                "maskedpan": "411111######1111",
                "settlestatus": "0",
                "transactionreference": "1-9-1",
            }
        ),
        elapsed=0.012,
    )
    shown = response._repr_html_()
    assert "Authorised: £10.50 from 411111######1111 (transaction 1-9-1)." in shown
    assert "request Aabc12345, 12 ms" in shown and "#1b7f3b" in shown
    assert "Record(" not in shown and "{'" not in shown


def test_an_error_is_red_and_says_what_to_do_and_card_data_stays_masked():
    response = Response(
        envelope(
            {
                "requesttypedescription": "AUTH",
                "errorcode": "70000",
                "errormessage": "Decline",
                "pan": "4111111111111111",
                "securitycode": "123",
            }
        )
    )
    shown = response.record._repr_html_()
    assert "#b00020" in shown and "What to do: Ask the customer for another card" in shown
    assert "4111111111111111" not in shown and ">123<" not in shown


def test_a_few_fields_of_a_record_keep_its_plain_words_and_their_order():
    record = Response(
        envelope(
            {
                "requesttypedescription": "AUTH",
                "errorcode": "0",
                "baseamount": "1050",
                "currencyiso3a": "GBP",
                "maskedpan": "411111######1111",
                "settlestatus": "0",
                "transactionreference": "1-9-1",
                "authcode": "TEST12",
            }
        )
    ).record
    excerpt = record.only("settlestatus", "errorcode", "eci", "authcode")

    assert list(excerpt) == ["settlestatus", "errorcode", "authcode"] and excerpt["authcode"] == "TEST12"
    assert dict(excerpt) == {"settlestatus": "0", "errorcode": "0", "authcode": "TEST12"}
    shown = excerpt._repr_html_()
    assert "Authorised: £10.50 from 411111######1111" in shown
    assert shown.index("settlestatus") < shown.index("errorcode") < shown.index("authcode")
    assert "baseamount</code>" not in shown and "{'" not in shown
    assert repr(excerpt) == "Excerpt({'settlestatus': '0', 'errorcode': '0', 'authcode': 'TEST12'})"


def test_an_excerpt_never_shows_a_card_number_in_clear():
    record = Response(
        envelope({"requesttypedescription": "AUTH", "errorcode": "70000", "pan": "4111111111111111"})
    ).record
    excerpt = record.only("errorcode", "pan")

    assert "4111111111111111" not in excerpt._repr_html_() and "4111111111111111" not in repr(excerpt)
