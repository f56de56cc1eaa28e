"""Subscription reports: tables of subscriptions and payments, revenue, churn, decline rates,
charts, and TRANSACTIONQUERY paging past the gateway's 500 records, against a sandbox on loopback."""

from __future__ import annotations

import matplotlib
import pandas as pd
import pytest

from gwkit.errors import GwkitError
from gwkit.querying import query_paged
from gwkit.report import subscriptions as reports
from gwkit.subscription import Subscription
from support.subscriptions import VISA

matplotlib.use("Agg")


def subscription_request(gw, index: int, **fields) -> dict:
    return gw.build_request(
        ["AUTH", "SUBSCRIPTION"],
        {
            "accounttypedescription": "ECOM",
            "baseamount": 1000,
            "orderreference": f"r-{index}",
            "pan": VISA,
            "expirydate": "12/2030",
            "securitycode": "123",
            "subscriptiontype": "RECURRING",
            "subscriptionunit": "MONTH",
            "subscriptionfrequency": 1,
            "subscriptionnumber": 1,
            "subscriptionfinalnumber": 0,
            "subscriptionbegindate": "2026-01-15",
            "credentialsonfile": 1,
            "transactionactive": 1,
            **fields,
        },
    )


@pytest.fixture
def portfolio(gw, sandbox):
    """Four kinds: 3 endless at 10.00, 1 stopped after two payments at 20.00, 1 suspended in March,
    1 whose first payment was declined, 1 whose March payment is declined (70000)."""
    kinds = [{}, {}, {}, {"baseamount": 2000, "subscriptionfinalnumber": 3}, {}, {"baseamount": 70000}, {}]
    records = gw.send([subscription_request(gw, i, **k) for i, k in enumerate(kinds)]).records
    subs = [Subscription(gw, records[i + 1], records[i]) for i in range(0, len(records), 2)]
    sandbox.advance(to="2026-03-01T09:00:00")  # Jan 15, Feb 15 paid
    subs[4].suspend()
    subs[6].set_amount(70000)
    sandbox.advance(to="2026-03-20T09:00:00")
    subs[6].set_amount(1000)
    sandbox.advance(to="2026-04-20T09:00:00")
    return subs


def test_payments_and_subscriptions_frames(gw, portfolio):
    subs, pays = reports.subscription_portfolio(gw)
    assert len(subs) == 7 and list(subs["state"].value_counts().sort_index().items()) == [
        ("pending", 0),
        ("scheduled", 4),
        ("suspended", 1),
        ("stopped", 1),
        ("declined", 1),
    ]
    assert pays.dtypes["number"] == "Int64" and pd.api.types.is_datetime64_any_dtype(pays["due_date"])
    assert len(pays) == 3 * 4 + 2 + 2 + 4 + 7  # endless x3, stopped, suspended, declined in March; 7 sign-ups
    assert pays["kind"].value_counts().to_dict() == {"sign-up": 7, "recurring": 20}
    row = pays[(pays["subscription"] == portfolio[6].reference) & (pays["number"] == 4)].iloc[0]
    assert row["outcome"] == "declined" and row["due_date"] == pd.Timestamp("2026-03-15")
    assert row["made_on"] == pd.Timestamp("2026-03-15") and row["baseamount"] == 70000
    stopped = subs.set_index("transactionreference").loc[portfolio[3].reference]
    assert stopped["state"] == "stopped" and pd.isna(stopped["next_due_date"])
    scheduled = subs.set_index("transactionreference").loc[portfolio[0].reference]
    assert scheduled["next_due_date"] == pd.Timestamp("2026-05-15") and scheduled["baseamount_major"] == 10.0


def test_revenue_churn_and_decline_rates(gw, portfolio):
    subs, pays = reports.subscription_portfolio(gw)
    revenue = reports.monthly_recurring_revenue(pays).set_index("month")
    # 6 running (the 70000 one never started): their sign-ups and first automated payments
    assert revenue.loc[pd.Period("2026-01"), ["revenue", "sign_up_revenue"]].tolist() == [2 * 70.0, 70.0]
    assert revenue.loc[pd.Period("2026-03"), ["revenue", "authorised", "declined"]].tolist() == [30.0, 3, 1]
    assert revenue.loc[pd.Period("2026-04"), "revenue"] == 40.0
    assert reports.current_mrr(subs).to_dict() == {"GBP": 40.0}
    assert reports.current_mrr(subs, pays).to_dict() == {"GBP": 40.0}  # the declined one paid again in April
    by_state = reports.revenue_by_state(subs, pays)
    assert (
        by_state.loc[(pd.Period("2026-02"), "GBP"), "stopped"] == 20.0
        and by_state.loc[(pd.Period("2026-02"), "GBP"), "suspended"] == 10.0
    )
    churn = reports.churn(subs, pays)
    assert churn.loc[pd.Period("2026-02"), ["paying", "churned"]].tolist() == [
        6,
        1,
    ]  # suspended after February
    assert churn.loc[pd.Period("2026-03"), "churned"] == 0
    rates = reports.decline_rates(pays)
    assert rates.loc[pd.Period("2026-03"), ["payments", "declined"]].tolist() == [4, 1]
    assert rates.loc[pd.Period("2026-03"), "decline_rate"] == pytest.approx(0.25)
    assert reports.decline_rates(pays, by="number").loc[4, "declined"] == 1


