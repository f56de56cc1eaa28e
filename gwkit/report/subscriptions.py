"""Subscriptions and their payments as pandas tables, and the numbers finance asks for.

    subs, pays = gwkit.report.subscription_portfolio(gw)   # every subscription of the site, every payment
    monthly_recurring_revenue(pays)                         # recurring revenue, refunded and net per month
    subscription_finance(subs, pays)                        # revenue, refunds, net, failed payments, churn per month
    revenue_by_state(subs, pays); churn(subs, pays); decline_rates(pays)
    plot_revenue_by_state(subs, pays); plot_subscription_finance(subs, pays)   # axes labelled

`subscription_payments_frame(sub)` and `schedule_frame(sub)` show one subscription.
`subscriptions_frame` has one row per subscription (its SUBSCRIPTION record, typed from the spec
tables, plus `state` and `next_due_date`); `payments_frame` one row per automated payment:
`number`, `due_date`, `made_on`, amount, `outcome`, `refunded` (what REFUNDs gave back of it). Both
are built from what TRANSACTIONQUERY answers, so they work against the real gateway as against the
sandbox.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping
from datetime import date
from typing import Any

import pandas as pd

from ..interface.codes import record_ok
from ..interface.schedule import MONTHS_PER_UNIT, due_date
from ..protocols import GatewayClient
from ..querying import query_paged
from ..subscription import PENDING, SCHEDULED, STATES, Subscription, fetch_subscriptions
from .charts import _axes, _main_currency, labelled
from .frames import records_frame

SUBSCRIPTION_COLUMNS = [
    "transactionreference",
    "orderreference",
    "transactionactive",
    "baseamount",
    "currencyiso3a",
    "subscriptionfrequency",
    "subscriptionunit",
    "subscriptionbegindate",
    "subscriptionnumber",
    "subscriptionfinalnumber",
    "parenttransactionreference",
    "maskedpan",
    "paymenttypedescription",
]
PAYMENT_COLUMNS = [
    "subscription",
    "number",
    "due_date",
    "made_on",
    "baseamount",
    "baseamount_major",
    "currencyiso3a",
    "outcome",
    "errorcode",
    "errormessage",
    "transactionreference",
    "settlestatus",
    "refunded",
    "refunded_major",
]
AUTHORISED, DECLINED, FAILED = "authorised", "declined", "failed"
STATE_COLOURS = {
    SCHEDULED: "#1b7f3b",
    PENDING: "#1f77b4",
    "suspended": "#ff7f0e",
    "stopped": "#7f7f7f",
    "declined": "#b00020",
}


def _as_subscriptions(items: Iterable[Subscription | Mapping[str, Any]]) -> list[Subscription]:
    return [item if isinstance(item, Subscription) else Subscription(None, item) for item in items]


def subscriptions_frame(
    subscriptions: Iterable[Subscription | Mapping[str, Any]], payments: pd.DataFrame | None = None
) -> pd.DataFrame:
    """One row per subscription: its SUBSCRIPTION record's fields and `state`; with the
    `payments_frame` of its payments also `next_due_date`, when the next payment falls due while
    the subscription is scheduled or pending."""
    subs = _as_subscriptions(subscriptions)
    frame = records_frame([dict(s.record) for s in subs], columns=SUBSCRIPTION_COLUMNS)
    states = [s.state for s in subs]
    frame.insert(1, "state", pd.Categorical(states, categories=list(STATES)))
    if payments is not None:
        made = payments.groupby("subscription").size()
        frame["next_due_date"] = pd.to_datetime(
            pd.Series(
                [_next_due(s, state, int(made.get(s.reference, 0))) for s, state in zip(subs, states)],
                dtype="object",
            )
        )
    return frame


def _next_due(sub: Subscription, state: str, made: int) -> date | None:
    if state not in (SCHEDULED, PENDING):
        return None
    return due_date(sub.begin_date, sub.frequency, sub.next_number - made, sub.next_number, sub.unit)


def payments_frame(
    subscriptions: Iterable[Subscription | Mapping[str, Any]],
    payments: Iterable[Mapping[str, Any]],
    refunds: Iterable[Mapping[str, Any]] = (),
) -> pd.DataFrame:
    """One row per payment of the given subscriptions, by subscription and number.

    `due_date` comes from the subscription's schedule (3.1), counted from the first automated
    payment's number (the lowest made: the engine never skips one).
    `outcome` is authorised, declined (70000) or failed (any other error).
    `refunded` is what the successful REFUND records among `refunds` gave back of each payment."""
    refunded = refunded_by_parent(refunds)
    subs = {s.reference: s for s in _as_subscriptions(subscriptions)}
    by_subscription: dict[str, list[Mapping[str, Any]]] = defaultdict(list)
    for payment in payments:
        parent = payment.get("parenttransactionreference")
        if parent in subs and payment.get("requesttypedescription", "AUTH") == "AUTH":
            by_subscription[parent].append(payment)
    rows: list[dict[str, Any]] = []
    for reference, sub in subs.items():
        made = sorted(by_subscription.get(reference, []), key=lambda p: int(p.get("subscriptionnumber") or 0))
        # Numbers run on from the first automated payment, none skipped.
        first = int(made[0].get("subscriptionnumber") or 0) if made else sub.next_number
        for payment in made:
            number = int(payment.get("subscriptionnumber") or 0)
            rows.append(
                {
                    "subscription": reference,
                    "number": number,
                    "due_date": due_date(sub.begin_date, sub.frequency, first, number, sub.unit)
                    if number >= first
                    else None,
                    "made_on": str(payment.get("transactionstartedtimestamp", ""))[:10] or None,
                    "baseamount": payment.get("baseamount"),
                    "currencyiso3a": payment.get("currencyiso3a"),
                    "outcome": _outcome(payment),
                    "errorcode": payment.get("errorcode"),
                    "errormessage": payment.get("errormessage"),
                    "transactionreference": payment.get("transactionreference"),
                    "settlestatus": payment.get("settlestatus"),
                    "refunded": refunded.get(payment.get("transactionreference", ""), 0),
                }
            )
    return _typed_payments(rows)


def refunded_by_parent(refunds: Iterable[Mapping[str, Any]]) -> dict[str, int]:
    """Base units refunded per parent reference: successful REFUND records, each for what it settles for."""
    totals: dict[str, int] = defaultdict(int)
    for refund in refunds:
        if refund.get("requesttypedescription") == "REFUND" and record_ok(refund):
            amount = refund.get("settlebaseamount") or refund.get("baseamount") or 0
            totals[str(refund.get("parenttransactionreference"))] += int(amount)
    return dict(totals)


def subscription_payments_frame(subscription: Subscription) -> pd.DataFrame:
    """One row per payment of one subscription (refetched first): number, due date, date made,
    amount, outcome, refunded."""
    payments = subscription.payments()
    references = [p["transactionreference"] for p in payments]
    refunds = [
        r
        for start in range(0, len(references), 100)  # 100 references to a query, as fetch_subscriptions
        for r in query_paged(
            subscription.client,
            {
                "requesttypedescription": "REFUND",
                "parenttransactionreference": references[start : start + 100],
            },
        )
    ]
    return payments_frame([subscription.refresh()], payments, refunds)


def schedule_frame(
    subscription: Subscription,
    periods: int = 12,
    *,
    until: date | None = None,
    payments: Iterable[Mapping[str, Any]] | None = None,
) -> pd.DataFrame:
    """`Subscription.schedule` as a typed DataFrame: number, due_date, baseamount, currencyiso3a,
    expected."""
    rows = subscription.schedule(periods, until=until, payments=None if payments is None else list(payments))
    return pd.DataFrame(
        {
            "number": pd.array([r["number"] for r in rows], dtype="Int64"),
            "due_date": pd.to_datetime(pd.Series([r["due_date"] for r in rows], dtype="object")),
            "baseamount": pd.array([r["baseamount"] for r in rows], dtype="Int64"),
            "currencyiso3a": [r["currencyiso3a"] for r in rows],
            "expected": [r["expected"] for r in rows],
        }
    )


def _outcome(payment: Mapping[str, Any]) -> str:
    if record_ok(payment):
        return AUTHORISED
    return DECLINED if str(payment.get("errorcode")) == "70000" else FAILED


def _typed_payments(rows: list[dict[str, Any]]) -> pd.DataFrame:
    frame = records_frame(
        [
            {
                "baseamount": r["baseamount"],
                "currencyiso3a": r["currencyiso3a"],
                "errorcode": r["errorcode"],
                "settlestatus": r["settlestatus"],
            }
            for r in rows
        ],
        columns=["baseamount", "currencyiso3a", "errorcode", "settlestatus"],
    )
    refunds = records_frame(
        [{"baseamount": str(r["refunded"]), "currencyiso3a": r["currencyiso3a"]} for r in rows],
        columns=["baseamount", "currencyiso3a"],
    )
    return pd.DataFrame(
        {
            "subscription": pd.array([r["subscription"] for r in rows], dtype="string"),
            "number": pd.array([r["number"] for r in rows], dtype="Int64"),
            "due_date": pd.to_datetime(pd.Series([r["due_date"] for r in rows], dtype="object")),
            "made_on": pd.to_datetime(pd.Series([r["made_on"] for r in rows], dtype="object")),
            "baseamount": frame["baseamount"],
            "baseamount_major": frame["baseamount_major"],
            "currencyiso3a": frame["currencyiso3a"],
            "outcome": pd.Categorical(
                [r["outcome"] for r in rows], categories=[AUTHORISED, DECLINED, FAILED]
            ),
            "errorcode": frame["errorcode"],
            "errormessage": pd.array([r["errormessage"] for r in rows], dtype="string"),
            "transactionreference": pd.array([r["transactionreference"] for r in rows], dtype="string"),
            "settlestatus": frame["settlestatus"],
            "refunded": refunds["baseamount"].fillna(0),
            "refunded_major": refunds["baseamount_major"].fillna(0.0),
        },
        columns=PAYMENT_COLUMNS,
    )


def subscription_portfolio(
    client: GatewayClient, references: Iterable[str] | None = None
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(subscriptions, payments) of the client's site, or of the subscriptions named by their
    references, fetched with TRANSACTIONQUERY (paged past 500 records)."""
    subs = fetch_subscriptions(client, references)
    payments = query_paged(client, {"accounttypedescription": "RECUR", "requesttypedescription": "AUTH"})
    refunds = query_paged(client, {"accounttypedescription": "RECUR", "requesttypedescription": "REFUND"})
    pays = payments_frame(subs, payments, refunds)
    return subscriptions_frame(subs, pays), pays


