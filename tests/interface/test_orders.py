"""The allow-list of request-type orders and the `threedbypasspaymenttypes` rule (issue 41)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from gwkit.interface.bypass import BYPASS_RULE, bypass_rule_broken, bypassed_types
from gwkit.interface.orders import SUPPORTED_ORDERS, supported_order
from gwkit.interface.requests import SINGLE_TYPES
from gwkit.interface.validation import validate_request

SANDBOX_DOC = Path(__file__).resolve().parents[2] / "docs" / "sandbox.md"


def test_every_supported_order_is_of_known_types_each_once():
    for order in SUPPORTED_ORDERS:
        assert len(order) > 1 and set(order) <= SINGLE_TYPES and len(set(order)) == len(order), order


def test_any_known_type_runs_alone():
    assert all(supported_order([name]) for name in SINGLE_TYPES)


def test_the_sandbox_doc_lists_every_supported_order_and_no_other():
    """docs/sandbox.md, "Orders of request types", names the list as the code has it."""
    text = " ".join(SANDBOX_DOC.read_text(encoding="utf-8").split())
    bullet = text.split("**Orders of request types**", 1)[1].split("Any other order", 1)[0]
    listed = {tuple(found.split()) for found in re.findall(r"`([A-Z]+(?: [A-Z]+)+)`", bullet)}
    assert listed == SUPPORTED_ORDERS


@pytest.mark.parametrize(
    ("types", "says"),
    [
        (["ACCOUNTCHECK", "RISKDEC", "AUTH"], "is not an order of request types the gateway runs"),
        (["AUTH", "ACCOUNTCHECK"], "the orders it runs: "),
        (["TRANSACTIONUPDATE", "AUTH"], "TRANSACTIONUPDATE cannot be combined"),
        (["SUBSCRIPTION", "AUTH"], "SUBSCRIPTION comes last"),
    ],
)
def test_an_unsupported_order_is_one_problem_naming_requesttypedescriptions(types, says):
    (problem,) = validate_request({"requesttypedescriptions": types, "pan": "4111111111111111"})
    assert problem.field == "requesttypedescriptions" and says in problem.rule


@pytest.mark.parametrize(
    ("value", "broken"),
    [
        (["VISA"], None),
        (["VISA", "AMEX", "MASTERCARD", "DISCOVER", "JCB", "DINERS", "PIBA"], None),  # as captured
        ([], None),
        ("VISA", BYPASS_RULE),
        (["visa"], BYPASS_RULE),
        (["VISA", 1], BYPASS_RULE),
        (["VISA"] * 21, BYPASS_RULE),
    ],
)
def test_threedbypasspaymenttypes_is_a_list_of_payment_types(value, broken):
    assert bypass_rule_broken(value) == broken
    assert bypassed_types(value) == (frozenset(value) if broken is None else frozenset())
