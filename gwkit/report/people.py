"""Tables for people: the same DataFrames (and dicts), shown as a person reads them.

    gwkit.report.show_tables_for_people()   # once per notebook: every DataFrame shown this way
    gwkit.report.for_people(frame)          # the display copy of one frame
    gwkit.report.show(frame, caption=...)   # one frame, interactive

The frames themselves stay typed for analysis (amounts as integers in base units, timestamps as
datetimes, missing values as <NA>); only what is shown changes: amounts in major units with the
currency symbol (`£15.00`, the base-unit and `_major` columns shown once), thousands separated,
rates and shares as percentages, dates without a time of midnight, and nothing at all where a
value is missing. With itables installed the table is interactive (sort, filter, page); without
it, a plain HTML table.
"""

from __future__ import annotations

import html
import re
from typing import Any

import pandas as pd
from IPython import get_ipython
from IPython.display import HTML, display

from ..interface.currency import exponent, format_money
from ..interface.fields import AMOUNT
from ..interface.masking import mask_data
from .frames import CURRENCY_COLUMN, MAJOR_SUFFIX, MONEY_COLUMNS, report_kind

try:  # the [lab] extra brings itables; the plain table below is the fallback
    import itables
except ImportError:  # pragma: no cover - exercised by test_people's fallback test through monkeypatch
    itables = None

PERCENT_NAME = re.compile(r"(^|_)(rate|share|percent|pct|ratio)(_|$)")
MONEY_NAME = re.compile(r"(^|_)(amount|revenue|mrr|net|refunded)(_|$)")
# Whole numbers that name something rather than count it: written without thousands separators.
CODE_NAME = re.compile(r"(code|status|number|reference|id)$")
MAX_ROWS = 5000  # rows sent to the browser for one interactive table
UNBROKEN_WIDTH = 32  # a single word up to this long (a time, a reference, £1,050.00) is kept on one line


def for_people(frame: pd.DataFrame, *, currency: str | None = None) -> pd.DataFrame:
    """A copy of `frame` with every value written for a person (all strings, "" where missing).

    Money: integer columns are base units (1050 -> £10.50), float columns major units (10.5 -> £10.50),
    in the frame's `currencyiso3a` column, else `currency`, else the frame's `attrs["currency"]`."""
    currency = currency or frame.attrs.get("currency")
    shown = pd.DataFrame(index=frame.index)
    currencies = frame[CURRENCY_COLUMN] if CURRENCY_COLUMN in frame else None
    for name in frame.columns:
        column = frame[name]
        base = name[: -len(MAJOR_SUFFIX)] if isinstance(name, str) and name.endswith(MAJOR_SUFFIX) else None
        if base is not None and base in frame.columns:
            continue  # the amount is shown once, from its base units
        money = name in frame.attrs.get(MONEY_COLUMNS, ())
        shown[name] = _written(str(name), column, currencies, currency, major=base is not None, money=money)
    return shown


def _written(
    name: str,
    column: pd.Series,
    currencies: pd.Series | None,
    currency: str | None,
    *,
    major: bool,
    money: bool = False,
) -> pd.Series:
    missing = column.isna()
    named_money = money or MONEY_NAME.search(name)
    if report_kind(name) == AMOUNT or major or (named_money and pd.api.types.is_numeric_dtype(column)):
        # a wire amount (baseamount) is base units even as floats (a missing value makes them float)
        in_major = major or (report_kind(name) != AMOUNT and pd.api.types.is_float_dtype(column))
        written = [
            _money(v, c if currencies is not None else currency, major=in_major)
            for v, c in zip(column, currencies if currencies is not None else [currency] * len(column))
        ]
        return pd.Series(written, index=column.index).where(~missing, "")
    if pd.api.types.is_bool_dtype(column):
        return column.map({True: "yes", False: "no"}).astype(object).where(~missing, "")
    if pd.api.types.is_datetime64_any_dtype(column):
        present = column.dropna()
        has_time = bool(((present.dt.hour != 0) | (present.dt.minute != 0) | (present.dt.second != 0)).any())
        return (
            column.dt.strftime("%Y-%m-%d %H:%M:%S" if has_time else "%Y-%m-%d")
            .astype(object)
            .where(~missing, "")
        )
    if pd.api.types.is_float_dtype(column) and PERCENT_NAME.search(name):
        return column.map(lambda v: f"{v:.1%}" if pd.notna(v) else "")
    if pd.api.types.is_integer_dtype(column) or (pd.api.types.is_float_dtype(column) and _whole(column)):
        pattern = "{:d}" if CODE_NAME.search(name) else "{:,d}"
        return column.map(lambda v: pattern.format(int(v)) if pd.notna(v) else "")
    if pd.api.types.is_float_dtype(column):
        return column.map(lambda v: f"{v:,.2f}" if pd.notna(v) else "")
    return column.astype(object).map(_text)


