"""The virtual clock and settlement, through the control API over HTTP and the Python handle."""

from __future__ import annotations

import json
from dataclasses import replace
from datetime import datetime

import pytest

from gwkit.sandbox import DEFAULT_ACCOUNT, ClockError, Sandbox
from gwkit.sandbox.gateway.core import Gateway as GatewayCore
from support.databases import Database
from support.sandbox import CLOCK, SITE, all_rows, card_auth, update_request

pytestmark = pytest.mark.both_stores  # each test on SQLite and on PostgreSQL


def advance(gateway, **payload):
    response = gateway.http.post("/_sandbox/clock/advance", json=payload)
    assert response.status_code == 200, response.text
    return response.json()


def status(gateway, reference):
    (record,) = gateway.query(transactionreference=reference)
    return record["settlestatus"]


def test_authorised_auth_settles_on_its_due_date_declines_stay_cancelled(gateway):
    paid = gateway.one(card_auth())
    declined = gateway.one(card_auth(baseamount="70000"))
    failed = gateway.one(card_auth(baseamount="60010"))
    assert (paid["settlestatus"], paid["settleduedate"]) == ("0", "2026-01-15")  # its own day
    assert declined["settlestatus"] == failed["settlestatus"] == "3"

    report = advance(gateway, by="PT13H")  # 23:00, still the same day
    assert (report["from"], report["to"], report["days"]) == ("2026-01-15T10:00:00", "2026-01-15T23:00:00", 0)
    assert status(gateway, paid["transactionreference"]) == "0"

    report = advance(gateway, by="PT1H")  # midnight: the due date has ended
    assert report["days"] == 1
    assert report["settlement"]["settled"] == [paid["transactionreference"]]
    assert status(gateway, paid["transactionreference"]) == "100"
    assert status(gateway, declined["transactionreference"]) == "3"
    assert status(gateway, failed["transactionreference"]) == "3"


def test_timestamps_and_due_dates_follow_the_clock(gateway):
    advance(gateway, to="2026-03-31T08:30:00")
    record = gateway.one(card_auth())
    assert record["transactionstartedtimestamp"] == "2026-03-31 08:30:00"
    assert record["settleduedate"] == "2026-03-31"


def test_advance_by_a_month_runs_every_day_and_reports_it(gateway):
    refs = [gateway.one(card_auth())["transactionreference"]]
    advance(gateway, by="P10D")
    refs.append(gateway.one(card_auth())["transactionreference"])
    report = advance(gateway, by="P1M")
    assert (report["from"], report["to"], report["days"]) == (
        "2026-01-25T10:00:00",
        "2026-02-25T10:00:00",
        31,
    )
    assert report["settlement"]["settled"] == [refs[1]]
    assert gateway.http.get("/_sandbox/clock").json()["now"] == "2026-02-25T10:00:00"


@pytest.mark.parametrize(
    "payload, words",
    [
        ({"to": "2026-01-14T10:00:00"}, "only moves forward"),
        ({"to": "2025-12-31"}, "only moves forward"),
        ({"by": "-P1D"}, "ISO 8601 duration"),
        ({"by": "P"}, "ISO 8601 duration"),
        ({"by": "1D"}, "ISO 8601 duration"),
        ({"by": "P1X"}, "ISO 8601 duration"),
        ({"by": 5}, "must be a string"),
        ({"to": "next tuesday"}, "is not a date"),
        ({"by": "P1D", "to": "2027-01-01T00:00:00"}, "exactly one"),
        ({}, "exactly one"),
        ({"by": "P1D", "step": "P1D"}, "unknown field"),
    ],
)
def test_bad_or_backward_moves_are_400_and_change_nothing(gateway, payload, words):
    response = gateway.http.post("/_sandbox/clock/advance", json=payload)
    assert response.status_code == 400
    assert response.json()["error"] == "bad request" and words in response.json()["detail"]
    assert gateway.http.get("/_sandbox/clock").json()["now"] == "2026-01-15T10:00:00"


def test_advance_by_zero_is_allowed(gateway):
    assert advance(gateway, by="PT0S")["days"] == 0


def test_settle_on_demand(gateway):
    today = gateway.one(card_auth())["transactionreference"]
    later = gateway.one(card_auth())["transactionreference"]
    assert gateway.one(update_request(later, settleduedate="2026-01-16"))["errorcode"] == "0"
    response = gateway.http.post("/_sandbox/settle", json={})
    assert response.json() == {"settlement": {"settled": [today]}}  # due today, not tomorrow's
    response = gateway.http.post("/_sandbox/settle", json={"all": True})
    assert response.json() == {"settlement": {"settled": [later]}}
    assert status(gateway, today) == status(gateway, later) == "100"
    assert gateway.http.post("/_sandbox/settle", headers={"content-type": "application/json"}).json() == {
        "settlement": {"settled": []}
    }  # no body: {}


