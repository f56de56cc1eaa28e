"""On the analyst's books (tests/support/books.py): subscription figures match their definitions,
support finds a payment by each key and sees everything that happened to it, and no table or chart
drops a currency silently."""

from __future__ import annotations

import matplotlib
import openpyxl
import pandas as pd
import pytest

import gwkit.report as report
from gwkit.notifications import Notification
from gwkit.report import subscriptions as reports
from gwkit.report.sample import card
from support.books import HYPERLINK

matplotlib.use("Agg")


@pytest.fixture(scope="module")
def portfolio(books):
    return reports.subscription_portfolio(books.gw)


@pytest.fixture(scope="module")
def transactions(books):
    return report.transactions_frame(books.gw, "2026-01-01")


def test_sign_up_payments_are_counted_in_revenue(portfolio, books):
    subs, pays = portfolio
    signups = pays[pays["kind"] == "sign-up"]
    assert len(signups) == 6 and set(signups["made_on"]) == {pd.Timestamp("2026-01-06")}
    finance = reports.subscription_finance(subs, pays)
    january = finance.loc[(pd.Period("2026-01"), "GBP")]
    # sign-ups (9.99 + 9.99 + 19.99 + 25.00 + 15.00) and the first automated payments, the same again
    assert january["sign_up_revenue"] == pytest.approx(79.97)
    assert january["revenue"] == pytest.approx(2 * 79.97)
    assert finance.loc[(pd.Period("2026-01"), "EUR"), "revenue"] == pytest.approx(2 * 14.99)
    assert january["refunded"] == 2.50  # of gym1's first automated payment
    # February: the declining one's 700.00 failed, so not revenue, and counted as a failed payment
    february = finance.loc[(pd.Period("2026-02"), "GBP")]
    assert february["revenue"] == pytest.approx(9.99 + 9.99 + 19.99 + 15.00)
    assert february["failed_payments"] == 1
    assert "sign-up payments and automated payments authorised" in finance.attrs["caption"]
    assert "sandbox's virtual clock" in finance.attrs["caption"]


def test_recurring_revenue_counts_what_is_expected_with_declining_apart(portfolio, books):
    subs, pays = portfolio
    table = reports.recurring_revenue(subs, pays).set_index("currencyiso3a")
    gbp = table.loc["GBP"]
    assert gbp["expected_monthly"] == pytest.approx(9.99 + 9.99 + 19.99)  # not the suspended 15.00
    assert (gbp["expected_subscriptions"], gbp["declining_subscriptions"]) == (3, 1)
    assert gbp["declining_monthly"] == 700.0 and gbp["not_counted"] == "1 suspended"
    assert table.loc["EUR", "expected_monthly"] == 14.99
    assert reports.current_mrr(subs, pays).round(2).to_dict() == {"EUR": 14.99, "GBP": 39.97}


def test_payments_due_between_two_days_in_major_units_with_status_in_words(portfolio, books):
    subs, pays = portfolio
    due = reports.due_between(subs, pays, "2026-02-01", "2026-03-31")
    by = {(r.orderreference, r.due_date.strftime("%m-%d")): r for r in due.itertuples()}
    assert len(due) == 12 and due["due_date"].is_monotonic_increasing
    assert by[("sub-gym1", "02-10")].status == "paid" and by[("sub-gym1", "02-10")].amount == 9.99
    assert by[("sub-declining", "02-10")].status.startswith("declined (70000")
    assert by[("sub-declining", "03-10")].status.startswith("expected, but the latest payment failed")
    assert by[("sub-leaving", "03-10")].status == "not taken while the subscription is suspended"
    assert by[("sub-euro", "03-10")].currencyiso3a == "EUR" and by[("sub-euro", "03-10")].status == "expected"
    assert "from 2026-02-01 to 2026-03-31" in due.attrs["caption"]
    with pytest.raises(ValueError, match="before start"):
        reports.due_between(subs, pays, "2026-03-01", "2026-02-01")


def test_find_by_each_key(books, transactions):
    refs = books.refs
    by_order = report.find(transactions, orderreference="18-9-17")
    assert list(by_order["transaction reference"]) == [refs["ana"]]
    assert by_order.loc[0, "status"] == "settled" and by_order.loc[0, "what"] == "payment"
    by_reference = report.find(transactions, transactionreference=refs["sam"])
    assert sorted(by_reference["what"]) == ["payment", "refund", "refund"]  # the payment and its refunds
    by_card = report.find(transactions, last4="0004")
    assert set(by_card["transaction reference"]) == {refs["ana"]} and by_card.loc[0, "card"].endswith("0004")
    by_email = report.find(transactions, email="JEAN@example.fr")
    assert set(by_email["currency"]) == {"EUR"} and refs["jean"] in set(by_email["transaction reference"])
    by_name = report.find(transactions, name="chloe")  # no accent, any case
    assert refs["chloe"] in set(by_name["transaction reference"]) and set(by_name["name"]) == {"Chloé Dubois"}
    assert "refund" in set(by_name["what"]) and "subscription payment" in set(by_name["what"])
    in_january = report.find(transactions, name="Dubois", start="2026-01-06", end="2026-01-06")
    assert refs["chloe"] not in set(in_january["transaction reference"])
    assert set(in_january["time"].dt.date.astype(str)) == {"2026-01-06"}
    by_formula = report.find(books.gw, orderreference=HYPERLINK)  # on the client: queried, 90 days back
    assert sorted(by_formula["what"]) == [
        "payment",
        "refund",
        "refund",
    ]  # refunds carry the order's reference
    assert (
        "card ending" in by_card.attrs["caption"] and "sandbox's virtual clock" in by_formula.attrs["caption"]
    )


