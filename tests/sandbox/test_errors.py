"""Errors as the real service gives them, over real HTTP; nothing is kept for a rejected request."""

from __future__ import annotations

import json
import logging
import re

import httpx
import pytest

from gwkit import cli
from gwkit.sandbox.gateway.refusal import unknown_error
from support.sandbox import CLOCK, SITE, all_rows, card_auth, kept_rows, query_request, store_request

pytestmark = pytest.mark.both_stores  # each test on SQLite and on PostgreSQL


def post_raw(gateway, body: bytes, **headers: str):
    return gateway.http.post("/json/", content=body, headers={"content-type": "application/json", **headers})


def test_30000_names_every_invalid_field(gateway, db_path):
    before = kept_rows(db_path)
    record = gateway.one(
        card_auth(
            pan="4111111111111112",
            expirydate="13/2030",
            currencyiso3a="gbp",
            baseamount="0",
            securitycode="12a",
            billingemail="nobody",
        )
    )
    # one ERROR record for the refused object, with its time (as the real service answers)
    assert (record["requesttypedescription"], record["errorcode"], record["errormessage"]) == (
        "ERROR",
        "30000",
        "Invalid field",
    )
    assert record["transactionstartedtimestamp"] == CLOCK.strftime("%Y-%m-%d %H:%M:%S")
    assert sorted(record["errordata"]) == sorted(
        ["pan", "expirydate", "currencyiso3a", "baseamount", "securitycode", "billingemail"]
    )
    assert record["transactionreference"]  # one used up, nothing kept (as the gateway's field errors)
    assert "4111111111111112" not in json.dumps(record)
    assert kept_rows(db_path) == before


def test_30000_names_every_missing_field(gateway):
    record = gateway.one({"requesttypedescriptions": ["AUTH"], "sitereference": SITE})
    assert sorted(record["errordata"]) == sorted(
        ["accounttypedescription", "currencyiso3a", "baseamount", "pan", "expirydate"]
    )


@pytest.mark.parametrize(
    "types, errordata",
    [
        (["PAYOUT"], ["PAYOUT"]),
        (["AUTH", "FOO"], ["AUTH", "FOO"]),
        ([], []),
        ("AUTH", ["AUTH"]),
    ],
)
def test_60018_unknown_request_types_is_an_error_record(gateway, db_path, types, errordata):
    before = all_rows(db_path)
    record = gateway.one({**card_auth(), "requesttypedescriptions": types})
    assert record == {
        "requesttypedescription": "ERROR",
        "transactionstartedtimestamp": CLOCK.strftime("%Y-%m-%d %H:%M:%S"),
        "errorcode": "60018",
        "errormessage": "Invalid requesttype",
        "errordata": errordata,
    }
    assert all_rows(db_path) == before


def test_malformed_json_is_answered_with_json(gateway, db_path):
    before = all_rows(db_path)
    response = post_raw(gateway, b'{"request": [{"pan": "4111111111111111", ')
    assert response.status_code == 200
    answer = response.json()
    (record,) = answer["response"]
    assert (record["requesttypedescription"], record["errorcode"], record["errormessage"]) == (
        "ERROR",
        "10205",
        "Malformed JSON",
    )
    assert record["errordata"] and "4111111111111111" not in response.text
    assert answer["version"] == "1.00" and answer["secrand"] and answer["requestreference"].startswith("W")
    assert all_rows(db_path) == before


@pytest.mark.parametrize(
    "body",
    [
        b"\xff\xfe not utf-8",
        b"",
        b"[1, 2]",
        b'"AUTH"',
        b'{"request": []}',
        b'{"request": {"requesttypedescriptions": ["AUTH"]}}',
        b'{"request": [42]}',
    ],
)
def test_unusable_envelopes_are_error_records(gateway, db_path, body):
    response = post_raw(gateway, body)
    assert response.status_code == 200
    (record,) = response.json()["response"]
    assert record["requesttypedescription"] == "ERROR" and record["errorcode"] in ("10205", "30000")
    assert "transactionreference" not in record


