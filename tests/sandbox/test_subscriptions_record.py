"""The SUBSCRIPTION record as TRANSACTIONQUERY answers it while the engine pays, over real HTTP:
`subscriptionnumber` names the next payment of each subscription, in the record's own field order;
and the payment records themselves, each with its own reference, day, number and authcode."""

from __future__ import annotations

import re

import pytest

from support.sandbox import SITE, card_auth

pytestmark = pytest.mark.both_stores  # each test on SQLite and on PostgreSQL


def subscribe(gateway, begin: str, **fields: str) -> tuple[dict, dict]:
    """AUTH + SUBSCRIPTION (running at once); the AUTH and SUBSCRIPTION records as answered."""
    auth, record = gateway.records(
        {
            **card_auth(requesttypedescriptions=["AUTH", "SUBSCRIPTION"], orderreference=f"record-{begin}"),
            "subscriptiontype": "RECURRING",
            "subscriptionunit": "MONTH",
            "subscriptionfrequency": "1",
            "subscriptionnumber": "1",
            "subscriptionfinalnumber": "0",
            "subscriptionbegindate": begin,
            "transactionactive": "1",
            "credentialsonfile": "1",
            **fields,
        }
    )
    assert (auth["errorcode"], record["errorcode"]) == ("0", "0"), (auth, record)
    return auth, record


def subscriptions_now(gateway) -> dict[str, dict]:
    found = gateway.query(sitereference=SITE, requesttypedescription="SUBSCRIPTION")
    return {record["transactionreference"]: record for record in found}


def test_each_subscription_record_names_its_next_payment_as_the_engine_pays(sandbox, gateway):
    _, early = subscribe(gateway, "2026-02-01")
    _, late = subscribe(gateway, "2026-03-20", subscriptionnumber="4", subscriptionfinalnumber="6")
    assert (early["subscriptionnumber"], late["subscriptionnumber"]) == ("2", "5")

    sandbox.advance(to="2026-04-05T12:00:00")  # early: 2, 3, 4 made (Feb, Mar, Apr 1); late: 5 (Mar 20)
    now = subscriptions_now(gateway)
    assert (
        now[early["transactionreference"]]["subscriptionnumber"],
        now[late["transactionreference"]]["subscriptionnumber"],
    ) == ("5", "6")
    payments = gateway.query(parenttransactionreference=early["transactionreference"])
    assert sorted(p["subscriptionnumber"] for p in payments) == ["2", "3", "4"]

    sandbox.advance(to="2026-06-01T12:00:00")  # late stops after 6 (Apr 20): its record stays on 7
    now = subscriptions_now(gateway)
    assert (
        now[early["transactionreference"]]["subscriptionnumber"],
        now[late["transactionreference"]]["subscriptionnumber"],
    ) == ("7", "7")


def test_the_queried_record_keeps_the_answered_fields_and_their_order(sandbox, gateway):
    _, answered = subscribe(gateway, "2026-02-01")
    sandbox.advance(to="2026-03-02T12:00:00")
    (queried,) = gateway.query(transactionreference=answered["transactionreference"])
    assert list(queried) == [*answered, "interface"]
    changed = {name for name in answered if queried[name] != answered[name]}
    assert changed == {"subscriptionnumber"} and queried["subscriptionnumber"] == "4"


# A payment's own fields; the engine makes the rest of a subscription's payment once per run.
OWN_FIELDS = {
    "transactionreference",
    "transactionstartedtimestamp",
    "settleduedate",
    "subscriptionnumber",
    "authcode",
}


def test_the_payments_of_one_run_differ_in_their_own_fields_and_where_the_card_expired(sandbox, gateway):
    _, record = subscribe(gateway, "2026-02-01", expirydate="06/2026")
    sandbox.advance(to="2026-12-01T12:00:00")  # one clock move: payments 2 to 12, Feb 1 to Dec 1
    payments = sorted(
        gateway.query(parenttransactionreference=record["transactionreference"]),
        key=lambda p: int(p["subscriptionnumber"]),
    )
    assert [p["subscriptionnumber"] for p in payments] == [str(n) for n in range(2, 13)]
    assert [p["transactionstartedtimestamp"] for p in payments] == [
        f"2026-{m:02}-01 00:00:00" for m in range(2, 13)
    ]
    assert [p["settleduedate"] for p in payments] == [f"2026-{m:02}-01" for m in range(2, 13)]  # own day
    assert len({p["transactionreference"] for p in payments}) == 11
    authorised, declined = payments[:5], payments[5:]  # the card is good through June
    assert {p["errorcode"] for p in authorised} == {"0"} and {p["errorcode"] for p in declined} == {"70000"}
    authcodes = [p["authcode"] for p in authorised]
    assert all(re.fullmatch(r"TEST\d\d", code) for code in authcodes)
    assert len(set(authcodes)) > 1  # drawn for each payment (five equal draws: 1 in 65 million)
    assert {p["authcode"] for p in declined} == {"DECLINED"}
    for group in (authorised, declined):  # all settled (or declined): the rest of their records is the same
        rest = [{k: v for k, v in p.items() if k not in OWN_FIELDS} for p in group]
        assert all(other == rest[0] for other in rest)
    assert authorised[0]["settlestatus"] == "100" and declined[0]["settlestatus"] == "3"
