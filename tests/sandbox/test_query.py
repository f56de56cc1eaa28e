"""TRANSACTIONQUERY over real HTTP: the real filter shape, every filter of the spec, limits, order."""

from __future__ import annotations

import json

import pytest

from gwkit.interface.requests import FILTER_FIELDS
from support.sandbox import (
    SITE,
    card_auth,
    parent_auth,
    query_request,
    store_request,
    update_request,
)

pytestmark = pytest.mark.both_stores  # each test on SQLite and on PostgreSQL

DATE_FILTERS = ("startdate", "enddate", "starttimestamp", "endtimestamp")


@pytest.fixture
def history(sandbox, gateway):
    """Transactions of several types, currencies, outcomes and days; returns them as queried."""
    gateway.one(card_auth(orderreference="q-a"))
    gateway.one(
        card_auth(
            orderreference="q-b", baseamount="70000", currencyiso3a="USD", accounttypedescription="MOTO"
        )
    )
    stored = gateway.one(store_request(orderreference="q-c"))["transactionreference"]
    sandbox.advance(by="P2D")  # q-a settles (100)
    gateway.one(parent_auth(stored, orderreference="q-d", currencyiso3a="EUR"))
    gateway.one(card_auth(orderreference="q-e", pan="340000000000017", securitycode="1234"))
    sandbox.advance(by="P3D")
    disabled = gateway.one(store_request(orderreference="q-f", pan="4111111111111111"))[
        "transactionreference"
    ]
    gateway.one(update_request(disabled, transactionactive="0"))
    gateway.one(card_auth(orderreference="q-g", baseamount="60010"))
    records = gateway.query(sitereference=SITE)
    assert len(records) == 7
    return records


def references(records):
    return [r["transactionreference"] for r in records]


def test_records_are_masked_newest_first_and_marked_with_the_interface(gateway, history):
    keys = [
        (r["transactionstartedtimestamp"], int(r["transactionreference"].rsplit("-", 1)[1])) for r in history
    ]
    assert keys == sorted(keys, reverse=True)
    assert [r["orderreference"] for r in history] == ["q-g", "q-f", "q-e", "q-d", "q-c", "q-b", "q-a"]
    assert all(r["interface"] == "PASS-JSON-JSON" for r in history)
    raw = gateway.http.post("/json/", json={"request": [query_request(sitereference=SITE)]}).text
    for pan in ("4111111111111111", "5100000000000008", "340000000000017"):
        assert pan not in raw
    assert "411111######1111" in raw and "510000######0008" in raw and "340000######0017" in raw
    assert '"securitycode"' not in raw and '"1234"' not in raw


def test_query_answers_one_record_with_a_records_list(gateway, history):
    (record,) = gateway.records(query_request(orderreference="q-a"))
    assert (record["requesttypedescription"], record["errorcode"], record["errormessage"]) == (
        "TRANSACTIONQUERY",
        "0",
        "Ok",
    )
    assert isinstance(record["records"], list) and len(record["records"]) == 1
    assert record["records"][0]["settlestatus"] == "100"  # later changes (settlement) are answered


@pytest.mark.parametrize("name", [f for f in FILTER_FIELDS if f not in DATE_FILTERS])
def test_every_filter_with_one_and_several_values(gateway, history, name):
    # Records name no site (as the real gateway's): every record of the history is on SITE.
    history = [{**r, "sitereference": SITE} for r in history] if name == "sitereference" else history
    values = sorted({r[name] for r in history if name in r})
    assert values, f"the history has no value for {name}"
    for chosen in [[v] for v in values] + [values[:2]]:
        expected = [r["transactionreference"] for r in history if r.get(name) in chosen]
        assert references(gateway.query(**{name: chosen})) == expected, (name, chosen)


@pytest.mark.parametrize(
    "start, end",
    [
        ("2026-01-15", None),
        ("2026-01-17", None),
        (None, "2026-01-15"),
        (None, "2026-01-17"),
        ("2026-01-16", "2026-01-17"),
        ("2026-01-20", "2026-01-20"),
        ("2026-02-01", None),
    ],
)
def test_date_range(gateway, history, start, end):
    filters = {k: v for k, v in (("startdate", start), ("enddate", end)) if v}
    expected = [
        r["transactionreference"]
        for r in history
        if (start is None or r["transactionstartedtimestamp"][:10] >= start)
        and (end is None or r["transactionstartedtimestamp"][:10] <= end)
    ]
    assert references(gateway.query(**filters)) == expected


