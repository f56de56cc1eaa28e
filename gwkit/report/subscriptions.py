"""Subscriptions and their payments as pandas tables, and the numbers finance asks for.

    subs, pays = gwkit.report.subscription_portfolio(gw)   # every subscription of the site, every payment
    monthly_recurring_revenue(pays)                         # revenue (sign-ups included), refunded, net per month
    subscription_finance(subs, pays)                        # revenue, refunds, net, failed payments, churn per month
    recurring_revenue(subs, pays)                           # expected per month, declining subscriptions apart
    due_between(subs, pays, "2027-02-01", "2027-02-28")     # each payment due, amount and status in words
    revenue_by_state(subs, pays); churn(subs, pays); decline_rates(pays)
    plot_revenue_by_state(subs, pays); plot_subscription_finance(subs, pays)   # axes labelled

`subscription_payments_frame(sub)` and `schedule_frame(sub)` show one subscription.
`subscriptions_frame` has one row per subscription (its SUBSCRIPTION record, typed from the spec
tables, plus `state` and `next_due_date`); `payments_frame` one row per payment (the automated
ones; `subscription_portfolio` adds each sign-up payment): `kind` (sign-up or recurring), `number`, `due_date`, `made_on`, amount, `outcome`, `refunded` (what
REFUNDs gave back of it). Every table has a row per currency (never added together). Both
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
from ..interface.currency import format_money
from ..interface.schedule import MONTHS_PER_UNIT, due_date, payment_dates
from ..protocols import GatewayClient
from ..querying import query_paged
from ..subscription import PENDING, SCHEDULED, STATES, Subscription, fetch_subscriptions
from .charts import _axes, _panels, currencies_of, labelled
from .frames import MONEY_COLUMNS, records_frame, remember_one_currency
from .timing import REPORT_TIME, captioned, report_time, time_of

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
    "kind",
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
SIGN_UP, RECURRING = "sign-up", "recurring"
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
                [
                    _next_due(s, state, int(made.get(s.reference, 0)))
                    for s, state in zip(subs, states, strict=True)
                ],
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
    *,
    signups: bool = False,
) -> pd.DataFrame:
    """One row per payment of the given subscriptions, by subscription and number.

    `kind` is `recurring` (an automated payment) or `sign-up` (the AUTH the customer signed up
    with, the subscription's parent: with `signups=True`, for subscriptions that know it); a
    sign-up is numbered just before the first automated payment and due the day it was made.
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
        if signups and sub.auth is not None:
            made_on = str(sub.auth.get("transactionstartedtimestamp", ""))[:10] or None
            rows.append(_payment_row(reference, SIGN_UP, first - 1, made_on, sub.auth, refunded))
        for payment in made:
            number = int(payment.get("subscriptionnumber") or 0)
            rows.append(
                {
                    "subscription": reference,
                    "kind": RECURRING,
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


def _payment_row(
    reference: str,
    kind: str,
    number: int,
    due: str | None,
    payment: Mapping[str, Any],
    refunded: dict[str, int],
) -> dict[str, Any]:
    return {
        "subscription": reference,
        "kind": kind,
        "number": number,
        "due_date": due,
        "made_on": due,
        "baseamount": payment.get("baseamount"),
        "currencyiso3a": payment.get("currencyiso3a"),
        "outcome": _outcome(payment),
        "errorcode": payment.get("errorcode"),
        "errormessage": payment.get("errormessage"),
        "transactionreference": payment.get("transactionreference"),
        "settlestatus": payment.get("settlestatus"),
        "refunded": refunded.get(payment.get("transactionreference", ""), 0),
    }


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
            subscription.require_client(),
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
    return remember_one_currency(
        pd.DataFrame(
            {
                "number": pd.array([r["number"] for r in rows], dtype="Int64"),
                "due_date": pd.to_datetime(pd.Series([r["due_date"] for r in rows], dtype="object")),
                "baseamount": pd.array([r["baseamount"] for r in rows], dtype="Int64"),
                "currencyiso3a": [r["currencyiso3a"] for r in rows],
                "expected": [r["expected"] for r in rows],
            }
        )
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
    table = pd.DataFrame(
        {
            "subscription": pd.array([r["subscription"] for r in rows], dtype="string"),
            "kind": pd.Categorical([r["kind"] for r in rows], categories=[SIGN_UP, RECURRING]),
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
    return remember_one_currency(table)


def subscription_portfolio(
    client: GatewayClient, references: Iterable[str] | None = None
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(subscriptions, payments) of the client's site, or of the subscriptions named by their
    references, fetched with TRANSACTIONQUERY (paged past 500 records). The payments include each
    subscription's sign-up payment (`kind` sign-up) and what was refunded of it. Both frames carry
    the client's clock (the sandbox's virtual clock, else the wall clock) for the reports' captions."""
    subs = fetch_subscriptions(client, references)
    payments = query_paged(client, {"accounttypedescription": "RECUR", "requesttypedescription": "AUTH"})
    refunds = query_paged(client, {"accounttypedescription": "RECUR", "requesttypedescription": "REFUND"})
    signups = [s.auth["transactionreference"] for s in subs if s.auth is not None]
    refunds += [
        r
        for start in range(0, len(signups), 100)  # 100 references to a query, as fetch_subscriptions
        for r in query_paged(
            client,
            {"requesttypedescription": "REFUND", "parenttransactionreference": signups[start : start + 100]},
        )
    ]
    pays = payments_frame(subs, payments, refunds, signups=True)
    subscriptions = subscriptions_frame(subs, pays[pays["kind"] == RECURRING])
    when = report_time(client).as_attrs()
    subscriptions.attrs[REPORT_TIME] = pays.attrs[REPORT_TIME] = when
    return subscriptions, pays


# -- analysis -----------------------------------------------------------------------------------


def _month(series: pd.Series) -> pd.Series:
    return series.dt.to_period("M")


MRR_COLUMNS = [
    "month",
    "currencyiso3a",
    "revenue",
    "sign_up_revenue",
    "refunded",
    "net",
    "authorised",
    "declined",
]
# What each figure means: in docs/reporting.md and the tables' captions.
FINANCE_MEANINGS = {
    "revenue": "what subscribers paid that month: sign-up payments and automated payments authorised",
    "sign_up_revenue": "the part of revenue that was sign-up payments",
    "refunded": "what was given back of that month's payments (counted in the month of the payment)",
    "net": "revenue less refunded",
    "paying": "subscriptions with a payment authorised that month",
    "failed_payments": "payments declined or failed that month",
    "churned": "subscriptions deactivated after their last payment, which was that month",
    "churn_rate": "churned / paying",
}


def monthly_recurring_revenue(payments: pd.DataFrame) -> pd.DataFrame:
    """Per month the payments were made and currency: revenue (sign-up and automated payments
    authorised), the part that was sign-ups, what was refunded of those payments and the net (major
    units), the number of payments authorised and declined (any outcome but authorised: the failed
    payments).

    A refund counts in the month of the payment it gives back, so `net` is what that month's
    payments finally brought in."""
    if payments.empty:
        return pd.DataFrame(columns=MRR_COLUMNS)
    kinds = payments["kind"] if "kind" in payments.columns else pd.Series(RECURRING, index=payments.index)
    data = payments.assign(
        month=_month(payments["made_on"]),
        authorised=(payments["outcome"] == AUTHORISED).astype(int),
        declined=(payments["outcome"] != AUTHORISED).astype(int),
    )
    data["revenue"] = data["baseamount_major"].where(data["authorised"] == 1, 0.0)
    data["sign_up_revenue"] = data["revenue"].where(kinds.astype("string") == SIGN_UP, 0.0)
    data["refunded"] = data["refunded_major"] if "refunded_major" in data.columns else 0.0
    table = (
        data.groupby(["month", "currencyiso3a"], observed=True)[
            ["revenue", "sign_up_revenue", "refunded", "authorised", "declined"]
        ]
        .sum()
        .reset_index()
    )
    table["net"] = table["revenue"] - table["refunded"]
    table = table.reindex(columns=MRR_COLUMNS)
    table.attrs[MONEY_COLUMNS] = ["revenue", "sign_up_revenue", "refunded", "net"]
    return captioned(table, "Subscription revenue per month and currency, sign-ups included", payments)


RECURRING_COLUMNS = [
    "currencyiso3a",
    "expected_monthly",
    "expected_subscriptions",
    "declining_monthly",
    "declining_subscriptions",
    "not_counted",
]


def _monthly(subscriptions: pd.DataFrame) -> pd.Series:
    """Each subscription's amount per month (major units): a DAY unit counts as 12/365.25 of a month."""
    months_per_unit = subscriptions["subscriptionunit"].astype("object").map(MONTHS_PER_UNIT).fillna(1.0)
    return subscriptions["baseamount_major"] / (
        subscriptions["subscriptionfrequency"].astype("float64") * months_per_unit
    )


def declining(subscriptions: pd.DataFrame, payments: pd.DataFrame | None) -> pd.Series:
    """Per subscription (by reference): True when its latest automated payment did not go through."""
    references = subscriptions["transactionreference"]
    if payments is None or payments.empty:
        return pd.Series(False, index=references.to_numpy())
    made = payments
    if "kind" in made.columns:
        made = made[made["kind"].astype("string") == RECURRING]
    latest = made.sort_values("number").groupby("subscription")["outcome"].last()
    return (
        references.map(latest)
        .ne(AUTHORISED)
        .where(references.isin(latest.index), False)
        .set_axis(references.to_numpy())
    )


def recurring_revenue(subscriptions: pd.DataFrame, payments: pd.DataFrame | None = None) -> pd.DataFrame:
    """Recurring revenue now, per currency (major units a month), with what is at risk apart:

    - `expected_monthly`: scheduled subscriptions whose latest payment went through (or that have
      made none yet), each amount divided by its frequency in months: what is expected to be paid;
    - `declining_monthly`: scheduled subscriptions whose latest payment was declined or failed,
      shown apart and not counted as expected (they may well decline again);
    - `not_counted`: subscriptions suspended, stopped or whose first payment failed, in words.
    The `_subscriptions` columns count them."""
    scheduled = subscriptions["state"] == SCHEDULED
    at_risk = pd.Series(declining(subscriptions, payments).to_numpy(), index=subscriptions.index)
    monthly = _monthly(subscriptions)
    rows = []
    for code in sorted(str(c) for c in subscriptions["currencyiso3a"].dropna().unique()):
        mine = subscriptions["currencyiso3a"] == code
        expected, risky = mine & scheduled & ~at_risk, mine & scheduled & at_risk
        others = subscriptions.loc[mine & ~scheduled, "state"].value_counts()
        rows.append(
            {
                "currencyiso3a": code,
                "expected_monthly": round(float(monthly[expected].sum()), 2),
                "expected_subscriptions": int(expected.sum()),
                "declining_monthly": round(float(monthly[risky].sum()), 2),
                "declining_subscriptions": int(risky.sum()),
                "not_counted": ", ".join(f"{n} {state}" for state, n in others.items() if n) or "none",
            }
        )
    table = pd.DataFrame(rows, columns=RECURRING_COLUMNS)
    table.attrs[MONEY_COLUMNS] = ["expected_monthly", "declining_monthly"]
    return captioned(
        table,
        "Recurring revenue per month, per currency: expected = scheduled subscriptions whose latest "
        "payment went through; declining = scheduled but the latest payment failed, shown apart",
        subscriptions,
    )


def current_mrr(subscriptions: pd.DataFrame, payments: pd.DataFrame | None = None) -> pd.Series:
    """Monthly recurring revenue now, per currency: each scheduled subscription's amount (major units)
    divided by its frequency in months (a DAY unit counted as 12/365.25 of a month). With the
    `payments`, subscriptions whose latest payment failed are left out (`recurring_revenue` shows
    them apart)."""
    counted = subscriptions["state"] == SCHEDULED
    if payments is not None:
        counted &= ~pd.Series(declining(subscriptions, payments).to_numpy(), index=subscriptions.index)
    scheduled = subscriptions[counted]
    monthly = _monthly(scheduled)
    return monthly.groupby(scheduled["currencyiso3a"], observed=True).sum().rename("mrr")


DUE_COLUMNS = [
    "due_date",
    "subscription",
    "orderreference",
    "number",
    "amount",
    "currencyiso3a",
    "status",
]


def due_between(
    subscriptions: pd.DataFrame, payments: pd.DataFrame, start: date | str, end: date | str
) -> pd.DataFrame:
    """Every payment of the subscriptions due from `start` to `end` (both included), by due date:
    its amount in major units with its currency, and its status in words: made (authorised, declined
    or failed, what was refunded), or still to come (expected; expected but the latest payment
    failed; not while suspended; never, as the first payment failed; once the first payment settles).
    Sign-up payments are not scheduled: they are in `payments` with `kind` sign-up."""
    first_day, last_day = (pd.Timestamp(d).date() for d in (start, end))
    if last_day < first_day:
        raise ValueError(f"end ({last_day}) is before start ({first_day})")
    at_risk = declining(subscriptions, payments)
    recurring = payments[payments["kind"].astype("string") == RECURRING] if "kind" in payments else payments
    rows = []
    for sub in subscriptions.itertuples(index=False):
        reference = str(sub.transactionreference)
        mine = recurring[recurring["subscription"] == reference].set_index("number")
        first = int(mine.index.min()) if len(mine) else int(sub.subscriptionnumber)
        begin = pd.Timestamp(sub.subscriptionbegindate).date()
        dates = payment_dates(
            begin,
            int(sub.subscriptionfrequency),
            first,
            int(0 if pd.isna(sub.subscriptionfinalnumber) else sub.subscriptionfinalnumber),
            until=last_day,
            unit=str(sub.subscriptionunit) if pd.notna(sub.subscriptionunit) else "MONTH",
        )
        for number, due in dates:
            if due < first_day:
                continue
            made = mine.loc[number] if number in mine.index else None
            rows.append(
                {
                    "due_date": pd.Timestamp(due),
                    "subscription": reference,
                    "orderreference": sub.orderreference,
                    "number": number,
                    "amount": float(made["baseamount_major"])
                    if made is not None
                    else float(sub.baseamount_major),
                    "currencyiso3a": str(sub.currencyiso3a),
                    "status": _due_status(
                        made,
                        str(sub.state),
                        bool(at_risk.get(reference, False)),
                        number,
                        int(sub.subscriptionnumber),
                    ),
                }
            )
    table = pd.DataFrame(rows, columns=DUE_COLUMNS).sort_values(["due_date", "subscription"], kind="stable")
    table = table.reset_index(drop=True).astype({"number": "Int64", "status": "string"})
    table.attrs[MONEY_COLUMNS] = ["amount"]
    return captioned(table, f"Subscription payments due from {first_day} to {last_day}", subscriptions)


def _due_status(made: Any, state: str, at_risk: bool, number: int, upcoming: int) -> str:
    if made is not None:
        if made["outcome"] == AUTHORISED:
            refunded = int(made.get("refunded", 0) or 0)
            return "paid" + (
                f", {format_money(refunded, made.get('currencyiso3a'))} refunded" if refunded else ""
            )
        code = made.get("errorcode")
        return f"{made['outcome']} ({code} · {made.get('errormessage') or ''})".replace(" · )", ")")
    if number < upcoming:
        return "not taken"
    if state == SCHEDULED:
        return "expected, but the latest payment failed: it may decline again" if at_risk else "expected"
    return {
        PENDING: "expected once the first payment settles",
        "suspended": "not taken while the subscription is suspended",
        "stopped": "not taken: the final payment was reached",
        "declined": "never taken: the first payment failed",
    }.get(state, state)


def revenue_by_state(
    subscriptions: pd.DataFrame, payments: pd.DataFrame, currency: str | None = None
) -> pd.DataFrame:
    """Authorised revenue (major units: sign-up and automated payments) per month and currency
    (rows) and the subscriptions' present state (columns): every currency, or only `currency`."""
    paid = payments[payments["outcome"] == AUTHORISED]
    if currency is not None:
        paid = paid[paid["currencyiso3a"] == currency]
    states = subscriptions.set_index("transactionreference")["state"]
    data = paid.assign(
        month=_month(paid["made_on"]),
        currencyiso3a=paid["currencyiso3a"].astype("string"),
        state=paid["subscription"].map(states).astype(pd.CategoricalDtype(list(STATES))),
    )
    table = data.pivot_table(
        index=["month", "currencyiso3a"],
        columns="state",
        values="baseamount_major",
        aggfunc="sum",
        fill_value=0.0,
        observed=False,
    )
    table = table.loc[:, table.sum() > 0] if not table.empty else table
    table.columns = table.columns.astype(str)
    table.attrs[MONEY_COLUMNS] = list(table.columns)
    found = currencies_of(table) if not table.empty else []
    if len(found) == 1:
        table.attrs["currency"] = found[0]
    return captioned(
        table, "Subscription revenue per month and currency, by the subscriptions' state now", payments
    )


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
    return captioned(table, f"Churn per month: {FINANCE_MEANINGS['churned']}", payments)


FINANCE_COLUMNS = [
    "revenue",
    "sign_up_revenue",
    "refunded",
    "net",
    "paying",
    "failed_payments",
    "churned",
    "churn_rate",
]


def subscription_finance(
    subscriptions: pd.DataFrame, payments: pd.DataFrame, currency: str | None = None
) -> pd.DataFrame:
    """Per month and currency (every currency, each in rows of its own, or only `currency`): revenue
    (sign-up and automated payments authorised), the part that was sign-ups, refunded and net (major
    units, as `monthly_recurring_revenue`), subscriptions paying, failed payments (declined or
    failed), churned subscriptions and the churn rate (as `churn`). FINANCE_MEANINGS defines each."""
    index = pd.MultiIndex.from_arrays(
        [pd.PeriodIndex([], freq="M"), pd.Index([], dtype="string")], names=["month", "currencyiso3a"]
    )
    if currency is not None:
        payments = payments[payments["currencyiso3a"] == currency]
    if payments.empty:
        return pd.DataFrame(columns=FINANCE_COLUMNS, index=index)
    parts = []
    for code in sorted(str(c) for c in payments["currencyiso3a"].dropna().unique()):
        mine = payments[payments["currencyiso3a"] == code]
        money = monthly_recurring_revenue(mine).set_index("month")
        part = money[["revenue", "sign_up_revenue", "refunded", "net"]].join(
            churn(subscriptions, mine), how="left"
        )
        part = part.assign(failed_payments=money["declined"]).fillna(
            {"paying": 0, "churned": 0, "churn_rate": 0.0}
        )
        part["currencyiso3a"] = code
        parts.append(part.rename_axis("month").reset_index())
    table = pd.concat(parts).set_index(["month", "currencyiso3a"]).sort_index()
    table = table.astype({"paying": "int64", "churned": "int64", "failed_payments": "int64"})[FINANCE_COLUMNS]
    table.attrs[MONEY_COLUMNS] = ["revenue", "sign_up_revenue", "refunded", "net"]
    found = currencies_of(table)
    if len(found) == 1:
        table.attrs["currency"] = found[0]
    meanings = "; ".join(f"{name}: {meaning}" for name, meaning in FINANCE_MEANINGS.items())
    return captioned(table, f"Subscription finance per month and currency ({meanings})", payments)


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
    return captioned(table, f"Subscription payments declined or failed, per {by} (every currency)", payments)


# -- charts -------------------------------------------------------------------------------------


def plot_revenue_by_state(
    subscriptions: pd.DataFrame, payments: pd.DataFrame, *, currency: str | None = None, ax: Any = None
) -> Any:
    """Stacked bars: authorised subscription revenue per month, by the subscriptions' state now, a
    panel per currency (or only `currency`); the Axes, a list of them for several currencies."""
    table = revenue_by_state(subscriptions, payments, currency)
    if table.empty:
        raise ValueError("no authorised payments to chart")
    found = currencies_of(table)
    panels = []
    for code, axes in zip(found, _panels(ax, len(found), (9, 4)), strict=True):
        mine = table.xs(code, level="currencyiso3a")
        mine = mine.loc[:, mine.sum() > 0]
        mine.index = mine.index.astype(str)
        colours = [STATE_COLOURS.get(str(c), "#999999") for c in mine.columns]
        drawn = mine.plot.bar(stacked=True, ax=axes, rot=45, color=colours)
        panels.append(
            labelled(
                drawn,
                f"Subscription revenue by month and subscription state ({code})",
                "Month the payment was made",
                f"Authorised revenue ({code}, major units)",
                legend="State now",
                note=time_of(table).caption,
            )
        )
    return panels[0] if len(panels) == 1 else panels


def plot_subscription_finance(
    subscriptions: pd.DataFrame, payments: pd.DataFrame, *, currency: str | None = None, ax: Any = None
) -> Any:
    """Bars per month: net revenue (green) and refunded (red) stacked to the revenue; the failed
    payments as a line on a second axis (count). A panel per currency (or only `currency`); the
    Axes, a list of them for several currencies."""
    table = subscription_finance(subscriptions, payments, currency)
    if table.empty:
        raise ValueError("no subscription payments to chart")
    found = currencies_of(table)
    panels = []
    for code, axes in zip(found, _panels(ax, len(found), (9, 4)), strict=True):
        mine = table.xs(code, level="currencyiso3a")
        shown = mine[["net", "refunded"]].rename(columns={"net": "net revenue"})
        shown.index = shown.index.astype(str)
        drawn = shown.plot.bar(stacked=True, ax=axes, rot=45, color=["#1b7f3b", "#b00020"])
        failures = drawn.twinx()
        failures.plot(
            range(len(mine)),
            mine["failed_payments"].to_numpy(),
            color="#ff7f0e",
            marker="o",
            label="failed payments",
        )
        failures.set_ylabel("Failed payments (count)")
        failures.set_ylim(0, max(1, int(mine["failed_payments"].max())) + 0.5)
        failures.yaxis.get_major_locator().set_params(integer=True)
        labelled(
            drawn,
            f"Subscription revenue (sign-ups included), refunds and failed payments by month ({code})",
            "Month the payment was made",
            f"Revenue ({code}, major units)",
            note=time_of(table).caption,
        )
        # both legends right of the second axis's numbers and label, the money's above the count's
        drawn.legend(title="Money", loc="upper left", bbox_to_anchor=(1.12, 1))
        failures.legend(loc="upper left", bbox_to_anchor=(1.12, 0.45))
        drawn.figure.tight_layout(rect=(0, 0.04, 1, 1))
        panels.append(drawn)
    return panels[0] if len(panels) == 1 else panels


def plot_subscriptions_by_state(subscriptions: pd.DataFrame, *, ax: Any = None) -> Any:
    """Bars: how many subscriptions are in each state."""
    counts = subscriptions["state"].value_counts().reindex(list(STATES), fill_value=0)
    ax = counts.plot.bar(ax=_axes(ax, (6, 3)), rot=0, color=[STATE_COLOURS[s] for s in counts.index])
    return labelled(
        ax,
        "Subscriptions by state",
        "State",
        "Number of subscriptions",
        integer_axis="y",
        note=time_of(subscriptions).caption,
    )


def plot_decline_rates(payments: pd.DataFrame, *, ax: Any = None) -> Any:
    """Line: the share of payments declined, per month."""
    table = decline_rates(payments)
    series = table["decline_rate"] * 100
    series.index = series.index.astype(str)
    ax = series.plot(ax=_axes(ax, (8, 3)), marker="o", color="#b00020")
    ax.set_ylim(bottom=0)
    return labelled(
        ax,
        "Declined subscription payments",
        "Month the payment was made",
        "Declined (% of payments)",
        note=time_of(table).caption,
    )