def test_version_must_be_1_00(gateway):
    answer = gateway.envelope(card_auth(), version="2.00")
    assert answer["response"] == [
        {
            "requesttypedescription": "ERROR",
            "transactionstartedtimestamp": CLOCK.strftime("%Y-%m-%d %H:%M:%S"),
            "errorcode": "30000",
            "errormessage": "Invalid field",
            "errordata": ["version"],
        }
    ]


def test_oversized_bodies_are_refused_with_413_json(gateway, db_path, sandbox):
    before = all_rows(db_path)
    huge = json.dumps({"request": [card_auth(orderreference="x" * (sandbox.sandbox.max_body_bytes + 1))]})
    response = post_raw(gateway, huge.encode())
    assert response.status_code == 413
    assert response.json()["error"] == "request body too large"
    assert all_rows(db_path) == before


def test_oversized_chunked_bodies_are_refused_too(gateway, db_path, sandbox):
    limit = sandbox.sandbox.max_body_bytes

    def chunks():
        yield b'{"request": [{"orderreference": "'
        for _ in range(limit // 65536 + 2):
            yield b"y" * 65536
        yield b'"}]}'

    response = gateway.http.post("/json/", content=chunks(), headers={"content-type": "application/json"})
    assert response.status_code == 413 and response.json()["limit_bytes"] == limit


def test_any_unicode_round_trips_through_query(gateway):
    names = {
        "orderreference": "注文-🧾-ß-é-\u200d-𝔘𝔫𝔦𝔠𝔬𝔡𝔢",
        "billingfirstname": "李 小龍 🐉",
        "billinglastname": "Ñúñez-Ólafsdóttir ❤️",
        "billingtown": "Москва",
    }
    stored = gateway.one(store_request(**names))
    assert stored["errorcode"] == "0" and stored["orderreference"] == names["orderreference"]
    auth = gateway.one(card_auth(**names))
    assert auth["orderreference"] == names["orderreference"]
    found = gateway.query(orderreference=names["orderreference"])
    assert {r["transactionreference"] for r in found} == {
        stored["transactionreference"],
        auth["transactionreference"],
    }
    for record in found:
        assert {k: record[k] for k in names} == names


def test_control_characters_are_refused_naming_the_field(gateway):
    record = gateway.one(card_auth(orderreference="bell\x07"))
    assert (record["errorcode"], record["errordata"]) == ("30000", ["orderreference"])


def test_objects_of_one_envelope_are_answered_in_order_and_independently(gateway, db_path):
    before = all_rows(db_path)["transactions"]
    records = gateway.records(
        card_auth(orderreference="first"),
        card_auth(pan="1234"),
        store_request(orderreference="third"),
        {"requesttypedescriptions": ["NOPE"]},
        query_request(orderreference="first"),
    )
    assert [(r["requesttypedescription"], r["errorcode"]) for r in records] == [
        ("AUTH", "0"),
        ("ERROR", "30000"),
        ("STORE", "0"),
        ("ERROR", "60018"),
        ("TRANSACTIONQUERY", "0"),
    ]
    assert records[4]["records"][0]["transactionreference"] == records[0]["transactionreference"]
    assert all_rows(db_path)["transactions"] == before + 2


def test_a_sandbox_bug_is_99999_keeps_nothing_and_logs_no_card_data(
    gateway, sandbox, db_path, monkeypatch, caplog
):
    def broken(ctx, request):
        ctx.store.add_card(ctx.conn, request["pan"], request["expirydate"], "MASTERCARD")
        raise RuntimeError(f"boom with {request['pan']} and {request.get('securitycode')}")

    monkeypatch.setitem(sandbox.sandbox.gateway.tables.request_handlers, "STORE", broken)
    before = all_rows(db_path)
    with caplog.at_level(logging.DEBUG):
        record = gateway.one(store_request(pan="5100000000000008"))
    assert (record["requesttypedescription"], record["errorcode"], record["errormessage"]) == (
        "STORE",
        "99999",
        "Unknown error",
    )
    assert all_rows(db_path) == before
    assert "RuntimeError" in caplog.text and "5100000000000008" not in caplog.text


@pytest.mark.parametrize(
    "request_object, errordata",
    [
        ({}, ["None"]),  # as the real service answers an empty request object
        ({"sitereference": SITE}, ["None"]),
        ({"requesttypedescription": "FOO"}, ["FOO"]),
        ({"requesttypedescription": ["AUTH"]}, ["None"]),  # the singular form is one string
        ({"requesttypedescriptions": [1, None]}, ["1", "null"]),
    ],
)
def test_60018_names_what_was_sent_or_the_missing_field(gateway, request_object, errordata):
    assert gateway.one(request_object)["errordata"] == errordata


# Bounded input: each limit answers at once with an error naming it, keeps nothing and leaves the
# keep-alive connection usable (the next request on the same client succeeds).


def assert_still_serving(gateway, response) -> None:
    """The next request goes over the same keep-alive connection, and is answered."""
    after = gateway.http.post("/json/", json={"request": [query_request(orderreference="nothing")]})
    assert after.json()["response"][0]["errorcode"] == "0"
    assert client_address(after) == client_address(response)


def client_address(response) -> tuple:
    return response.extensions["network_stream"].get_extra_info("client_addr")


def envelope_bytes(*objects, **extra) -> bytes:
    return json.dumps(
        {"alias": "gwkit_sandbox", "version": "1.00", "request": list(objects), **extra}
    ).encode()


@pytest.mark.parametrize(
    "body, where, what",
    [
        (b"[" * 100_000 + b"]" * 100_000, "body", "nested deeper than 32"),
        (
            envelope_bytes(
                card_auth(
                    orderreference=[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[["deep"]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]
                )
            ),
            "request.0.orderreference",
            "nested deeper than 32",
        ),
        (
            envelope_bytes(card_auth(baseamount="N")).replace(b'"N"', b"9" * 5000),
            "request.0.baseamount",
            "longer than 100 characters",
        ),
        (
            envelope_bytes(card_auth(baseamount="N")).replace(b'"N"', b"1e400"),
            "request.0.baseamount",
            "number out of range",
        ),
        (
            envelope_bytes(card_auth(orderreference="x" * 70_000)),
            "request.0.orderreference",
            "string longer than 65536 characters",
        ),
    ],
    ids=["nesting-100000", "nesting-33", "integer-5000-digits", "float-overflow", "string-70000"],
)
def test_a_body_over_a_limit_is_30000_naming_where_and_the_limit(gateway, db_path, body, where, what):
    before = all_rows(db_path)
    response = post_raw(gateway, body)
    assert response.status_code == 200
    (record,) = response.json()["response"]
    assert (record["requesttypedescription"], record["errorcode"], record["errormessage"]) == (
        "ERROR",
        "30000",
        "Invalid field",
    )
    assert record["errordata"][0].startswith(where) and what in record["errordata"][1]
    assert all_rows(db_path) == before
    assert_still_serving(gateway, response)


@pytest.mark.parametrize("body", [b'{"request": [NaN]}', b'{"request": [Infinity]}', b"\xc3\x28 not utf-8"])
def test_not_json_is_10205_and_the_connection_stays_usable(gateway, db_path, body):
    before = all_rows(db_path)
    response = post_raw(gateway, body)
    (record,) = response.json()["response"]
    assert (record["errorcode"], record["errormessage"]) == ("10205", "Malformed JSON") and record[
        "errordata"
    ]
    assert all_rows(db_path) == before
    assert_still_serving(gateway, response)


def test_at_most_100_request_objects_in_one_envelope(gateway, db_path):
    before = all_rows(db_path)
    (record,) = post_raw(gateway, envelope_bytes(*[card_auth()] * 101)).json()["response"]
    assert (record["errorcode"], record["errordata"][0]) == ("30000", "request")
    assert "at most 100 request objects" in record["errordata"][1]
    assert all_rows(db_path) == before
    answered = post_raw(gateway, envelope_bytes(*[query_request(orderreference="x")] * 100)).json()[
        "response"
    ]
    assert [r["errorcode"] for r in answered] == ["0"] * 100


@pytest.mark.parametrize("site", [["test_gwkit12345"], {"site": "test_gwkit12345"}, 12345, None])
def test_anonymous_tokenisation_naming_no_single_site_is_401(sandbox, db_path, site):
    before = all_rows(db_path)
    body = json.dumps(
        {
            "request": [
                {
                    "requesttypedescriptions": ["CACHETOKENISE"],
                    "sitereference": site,
                    "pan": "4111111111111111",
                    "expirydate": "12/2030",
                }
            ]
        }
    )
    response = httpx.post(
        f"{sandbox.base_url}/json/", content=body, headers={"content-type": "application/json"}
    )
    assert response.status_code == 401 and response.json()["error"] == "unauthorised"
    assert all_rows(db_path) == before


@pytest.mark.parametrize(
    "authorization", [b"Basic \xe9\xe9\xe9", b"Basic " + "é:ü".encode("latin-1"), b"\xff"]
)
def test_a_non_ascii_authorization_header_is_401(sandbox, authorization):
    with httpx.Client(base_url=sandbox.base_url) as client:
        for path in ("/json/", "/_sandbox/clock"):
            response = client.request(
                "POST" if path == "/json/" else "GET",
                path,
                content=envelope_bytes(card_auth()),
                headers={"authorization": authorization, "content-type": "application/json"},
            )
            assert response.status_code == 401 and response.json()["error"] == "unauthorised"
        assert client.get("/_sandbox/health").status_code == 200  # the same connection still serves


@pytest.mark.parametrize(
    "body, limit",
    [
        (b"[" * 100_000, "nesting depth"),
        (b'{"drop_next": ' + b"7" * 5000 + b"}", "number length"),
        (b'{"sitereference": "' + b"s" * 70_000 + b'"}', "string length"),
        (b"\xff\xfe", None),
        (b"{bad", None),
    ],
)
def test_the_control_api_answers_a_bad_body_with_400_naming_the_limit(gateway, db_path, body, limit):
    before = all_rows(db_path)
    for path in ("/_sandbox/faults", "/_sandbox/faults/clear", "/_sandbox/clock/advance", "/_sandbox/settle"):
        response = gateway.http.post(path, content=body, headers={"content-type": "application/json"})
        assert response.status_code == 400, (path, response.text)
        answer = response.json()
        assert answer["error"] == "bad request" and answer["detail"]
        assert answer.get("limit") == limit
    assert all_rows(db_path) == before
    assert gateway.http.get("/_sandbox/faults").status_code == 200


def test_a_99999_names_a_reference_that_the_log_has_with_the_traceback(
    gateway, sandbox, db_path, monkeypatch, caplog
):
    def broken(ctx, request):
        raise KeyError(request["pan"])

    monkeypatch.setitem(sandbox.sandbox.gateway.tables.request_handlers, "STORE", broken)
    with caplog.at_level(logging.ERROR, logger="gwkit.sandbox"):
        record = gateway.one(store_request(pan="5100000000000008"))
    assert record["errorcode"] == "99999"
    (data,) = record["errordata"]
    reference = re.fullmatch(r"reference (E-[A-Z2-9]{8}) \(the sandbox's log has the details\)", data).group(
        1
    )
    assert "KeyError" not in data
    (logged,) = [r for r in caplog.records if reference in r.getMessage()]
    assert "KeyError" in logged.getMessage() and "broken" in logged.getMessage()  # the class and the frame
    assert "5100000000000008" not in caplog.text
    assert all_rows(db_path)["transactions"] == 0


def test_gwkit_sandbox_logs_internal_errors_to_stderr(capsys):
    logger = logging.getLogger("gwkit.sandbox")
    handlers, level = list(logger.handlers), logger.level
    try:
        cli._log_to_stderr()
        pan = "4111111111111111"
        try:
            raise ValueError(pan)
        except ValueError as exc:
            fault = unknown_error(exc)
    finally:
        logger.handlers[:], logger.level = handlers, level
    reference = fault.errordata[0].split()[1]
    err = capsys.readouterr().err
    assert f"internal error {reference}: ValueError" in err and "4111111111111111" not in err


@pytest.mark.parametrize(
    "types",
    [
        ["4111111111111111"],
        ["4111111111111112"],
        "5100000000000008",
        [{"pan": "4111111111111111"}],
        [4111111111111111],
    ],
)
def test_60018_never_echoes_a_card_number(gateway, types):
    response = post_raw(gateway, envelope_bytes({"requesttypedescriptions": types, "sitereference": SITE}))
    (record,) = response.json()["response"]
    assert record["errorcode"] == "60018"
    assert re.search(r"\d{12}", response.text) is None
    assert any("######" in item for item in record["errordata"])


def test_60018_cuts_a_long_request_type_short(gateway):
    (record,) = post_raw(gateway, envelope_bytes({"requesttypedescriptions": ["A" * 5000]})).json()[
        "response"
    ]
    assert record["errorcode"] == "60018" and len(record["errordata"][0]) <= 60


@pytest.mark.parametrize(
    "field, value",
    [
        ("billingemail", "a@b.example\r\nBcc: x@y.example"),
        ("billingemail", "a@b.example\x00"),
        ("termurl", "https://shop.example/back\r\nSet-Cookie: x=1"),
        ("termurl", "https://shop.example/\x00"),
        ("billingfirstname", "Ann\nMarie"),
        ("orderreference", "o\x85rder"),
        ("billingtown", "\ud800"),
    ],
)
def test_control_characters_are_30000_naming_the_field_in_every_string_field(gateway, db_path, field, value):
    before = kept_rows(db_path)
    threedquery = card_auth(requesttypedescriptions=["THREEDQUERY"], termurl="https://shop.example/back")
    (record,) = post_raw(gateway, envelope_bytes({**threedquery, field: value})).json()["response"]
    assert (record["errorcode"], record["errordata"]) == ("30000", [field])
    assert kept_rows(db_path) == before


def test_a_tab_in_a_name_is_accepted_as_real_clients_send_it(gateway):
    assert gateway.one(card_auth(billingfirstname="Ann\tMarie"))["errorcode"] == "0"


def test_a_sandbox_bug_in_the_control_api_is_a_500_with_a_logged_reference_and_the_connection_stays(
    gateway, sandbox, monkeypatch, caplog
):
    pan = "4111111111111111"

    def broken(*args, **kwargs):
        raise RuntimeError(f"settle broke on {pan}")

    monkeypatch.setattr(sandbox.sandbox.gateway, "settle", broken)
    with caplog.at_level(logging.ERROR, logger="gwkit.sandbox"):
        response = gateway.http.post("/_sandbox/settle", json={})
    assert response.status_code == 500
    answer = response.json()
    assert answer["error"] == "internal error" and re.fullmatch(r"E-[A-Z2-9]{8}", answer["reference"])
    assert "RuntimeError" not in response.text
    (logged,) = [r for r in caplog.records if answer["reference"] in r.getMessage()]
    assert "RuntimeError" in logged.getMessage() and "4111111111111111" not in caplog.text
    after = gateway.http.get("/_sandbox/clock")
    assert after.status_code == 200 and client_address(after) == client_address(response)
