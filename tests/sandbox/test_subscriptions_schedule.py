"""Month-end scheduling (interface 3.1) as properties: the pure schedule functions, and the
engine's actual payments over the virtual clock against the schedule they must follow."""

from __future__ import annotations

import calendar
from datetime import date, datetime, timedelta

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gwkit.interface.schedule import due_date, payment_dates
from gwkit.sandbox import Sandbox
from gwkit.sandbox.gateway.subscriptions import Plan
from support.databases import SUBSCRIPTION_NUMBER

pytestmark = pytest.mark.both_stores  # each test of the engine on SQLite and on PostgreSQL

SITE = "test_gwkit12345"
begins = st.dates(min_value=date(1990, 1, 1), max_value=date(2200, 12, 31))
# Days 28 to 31 are where clamping happens: draw them often.
anchor_days = st.one_of(st.integers(28, 31), st.integers(1, 31))
frequencies = st.integers(1, 24)


def month_end_begin(year: int, month: int, day: int) -> date:
    return date(year, month, min(day, calendar.monthrange(year, month)[1]))


def oracle(begin: date, frequency: int, steps: int) -> date:
    """Walk month by month (never chaining clamped days): the plainest statement of the rule."""
    year, month = begin.year, begin.month
    for _ in range(steps * frequency):
        year, month = (year + 1, 1) if month == 12 else (year, month + 1)
    return date(year, month, min(begin.day, calendar.monthrange(year, month)[1]))


# -- the pure functions --------------------------------------------------------------------


@given(begin=begins, frequency=frequencies, first=st.integers(1, 50), steps=st.integers(0, 120))
def test_due_date_matches_the_month_walk(begin, frequency, first, steps):
    assert due_date(begin, frequency, first, first + steps) == oracle(begin, frequency, steps)


@given(
    year=st.integers(1990, 2200),
    month=st.integers(1, 12),
    day=anchor_days,
    frequency=frequencies,
    steps=st.integers(0, 120),
)
def test_month_end_anchor_clamps_and_returns(year, month, day, frequency, steps):
    begin = month_end_begin(year, month, day)
    due = due_date(begin, frequency, 1, 1 + steps)
    last_day = calendar.monthrange(due.year, due.month)[1]
    assert due.day == min(begin.day, last_day)  # clamped to short months, back on the anchor after
    assert (due.year - begin.year) * 12 + due.month - begin.month == steps * frequency


@given(begin=begins, frequency=frequencies, first=st.integers(1, 50), number=st.integers(1, 400))
def test_engine_and_client_schedules_agree(begin, frequency, first, number):
    """The engine's plan of a series without end gives the client's dates, and none past year 9999."""
    number = max(number, first)
    engine_due = Plan(begin, frequency, first, 0, first, "1", "settled").due_of(number)
    try:
        expected = due_date(begin, frequency, first, number)
    except ValueError:  # beyond year 9999
        assert engine_due is None
        return
    assert engine_due == expected.isoformat()


@given(
    begin=begins,
    frequency=frequencies,
    first=st.integers(1, 20),
    extra=st.integers(1, 40),
    horizon=st.integers(0, 2000),
)
def test_payment_dates_stop_at_the_final_number_and_the_horizon(begin, frequency, first, extra, horizon):
    final = first + extra - 1  # `extra` payments at most
    until = begin + timedelta(days=horizon)
    found = payment_dates(begin, frequency, first, final, until=until)
    assert [n for n, _ in found] == list(range(first, first + len(found)))
    assert all(d <= until for _, d in found) and len(found) <= extra
    days = [d for _, d in found]
    assert days == sorted(set(days))  # strictly increasing
    if len(found) < extra:  # cut by the horizon, not by the final number
        assert due_date(begin, frequency, first, first + len(found)) > until


def test_payment_dates_of_an_endless_subscription_need_a_bound():
    with pytest.raises(ValueError):
        payment_dates(date(2026, 1, 31), 1, 2, 0)
    assert payment_dates(date(2026, 1, 31), 1, 2, 0, limit=4) == [
        (2, date(2026, 1, 31)),
        (3, date(2026, 2, 28)),
        (4, date(2026, 3, 31)),
        (5, date(2026, 4, 30)),
    ]


# -- the engine's actual payments ----------------------------------------------------------


def subscription_request(begin: date, frequency: int, number: int, final: int, active: str) -> dict[str, str]:
    return {
        "requesttypedescriptions": ["AUTH", "SUBSCRIPTION"],
        "sitereference": SITE,
        "accounttypedescription": "ECOM",
        "currencyiso3a": "GBP",
        "baseamount": "1050",
        "orderreference": "property",
        "pan": "4111111111111111",
        "expirydate": "12/2099",
        "securitycode": "123",
        "subscriptiontype": "RECURRING",
        "subscriptionunit": "MONTH",
        "subscriptionfrequency": str(frequency),
        "subscriptionnumber": str(number),
        "subscriptionfinalnumber": str(final),
        "subscriptionbegindate": begin.isoformat(),
        "credentialsonfile": "1",
        "transactionactive": active,
    }