# -- analysis -----------------------------------------------------------------------------------


def _month(series: pd.Series) -> pd.Series:
    return series.dt.to_period("M")


MRR_COLUMNS = ["month", "currencyiso3a", "revenue", "refunded", "net", "authorised", "declined"]


def monthly_recurring_revenue(payments: pd.DataFrame) -> pd.DataFrame:
    """Per month the payments were made and currency: authorised revenue, what was refunded of those
    payments and the net (major units), the number of payments authorised and declined (any
    outcome but authorised: the failed payments).

    A refund counts in the month of the payment it gives back, so `net` is what that month's
    payments finally brought in."""
    if payments.empty:
        return pd.DataFrame(columns=MRR_COLUMNS)
    data = payments.assign(
        month=_month(payments["made_on"]),
        authorised=(payments["outcome"] == AUTHORISED).astype(int),
        declined=(payments["outcome"] != AUTHORISED).astype(int),
    )
    data["revenue"] = data["baseamount_major"].where(data["authorised"] == 1, 0.0)
    data["refunded"] = data["refunded_major"] if "refunded_major" in data.columns else 0.0
    table = (
        data.groupby(["month", "currencyiso3a"], observed=True)[
            ["revenue", "refunded", "authorised", "declined"]
        ]
        .sum()
        .reset_index()
    )
    table["net"] = table["revenue"] - table["refunded"]
    return table.reindex(columns=MRR_COLUMNS)


