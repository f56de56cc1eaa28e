"""AUTH SUBSCRIPTION and the life cycle of interface 3.1, end to end over HTTP on loopback.

Each test drives a sandbox on a real port with gwkit's client: the combined request, the
engine's daily runs on the virtual clock, TRANSACTIONUPDATE and TRANSACTIONQUERY.
"""

from __future__ import annotations

import re
from datetime import date
from typing import Any

import httpx
import pytest

import gwkit
import gwkit.sandbox
from gwkit.interface.schedule import payment_dates
from gwkit.report.subscriptions import schedule_frame, subscription_payments_frame
from gwkit.subscription import Subscription, SubscriptionError
from support.subscriptions import VISA

SUBSCRIPTION_FIELDS_25 = (
    "transactionstartedtimestamp",
    "parenttransactionreference",
    "livestatus",
    "errorcode",
    "errormessage",
    "orderreference",
    "subscriptionfinalnumber",
    "subscriptionunit",
    "subscriptiontype",
    "subscriptionfrequency",
    "subscriptionnumber",
    "subscriptionbegindate",
    "transactionreference",
    "paymenttypedescription",
    "transactionactive",
    "baseamount",
    "currencyiso3a",
    "accounttypedescription",
    "requesttypedescription",
    "maskedpan",
    "operatorname",
)


def advance(sandbox, client: gwkit.Client, **where: str) -> dict[str, Any]:
    """Move the clock through the control API (over HTTP, as a script would)."""
    answer = httpx.post(
        f"{sandbox.base_url}/_sandbox/clock/advance",
        json=where,
        auth=(sandbox.username, sandbox.password),
        timeout=120,
    )
    answer.raise_for_status()
    return answer.json()


def subscribe(gw, **fields: Any) -> Subscription:
    values = {
        "baseamount": 1050,
        "orderreference": "gym-42",
        "pan": VISA,
        "expirydate": "12/2030",
        "securitycode": "123",
        "subscriptionfrequency": 1,
        "subscriptionfinalnumber": 0,
        "subscriptionbegindate": "2026-02-01",
        **fields,
    }
    return Subscription.create(gw, **values)


def paid(sub: Subscription) -> list[tuple[int, str, str, str]]:
    """(number, day made, amount, errorcode) of each automated payment."""
    return [
        (int(p["subscriptionnumber"]), p["transactionstartedtimestamp"][:10], p["baseamount"], p["errorcode"])
        for p in sub.payments()
    ]


def numbers(sub: Subscription) -> list[int]:
    return [n for n, *_ in paid(sub)]


# -- the combined request (4.2, 2.4, 2.5) -------------------------------------------------------


def test_combined_request_answers_auth_then_subscription(gw, sandbox):
    response = gw.auth_subscription(
        accounttypedescription="ECOM",
        baseamount=1050,
        orderreference="gym-42",
        pan=VISA,
        expirydate="12/2030",
        securitycode="123",
        subscriptiontype="RECURRING",
        subscriptionunit="MONTH",
        subscriptionfrequency=1,
        subscriptionnumber=1,
        subscriptionfinalnumber=12,
        subscriptionbegindate="2026-02-01",
        credentialsonfile=1,
    )
    auth, sub = response.records
    assert [auth["requesttypedescription"], sub["requesttypedescription"]] == ["AUTH", "SUBSCRIPTION"]
    assert (
        auth["errorcode"] == "0"
        and auth["credentialsonfile"] == "1"
        and auth["accounttypedescription"] == "ECOM"
    )
    assert auth["baseamount"] == "1050" and auth["settlestatus"] == "0"
    assert set(SUBSCRIPTION_FIELDS_25) <= set(sub)
    assert sub["accounttypedescription"] == "RECUR"
    assert sub["parenttransactionreference"] == auth["transactionreference"]
    assert sub["transactionreference"] != auth["transactionreference"]
    assert sub["transactionstartedtimestamp"] == "2026-02-01 00:00:00"  # the scheduled start
    assert sub["subscriptionnumber"] == "2"  # one higher than sent
    assert sub["transactionactive"] == "2"  # pending unless sent
    assert sub["maskedpan"] == "411111######1111" and VISA not in str(response.raw)
    assert (sub["subscriptionfinalnumber"], sub["subscriptionfrequency"], sub["subscriptionbegindate"]) == (
        "12",
        "1",
        "2026-02-01",
    )
    kept = gw.transaction_query(requesttypedescription="SUBSCRIPTION").query_records
    assert [r["transactionreference"] for r in kept] == [sub["transactionreference"]]


