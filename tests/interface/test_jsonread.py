"""The one JSON reader of a request body (gwkit/interface/jsonread.py): bounded, duplicate keys refused."""

from __future__ import annotations

import pytest

from gwkit.interface.jsonread import DUPLICATE_KEYS, BodyError, read_json


@pytest.mark.parametrize(
    "body, where",
    [
        (b'{"request": [{"baseamount": "1", "baseamount": "2"}]}', "request.0.baseamount"),
        (b'{"alias": "a", "alias": "a"}', "alias"),
        (
            b'{"request": [{"filter": {"sitereference": [], "sitereference": []}}]}',
            "request.0.filter.sitereference",
        ),
    ],
)
def test_a_key_named_twice_is_refused_naming_its_path(body, where):
    with pytest.raises(BodyError) as caught:
        read_json(body)
    assert (caught.value.where, caught.value.limit) == (where, DUPLICATE_KEYS)
    assert "named more than once" in caught.value.what


def test_the_first_refused_value_in_the_body_order_is_named():
    body = b'{"request": [{"pan": "1", "pan": "2"}, {"baseamount": "1", "baseamount": "2"}]}'
    with pytest.raises(BodyError) as caught:
        read_json(body)
    assert caught.value.where == "request.0.pan"


@pytest.mark.parametrize("opening", [b"[", b'{"a":'])
def test_a_body_nested_100000_deep_is_a_body_error_not_a_recursion_error(opening):
    with pytest.raises(BodyError) as caught:
        read_json(opening * 100_000)
    assert caught.value.limit == "nesting depth"


def test_the_same_key_in_different_objects_is_no_duplicate():
    assert read_json(b'{"request": [{"pan": "1"}, {"pan": "2"}]}') == {
        "request": [{"pan": "1"}, {"pan": "2"}]
    }
