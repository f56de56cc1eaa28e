"""Finance reports: where the money is, day by day, and why payments failed.

    frame = gwkit.report.query_frame(gw.transaction_query(startdate="2026-01-01"))
    settlement_reconciliation(frame)   # per day and currency: authorised, settled, pending, released, refunded, net
    plot_reconciliation(frame)         # the same as bars, net as a line
    declines_by_code(frame)            # failed payments per error code, with the code table's meaning
    plot_declines_by_code(frame)

Amounts are integers in base units (1050 is 10.50 GBP), so sums are exact; `gwkit.report.for_people`
shows them as money. A record counts when it succeeded (`errorcode` 0 and not cancelled,
`settlestatus` 3), by the one ok rule of `gwkit.interface.codes`.

How a day's columns are made, so that they add up to the records:
- `authorised`: AUTHs made that day, for their `baseamount`;
- `settled`: AUTHs settled that day (`settlestatus` 100, on their `settleduedate`: the gateway makes
  it the payment's own day and settles at that day's end), for what they settle for
  (`settlebaseamount`, else `baseamount`);
- `pending`: of the AUTHs made that day, what is still to settle (`settlestatus` 0, 1, 2 or 10);
- `released`: of the AUTHs made that day, what was authorised but will never settle because the
  settle amount was lowered (`baseamount` - `settlebaseamount`);
- `refunded`: refunds made that day (REFUND records, for what they settle for);
- `net`: `settled` - `refunded`, what the merchant kept that day.
Over all days, per currency: authorised = settled + pending + released.
"""

from __future__ import annotations

from typing import Any

import pandas as pd

from ..interface.codes import explain
from ..interface.currency import exponent
from .charts import DAY_COLUMN, _axes, _panels, currencies_of, labelled
from .frames import MONEY_COLUMNS
from .timing import captioned, time_of

RECONCILIATION_COLUMNS = [
    "day",
    "currencyiso3a",
    "authorised",
    "settled",
    "pending",
    "released",
    "refunded",
    "net",
]
DECLINE_COLUMNS = ["errorcode", "message", "meaning", "action", "unknown_outcome", "count", "share"]
PENDING_STATUSES = ("0", "1", "2", "10")
# A payment with errorcode 0 that failed the ok rule: its code's own words ("Ok") would mislead.
CANCELLED_WORDS = (
    "Cancelled (settle status 3)",
    "The payment was authorised, then cancelled before it settled: no money moved.",
    "Nothing to do, unless it was cancelled by mistake: then take a new payment.",
)
_NEEDED = ("requesttypedescription", "errorcode", "settlestatus", "baseamount", "currencyiso3a", DAY_COLUMN)


def _checked(frame: pd.DataFrame, needed: tuple[str, ...]) -> None:
    missing = [c for c in needed if c not in frame.columns]
    if missing:
        raise ValueError(
            f"the frame has no {', '.join(missing)} column(s); build it with gwkit.report.query_frame "
            "or records_frame from transaction records"
        )


def _text(frame: pd.DataFrame, column: str) -> pd.Series:
    return frame[column].astype("string").fillna("")


def _succeeded(frame: pd.DataFrame) -> pd.Series:
    """The ok rule (`gwkit.interface.codes.record_ok`), vectorised: errorcode 0 and not cancelled."""
    return (_text(frame, "errorcode") == "0") & (_text(frame, "settlestatus") != "3")


def _to_settle(rows: pd.DataFrame) -> pd.Series:
    """What each record settles for: its `settlebaseamount` where one was set, else its `baseamount`."""
    if "settlebaseamount" not in rows.columns:
        return rows["baseamount"].astype("Int64")
    return rows["settlebaseamount"].astype("Int64").fillna(rows["baseamount"].astype("Int64"))


def _by_day(days: pd.Series, currencies: pd.Series, amounts: pd.Series, name: str) -> pd.Series:
    keys = pd.DataFrame(
        {
            "day": days.dt.floor("D"),
            "currencyiso3a": currencies.astype("string"),
            name: amounts.astype("Int64"),
        }
    )
    return keys.groupby(["day", "currencyiso3a"])[name].sum()