def test_transactionactive_sent_is_kept_and_number_continues_a_series(gw):
    sub = subscribe(gw, transactionactive=1, subscriptionnumber=4, subscriptionfinalnumber=6)
    assert sub.record["transactionactive"] == "1"
    assert sub.record["subscriptionnumber"] == "5"  # "4 continues one that had 3 payments"


@pytest.mark.parametrize(
    "fields, field",
    [
        ({"subscriptionbegindate": "2026-01-09"}, "subscriptionbegindate"),  # before the sandbox's today
        ({"subscriptionnumber": 5, "subscriptionfinalnumber": 3}, "subscriptionfinalnumber"),
    ],
)
def test_inconsistent_schedules_are_refused_and_nothing_is_kept(gw, fields, field):
    with pytest.raises(SubscriptionError) as refused:
        subscribe(gw, **fields)
    assert refused.value.errorcode == 30000 and refused.value.errordata == [field]
    assert gw.transaction_query(accounttypedescription=["ECOM", "RECUR"]).query_records == []


def test_missing_credentialsonfile_is_refused_by_the_sandbox(gw):
    request = {
        "requesttypedescriptions": ["AUTH", "SUBSCRIPTION"],
        "accounttypedescription": "ECOM",
        "sitereference": gw.sitereference,
        "currencyiso3a": "GBP",
        "baseamount": "1050",
        "orderreference": "x",
        "pan": VISA,
        "expirydate": "12/2030",
        "subscriptiontype": "RECURRING",
        "subscriptionunit": "MONTH",
        "subscriptionfrequency": "1",
        "subscriptionnumber": "1",
        "subscriptionfinalnumber": "0",
        "subscriptionbegindate": "2026-02-01",
    }
    records = gw.send(request, validate=False).records
    # one ERROR record for the refused object, as the real gateway answers a field error
    assert [(r["requesttypedescription"], r["errorcode"], r["errordata"]) for r in records] == [
        ("ERROR", "30000", ["credentialsonfile"])
    ]


# -- 3.1, row by row -----------------------------------------------------------------------


def test_pending_waits_for_settlement_then_payments_begin_at_the_interval(gw, sandbox):
    sub = subscribe(gw, subscriptionbegindate="2026-01-10")  # due today: today's run has passed
    assert sub.state == "pending"
    report = advance(sandbox, gw, to="2026-01-11T09:00:00")  # settlement first (order 10), then the engine
    assert sub.auth["transactionreference"] in report["settlement"]["settled"]
    assert report["subscriptions"]["started_subscriptions"] == [sub.reference]
    assert report["subscriptions"]["caught_up"] == 1  # due on the 10th, made on the 11th
    advance(sandbox, gw, to="2026-04-11T09:00:00")
    assert paid(sub.refresh()) == [
        (2, "2026-01-11", "1050", "0"),
        (3, "2026-02-10", "1050", "0"),
        (4, "2026-03-10", "1050", "0"),
        (5, "2026-04-10", "1050", "0"),
    ]
    assert sub.state == "scheduled" and sub.record["subscriptionnumber"] == "6"