def test_the_python_handle_mirrors_the_control_api(sandbox, gateway):
    assert sandbox.now() == CLOCK
    reference = gateway.one(card_auth())["transactionreference"]
    report = sandbox.advance(by="P1D")
    assert report["settlement"]["settled"] == [reference] and report["days"] == 1
    assert sandbox.advance(to=datetime(2026, 2, 1))["to"] == "2026-02-01T00:00:00"
    with pytest.raises(ClockError, match="only moves forward"):
        sandbox.advance(to="2026-01-01T00:00:00")
    other = gateway.one(card_auth())["transactionreference"]
    assert sandbox.settle(all_pending=True) == {"settlement": {"settled": [other]}}
    assert sandbox.health()["now"] == "2026-02-01T00:00:00"


def test_a_killed_advance_is_caught_up_at_the_next_start(db_path):
    first = Sandbox(db_path, clock_start=CLOCK)
    answer = first.gateway.process({"request": [card_auth()]}, DEFAULT_ACCOUNT)
    reference = answer["response"][0]["transactionreference"]
    with first.store.write() as conn:  # the clock moved, then the process died before the daily jobs
        first.clock.set(conn, datetime(2026, 1, 20, 9, 0, 0))
    first.close()

    second = Sandbox(db_path)
    row = second.store.transaction(second.store.connection(), reference)
    assert row["settlestatus"] == "100"
    second.close()


def clocks(db_path) -> list[tuple]:
    return Database(db_path).rows("SELECT * FROM site_clocks ORDER BY sitereference")


@pytest.mark.parametrize(
    "payload, limit",
    [
        ({"to": "9999-12-31T00:00:00"}, "latest"),
        ({"to": "2100-01-01T00:00:00"}, "latest"),
        ({"by": "P99999999999999999999D"}, "max_move"),
        ({"by": "PT99999999999999999999H"}, "max_move"),
        ({"by": "P" + "9" * 5000 + "D"}, "max_move"),  # past Python's limit on converting digits
        ({"by": "P11Y"}, "max_move"),
        ({"by": "P121M"}, "max_move"),
        ({"by": "P3700D"}, "max_move"),
        ({"to": "2036-01-15T10:00:01"}, "max_move"),
    ],
)
def test_moves_past_a_limit_are_400_naming_it_and_change_nothing(gateway, db_path, payload, limit):
    gateway.one(card_auth())
    before, clocks_before = all_rows(db_path), clocks(db_path)
    response = gateway.http.post("/_sandbox/clock/advance", json=payload)
    assert response.status_code == 400
    answer = response.json()
    assert (
        answer["error"] == "bad request" and answer["limit"] == limit and f"limit {limit}" in answer["detail"]
    )
    assert all_rows(db_path) == before and clocks(db_path) == clocks_before  # no job ran, no clock moved
    assert gateway.http.get("/_sandbox/clock").json()["now"] == "2026-01-15T10:00:00"
    # The database opens again, and answers, beside the running sandbox.
    reopened = GatewayCore(db_path)
    try:
        answer = reopened.process(
            {
                "request": [
                    {
                        "requesttypedescriptions": ["TRANSACTIONQUERY"],
                        "filter": {"sitereference": [{"value": SITE}]},
                    }
                ]
            },
            DEFAULT_ACCOUNT,
        )
        assert answer["response"][0]["found"] == "1"
        assert reopened.clock.now() == CLOCK
    finally:
        reopened.close()


def test_the_python_handle_refuses_moves_past_the_limits(sandbox):
    with pytest.raises(ClockError, match="limit latest"):
        sandbox.advance(to=datetime(9999, 12, 31))
    with pytest.raises(ClockError, match="limit max_move"):
        sandbox.advance(by="P99999999999999999999D")
    assert sandbox.now() == CLOCK


def test_the_last_supported_instant_can_be_reached(tmp_path):
    late = Sandbox(tmp_path / "late.db", clock_start=datetime(2099, 12, 1))
    try:
        assert late.advance(to="2099-12-31T23:59:59")["days"] == 30
        with pytest.raises(ClockError, match="limit latest"):
            late.advance(by="PT1S")
    finally:
        late.close()


def days_each_job_ran(sandbox: Sandbox) -> dict[str, list[str]]:
    """Wrap the sandbox's daily jobs (their `next_day` kept) to record the days each one runs."""
    ran: dict[str, list[str]] = {}
    for index, job in enumerate(sandbox.gateway.daily_jobs):
        days = ran.setdefault(job.name, [])

        def run(context, day, _run=job.run, _days=days):
            _days.append(day.isoformat())
            return _run(context, day)

        sandbox.gateway.daily_jobs[index] = replace(job, run=run)
    return ran


