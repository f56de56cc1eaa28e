"""Masking: the maskedpan format, redacted secrets, and every repr and message gwkit shows."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

import gwkit
from gwkit import Exchange, Record, Response, mask_data, mask_pan
from gwkit.interface import mask_text, mask_value
from gwkit.response import MaskedDict, excerpt

PAN = "4111111111111111"
AMEX = "378282246310005"


@pytest.mark.parametrize(
    "pan,masked",
    [
        (PAN, "411111######1111"),
        (AMEX, "378282######0005"),
        ("4111111111111111111", "411111######1111"),
        ("411111111111", "411111######1111"),
        ("12345", "#####"),
        ("", ""),
    ],
)
def test_mask_pan_keeps_the_first_six_and_last_four(pan, masked):
    assert mask_pan(pan) == masked


@pytest.mark.parametrize(
    "name",
    [
        "securitycode",
        "pares",
        "md",
        "cachetoken",
        "password",
        "authorization",
        "PaRes",
        "MD",
        # EMV 3-D Secure (v2): redacted wherever pares is (issue 41)
        "threedpayload",
        "threedresponse",
        "cres",
        "creq",
        "threeDSSessionData",
    ],
)
def test_secrets_are_redacted_entirely(name):
    assert mask_value(name, "secret-value-123") == "[redacted]"


def test_free_text_masks_card_numbers_that_pass_luhn_only():
    assert mask_text(f"card {PAN} declined") == "card 411111######1111 declined"
    assert mask_text("order 1234567890123 ref") == "order 1234567890123 ref"  # not a card number
    assert mask_text(f"x{AMEX}y") == "x378282######0005y"
    assert mask_text("short 4111") == "short 4111"


def test_mask_data_is_a_deep_masked_copy():
    envelope = {
        "alias": "u",
        "request": [
            {
                "pan": PAN,
                "securitycode": "123",
                "orderreference": f"o {PAN}",
                "filter": {"pan": [{"value": PAN}]},
                "baseamount": "1050",
            }
        ],
    }
    masked = mask_data(envelope)
    request = masked["request"][0]
    assert request["pan"] == "411111######1111" and request["securitycode"] == "[redacted]"
    assert request["orderreference"] == "o 411111######1111" and request["baseamount"] == "1050"
    assert request["filter"]["pan"][0]["value"] == "411111######1111"
    assert envelope["request"][0]["pan"] == PAN  # the original is untouched


def test_masking_twice_changes_nothing():
    once = mask_data({"pan": PAN, "md": "x", "orderreference": PAN})
    assert mask_data(once) == once


def test_numbers_that_are_card_numbers_are_masked_too():
    assert mask_value("orderreference", int(PAN)) == "411111######1111"
    assert mask_value("baseamount", 1050) == 1050


def test_masked_dict_is_a_dict_with_a_masked_repr():
    data = MaskedDict({"pan": PAN, "cachetoken": "tok-123"})
    assert data["pan"] == PAN and isinstance(data, dict) and data == {"pan": PAN, "cachetoken": "tok-123"}
    for text in (repr(data), str(data), f"{data}"):
        assert PAN not in text and "tok-123" not in text and "411111######1111" in text


class Printer:
    def __init__(self):
        self.out = []

    def text(self, value):
        self.out.append(value)


@pytest.mark.parametrize(
    "make",
    [
        lambda: MaskedDict({"pan": PAN}),
        lambda: Record({"errorcode": "0", "pan": PAN}),
        lambda: Response(
            {"response": [{"errorcode": "0", "cachetoken": "tok-123"}], "note": PAN},
            request={"request": [{"pan": PAN}]},
        ),
    ],
)
def test_notebook_display_is_masked(make):
    printer = Printer()
    make()._repr_pretty_(printer, False)
    shown = "".join(printer.out)
    assert PAN not in shown and "tok-123" not in shown


def test_record_and_response_reprs():
    record = Record(
        {
            "requesttypedescription": "CACHETOKENISE",
            "errorcode": "0",
            "cachetoken": "tok-123",
            "maskedpan": "411111######1111",
            "note": f"card {PAN}",
        }
    )
    assert "tok-123" not in repr(record) and PAN not in repr(record) and "CACHETOKENISE" in repr(record)
    response = Response({"requestreference": "A1", "response": [dict(record)]})
    assert "tok-123" not in repr(response) and PAN not in repr(response)
    assert repr(response).startswith(
        "Response(requestreference='A1', records=[Record({'requesttypedescription': "
        "'CACHETOKENISE', 'errorcode': '0', 'cachetoken': '[redacted]'"
    )
    broken = Response({"response": [{"requesttypedescription": "AUTH"}]})
    assert "AUTH" in repr(broken)  # a repr never raises, even for a record without errorcode


def test_client_repr_hides_the_password():
    client = gwkit.Client("http://h", "user", "pa55word")
    assert "pa55word" not in repr(client) and "[redacted]" in repr(client)
    client.close()


def test_exchange_masks_its_request_response_and_error():
    exchange = Exchange(
        datetime(2026, 1, 1, tzinfo=UTC),
        0.5,
        "http://h",
        "u",
        request={"request": [{"pan": PAN, "securitycode": "123", "pares": "P", "md": "M"}]},
        response={"response": [{"cachetoken": "tok-123", "maskedpan": "411111######1111"}]},
        error=f"ResponseFormatError: got {PAN}",
    )
    text = repr(exchange) + str(exchange.as_dict())
    assert PAN not in text and "tok-123" not in text and "'123'" not in text
    assert exchange.request["request"][0] == {
        "pan": "411111######1111",
        "securitycode": "[redacted]",
        "pares": "[redacted]",
        "md": "[redacted]",
    }


def test_errors_show_no_card_data():
    error = gwkit.ResponseFormatError(
        "not JSON", excerpt(f'{{"pan": "{PAN}", "securitycode": "123"}}'.encode())
    )
    assert PAN not in str(error) and '"123"' not in str(error) and "[redacted]" in str(error)
    validation = gwkit.ValidationError(
        gwkit.validate_request({"requesttypedescriptions": ["STORE"], "pan": PAN, "securitycode": "123"}),
        "STORE",
    )
    assert PAN not in str(validation) and "'123'" not in str(validation)


@pytest.mark.parametrize(
    "body,shown",
    [
        (b'{"md": "abc", "pares": "def"', '{"md": "[redacted]", "pares": "[redacted]"'),
        (
            b'{"threedpayload": "eyJt", "threedresponse": "eyJh.e30.", "cres": "x"',
            '{"threedpayload": "[redacted]", "threedresponse": "[redacted]", "cres": "[redacted]"',
        ),
        (b'{"cachetoken": "abc', '{"cachetoken": "[redacted]"'),  # cut off mid-value
        (b"x" * 500, "x" * 197 + "..."),
        (b"\xff\xfe broken utf-8", "\ufffd\ufffd broken utf-8"),
    ],
)
def test_excerpts_are_short_and_masked(body, shown):
    assert excerpt(body) == shown


@pytest.mark.parametrize(
    "written, masked",
    [
        ("5100 0000 0000 0008", "510000######0008"),
        ("4000-0000-0000-0812", "400000######0812"),
        ("4111.1111.1111.1111", "411111######1111"),
        ("3782 822463 10005", "378282######0005"),
        ("card: 4111 1111 1111 1111, exp 12/30", "card: 411111######1111, exp 12/30"),
        ("ref 12 4111 1111 1111 1111", "ref 12 411111######1111"),  # the card inside a longer run
    ],
)
def test_card_numbers_are_masked_in_every_spelling(written, masked):
    assert mask_text(written) == masked
    assert mask_data({"customerreference": written}) == {"customerreference": masked}


@pytest.mark.parametrize(
    "clear",
    [
        "+44 20 7946 0958",
        "0044-20-7946-0958",
        "23-9-1234567",
        "2026-01-15 10:00:00",
        "order 1234 5678 9012 3",
    ],
)
def test_references_phone_numbers_and_dates_stay_clear(clear):
    assert mask_text(clear) == clear


@pytest.mark.parametrize(
    "name",
    ["SecurityCode", "security_code", "Security-Code", "cvv", "CVV2", "CVV-2", "cvc", "cvc2", "cv2", "CSC"],
)
def test_security_codes_are_redacted_under_any_name_a_client_might_use(name):
    assert mask_data({name: "739", "request": [{name: 739}]}) == {
        name: "[redacted]",
        "request": [{name: "[redacted]"}],
    }


def test_a_card_number_as_a_key_is_masked():
    assert mask_data({"4111111111111111": "x"}) == {"411111######1111": "x"}