def test_find_says_which_rule_a_key_breaks(transactions):
    with pytest.raises(ValueError, match="last4 must be the card's last four digits"):
        report.find(transactions, last4="11")
    with pytest.raises(ValueError, match="needs one of"):
        report.find(transactions)


def test_one_payment_with_everything_that_happened_to_it(books):
    view = report.payment_view(books.gw, books.refs["sam"], journal=books.journal)
    what = list(view.events["what happened"])
    assert what[0] == "Payment: settled" and view.events.loc[0, "amount"] == 25.99
    assert "Settled at the end of 2026-01-05" in what
    refunds = view.events[view.events["what happened"].str.startswith("Refund")]
    assert list(refunds["amount"]) == [-5.99, -10.0]
    html = view._repr_html_()
    pan = card("VISA", "authorised")
    assert f"{pan[:6]}######{pan[-4:]}" in html and "Sam" in html and pan not in html

    updated = report.payment_view(books.gw, books.refs["lowered"], journal=books.journal)
    assert "Updated: amount to settle set to £100.00: done" in list(updated.events["what happened"])

    signup = books.refs["signup-declining"]
    story = report.payment_view(books.gw, signup, journal=books.journal)
    events = list(story.events["what happened"])
    assert any(e.startswith("Subscription (its schedule)") for e in events)
    assert any(e.startswith("Subscription payment 3: declined (70000") for e in events)
    assert "sandbox's virtual clock" in story.events.attrs["caption"]


def test_one_payment_shows_its_notifications(books):
    arrived = Notification(
        {"transactionreference": books.refs["ana"], "notificationreference": "n-1"},
        verified=True,
        duplicate=False,
        answered=200,
        content_type="application/x-www-form-urlencoded",
    )
    view = report.payment_view(books.gw, books.refs["ana"], notifications=[arrived])
    noted = [e for e in view.events["what happened"] if e.startswith("Notification received")]
    assert len(noted) == 1 and noted[0].endswith("(wall clock): signature checked, answered 200")
    with pytest.raises(LookupError, match="transactionreference: no transaction"):
        report.payment_view(books.gw, "99-9-99")


def test_no_table_or_chart_drops_a_currency(transactions, portfolio):
    subs, pays = portfolio
    both = {"EUR", "GBP"}
    tables = {
        "amounts by day": report.amounts_by_day_table(transactions),
        "reconciliation": report.settlement_reconciliation(transactions),
        "subscription finance": reports.subscription_finance(subs, pays),
        "revenue by state": reports.revenue_by_state(subs, pays),
        "recurring revenue": reports.recurring_revenue(subs, pays),
        "due": reports.due_between(subs, pays, "2026-03-01", "2026-03-31"),
        "accounting": report.accounting_view(transactions).totals,
    }
    for name, table in tables.items():
        flat = table.reset_index()
        column = "currencyiso3a" if "currencyiso3a" in flat.columns else "currency"
        assert set(flat[column]) == both, name
        assert table.attrs.get("caption"), name
    for chart in (
        report.amounts_by_day(transactions),
        report.plot_reconciliation(transactions),
        reports.plot_subscription_finance(subs, pays),
        reports.plot_revenue_by_state(subs, pays),
    ):
        assert sorted(ax.get_title().split("(")[-1][:3] for ax in chart) == ["EUR", "GBP"]


def test_a_refunded_subscription_payment_is_due_paid_with_its_refund_in_money(portfolio):
    subs, pays = portfolio
    due = reports.due_between(subs, pays, "2026-01-10", "2026-01-10").set_index("orderreference")
    assert due.loc["sub-gym1", "status"] == "paid, £2.50 refunded"
    assert due.loc["sub-gym2", "status"] == "paid"


def test_a_finance_table_exports_with_its_month_and_currency(portfolio, tmp_path):
    finance = reports.subscription_finance(*portfolio)
    files = report.export(finance, tmp_path, "finance")
    lines = files["csv"].read_text(encoding="utf-8-sig").splitlines()
    assert lines[0].startswith('"Subscription finance per month and currency')  # quoted: it has commas
    assert lines[1].startswith("month,currencyiso3a,revenue,sign_up_revenue")
    # the month stays text (="2026-01": Excel would make it a day), euros with their two decimals
    assert lines[2].startswith('"=""2026-01""",EUR,29.98,14.99,')
    book = openpyxl.load_workbook(files["xlsx"])
    assert book.sheetnames == ["Summary", "EUR", "GBP"]
    gbp = [[c.value for c in row] for row in book["GBP"].iter_rows(min_row=2, max_row=3)]
    assert gbp[0][:3] == ["month", "currencyiso3a", "revenue (GBP)"] and gbp[1][:2] == ["2026-01", "GBP"]
    assert gbp[1][2] == pytest.approx(2 * 79.97)