def settlement_reconciliation(frame: pd.DataFrame) -> pd.DataFrame:
    """One row per day and currency: authorised, settled, pending, released, refunded and net, in base
    units (see the module's notes for how each is counted). Days with no money are left out."""
    _checked(frame, _NEEDED)
    ok = frame[_succeeded(frame) & frame["baseamount"].notna()]
    kind = _text(ok, "requesttypedescription")
    auths, refunds = ok[kind == "AUTH"], ok[kind == "REFUND"]
    to_settle = _to_settle(auths)
    status = _text(auths, "settlestatus")
    settled = auths[status == "100"]
    if "settleduedate" in settled.columns:
        settle_days = settled["settleduedate"].fillna(settled[DAY_COLUMN])
    else:
        settle_days = settled[DAY_COLUMN]
    pending = status.isin(PENDING_STATUSES)
    parts = [
        _by_day(auths[DAY_COLUMN], auths["currencyiso3a"], auths["baseamount"], "authorised"),
        _by_day(settle_days, settled["currencyiso3a"], to_settle[status == "100"], "settled"),
        _by_day(
            auths.loc[pending, DAY_COLUMN], auths.loc[pending, "currencyiso3a"], to_settle[pending], "pending"
        ),
        _by_day(
            auths[DAY_COLUMN],
            auths["currencyiso3a"],
            auths["baseamount"].astype("Int64") - to_settle,
            "released",
        ),
        _by_day(refunds[DAY_COLUMN], refunds["currencyiso3a"], _to_settle(refunds), "refunded"),
    ]
    table = pd.concat(parts, axis=1).fillna(0).astype("Int64").sort_index().reset_index()
    table["net"] = table["settled"] - table["refunded"]
    table["currencyiso3a"] = table["currencyiso3a"].astype("category")
    table["day"] = pd.to_datetime(table["day"])
    table = table.reindex(columns=RECONCILIATION_COLUMNS)
    table.attrs[MONEY_COLUMNS] = ["authorised", "settled", "pending", "released", "refunded", "net"]
    return captioned(
        table,
        "Settlement reconciliation per day and currency: authorised, settled, still pending, released, refunded, net (settled less refunded)",
        frame,
    )


def plot_reconciliation(frame: pd.DataFrame, *, currency: str | None = None, ax: Any = None) -> Any:
    """Bars per day of what settled (green), what is still pending (blue) and what was refunded (red,
    drawn below zero), with the day's net as a line: a panel per currency (or only `currency`).
    Returns the Axes, a list of them when there are several currencies."""
    table = settlement_reconciliation(frame)
    found = currencies_of(table) if currency is None else [currency]
    if not found:
        raise ValueError("no payments or refunds to chart")
    panels = []
    for code, axes in zip(found, _panels(ax, len(found), (9, 4)), strict=True):
        rows = table[table["currencyiso3a"] == code].set_index("day")
        scale = 10.0 ** exponent(code)
        shown = (
            pd.DataFrame(
                {"settled": rows["settled"], "still pending": rows["pending"], "refunded": -rows["refunded"]}
            ).astype("float64")
            / scale
        )
        shown.index = shown.index.strftime("%Y-%m-%d")
        drawn = shown.plot.bar(ax=axes, rot=45, color=["#1b7f3b", "#1f77b4", "#b00020"])
        net = (rows["net"].astype("float64") / scale).to_numpy()
        drawn.plot(range(len(shown)), net, color="black", marker="o", label="net (settled - refunded)")
        drawn.axhline(0, color="#555555", linewidth=0.8)
        panels.append(
            labelled(
                drawn,
                f"Settlement reconciliation by day ({code})",
                "Day",
                f"Amount ({code}, major units; refunds below zero)",
                legend="Money",
                note=table.attrs.get("caption"),
            )
        )
    return panels[0] if len(panels) == 1 else panels


def declines_by_code(frame: pd.DataFrame) -> pd.DataFrame:
    """Failed payments (AUTH records not ok) per error code, most frequent first: the code table's
    published message, its meaning, what to do, whether the outcome is unknown, the count and the
    share of all payments attempted."""
    _checked(frame, ("errorcode", "settlestatus"))
    payments = frame
    if "requesttypedescription" in frame.columns:
        payments = frame[_text(frame, "requesttypedescription") == "AUTH"]
    failed = payments[~_succeeded(payments)]
    counts = _text(failed, "errorcode").value_counts()
    rows = []
    for code, count in counts.items():
        entry = explain(code)
        cancelled = code == "0"  # errorcode 0 yet not ok: authorised, then cancelled (settlestatus 3)
        rows.append(
            {
                "errorcode": code,
                "message": CANCELLED_WORDS[0] if cancelled else entry.message or "not in gwkit's table",
                "meaning": CANCELLED_WORDS[1] if cancelled else entry.meaning,
                "action": CANCELLED_WORDS[2] if cancelled else entry.action,
                "unknown_outcome": entry.unknown_outcome,
                "count": int(count),
                "share": count / len(payments),
            }
        )
    table = pd.DataFrame(rows, columns=DECLINE_COLUMNS).astype(
        {
            "errorcode": "string",
            "message": "string",
            "meaning": "string",
            "action": "string",
            "unknown_outcome": "bool",
            "count": "Int64",
            "share": "float64",
        }
    )
    return captioned(
        table, "Failed payments per reason, with what it means and what to do (counts, every currency)", frame
    )


def plot_declines_by_code(frame: pd.DataFrame, *, ax: Any = None) -> Any:
    """Horizontal bars: failed payments per error code and its published message."""
    table = declines_by_code(frame)
    if table.empty:
        raise ValueError("no failed payments: nothing to chart")
    series = pd.Series(
        table["count"].to_numpy(dtype="int64"),
        index=[f"{c} {m}" for c, m in zip(table["errorcode"], table["message"], strict=True)],
    ).sort_values()
    ax = series.plot.barh(ax=_axes(ax, (8, 3)), color="#b00020")
    return labelled(
        ax,
        "Failed payments by error code",
        "Number of payments",
        "Error code and message",
        integer_axis="x",
        note=time_of(table).caption,
    )
