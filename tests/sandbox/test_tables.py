"""The handler tables (gateway/context.py `Tables.of`): each module's constants merged, refusing what
would register nothing or replace another module's handler silently."""

from __future__ import annotations

import types

import pytest

from gwkit.sandbox.gateway.context import Tables, TablesError
from gwkit.sandbox.gateway.core import HANDLER_MODULES


def module(name: str, **constants) -> types.ModuleType:
    made = types.ModuleType(name)
    for key, value in constants.items():
        setattr(made, key, value)
    return made


def handler(ctx, request):
    return []


def test_the_gateways_own_modules_merge_with_every_request_type():
    tables = Tables.of(HANDLER_MODULES)
    assert {"AUTH", "REFUND", "TRANSACTIONQUERY", "AUTH+SUBSCRIPTION"} <= set(tables.request_handlers)
    assert tables.read_only == {"TRANSACTIONQUERY"}


def test_a_key_two_modules_offer_is_refused_naming_both():
    first = module("first", REQUEST_HANDLERS={"AUTH": handler})
    second = module("second", REQUEST_HANDLERS={"AUTH": handler, "REFUND": handler})
    with pytest.raises(TablesError, match=r"REQUEST_HANDLERS\['AUTH'\] is offered by both first and second"):
        Tables.of([first, second])


def test_a_misspelt_table_is_refused_naming_the_table_meant():
    misspelt = module("misspelt", REQUEST_HANDLER={"AUTH": handler})
    with pytest.raises(
        TablesError, match=r"misspelt.REQUEST_HANDLER is not a table: REQUEST_HANDLERS was meant"
    ):
        Tables.of([misspelt])


def test_a_module_offering_no_table_is_refused():
    with pytest.raises(TablesError, match="empty offers none of the tables"):
        Tables.of([module("empty", TIMEOUT_SECONDS=3)])


def test_other_constants_of_a_module_are_its_own_business():
    tables = Tables.of([module("own", REQUEST_HANDLERS={"AUTH": handler}, MAX_ROWS=10, CORE_COLUMNS=())])
    assert tables.request_handlers == {"AUTH": handler}
