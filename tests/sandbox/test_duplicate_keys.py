"""A key named twice in a request body: the sandbox refuses it with 30000 naming the key's path,
whichever copy would be valid (gwkit's one reading, gwkit/interface/jsonread.py)."""

from __future__ import annotations

import json

import pytest

from support.sandbox import SITE, card_auth, query_request

pytestmark = pytest.mark.both_stores  # each test on SQLite and on PostgreSQL


def test_a_duplicate_key_is_an_error_30000_naming_its_path_and_nothing_is_made(gateway):
    auth = json.dumps({"alias": gateway.username, "version": "1.00", "request": [card_auth()]})
    body = auth.replace('"baseamount": "1050"', '"baseamount": "1050", "baseamount": "x"')
    response = gateway.http.post(
        "/json/", content=body.encode(), headers={"content-type": "application/json"}
    )
    (record,) = response.json()["response"]
    assert record["errorcode"] == "30000"
    assert record["errordata"] == ["request.0.baseamount", "the key is named more than once in its object"]
    assert gateway.one(query_request(sitereference=SITE)).get("records", []) == []