def test_pending_never_starts_while_the_auth_is_not_settled(gw, sandbox):
    sub = subscribe(gw)
    gw.transaction_update(
        transactionreference=sub.auth_reference, updates={"settlestatus": "2"}
    ).raise_for_errors()
    report = advance(sandbox, gw, by="P3M")
    assert report["subscriptions"]["made"] == 0 and numbers(sub) == []
    assert sub.refresh().state == "pending"
    # Released: it settles in the next daily run and the payments missed meanwhile are caught up.
    gw.transaction_update(
        transactionreference=sub.auth_reference, updates={"settlestatus": "0"}
    ).raise_for_errors()
    report = advance(sandbox, gw, by="P1D")
    assert report["subscriptions"]["started_subscriptions"] == [sub.reference]
    assert [(n, day) for n, day, *_ in paid(sub)] == [(2, "2026-04-11"), (3, "2026-04-11"), (4, "2026-04-11")]
    assert report["subscriptions"]["caught_up"] == 3


def test_active_subscription_is_scheduled_at_once_without_waiting_for_settlement(gw, sandbox):
    sub = subscribe(gw, transactionactive=1)
    gw.transaction_update(
        transactionreference=sub.auth_reference, updates={"settlestatus": "2"}
    ).raise_for_errors()
    advance(sandbox, gw, to="2026-03-01T09:00:00")
    assert [(n, day) for n, day, *_ in paid(sub)] == [(2, "2026-02-01"), (3, "2026-03-01")]
    assert sub.refresh().auth["settlestatus"] == "2"


@pytest.mark.parametrize("active", ["2", "1"])
def test_a_declined_first_payment_never_starts_the_subscription(gw, sandbox, active):
    sub = subscribe(gw, baseamount=70000, transactionactive=active)
    assert sub.auth["errorcode"] == "70000" and sub.auth["settlestatus"] == "3"
    assert (
        sub.record["errorcode"] == "0" and sub.record["transactionactive"] == active
    )  # kept; the caller checks
    assert sub.state == "declined"
    report = advance(sandbox, gw, by="P1Y")
    assert report["subscriptions"]["made"] == 0 and numbers(sub) == []
    for updates in ({"transactionactive": "1"}, {"baseamount": "1000"}, {"subscriptionfinalnumber": "5"}):
        record = gw.transaction_update(transactionreference=sub.reference, updates=updates).record
        assert (record["errorcode"], record["errormessage"]) == ("60017", "Transaction not updatable")


def test_suspend_then_reenable_catches_up_the_missed_payments(gw, sandbox):
    sub = subscribe(gw, transactionactive=1)
    advance(sandbox, gw, to="2026-02-15T09:00:00")
    sub.suspend()
    assert sub.state == "suspended" and sub.record["transactionactive"] == "0"
    report = advance(sandbox, gw, to="2026-05-15T09:00:00")
    assert report["subscriptions"]["made"] == 0 and numbers(sub) == [2]
    sub.activate(1)  # re-enabling sets the value sent
    assert sub.record["transactionactive"] == "1" and sub.state == "scheduled"
    report = advance(sandbox, gw, by="P1D")  # "caught up within 24 hours": the next daily run
    assert report["subscriptions"]["caught_up"] == 3 and report["subscriptions"]["made"] == 3
    assert [(n, day) for n, day, *_ in paid(sub)] == [
        (2, "2026-02-01"),
        (3, "2026-05-16"),
        (4, "2026-05-16"),
        (5, "2026-05-16"),
    ]
    advance(sandbox, gw, to="2026-06-01T09:00:00")  # back on the original interval
    assert paid(sub)[-1][:2] == (6, "2026-06-01")


def test_reenabling_with_2_after_settlement_schedules_too(gw, sandbox):
    sub = subscribe(gw)
    sub.suspend()
    advance(sandbox, gw, to="2026-02-10T09:00:00")
    assert numbers(sub) == []
    sub.activate(2)  # the first payment has settled, so pending means scheduled
    assert sub.state == "scheduled"
    advance(sandbox, gw, by="P1D")
    assert [(n, day) for n, day, *_ in paid(sub)] == [(2, "2026-02-11")]