def current_mrr(subscriptions: pd.DataFrame) -> pd.Series:
    """Monthly recurring revenue now, per currency: each scheduled subscription's amount (major units)
    divided by its frequency in months (a DAY unit counted as 12/365.25 of a month)."""
    scheduled = subscriptions[subscriptions["state"] == SCHEDULED]
    months_per_unit = scheduled["subscriptionunit"].astype("object").map(MONTHS_PER_UNIT).fillna(1.0)
    monthly = scheduled["baseamount_major"] / (
        scheduled["subscriptionfrequency"].astype("float64") * months_per_unit
    )
    return monthly.groupby(scheduled["currencyiso3a"], observed=True).sum().rename("mrr")


def revenue_by_state(
    subscriptions: pd.DataFrame, payments: pd.DataFrame, currency: str | None = None
) -> pd.DataFrame:
    """Authorised revenue (major units) per month (rows) and the subscriptions' present state
    (columns), in one currency (default: the most frequent)."""
    currency = currency or _main_currency(payments["currencyiso3a"], "no payments with a currency")
    paid = payments[(payments["outcome"] == AUTHORISED) & (payments["currencyiso3a"] == currency)]
    states = subscriptions.set_index("transactionreference")["state"]
    data = paid.assign(
        month=_month(paid["made_on"]),
        state=paid["subscription"].map(states).astype(pd.CategoricalDtype(list(STATES))),
    )
    table = data.pivot_table(
        index="month",
        columns="state",
        values="baseamount_major",
        aggfunc="sum",
        fill_value=0.0,
        observed=False,
    )
    table = table.loc[:, table.sum() > 0] if not table.empty else table
    table.attrs["currency"] = currency
    return table