def _text(value: Any) -> str:
    """Text as is; a mapping as `name=value, ...` and a list as `a, b`: never a Python repr."""
    if isinstance(value, dict):
        return ", ".join(f"{k}={_text(v)}" for k, v in value.items())
    if isinstance(value, (list, tuple)):
        return ", ".join(_text(v) for v in value)
    if value is None or pd.isna(value):
        return ""
    return str(value)


def _money(value: Any, currency: Any, *, major: bool) -> str:
    if value is None or pd.isna(value):
        return ""
    code = currency if isinstance(currency, str) else None
    if major:  # a float in major units: back to base units, then written exactly
        return format_money(round(float(value) * 10 ** exponent(code)), code)
    return format_money(int(value), code)


def _whole(column: pd.Series) -> bool:
    values = column.dropna()
    return bool(len(values)) and bool((values.astype(float) % 1 == 0).all())


def to_html(frame: pd.DataFrame, *, caption: str | None = None) -> str:
    """The frame for people as HTML: an interactive itables table, or a plain one without itables.
    A meaningful index (named, or other than 0, 1, 2, ...) is shown as the first columns."""
    if frame.index.names != [None] or not isinstance(frame.index, pd.RangeIndex):
        frame = frame.reset_index()  # keeps attrs (the currency, the money columns)
    shown = for_people(frame)
    if itables is not None:
        # "display compact" without itables' default "nowrap": long text (what a code means) wraps
        # inside the notebook's width instead of running off its right edge.
        kept_whole = [{"className": "dt-nowrap", "targets": unbroken_columns(frame, shown)}]
        return itables.to_html_datatable(
            shown.head(MAX_ROWS),
            caption=caption,
            showIndex=False,
            classes="display compact",
            columnDefs=kept_whole,
        )
    head = f"<caption>{html.escape(caption)}</caption>" if caption else ""
    return shown.to_html(index=False, classes="gwkit-table", border=0).replace("<thead>", f"{head}<thead>", 1)


def unbroken_columns(frame: pd.DataFrame, shown: pd.DataFrame) -> list[int]:
    """The positions of the columns never to wrap: times, and columns of single short words (a
    reference, a code, an amount). The browser would break them at a hyphen ("2026-11-" over
    "24T10:31:02") when the table is narrow; prose wraps as before."""

    def one_word(text: str) -> bool:
        return len(text) <= UNBROKEN_WIDTH and not any(c.isspace() for c in text)

    def unbroken(position: int) -> bool:
        source = frame.get(shown.columns[position])
        if isinstance(source, pd.Series) and pd.api.types.is_datetime64_any_dtype(source):
            return True
        return bool(shown.iloc[:, position].map(one_word).all())

    return [position for position in range(shown.shape[1]) if unbroken(position)]


def mapping_html(mapping: dict[str, Any]) -> str:
    """A dict as a person reads it: a two-column table of fields and values, card data masked."""
    rows = "".join(
        f"<tr><th style='text-align:left;padding-right:1em'><code>{html.escape(str(name))}</code></th>"
        f"<td style='text-align:left'>{html.escape(_text(value))}</td></tr>"
        for name, value in mask_data(dict(mapping)).items()
    )
    return f"<table class='gwkit-fields'>{rows}</table>"


def series_html(series: pd.Series) -> str:
    """A Series as a person reads it: a table of its labels and values (a count per state, a type
    per column), with the same formatting as a DataFrame."""
    values = series.rename(series.name if series.name is not None else "value")
    if isinstance(series.index, pd.RangeIndex) and series.index.name is None:
        return to_html(values.reset_index(drop=True).to_frame())
    return to_html(values.rename_axis(series.index.name or "").reset_index())


def show(frame: pd.DataFrame, *, caption: str | None = None) -> None:
    """Display one frame for people (in a notebook)."""
    display(HTML(to_html(frame, caption=caption)))


def show_tables_for_people() -> bool:
    """From now on in this IPython session, every DataFrame, Series and dict displays for people
    (False outside one): a DataFrame as `to_html`, a Series as a table of labels and values
    (`series_html`), a dict as a table of fields (`mapping_html`)."""
    shell = get_ipython()
    if shell is None:
        return False
    if itables is not None:
        itables.init_notebook_mode(
            all_interactive=False
        )  # loads the table library into the notebook, offline
    html_formatter = shell.display_formatter.formatters["text/html"]
    html_formatter.for_type(pd.DataFrame, lambda frame: to_html(frame))
    html_formatter.for_type(pd.Series, series_html)
    html_formatter.for_type(dict, mapping_html)
    return True