@pytest.mark.parametrize(
    "start, end",
    [
        ("2026-01-15 10:00:00", None),
        ("2026-01-15 10:00:01", None),
        (None, "2026-01-15 10:00:00"),
        (None, "2026-01-17 09:59:59"),
        ("2026-01-17 10:00:00", "2026-01-17 10:00:00"),
        ("2026-01-16 00:00:00", "2026-01-20 09:59:59"),
        ("2026-02-01 00:00:00", None),
    ],
)
def test_timestamp_range_to_the_second(gateway, history, start, end):
    filters = {k: v for k, v in (("starttimestamp", start), ("endtimestamp", end)) if v}
    expected = [
        r["transactionreference"]
        for r in history
        if (start is None or r["transactionstartedtimestamp"] >= start)
        and (end is None or r["transactionstartedtimestamp"] <= end)
    ]
    assert references(gateway.query(**filters)) == expected


def test_timestamp_and_date_filters_hold_together(gateway, history):
    found = gateway.query(startdate="2026-01-15", endtimestamp="2026-01-17 10:00:00")
    assert [r["orderreference"] for r in found] == ["q-e", "q-d", "q-c", "q-b", "q-a"]
    found = gateway.query(startdate="2026-01-17", starttimestamp="2026-01-20 00:00:00")
    assert [r["orderreference"] for r in found] == ["q-g", "q-f"]


def test_requesttypedescription_filter_takes_the_new_types(gateway, history):
    check = gateway.one(
        {
            "requesttypedescriptions": ["ACCOUNTCHECK"],
            "sitereference": SITE,
            "orderreference": "q-h",
            "accounttypedescription": "ECOM",
            "currencyiso3a": "GBP",
            "pan": "4111111111111111",
            "expirydate": "12/2030",
        }
    )
    assert references(gateway.query(requesttypedescription="ACCOUNTCHECK")) == [check["transactionreference"]]
    assert gateway.query(requesttypedescription="REFUND") == []
    found = gateway.query(requesttypedescription=["ACCOUNTCHECK", "STORE"])
    assert [r["orderreference"] for r in found] == ["q-h", "q-f", "q-c"]
    record = gateway.one(query_request(requesttypedescription="REFUNDS"))
    assert (record["errorcode"], record["errordata"]) == ("30000", ["filter"])


def test_filters_combine_with_and(gateway, history):
    found = gateway.query(requesttypedescription="AUTH", errorcode="0", currencyiso3a=["GBP", "EUR"])
    assert [r["orderreference"] for r in found] == ["q-e", "q-d", "q-a"]
    assert gateway.query(orderreference="q-a", errorcode="70000") == []


@pytest.mark.parametrize(
    "request_object",
    [
        {"requesttypedescriptions": ["TRANSACTIONQUERY"]},
        {"requesttypedescriptions": ["TRANSACTIONQUERY"], "filter": {}},
        {"requesttypedescriptions": ["TRANSACTIONQUERY"], "filter": {"orderreference": []}},
    ],
)
def test_no_usable_filter_is_60019(gateway, request_object):
    record = gateway.one(request_object)
    assert (record["errorcode"], record["errormessage"]) == ("60019", "No searchable filter specified")


@pytest.mark.parametrize(
    "bad_filter, errordata",
    [
        ({"pan": [{"value": "4111111111111111"}]}, ["filter"]),  # not a filter
        ({"orderreference": "q-a"}, ["filter"]),  # not the list shape
        ({"startdate": [{"value": "15/01/2026"}]}, ["filter"]),
        ({"starttimestamp": [{"value": "2026-01-15"}]}, ["filter"]),
        ({"endtimestamp": [{"value": "2026-01-15T10:00:00"}]}, ["filter"]),
        ({"endtimestamp": [{"value": "2026-02-30 10:00:00"}]}, ["filter"]),
    ],
)
def test_malformed_filters_are_30000(gateway, bad_filter, errordata):
    record = gateway.one({"requesttypedescriptions": ["TRANSACTIONQUERY"], "filter": bad_filter})
    assert (record["errorcode"], record["errordata"]) == ("30000", errordata)
    assert "4111111111111111" not in json.dumps(record)


def test_at_most_500_records_newest_first(gateway, db_path):
    sent = []
    for batch in range(6):
        records = gateway.records(
            *[card_auth(orderreference="bulk", baseamount=str(1000 + batch * 100 + i)) for i in range(85)]
        )
        sent.extend(r["transactionreference"] for r in records)
    assert len(sent) == 510
    (answer,) = gateway.records(query_request(orderreference="bulk"))
    assert len(answer["records"]) == 500
    assert references(answer["records"]) == list(reversed(sent))[:500]