def churn(subscriptions: pd.DataFrame, payments: pd.DataFrame) -> pd.DataFrame:
    """Churn through deactivation, per month: subscriptions that paid that month (`paying`), those of
    them now inactive (transactionactive 0) whose last payment it was (`churned`), and the rate.

    The gateway records no date of deactivation, so a deactivated subscription counts as churned in
    the month of its last payment."""
    if payments.empty:
        return pd.DataFrame(columns=["paying", "churned", "churn_rate"])
    paid = payments[payments["outcome"] == AUTHORISED].assign(month=lambda f: _month(f["made_on"]))
    paying = paid.groupby("month")["subscription"].nunique()
    inactive = set(subscriptions.loc[subscriptions["transactionactive"] == "0", "transactionreference"])
    last = paid.groupby("subscription")["month"].max()
    churned = last[last.index.isin(inactive)].value_counts()
    table = pd.DataFrame({"paying": paying}).assign(churned=churned).fillna({"churned": 0})
    table["churned"] = table["churned"].astype(int)
    table["churn_rate"] = table["churned"] / table["paying"]
    return table


FINANCE_COLUMNS = ["revenue", "refunded", "net", "paying", "failed_payments", "churned", "churn_rate"]


def subscription_finance(
    subscriptions: pd.DataFrame, payments: pd.DataFrame, currency: str | None = None
) -> pd.DataFrame:
    """Per month, in one currency (default: the most frequent): recurring revenue, refunded and net
    (major units, as `monthly_recurring_revenue`), subscriptions paying, failed payments (declined or
    failed), churned subscriptions and the churn rate (as `churn`)."""
    if payments.empty:
        return pd.DataFrame(columns=FINANCE_COLUMNS, index=pd.PeriodIndex([], freq="M", name="month"))
    currency = currency or _main_currency(payments["currencyiso3a"], "no payments with a currency")
    mine = payments[payments["currencyiso3a"] == currency]
    money = monthly_recurring_revenue(mine).set_index("month")
    table = money[["revenue", "refunded", "net"]].join(churn(subscriptions, mine), how="left")
    table = table.assign(failed_payments=money["declined"]).fillna(
        {"paying": 0, "churned": 0, "churn_rate": 0.0}
    )
    table = table.astype({"paying": "int64", "churned": "int64", "failed_payments": "int64"})
    table.index.name = "month"
    table.attrs["currency"] = currency
    return table[FINANCE_COLUMNS]


