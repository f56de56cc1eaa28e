"""Stored cards as a typed DataFrame, and the two charts a card store review asks for.

    frame = cards_frame(gwkit.cardstore.stored_cards(gw))
    cards_by_scheme_and_country(frame)           # stacked bars: cards per scheme, split by country
    expiring_cards(frame, today, months=6)       # bars: cards whose expiry month is in the next months

Each chart has a `..._table` function beside it with the numbers behind it.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from datetime import date
from typing import Any

import pandas as pd

from ..cardstore import COLUMNS
from ..interface.cards import SCHEMES
from .charts import _axes, labelled

_TYPES = {
    "maskedpan": "string",
    "paymenttypedescription": "category",
    "billingname": "string",
    "billingcountryiso2a": "category",
    "uses": "Int64",
    "sitereference": "category",
    "orderreference": "string",
    "issuer": "category",
    "issuercountryiso2a": "category",
    "transactionreference": "string",
}


def cards_frame(rows: Iterable[Mapping[str, Any]]) -> pd.DataFrame:
    """One row per stored card: `expiry` as the month's Period, `active` as a bool, `stored` as a
    datetime, `scheme` the scheme's name; card numbers stay masked."""
    frame = pd.DataFrame(list(rows), columns=list(COLUMNS))
    for column, dtype in _TYPES.items():
        frame[column] = frame[column].astype(dtype)
    frame["expiry"] = pd.PeriodIndex([_month(v) for v in frame["expirydate"]], freq="M")
    frame["active"] = frame["transactionactive"].map({"1": True, "0": False}).astype("boolean")
    frame["stored"] = pd.to_datetime(frame["transactionstartedtimestamp"], format="%Y-%m-%d %H:%M:%S")
    frame["scheme"] = (
        frame["paymenttypedescription"]
        .map(lambda code: SCHEMES[code].name if code in SCHEMES else code)
        .astype("category")
    )
    return frame.drop(columns=["transactionactive", "transactionstartedtimestamp"])


def _month(expirydate: Any) -> pd.Period | Any:
    if not isinstance(expirydate, str) or len(expirydate) != 7:
        return pd.NaT
    return pd.Period(year=int(expirydate[3:]), month=int(expirydate[:2]), freq="M")


def cards_by_scheme_and_country_table(frame: pd.DataFrame) -> pd.DataFrame:
    """Stored cards per scheme (rows) and billing country (columns; "unknown" when not given)."""
    if frame.empty:
        return pd.DataFrame(dtype="int64")
    country = frame["billingcountryiso2a"].astype("string").fillna("unknown")
    table = pd.crosstab(frame["scheme"].astype("string"), country)
    table.index.name, table.columns.name = "scheme", "billing country"
    return table


def cards_by_scheme_and_country(frame: pd.DataFrame, *, ax: Any = None) -> Any:
    """Stacked horizontal bars: stored cards per scheme, split by billing country."""
    table = cards_by_scheme_and_country_table(frame)
    if table.empty:
        raise ValueError("no stored cards to chart")
    ax = table.plot.barh(stacked=True, ax=_axes(ax, (8, 0.5 + 0.45 * len(table))))
    return labelled(
        ax,
        "Stored cards by scheme and billing country",
        "Stored cards",
        "Scheme",
        legend="Billing country",
        legend_outside=True,
        integer_axis="x",
    )


def expiring_cards_table(frame: pd.DataFrame, today: date, months: int = 6) -> pd.DataFrame:
    """Cards expiring in each of the next `months` months (this month first), active or not."""
    if months < 1:
        raise ValueError("months must be at least 1")
    first = pd.Period(today, freq="M")
    window = pd.period_range(first, periods=months, freq="M")
    expiry = frame["expiry"] if "expiry" in frame.columns else pd.Series(dtype="period[M]")
    active = frame["active"].fillna(False) if "active" in frame.columns else pd.Series(dtype="boolean")
    table = pd.DataFrame(
        {
            "active": [int(((expiry == month) & active).sum()) for month in window],
            "disabled": [int(((expiry == month) & ~active).sum()) for month in window],
        },
        index=pd.Index([str(month) for month in window], name="expiry month"),
    )
    return table


def expiring_cards(frame: pd.DataFrame, today: date, months: int = 6, *, ax: Any = None) -> Any:
    """Bars: stored cards expiring in each of the next months, active and disabled stacked."""
    table = expiring_cards_table(frame, today, months)
    ax = table.plot.bar(stacked=True, ax=_axes(ax, (8, 4)), rot=0, color=["#1f77b4", "#bbbbbb"])
    return labelled(
        ax,
        f"Stored cards expiring in the next {months} months (from {today:%Y-%m})",
        "Expiry month",
        "Stored cards",
        legend="State",
        legend_outside=True,
        integer_axis="y",
    )
