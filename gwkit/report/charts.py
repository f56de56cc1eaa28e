"""Charts a finance or support user asks for, drawn by pandas with matplotlib, axes labelled.

Each chart has a table function beside it that returns the numbers behind it, so a chart can be
checked or exported.

    amounts_by_day(frame)        stacked bars: money per day, split by settle status (cancelled left out),
                                 a panel per currency
    decline_reasons(frame)       horizontal bars: failed transactions per error code and meaning
"""

from __future__ import annotations

from typing import Any

import pandas as pd

from ..interface.codes import CANCELLED, explain
from ..interface.vocabulary import settle_status_label
from .frames import MONEY_COLUMNS
from .timing import captioned, time_of

DAY_COLUMN = "transactionstartedtimestamp"
# Settled money green, pending blue, cancelled red, the rest grey: the colours a reader expects.
STATUS_COLOURS = {
    "100": "#1b7f3b",
    "0": "#1f77b4",
    "1": "#6baed6",
    "10": "#9ecae1",
    "2": "#ff7f0e",
    "3": "#b00020",
}


NOTE_ID = "gwkit-report-note"


def _axes(ax: Any, size: tuple[float, float]) -> Any:
    """`ax`, or the axes of a new figure of `size` (inches); every chart of gwkit.report draws here."""
    if ax is not None:
        return ax
    import matplotlib.pyplot as plt

    return plt.subplots(figsize=size)[1]


def labelled(
    ax: Any,
    title: str,
    xlabel: str,
    ylabel: str,
    *,
    legend: str | None = None,
    legend_outside: bool = True,
    integer_axis: str | None = None,
    note: str | None = None,
) -> Any:
    """Title, axis labels (with units), the legend's title and a tight layout: every chart's finish.

    `integer_axis` ("x" or "y") keeps that axis to whole numbers, for counts. The legend sits
    outside the plot, on its right, so that it never covers the data. `note` (a report's caption:
    as of when, which clock, which time zone) is written small under the chart."""
    ax.set_title(title)
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    if integer_axis:
        getattr(ax, f"{integer_axis}axis").get_major_locator().set_params(integer=True)
    if legend is not None:
        outside = {"bbox_to_anchor": (1.01, 1), "loc": "upper left"} if legend_outside else {}
        ax.legend(title=legend, **outside)
    if note:
        # once per figure, under every panel
        if not any(text.get_gid() == NOTE_ID for text in ax.figure.texts):
            ax.figure.text(
                0.01, 0.005, note, fontsize=8, color="#555555", va="bottom", gid=NOTE_ID, wrap=True
            )
        ax.figure.tight_layout(rect=(0, 0.04, 1, 1))
    else:
        ax.figure.tight_layout()
    return ax


def _payments(frame: pd.DataFrame, currency: str | None) -> pd.DataFrame:
    """AUTH records with an amount and a day: in one currency when given, else in every currency."""
    for column in ("baseamount_major", DAY_COLUMN, "currencyiso3a"):
        if column not in frame.columns:
            raise ValueError(
                f"the frame has no {column} column; build it with gwkit.report.query_frame or records_frame"
            )
    rows = frame[frame["baseamount_major"].notna() & frame[DAY_COLUMN].notna()]
    if "requesttypedescription" in rows.columns:
        rows = rows[rows["requesttypedescription"] == "AUTH"]
    if currency is not None:
        rows = rows[rows["currencyiso3a"] == currency]
    if rows.empty:
        raise ValueError(f"no AUTH records with an amount{f' in {currency}' if currency else ''} to chart")
    return rows


def currencies_of(table: pd.DataFrame) -> list[str]:
    """The currencies of a table indexed (or columned) by `currencyiso3a`, in order."""
    if "currencyiso3a" in table.columns:
        values = table["currencyiso3a"]
    else:
        values = pd.Series(table.index.get_level_values("currencyiso3a"))
    return sorted(str(c) for c in values.dropna().unique())