def create(sandbox: Sandbox, requests: list[dict[str, str]]) -> list[str]:
    account = sandbox.default_account
    answer = sandbox.gateway.process({"alias": account.username, "request": requests}, account)
    records = answer["response"]
    assert all(r["errorcode"] == "0" for r in records), records
    return [r["transactionreference"] for r in records if r["requesttypedescription"] == "SUBSCRIPTION"]


def made_payments(sandbox: Sandbox, reference: str) -> list[tuple[int, date]]:
    rows = sandbox.store.connection().execute(
        SUBSCRIPTION_NUMBER.map(
            lambda number: (
                f"SELECT {number}, transactionstartedtimestamp FROM transactions "
                "WHERE parenttransactionreference = ? AND requesttypedescription = 'AUTH' ORDER BY id"
            )
        ),
        (reference,),
    )
    return [(int(n), date.fromisoformat(ts[:10])) for n, ts in rows]


@pytest.fixture(scope="module")
def engine_sandbox(module_db_path):
    sandbox = Sandbox(module_db_path, clock_start=datetime(2026, 1, 1, 8, 0))
    yield sandbox
    sandbox.close()


plans = st.lists(
    st.tuples(
        st.integers(1, 14),  # months from now to the begin date
        anchor_days,
        st.integers(1, 13),
        st.integers(1, 5),  # frequency, number sent
        st.one_of(st.just(0), st.integers(0, 15)),  # payments wanted (0 with final 0: no end)
        st.sampled_from(["1", "2"]),
    ),
    min_size=1,
    max_size=6,
)


# PostgreSQL makes each day of a clock move a few network round trips: fewer plans are drawn there.
ENGINE_EXAMPLES = {"sqlite": 25, "postgresql": 8}


def test_engine_payments_equal_the_schedule(engine_sandbox, store_kind):
    """Whatever the begin date, frequency and final number, the engine pays exactly the schedule:
    the same numbers, each on its due date (the begin dates lie after today, so nothing is late)."""

    @settings(max_examples=ENGINE_EXAMPLES[store_kind], deadline=None)
    @given(plans=plans)
    def pays_the_schedule(plans):
        sandbox = engine_sandbox
        today = sandbox.clock.today()
        requests, expected_plans = [], []
        for months_ahead, day, frequency, number, wanted, active in plans:
            month_index = today.month - 1 + months_ahead
            begin = month_end_begin(today.year + month_index // 12, month_index % 12 + 1, day)
            final = 0 if wanted == 0 else number + wanted
            requests.append(subscription_request(begin, frequency, number, final, active))
            expected_plans.append((begin, frequency, number + 1, final))
        references = create(sandbox, requests)
        horizon = sandbox.advance(by="P26M")
        until = sandbox.clock.today()
        assert horizon["subscriptions"]["declined"] == 0
        for reference, (begin, frequency, first, final) in zip(references, expected_plans, strict=True):
            assert made_payments(sandbox, reference) == payment_dates(
                begin, frequency, first, final, until=until
            )

    pays_the_schedule()


def test_engine_over_five_years_on_every_month_end_anchor(db_path):
    """Anchors 28 to 31 with frequencies 1, 2, 3, 5 and 12 across a leap year, final numbers
    bounded and endless: every payment on its clamped date, none missing, none twice."""
    sandbox = Sandbox(db_path, clock_start=datetime(2026, 1, 1, 8, 0))
    cases = [
        (date(2026, 1, day), frequency, final)
        for day in (28, 29, 30, 31)
        for frequency in (1, 2, 3, 5, 12)
        for final in (0, 9)
    ]
    references = create(sandbox, [subscription_request(b, f, 1, n, "2") for b, f, n in cases])
    sandbox.advance(to="2031-01-01T08:00:00")
    for reference, (begin, frequency, final) in zip(references, cases, strict=True):
        expected = payment_dates(begin, frequency, 2, final, until=date(2031, 1, 1))
        assert made_payments(sandbox, reference) == expected, (begin, frequency, final)
        if begin.day == 31 and frequency == 1 and final == 0:
            days = [d for _, d in expected]
            assert date(2028, 2, 29) in days and date(2028, 3, 31) in days and date(2027, 2, 28) in days
    sandbox.close()


@given(
    begin=st.dates(min_value=date(1990, 1, 1), max_value=date(2200, 12, 31)),
    frequency=st.integers(1, 400),
    first=st.integers(1, 50),
    steps=st.integers(0, 400),
)
def test_a_day_unit_counts_days_from_the_begin_date(begin, frequency, first, steps):
    assert due_date(begin, frequency, first, first + steps, "DAY") == begin + timedelta(
        days=steps * frequency
    )
    dates = payment_dates(begin, frequency, first, first + 3, unit="DAY")
    assert [d for _, d in dates] == [begin + timedelta(days=k * frequency) for k in range(4)]