def test_a_long_move_runs_only_the_days_with_work_and_marks_every_day(db_path):
    """A year's move with one AUTH and a quarterly subscription: the jobs run on the day after the
    AUTH's due date (settlement, then the subscription starts), on each payment's due date and the day
    after (its payment settles), on the day after each day that wrote (run without asking: it most
    often has work too), and on the last day, where every job's mark ends. The days between are
    skipped, and what they would have done is done: each payment on its due date, each settled."""
    sandbox = Sandbox(db_path, clock_start=CLOCK)
    ran = days_each_job_ran(sandbox)
    answer = sandbox.gateway.process(
        {"request": [{**card_auth(), **QUARTERLY}], "alias": DEFAULT_ACCOUNT.username}, DEFAULT_ACCOUNT
    )
    assert [r["errorcode"] for r in answer["response"]] == ["0", "0"]

    report = sandbox.advance(to="2027-01-15T10:00:00")

    payment_days = ["2026-02-01", "2026-05-01", "2026-08-01", "2026-11-01"]
    settling_days = ["2026-01-16", "2026-02-02", "2026-05-02", "2026-08-02", "2026-11-02"]
    after_settling = ["2026-01-17", "2026-02-03", "2026-05-03", "2026-08-03", "2026-11-03"]
    expected = sorted({*payment_days, *settling_days, *after_settling, "2027-01-15"})
    assert report["days"] == 365
    assert ran == {"settlement": expected, "subscriptions": expected, "cachetoken-expiry": expected}
    assert report["subscriptions"]["made"] == 4 and report["subscriptions"]["caught_up"] == 0
    assert len(report["settlement"]["settled"]) == 5  # the AUTH and the four payments
    payments = sandbox.store.connection().execute(
        "SELECT substr(transactionstartedtimestamp, 1, 10), settlestatus FROM transactions "
        "WHERE accounttypedescription = 'RECUR' AND requesttypedescription = 'AUTH' ORDER BY id"
    )
    assert [tuple(row) for row in payments] == [(day, "100") for day in payment_days]
    marks = Database(db_path).rows(
        "SELECT job, through FROM site_jobs WHERE sitereference = ? ORDER BY job", (SITE,)
    )
    assert [tuple(row) for row in marks] == [(name, "2027-01-15") for name in sorted(ran)]
    sandbox.close()


def test_a_job_that_cannot_say_its_next_day_runs_every_day(db_path):
    sandbox = Sandbox(db_path, clock_start=CLOCK)
    ran = days_each_job_ran(sandbox)
    sandbox.gateway.daily_jobs[0] = replace(sandbox.gateway.daily_jobs[0], next_day=None)
    sandbox.advance(by="P10D")
    assert all(len(days) == 10 for days in ran.values()), ran
    sandbox.close()


QUARTERLY = {
    "requesttypedescriptions": ["AUTH", "SUBSCRIPTION"],
    "subscriptiontype": "RECURRING",
    "subscriptionunit": "MONTH",
    "subscriptionfrequency": "3",
    "subscriptionnumber": "1",
    "subscriptionfinalnumber": "5",
    "subscriptionbegindate": "2026-02-01",
    "credentialsonfile": "1",
}


def test_a_record_kept_in_another_layout_is_settled_all_the_same_with_its_keys_in_order(db_path):
    """Settlement changes the kept record's `settlestatus` in the database (on PostgreSQL in the text
    json.dumps made); a record whose text is laid out otherwise is settled through the store's update."""
    sandbox = Sandbox(db_path, clock_start=CLOCK)
    answer = sandbox.gateway.process(
        {"request": [card_auth(), card_auth()], "alias": DEFAULT_ACCOUNT.username}, DEFAULT_ACCOUNT
    )
    plain, packed = (record["transactionreference"] for record in answer["response"])

    def kept(reference: str) -> dict:
        sql = "SELECT record FROM transactions WHERE transactionreference = ?"
        return json.loads(sandbox.store.connection().execute(sql, (reference,)).fetchone()[0])

    keys = {reference: list(kept(reference)) for reference in (plain, packed)}
    with sandbox.store.write() as conn:
        conn.execute(
            "UPDATE transactions SET record = ? WHERE transactionreference = ?",
            (json.dumps(kept(packed), separators=(",", ":")), packed),
        )

    report = sandbox.advance(by="P1D")

    assert report["settlement"]["settled"] == [plain, packed]
    for reference in (plain, packed):
        record = kept(reference)
        assert record["settlestatus"] == "100" and list(record) == keys[reference]
    sandbox.close()