def amounts_by_day_table(frame: pd.DataFrame, *, currency: str | None = None) -> pd.DataFrame:
    """Sum of amounts (major units) per day and currency (rows) and settle status (columns): every
    currency, each in rows of its own (never added together), or only `currency`. Cancelled payments
    (settlestatus 3: declines, bank errors) moved no money and are left out."""
    rows = _payments(frame, currency)
    if "settlestatus" in rows.columns:
        rows = rows[rows["settlestatus"].astype(str) != CANCELLED]
    status = rows["settlestatus"].map(settle_status_label) if "settlestatus" in rows.columns else "unknown"
    table = rows.assign(
        day=rows[DAY_COLUMN].dt.floor("D"),
        currencyiso3a=rows["currencyiso3a"].astype("string"),
        status=status,
    ).pivot_table(
        index=["day", "currencyiso3a"],
        columns="status",
        values="baseamount_major",
        aggfunc="sum",
        fill_value=0.0,
        observed=True,
    )
    table.columns.name = "settle status"
    table.attrs[MONEY_COLUMNS] = list(table.columns)
    found = currencies_of(table)
    if len(found) == 1:
        table.attrs["currency"] = found[0]
    return captioned(
        table,
        f"Money per day the payments started and settle status, each currency apart ({', '.join(found)})",
        frame,
    )


def amounts_by_day(frame: pd.DataFrame, *, currency: str | None = None, ax: Any = None) -> Any:
    """Stacked bars of the amount per day by settle status, a panel per currency (or only
    `currency`); returns the matplotlib Axes, a list of them when there are several currencies."""
    table = amounts_by_day_table(frame, currency=currency)
    panels = []
    for code, axes in zip(currencies_of(table), _panels(ax, len(currencies_of(table)), (8, 4)), strict=True):
        mine = table.xs(code, level="currencyiso3a")
        mine = mine.loc[:, mine.sum() > 0]
        mine.index = mine.index.strftime("%Y-%m-%d")
        colours = [STATUS_COLOURS.get(str(c).split(" ", 1)[0], "#999999") for c in mine.columns]
        drawn = mine.plot.bar(stacked=True, ax=axes, rot=45, color=colours)
        panels.append(
            labelled(
                drawn,
                f"Money by day and settle status ({code}; cancelled payments moved none)",
                "Day the transaction started",
                f"Amount ({code}, major units)",
                legend="Settle status",
                note=table.attrs.get("caption"),
            )
        )
    return panels[0] if len(panels) == 1 else panels


def _panels(ax: Any, count: int, size: tuple[float, float]) -> list[Any]:
    """`ax` (one currency), or a figure of `count` panels one above the other, each `size` inches."""
    if count == 1:
        return [_axes(ax, size)]
    if ax is not None:
        raise ValueError(f"{count} currencies need a panel each: leave ax out, or name one currency")
    import matplotlib.pyplot as plt

    return list(plt.subplots(count, 1, figsize=(size[0], size[1] * count), squeeze=False)[1][:, 0])


def decline_reasons_table(frame: pd.DataFrame) -> pd.DataFrame:
    """Failed records per error code: code, message, meaning, count (most frequent first)."""
    if "errorcode" not in frame.columns:
        raise ValueError("the frame has no errorcode column")
    codes = frame["errorcode"].dropna().astype(str)
    failed = codes[codes != "0"].value_counts()
    rows = [
        {
            "errorcode": code,
            "reason": f"{code} {explain(code).message or 'unknown code'}",
            "meaning": explain(code).meaning,
            "count": int(count),
        }
        for code, count in failed.items()
    ]
    table = pd.DataFrame(rows, columns=["errorcode", "reason", "meaning", "count"])
    return captioned(table, "Failed records per error code (counts, every currency)", frame)


def decline_reasons(frame: pd.DataFrame, *, ax: Any = None) -> Any:
    """Horizontal bars: how many records failed, per error code and its meaning."""
    table = decline_reasons_table(frame)
    if table.empty:
        raise ValueError("no failed records (every errorcode is 0): nothing to chart")
    series = table.set_index("reason")["count"].sort_values()
    ax = series.plot.barh(ax=_axes(ax, (8, 3)), color="#b00020")
    return labelled(
        ax,
        "Why transactions failed",
        "Number of records",
        "Error code and message",
        integer_axis="x",
        note=time_of(table).caption,
    )
