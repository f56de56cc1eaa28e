"""A subscription counted in days (what the official clients' tests send), seen through gwkit's
client, its schedule projection and the subscription reports."""

from __future__ import annotations

from datetime import date

from gwkit.report.subscriptions import current_mrr, payments_frame, subscriptions_frame
from gwkit.subscription import Subscription


def test_a_weekly_subscription_is_projected_paid_and_reported_in_days(sandbox, gw):
    sub = Subscription.create(
        gw,
        baseamount=700,
        orderreference="weekly",
        pan="4111111111111111",
        expirydate="12/2030",
        securitycode="123",
        subscriptionunit="DAY",
        subscriptionfrequency=7,
        subscriptionfinalnumber=0,
        subscriptionbegindate="2026-01-17",
        transactionactive=1,
    )
    assert sub.unit == "DAY"
    assert [(row["number"], row["due_date"]) for row in sub.schedule(3)] == [
        (2, date(2026, 1, 17)),
        (3, date(2026, 1, 24)),
        (4, date(2026, 1, 31)),
    ]
    sandbox.advance(to="2026-02-01T09:00:00")
    payments = sub.payments()
    assert sorted(p["transactionstartedtimestamp"][:10] for p in payments) == [
        "2026-01-17",
        "2026-01-24",
        "2026-01-31",
    ]
    frame = payments_frame([sub.refresh()], payments)
    assert [d.date() for d in frame.sort_values("number")["due_date"]] == [
        date(2026, 1, 17),
        date(2026, 1, 24),
        date(2026, 1, 31),
    ]
    subs = subscriptions_frame([sub], frame)
    assert subs["next_due_date"].iloc[0].date() == date(2026, 2, 7)
    # 7.00 a week is 7.00 * 365.25 / 12 / 7 a month
    assert round(float(current_mrr(subs).loc["GBP"]), 2) == round(7.00 * 365.25 / 12 / 7, 2)