def test_final_number_stops_then_raising_it_resumes_at_the_original_intervals(gw, sandbox):
    sub = subscribe(gw, transactionactive=1, subscriptionbegindate="2026-01-31", subscriptionfinalnumber=3)
    report = advance(sandbox, gw, to="2026-06-01T09:00:00")
    assert report["subscriptions"]["stopped_subscriptions"] == [sub.reference]
    assert [(n, day) for n, day, *_ in paid(sub)] == [(2, "2026-01-31"), (3, "2026-02-28")]
    assert sub.refresh().state == "stopped" and sub.record["subscriptionnumber"] == "4"
    sub.set_final_number(7)
    assert sub.state == "scheduled"
    report = advance(sandbox, gw, by="P1D")  # missed payments (March 31, April 30, May 31) caught up
    assert report["subscriptions"]["caught_up"] == 3
    advance(sandbox, gw, to="2026-08-01T09:00:00")
    assert [(n, day) for n, day, *_ in paid(sub)] == [
        (2, "2026-01-31"),
        (3, "2026-02-28"),
        (4, "2026-06-02"),
        (5, "2026-06-02"),
        (6, "2026-06-02"),
        (7, "2026-06-30"),
    ]  # resumed at the original intervals, anchored on the 31st
    assert sub.refresh().state == "stopped"


def test_final_number_zero_continues_until_deactivated(gw, sandbox):
    sub = subscribe(gw, transactionactive=1, subscriptionfrequency=3)
    advance(sandbox, gw, to="2028-12-31T09:00:00")
    expected = payment_dates(date(2026, 2, 1), 3, 2, 0, until=date(2028, 12, 31))
    assert [(n, day) for n, day, *_ in paid(sub)] == [(n, d.isoformat()) for n, d in expected]
    assert len(expected) == 12 and sub.refresh().state == "scheduled"


def test_lowering_the_final_number_below_payments_made_is_refused(gw, sandbox):
    sub = subscribe(gw, transactionactive=1)
    advance(sandbox, gw, to="2026-03-02T09:00:00")  # payments 2 and 3 made
    record = gw.transaction_update(
        transactionreference=sub.reference, updates={"subscriptionfinalnumber": "2"}
    ).record
    assert (record["errorcode"], record["errordata"]) == ("30000", ["subscriptionfinalnumber"])
    sub.set_final_number(3)  # stop now: allowed
    assert sub.state == "stopped"


# -- amounts, declines, the card ----------------------------------------------------------


def test_a_different_amount_for_later_payments(gw, sandbox):
    """The 3.1 recipe: the first payment at the initial amount, then TRANSACTIONUPDATE baseamount."""
    sub = subscribe(gw, baseamount=100, transactionactive=1)
    advance(sandbox, gw, to="2026-02-02T09:00:00")
    sub.set_amount(2500)
    assert sub.record["baseamount"] == "2500" and sub.auth["baseamount"] == "100"
    advance(sandbox, gw, to="2026-04-02T09:00:00")
    assert [(n, amount) for n, _, amount, _ in paid(sub)] == [(2, "100"), (3, "2500"), (4, "2500")]


def test_a_declined_payment_counts_as_its_number_and_the_series_goes_on(gw, sandbox):
    sub = subscribe(gw, transactionactive=1)
    sub.set_amount(70000)  # the test acquirer declines 70000
    report = advance(sandbox, gw, to="2026-02-02T09:00:00")
    assert report["subscriptions"]["declined"] == 1
    assert report["subscriptions"]["declined_payments"] == report["subscriptions"]["payments"]
    sub.set_amount(1050)
    advance(sandbox, gw, to="2026-03-02T09:00:00")
    assert [(n, code) for n, _, _, code in paid(sub)] == [(2, "70000"), (3, "0")]
    declined = sub.payments()[0]
    assert declined["settlestatus"] == "3" and declined["acquirerresponsecode"] == "05"


def test_a_card_expired_at_payment_time_is_declined(gw, sandbox):
    sub = subscribe(gw, transactionactive=1, expirydate="03/2026")
    advance(sandbox, gw, to="2026-05-02T09:00:00")
    assert [(n, code) for n, _, _, code in paid(sub)] == [(2, "0"), (3, "0"), (4, "70000"), (5, "70000")]


