"""The request envelope: alias, version 1.00, a list of request objects, strings only, references."""

from __future__ import annotations

import json
import re
from decimal import Decimal

import httpx
import pytest

import gwkit
from gwkit import ValidationError
from gwkit.envelope import build_envelope, build_request, new_request_reference, to_wire

REFERENCE = re.compile(r"A[0-9a-z]{8}")


def leaves(value):
    if isinstance(value, dict):
        for item in value.values():
            yield from leaves(item)
    elif isinstance(value, list):
        for item in value:
            yield from leaves(item)
    else:
        yield value


def test_envelope_shape():
    envelope = build_envelope("webservices@example.com", [build_request("AUTH", baseamount=1050)])
    assert list(envelope) == ["alias", "version", "request"]
    assert envelope["alias"] == "webservices@example.com"
    assert envelope["version"] == "1.00"
    [request] = envelope["request"]
    assert request["requesttypedescriptions"] == ["AUTH"]
    assert request["baseamount"] == "1050"
    assert REFERENCE.fullmatch(request["requestreference"])


def test_several_request_objects_each_with_its_own_reference():
    envelope = build_envelope(
        "u", [build_request("STORE"), build_request(["AUTH", "SUBSCRIPTION"]), build_request("THREEDQUERY")]
    )
    assert [r["requesttypedescriptions"] for r in envelope["request"]] == [
        ["STORE"],
        ["AUTH", "SUBSCRIPTION"],
        ["THREEDQUERY"],
    ]
    references = [r["requestreference"] for r in envelope["request"]]
    assert all(REFERENCE.fullmatch(ref) for ref in references)
    assert len(set(references)) == 3


def test_a_given_reference_is_kept_and_references_can_be_left_out():
    given = {"requesttypedescriptions": ["AUTH"], "requestreference": "Amine0001"}
    assert build_envelope("u", [given])["request"][0]["requestreference"] == "Amine0001"
    assert (
        "requestreference"
        not in build_envelope("u", [{"requesttypedescriptions": ["AUTH"]}], add_references=False)["request"][
            0
        ]
    )
    plain = {"requesttypedescriptions": ["AUTH"]}
    assert REFERENCE.fullmatch(build_envelope("u", [plain])["request"][0]["requestreference"])
    assert plain == {"requesttypedescriptions": ["AUTH"]}  # the caller's object is not changed


def test_request_types_first_then_fields_as_strings():
    request = build_request(
        "AUTH",
        {"baseamount": 1050, "credentialsonfile": True},
        orderreference="o-1",
        transactionactive=0,
        skipped=None,
    )
    assert list(request) == [
        "requesttypedescriptions",
        "baseamount",
        "credentialsonfile",
        "orderreference",
        "transactionactive",
    ]
    assert request == {
        "requesttypedescriptions": ["AUTH"],
        "baseamount": "1050",
        "credentialsonfile": "1",
        "orderreference": "o-1",
        "transactionactive": "0",
    }


@pytest.mark.parametrize(
    "value,wire",
    [
        ("1050", "1050"),
        (1050, "1050"),
        (0, "0"),
        (True, "1"),
        (False, "0"),
        (Decimal("1050"), "1050"),
        (Decimal("10.00"), "10"),
        ([1, "2"], ["1", "2"]),
        ({"value": 3}, {"value": "3"}),
        ({"transactionreference": [{"value": 1}]}, {"transactionreference": [{"value": "1"}]}),
    ],
)
def test_every_value_goes_on_the_wire_as_a_string(value, wire):
    assert to_wire(value) == wire


@pytest.mark.parametrize("value", [10.5, Decimal("10.50"), object(), None])
def test_values_that_cannot_be_strings_are_refused_by_name(value):
    with pytest.raises(ValidationError) as caught:
        to_wire(value, "baseamount")
    [problem] = caught.value.problems
    assert problem.field == "baseamount" and "cannot be sent as a string" in problem.rule


def test_references_use_the_whole_alphabet_uniformly_enough():
    references = [new_request_reference() for _ in range(3000)]
    assert all(REFERENCE.fullmatch(r) for r in references)
    assert len(set(references)) == len(references)
    seen = {c for r in references for c in r[1:]}
    assert seen == set("0123456789abcdefghijklmnopqrstuvwxyz")


# -- the envelope the client puts on the wire --------------------------------------------------


def capture_client(**options):
    bodies = []

    def answer(request):
        body = json.loads(request.content)
        bodies.append(body)
        records = [
            {"requesttypedescription": t, "errorcode": "0", "errormessage": "Ok"}
            for obj in body["request"]
            for t in obj["requesttypedescriptions"]
        ]
        return httpx.Response(
            200,
            json={
                "requestreference": body["request"][0]["requestreference"],
                "version": "1.00",
                "secrand": "ab",
                "response": records,
            },
        )

    client = gwkit.Client(
        "http://gateway.test",
        "webservices@example.com",
        "pw",
        transport=httpx.MockTransport(answer),
        **options,
    )
    return client, bodies


def test_client_envelope_on_the_wire_is_strings_only():
    client, bodies = capture_client(sitereference="test_site12345", currencyiso3a="GBP")
    client.auth_subscription(
        accounttypedescription="ECOM",
        baseamount=1050,
        orderreference="sub-1",
        pan="4111111111111111",
        expirydate="12/2030",
        securitycode=123,
        subscriptiontype="RECURRING",
        subscriptionunit="MONTH",
        subscriptionfrequency=1,
        subscriptionnumber=1,
        subscriptionfinalnumber=0,
        subscriptionbegindate="2030-01-31",
        credentialsonfile=1,
    )
    [body] = bodies
    assert body["alias"] == "webservices@example.com" and body["version"] == "1.00"
    [request] = body["request"]
    assert request["requesttypedescriptions"] == ["AUTH", "SUBSCRIPTION"]
    assert all(isinstance(v, str) for v in leaves(body))
    assert request["subscriptionfinalnumber"] == "0" and request["securitycode"] == "123"
    assert REFERENCE.fullmatch(request["requestreference"])


def test_client_sends_several_objects_in_one_envelope():
    client, bodies = capture_client(alias="site-alias")
    response = client.send(
        [
            {
                "requesttypedescriptions": ["THREEDQUERY"],
                "sitereference": "test_site12345",
                "termurl": "https://m.example/t",
                "currencyiso3a": "GBP",
                "accounttypedescription": "ECOM",
                "baseamount": 1050,
                "pan": "4111111111111111",
                "expirydate": "12/2030",
            },
            {
                "requesttypedescriptions": ["TRANSACTIONQUERY"],
                "filter": {"transactionreference": [{"value": "1-2-3"}]},
            },
        ]
    )
    [body] = bodies
    assert body["alias"] == "site-alias"
    assert [r["requesttypedescriptions"] for r in body["request"]] == [["THREEDQUERY"], ["TRANSACTIONQUERY"]]
    references = [r["requestreference"] for r in body["request"]]
    assert all(REFERENCE.fullmatch(ref) for ref in references) and references[0] != references[1]
    assert all(isinstance(v, str) for v in leaves(body))
    assert [r.requesttype for r in response] == ["THREEDQUERY", "TRANSACTIONQUERY"]


def test_client_builds_envelopes_without_sending():
    client, bodies = capture_client(sitereference="test_site12345")
    envelope = client.build_envelope([client.build_request("STORE", pan="4111111111111111")])
    assert envelope["alias"] == "webservices@example.com"
    assert envelope["request"][0]["sitereference"] == "test_site12345"
    assert bodies == []
