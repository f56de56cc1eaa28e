"""Errors as the real service gives them, over real HTTP; nothing is kept for a rejected request."""

from __future__ import annotations

import json
import logging

import pytest

from support.sandbox import SITE, all_rows, card_auth, query_request, store_request


def post_raw(gateway, body: bytes, **headers: str):
    return gateway.http.post("/json/", content=body, headers={"content-type": "application/json", **headers})


def test_30000_names_every_invalid_field(gateway, db_path):
    before = all_rows(db_path)
    record = gateway.one(card_auth(pan="4111111111111112", expirydate="13/2030", currencyiso3a="gbp",
                                   baseamount="0", securitycode="12a", billingemail="nobody"))
    assert (record["requesttypedescription"], record["errorcode"], record["errormessage"]) == (
        "AUTH", "30000", "Invalid field")
    assert sorted(record["errordata"]) == sorted(["pan", "expirydate", "currencyiso3a", "baseamount",
                                                  "securitycode", "billingemail"])
    assert "transactionreference" not in record
    assert "4111111111111112" not in json.dumps(record)
    assert all_rows(db_path) == before


def test_30000_names_every_missing_field(gateway):
    record = gateway.one({"requesttypedescriptions": ["AUTH"], "sitereference": SITE})
    assert sorted(record["errordata"]) == sorted(["accounttypedescription", "currencyiso3a", "baseamount",
                                                  "pan", "expirydate"])


@pytest.mark.parametrize("types, errordata", [
    (["REFUND"], ["REFUND"]), (["AUTH", "FOO"], ["AUTH", "FOO"]), ([], []), ("AUTH", ["AUTH"]),
    (["SUBSCRIPTION"], ["SUBSCRIPTION"]),
])
def test_60018_unknown_request_types_is_an_error_record(gateway, db_path, types, errordata):
    before = all_rows(db_path)
    record = gateway.one({**card_auth(), "requesttypedescriptions": types})
    assert record == {"requesttypedescription": "ERROR", "errorcode": "60018",
                      "errormessage": "Invalid requesttype", "errordata": errordata}
    assert all_rows(db_path) == before


def test_malformed_json_is_answered_with_json(gateway, db_path):
    before = all_rows(db_path)
    response = post_raw(gateway, b'{"request": [{"pan": "4111111111111111", ')
    assert response.status_code == 200
    answer = response.json()
    (record,) = answer["response"]
    assert (record["requesttypedescription"], record["errorcode"], record["errormessage"]) == (
        "ERROR", "10205", "Malformed JSON")
    assert record["errordata"] and "4111111111111111" not in response.text
    assert answer["version"] == "1.00" and answer["secrand"] and answer["requestreference"].startswith("W")
    assert all_rows(db_path) == before


@pytest.mark.parametrize("body", [b"\xff\xfe not utf-8", b"", b"[1, 2]", b'"AUTH"', b'{"request": []}',
                                  b'{"request": {"requesttypedescriptions": ["AUTH"]}}', b'{"request": [42]}'])
def test_unusable_envelopes_are_error_records(gateway, db_path, body):
    response = post_raw(gateway, body)
    assert response.status_code == 200
    (record,) = response.json()["response"]
    assert record["requesttypedescription"] == "ERROR" and record["errorcode"] in ("10205", "30000")
    assert "transactionreference" not in record


def test_version_must_be_1_00(gateway):
    answer = gateway.envelope(card_auth(), version="2.00")
    assert answer["response"] == [{"requesttypedescription": "ERROR", "errorcode": "30000",
                                   "errormessage": "Invalid field", "errordata": ["version"]}]


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
    names = {"orderreference": "注文-🧾-ß-é-\u200d-𝔘𝔫𝔦𝔠𝔬𝔡𝔢", "billingfirstname": "李 小龍 🐉",
             "billinglastname": "Ñúñez-Ólafsdóttir ❤️", "billingtown": "Москва"}
    stored = gateway.one(store_request(**names))
    assert stored["errorcode"] == "0" and stored["orderreference"] == names["orderreference"]
    auth = gateway.one(card_auth(**names))
    assert auth["orderreference"] == names["orderreference"]
    found = gateway.query(orderreference=names["orderreference"])
    assert {r["transactionreference"] for r in found} == {stored["transactionreference"],
                                                          auth["transactionreference"]}
    for record in found:
        assert {k: record[k] for k in names} == names


def test_control_characters_are_refused_naming_the_field(gateway):
    record = gateway.one(card_auth(orderreference="bell\x07"))
    assert (record["errorcode"], record["errordata"]) == ("30000", ["orderreference"])


def test_objects_of_one_envelope_are_answered_in_order_and_independently(gateway, db_path):
    before = all_rows(db_path)["transactions"]
    records = gateway.records(card_auth(orderreference="first"), card_auth(pan="1234"),
                              store_request(orderreference="third"), {"requesttypedescriptions": ["NOPE"]},
                              query_request(orderreference="first"))
    assert [(r["requesttypedescription"], r["errorcode"]) for r in records] == [
        ("AUTH", "0"), ("AUTH", "30000"), ("STORE", "0"), ("ERROR", "60018"), ("TRANSACTIONQUERY", "0")]
    assert records[4]["records"][0]["transactionreference"] == records[0]["transactionreference"]
    assert all_rows(db_path)["transactions"] == before + 2


def test_a_sandbox_bug_is_99999_keeps_nothing_and_logs_no_card_data(gateway, sandbox, db_path, monkeypatch, caplog):
    def broken(ctx, request):
        ctx.store.add_card(ctx.conn, request["pan"], request["expirydate"], "MASTERCARD")
        raise RuntimeError(f"boom with {request['pan']} and {request.get('securitycode')}")

    monkeypatch.setitem(sandbox.sandbox.gateway.tables.request_handlers, "STORE", broken)
    before = all_rows(db_path)
    with caplog.at_level(logging.DEBUG):
        record = gateway.one(store_request(pan="5100000000000008"))
    assert (record["requesttypedescription"], record["errorcode"], record["errormessage"]) == (
        "STORE", "99999", "Unknown error")
    assert all_rows(db_path) == before
    assert "RuntimeError" in caplog.text and "5100000000000008" not in caplog.text


@pytest.mark.parametrize("request_object, errordata", [
    ({"sitereference": SITE}, ["requesttypedescriptions"]),
    ({"requesttypedescription": "AUTH"}, ["requesttypedescriptions"]),
    ({"requesttypedescriptions": [1, None]}, ["1", "null"]),
])
def test_60018_names_what_was_sent_or_the_missing_field(gateway, request_object, errordata):
    assert gateway.one(request_object)["errordata"] == errordata