def test_payment_records_are_auths_of_their_own_found_by_parent_reference(gw, sandbox):
    sub = subscribe(gw, transactionactive=1)
    advance(sandbox, gw, to="2026-02-01T09:00:00")
    (payment,) = gw.transaction_query(parenttransactionreference=sub.reference).query_records
    assert payment["requesttypedescription"] == "AUTH" and payment["accounttypedescription"] == "RECUR"
    assert payment["parenttransactionreference"] == sub.reference
    assert payment["transactionstartedtimestamp"] == "2026-02-01 00:00:00"
    assert payment["subscriptionnumber"] == "2" and payment["maskedpan"] == "411111######1111"
    assert payment["baseamount"] == "1050" and payment["currencyiso3a"] == "GBP"
    assert payment["orderreference"] == "gym-42" and payment["settleduedate"] == "2026-02-01"
    advance(sandbox, gw, by="P1D")
    assert (
        gw.transaction_query(transactionreference=payment["transactionreference"]).query_records[0][
            "settlestatus"
        ]
        == "100"
    )


# -- TRANSACTIONUPDATE rules ------------------------------------------------------------


@pytest.mark.parametrize(
    "updates, errordata",
    [
        ({"settlestatus": "1"}, ["settlestatus"]),
        ({"settlebaseamount": "100"}, ["settlebaseamount"]),
        ({"settleduedate": "2026-03-01"}, ["settleduedate"]),  # an AUTH's, not a subscription's
        ({"billingtown": "Leeds"}, ["billingtown"]),  # a stored card's
        ({"subscriptionfrequency": "0"}, ["subscriptionfrequency"]),  # updatable, but at least 1
        ({"transactionactive": "3"}, ["transactionactive"]),
        ({"baseamount": "0"}, ["baseamount"]),
    ],
)
def test_other_updates_are_refused_with_30000_and_nothing_changes(gw, updates, errordata):
    sub = subscribe(gw)
    before = dict(sub.refresh().record)
    record = gw.transaction_update(transactionreference=sub.reference, updates=updates, validate=False).record
    assert (record["errorcode"], record["errordata"]) == ("30000", errordata)
    assert dict(sub.refresh().record) == before


def test_one_refused_field_refuses_the_whole_update(gw):
    sub = subscribe(gw)
    record = gw.transaction_update(
        transactionreference=sub.reference,
        updates={"baseamount": "2000", "settlestatus": "1"},
        validate=False,
    ).record
    assert record["errorcode"] == "30000"
    assert sub.refresh().record["baseamount"] == "1050"


# -- the other variants --------------------------------------------------------------------


def test_stored_card_variant_pays_with_the_stored_card(gw, sandbox):
    stored = (
        gw.store(
            accounttypedescription="CARDSTORE",
            pan="5100000000000008",
            expirydate="12/2030",
            billinglastname="Lovelace",
        )
        .raise_for_errors()
        .record
    )
    sub = Subscription.create(
        gw,
        parenttransactionreference=stored["transactionreference"],
        baseamount=990,
        orderreference="stored",
        subscriptionfrequency=1,
        subscriptionfinalnumber=0,
        subscriptionbegindate="2026-02-01",
        transactionactive=1,
    )
    assert sub.auth["parenttransactionreference"] == stored["transactionreference"]
    assert sub.record["maskedpan"] == "510000######0008"
    advance(sandbox, gw, to="2026-02-01T09:00:00")
    (payment,) = sub.payments()
    assert payment["maskedpan"] == "510000######0008" and payment["errorcode"] == "0"