def decline_rates(payments: pd.DataFrame, by: str = "month") -> pd.DataFrame:
    """Payments, declined (any non-authorised outcome) and the rate, per month made (`by="month"`)
    or per payment number (`by="number"`)."""
    if by not in ("month", "number"):
        raise ValueError("by must be 'month' or 'number'")
    key = _month(payments["made_on"]) if by == "month" else payments["number"]
    declined = (payments["outcome"] != AUTHORISED).astype(int)
    table = pd.DataFrame({"payments": declined.groupby(key).size(), "declined": declined.groupby(key).sum()})
    table.index.name = by
    table["decline_rate"] = table["declined"] / table["payments"]
    return table


# -- charts -------------------------------------------------------------------------------------


def plot_revenue_by_state(
    subscriptions: pd.DataFrame, payments: pd.DataFrame, *, currency: str | None = None, ax: Any = None
) -> Any:
    """Stacked bars: authorised recurring revenue per month, by the subscriptions' state now."""
    table = revenue_by_state(subscriptions, payments, currency)
    if table.empty:
        raise ValueError("no authorised payments to chart")
    currency = table.attrs["currency"]
    table.index = table.index.astype(str)
    colours = [STATE_COLOURS.get(str(c), "#999999") for c in table.columns]
    ax = table.plot.bar(stacked=True, ax=_axes(ax, (9, 4)), rot=45, color=colours)
    return labelled(
        ax,
        f"Recurring revenue by month and subscription state ({currency})",
        "Month the payment was made",
        f"Authorised revenue ({currency}, major units)",
        legend="State now",
    )


def plot_subscription_finance(
    subscriptions: pd.DataFrame, payments: pd.DataFrame, *, currency: str | None = None, ax: Any = None
) -> Any:
    """Bars per month: net recurring revenue (green) and refunded (red) stacked to the revenue; the
    failed payments as a line on a second axis (count)."""
    table = subscription_finance(subscriptions, payments, currency)
    if table.empty:
        raise ValueError("no subscription payments to chart")
    currency = table.attrs["currency"]
    shown = table[["net", "refunded"]].rename(columns={"net": "net revenue", "refunded": "refunded"})
    shown.index = shown.index.astype(str)
    ax = shown.plot.bar(stacked=True, ax=_axes(ax, (9, 4)), rot=45, color=["#1b7f3b", "#b00020"])
    failures = ax.twinx()
    failures.plot(
        range(len(table)),
        table["failed_payments"].to_numpy(),
        color="#ff7f0e",
        marker="o",
        label="failed payments",
    )
    failures.set_ylabel("Failed payments (count)")
    failures.set_ylim(bottom=0)
    failures.yaxis.get_major_locator().set_params(integer=True)
    failures.legend(loc="upper left", bbox_to_anchor=(1.01, 1))  # beside the plot, never over the data
    return labelled(
        ax,
        f"Recurring revenue, refunds and failed payments by month ({currency})",
        "Month the payment was made",
        f"Revenue ({currency}, major units)",
        legend="Money",
    )


def plot_subscriptions_by_state(subscriptions: pd.DataFrame, *, ax: Any = None) -> Any:
    """Bars: how many subscriptions are in each state."""
    counts = subscriptions["state"].value_counts().reindex(list(STATES), fill_value=0)
    ax = counts.plot.bar(ax=_axes(ax, (6, 3)), rot=0, color=[STATE_COLOURS[s] for s in counts.index])
    return labelled(ax, "Subscriptions by state", "State", "Number of subscriptions", integer_axis="y")


def plot_decline_rates(payments: pd.DataFrame, *, ax: Any = None) -> Any:
    """Line: the share of payments declined, per month."""
    table = decline_rates(payments)
    series = table["decline_rate"] * 100
    series.index = series.index.astype(str)
    ax = series.plot(ax=_axes(ax, (8, 3)), marker="o", color="#b00020")
    ax.set_ylim(bottom=0)
    return labelled(
        ax, "Declined subscription payments", "Month the payment was made", "Declined (% of payments)"
    )