def test_refunds_of_payments_in_the_payments_revenue_and_finance_tables(gw, portfolio):
    refund = portfolio[0].refund_payment(2)  # January's payment, all of it
    assert (refund["requesttypedescription"], refund["baseamount"]) == ("REFUND", "1000")
    assert portfolio[1].refund_payment(3, baseamount=250)["baseamount"] == "250"  # part of February's
    with pytest.raises(GwkitError, match="Refund amount too great"):
        portfolio[1].refund_payment(3, baseamount=751)
    with pytest.raises(GwkitError, match="no payment 9"):
        portfolio[1].refund_payment(9)
    subs, pays = reports.subscription_portfolio(gw)
    refunded = pays[pays["refunded"] > 0].set_index(["subscription", "number"])["refunded"]
    assert refunded.to_dict() == {(portfolio[0].reference, 2): 1000, (portfolio[1].reference, 3): 250}
    assert pays["refunded"].dtype == "Int64" and pays["refunded_major"].sum() == 12.5
    revenue = reports.monthly_recurring_revenue(pays).set_index("month")
    assert revenue.loc[pd.Period("2026-01"), ["revenue", "refunded", "net"]].tolist() == [140.0, 10.0, 130.0]
    assert revenue.loc[pd.Period("2026-02"), ["revenue", "refunded", "net"]].tolist() == [70.0, 2.5, 67.5]
    finance = reports.subscription_finance(subs, pays)
    assert list(finance.columns) == reports.FINANCE_COLUMNS and finance.attrs["currency"] == "GBP"
    assert finance.loc[(pd.Period("2026-02"), "GBP"), ["net", "paying", "churned"]].tolist() == [67.5, 6, 1]
    assert finance.loc[(pd.Period("2026-03"), "GBP"), "failed_payments"] == 1
    assert finance["failed_payments"].sum() == (pays["outcome"] != "authorised").sum()
    assert finance["net"].sum() == pytest.approx(
        pays.loc[pays["outcome"] == "authorised", "baseamount_major"].sum() - pays["refunded_major"].sum()
    )
    one = reports.subscription_payments_frame(portfolio[0])
    assert (
        one.set_index("number").loc[2, "refunded"] == 1000 and one.set_index("number").loc[3, "refunded"] == 0
    )
    ax = reports.plot_subscription_finance(subs, pays)
    assert "GBP" in ax.get_ylabel() and ax.get_title() and ax.get_xlabel()
    assert [t.get_text() for t in ax.get_legend().get_texts()] == ["net revenue", "refunded"]


def test_charts_have_labelled_axes(gw, portfolio):
    subs, pays = reports.subscription_portfolio(gw)
    for ax in (
        reports.plot_revenue_by_state(subs, pays),
        reports.plot_subscriptions_by_state(subs),
        reports.plot_decline_rates(pays),
    ):
        assert ax.get_xlabel() and ax.get_ylabel() and ax.get_title()
    ax = reports.plot_revenue_by_state(subs, pays)
    assert "GBP" in ax.get_ylabel() and [t.get_text() for t in ax.get_legend().get_texts()] == [
        "scheduled",
        "suspended",
        "stopped",
    ]


def test_query_paged_pages_past_500_records(gw, sandbox):
    records = gw.send(
        [subscription_request(gw, i, subscriptionbegindate=f"2026-01-{11 + i % 20}") for i in range(60)]
    ).records
    assert all(r["errorcode"] == "0" for r in records)
    sandbox.advance(to="2026-10-31T09:00:00")  # 10 payments each: 600 records
    first = gw.transaction_query(accounttypedescription="RECUR", requesttypedescription="AUTH").record
    assert first["found"] == "600" and len(first.query_records) == 500
    found = query_paged(gw, {"accounttypedescription": "RECUR", "requesttypedescription": "AUTH"})
    assert len(found) == 600 == len({r["transactionreference"] for r in found})


def test_query_paged_says_when_one_day_holds_too_many(gw, sandbox):
    requests = [subscription_request(gw, i) for i in range(501)]
    for start in range(0, 501, 100):  # the sandbox takes at most 100 request objects per envelope
        gw.send(requests[start : start + 100]).raise_for_errors()
    sandbox.advance(to="2026-01-16T09:00:00")  # 501 payments on January 15
    with pytest.raises(GwkitError, match="narrow the filter"):
        query_paged(gw, {"accounttypedescription": "RECUR"})