def test_not_enrolled_threedquery_variant(gw, sandbox):
    query = (
        gw.threedquery(
            accounttypedescription="ECOM",
            baseamount=1050,
            pan="4000000000000721",
            expirydate="12/2030",
            termurl="https://merchant.example/back",
        )
        .raise_for_errors()
        .record
    )
    assert query["enrolled"] == "N"
    sub = Subscription.create(
        gw,
        parenttransactionreference=query["transactionreference"],
        baseamount=1050,
        orderreference="3ds-n",
        subscriptionfrequency=1,
        subscriptionfinalnumber=2,
        subscriptionbegindate="2026-02-01",
    )
    assert sub.auth.ok and sub.auth["parenttransactionreference"] == query["transactionreference"]
    advance(sandbox, gw, to="2026-03-01T09:00:00")
    assert numbers(sub) == [2] and sub.refresh().state == "stopped"


def test_enrolled_card_variant_with_md_and_pares(gw, sandbox):
    termurl = "https://merchant.example/back"
    query = (
        gw.threedquery(
            accounttypedescription="ECOM",
            baseamount=1050,
            pan="4111110000000211",
            expirydate="12/2030",
            termurl=termurl,
        )
        .raise_for_errors()
        .record
    )
    assert query["enrolled"] == "Y"
    form = {"PaReq": query["pareq"], "TermUrl": termurl, "MD": query["md"]}
    page = httpx.post(query["acsurl"] + "/complete", data={**form, "outcome": "Y"})
    pares = re.search(r"name='PaRes' value='([^']+)'", page.text).group(1)
    sub = Subscription.create(
        gw,
        md=query["md"],
        pares=pares,
        baseamount=1050,
        orderreference="3ds-y",
        subscriptionfrequency=1,
        subscriptionfinalnumber=0,
        subscriptionbegindate="2026-02-01",
        transactionactive=1,
        accounttypedescription="ECOM",
    )
    assert sub.auth["status"] == "Y" and sub.auth["enrolled"] == "Y" and sub.auth.ok
    advance(sandbox, gw, to="2026-02-01T09:00:00")
    (payment,) = sub.payments()
    assert payment["errorcode"] == "0" and "cavv" not in payment and "status" not in payment


# -- the helper's own view ------------------------------------------------------------------


def test_helper_from_reference_schedule_and_payments_frame(gw, sandbox):
    created = subscribe(
        gw, transactionactive=1, subscriptionbegindate="2026-01-31", subscriptionfinalnumber=5
    )
    advance(sandbox, gw, to="2026-03-01T09:00:00")
    sub = Subscription.from_reference(gw, created.reference)
    assert sub.auth_reference == created.auth_reference and sub.first_number == 2
    schedule = schedule_frame(sub, periods=10)
    assert [d.strftime("%Y-%m-%d") for d in schedule["due_date"]] == ["2026-03-31", "2026-04-30"]
    assert list(schedule["number"]) == [4, 5] and set(schedule["expected"]) == {"yes"}
    frame = subscription_payments_frame(sub)
    assert list(frame["number"]) == [2, 3]
    assert [d.strftime("%Y-%m-%d") for d in frame["due_date"]] == ["2026-01-31", "2026-02-28"]
    assert list(frame["outcome"]) == ["authorised", "authorised"]
    assert "pending" not in repr(sub) and "scheduled" in repr(sub) and VISA not in repr(sub)


def test_a_refresh_reads_the_subscription_and_its_auth_in_one_query_once_the_auth_is_known(gw, sandbox):
    sub = subscribe(gw, orderreference="one-query")
    queries: list[Any] = []
    gw.add_exchange_hook(lambda exchange: queries.append(exchange.request_types))
    loaded = Subscription.from_reference(gw, sub.reference)  # the AUTH is not known yet: two queries
    assert len(queries) == 2 and loaded.auth["transactionreference"] == sub.auth_reference
    queries.clear()
    loaded.suspend()  # the update, then one query naming both
    assert queries == [("TRANSACTIONUPDATE",), ("TRANSACTIONQUERY",)]
    assert loaded.state == "suspended" and loaded.auth["requesttypedescription"] == "AUTH"
    assert loaded.record["requesttypedescription"] == "SUBSCRIPTION"
    with pytest.raises(SubscriptionError):
        Subscription.from_reference(gw, loaded.auth_reference)  # the AUTH's reference names no SUBSCRIPTION
