"""The worker scheduler (web/app.py) routes a gateway request by its parsed request types, and the
body it parses is the one every later reader gets (`SandboxRequest.parsed_json`)."""

from __future__ import annotations

import json

import pytest

from gwkit.sandbox.http import BodyError, SandboxRequest
from gwkit.sandbox.web.sandbox import Sandbox
from gwkit.sandbox.web.workers import _asks_a_query


@pytest.fixture(scope="module")
def sandbox(tmp_path_factory):
    made = Sandbox(tmp_path_factory.mktemp("scheduling") / "sandbox.db")
    yield made
    made.close()


def gateway_post(objects, path: str = "/json/") -> SandboxRequest:
    body = json.dumps({"alias": "u", "version": "1.00", "request": objects}).encode()
    return SandboxRequest("POST", path, {"content-type": "application/json"}, body)


@pytest.mark.parametrize(
    ("objects", "slow"),
    [
        ([{"requesttypedescriptions": ["TRANSACTIONQUERY"], "filter": {}}], True),
        (
            [{"requesttypedescription": "TRANSACTIONQUERY"}],
            True,
        ),  # the singular form, as the real gateway takes it
        ([{"requesttypedescriptions": ["AUTH"]}, {"requesttypedescriptions": ["TRANSACTIONQUERY"]}], True),
        # a payment whose text names a query: the bytes say TRANSACTIONQUERY, the request type does not
        ([{"requesttypedescriptions": ["AUTH"], "orderreference": "TRANSACTIONQUERY"}], False),
        ([{"requesttypedescriptions": ["TRANSACTIONUPDATE"]}], False),
        ([{"requesttypedescriptions": "TRANSACTIONQUERY"}], False),  # not a list: validation answers it
        (["TRANSACTIONQUERY"], False),
    ],
)
def test_a_request_goes_to_the_slow_threads_by_its_parsed_request_types(sandbox, objects, slow):
    assert _asks_a_query(sandbox, gateway_post(objects)) is slow


def test_only_gateway_posts_are_read_and_a_broken_body_is_left_to_the_endpoint(sandbox):
    query = [{"requesttypedescriptions": ["TRANSACTIONQUERY"]}]
    assert _asks_a_query(sandbox, gateway_post(query, path="/_sandbox/faults")) is False
    broken = SandboxRequest("POST", "/json/", {}, b'{"request": [TRANSACTIONQUERY')
    assert _asks_a_query(sandbox, broken) is False
    with pytest.raises(BodyError, match="not JSON"):
        broken.parsed_json()  # the endpoint's reader gets the same refusal


def test_the_body_is_parsed_once_for_every_reader():
    request = gateway_post([{"requesttypedescriptions": ["AUTH"]}])
    first = request.parsed_json()
    assert request.parsed_json() is first
    assert first["request"][0]["requesttypedescriptions"] == ["AUTH"]
