"""Tables for people: the same DataFrames (and dicts), shown as a person reads them.

    gwkit.report.show_tables_for_people()   # once per notebook: every DataFrame shown this way
    gwkit.report.for_people(frame)          # the display copy of one frame
    gwkit.report.show(frame, caption=...)   # one frame, interactive

The frames themselves stay typed for analysis (amounts as integers in base units, timestamps as
datetimes, missing values as <NA>); only what is shown changes: amounts in major units with the
currency symbol (`£15.00`, the base-unit and `_major` columns shown once), thousands separated,
rates and shares as percentages, dates without a time of midnight, and nothing at all where a
value is missing. With itables installed the table is interactive (sort by a column's title; a
search box from SEARCHED_FROM rows; pages from PAGED_FROM rows); without it, a plain HTML table.
Every column is shown: a table wider than the page scrolls sideways, with a visible scrollbar and
a cue above it naming the columns out of sight; rows past MAX_ROWS, and a `_major` column shown
within its amount, are named in a note under the table.
"""

from __future__ import annotations

import html
import re
import uuid
from collections.abc import Mapping, Sequence
from types import ModuleType
from typing import Any

import pandas as pd
from IPython import get_ipython
from IPython.display import HTML, display

from ..interface.currency import exponent, format_money
from ..interface.fields import AMOUNT
from ..interface.masking import mask_data
from ..interface.vocabulary import WORDED_FIELDS, labelled
from .frames import CURRENCY_COLUMN, MAJOR_SUFFIX, MONEY_COLUMNS, flat, report_kind

itables: ModuleType | None
try:  # the [lab] extra brings itables; the plain table below is the fallback
    import itables
except ImportError:  # pragma: no cover - exercised by test_people's fallback test through monkeypatch
    itables = None

PERCENT_NAME = re.compile(r"(^|_)(rate|share|percent|pct|ratio)(_|$)")
MONEY_NAME = re.compile(r"(^|_)(amount|revenue|mrr|net|refunded)(_|$)")
# Whole numbers that name something rather than count it: written without thousands separators.
CODE_NAME = re.compile(r"(code|status|number|reference|id)$")
MAX_ROWS = 5000  # rows sent to the browser for one interactive table
PAGED_FROM = 25  # a table of fewer rows is shown whole: no pages, no page-length menu
SEARCHED_FROM = 10  # a table of this many rows or more has a search box (fewer are read at a glance)
PROSE_FROM = 40  # a column holding a sentence longer than this is given room to be read (min-width)
UNBROKEN_WIDTH = 32  # a single word up to this long (a time, a reference, £1,050.00) is kept on one line


def for_people(frame: pd.DataFrame, *, currency: str | None = None) -> pd.DataFrame:
    """A copy of `frame` with every value written for a person (all strings, "" where missing).

    Money: integer columns are base units (1050 -> £10.50), float columns major units (10.5 -> £10.50),
    in the frame's `currencyiso3a` (or `currency`) column, else `currency`, else the frame's
    `attrs["currency"]`."""
    currency = currency or frame.attrs.get("currency")
    shown = pd.DataFrame(index=frame.index)
    # a gateway record's currency column, else a report's (the accounting view's "currency")
    currencies = frame.get(CURRENCY_COLUMN, frame.get("currency"))
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
    if name in WORDED_FIELDS and name != "transactionactive":  # a code with its words beside it
        return column.astype(object).map(lambda v: "" if v is None or pd.isna(v) else labelled(name, v))
    named_money = money or MONEY_NAME.search(name)
    if report_kind(name) == AMOUNT or major or (named_money and pd.api.types.is_numeric_dtype(column)):
        # a wire amount (baseamount) is base units even as floats (a missing value makes them float)
        in_major = major or (report_kind(name) != AMOUNT and pd.api.types.is_float_dtype(column))
        written = [
            _money(v, c if currencies is not None else currency, major=in_major)
            for v, c in zip(
                column, currencies if currencies is not None else [currency] * len(column), strict=True
            )
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
    if value is None or (isinstance(value, str) and not value.strip()) or pd.isna(value):
        return ""  # missing, or a blank left by fillna("")
    code = currency if isinstance(currency, str) else None
    if major:  # a float in major units: back to base units, then written exactly
        return format_money(round(float(value) * 10 ** exponent(code)), code)
    return format_money(int(value), code)


def _whole(column: pd.Series) -> bool:
    values = column.dropna()
    return bool(len(values)) and bool((values.astype(float) % 1 == 0).all())


def to_html(frame: pd.DataFrame, *, caption: str | None = None) -> str:
    """The frame for people as HTML, in the one table style: text left, numbers and money right,
    a small table (under PAGED_FROM rows) whole, a wide one scrolling sideways instead of cut off.
    Interactive (itables) when installed, else a plain table. A meaningful index (named, or other
    than 0, 1, 2, ...) is shown as the first columns. `caption` defaults to the frame's own
    (`attrs["caption"]`: what it is, as of when, by which clock, in which time zone)."""
    caption = caption if caption is not None else frame.attrs.get("caption")
    frame = flat(frame)  # keeps attrs (the currency, the money columns)
    shown = for_people(frame)
    right = numeric_columns(frame, shown)
    notes = left_out_note(frame, shown)
    if itables is not None:
        # "display compact" without itables' default "nowrap": long text (what a code means) wraps
        # inside the notebook's width instead of running off its right edge.
        column_defs = column_classes(
            shown.shape[1], right, unbroken_columns(frame, shown), prose_columns(shown)
        )
        table_id = f"itables_{str(uuid.uuid4()).replace('-', '_')}"  # the form of itables' own ids
        table = itables.to_html_datatable(
            shown.head(MAX_ROWS),
            table_id=table_id,
            showIndex=False,
            classes="display compact gwkit-datatable",
            columnDefs=column_defs,
            scrollX=True,
            drawCallback=itables.JavascriptFunction(SCROLL_CUE_SCRIPT.replace("TABLE_ID", table_id)),
            # every column, and every row up to MAX_ROWS: itables' own limits would drop columns
            # and rows with no more than a link to its documentation
            maxBytes=0,
            maxRows=0,
            maxColumns=0,
            **table_controls(len(shown)),
        )
        cue = f"<div class='gwkit-scroll-cue' id='{table_id}-cue' hidden></div>"
        return DATATABLE_STYLE + caption_html(caption) + cue + table + notes
    return caption_html(caption) + plain_table_html(shown, right) + notes


def table_controls(rows: int) -> dict[str, Any]:
    """DataTables' paging and layout for a table of `rows`: pages (and the page-length menu, the
    count of rows) from PAGED_FROM rows, a search box from SEARCHED_FROM, nothing for fewer."""
    paged = rows >= PAGED_FROM
    layout: dict[str, Any] = {
        "topStart": "pageLength" if paged else None,
        "topEnd": "search" if rows >= SEARCHED_FROM else None,
        "bottomStart": "info" if rows >= SEARCHED_FROM else None,
        "bottomEnd": "paging" if paged else None,
    }
    return {"paging": paged, "layout": layout}


def left_out_note(frame: pd.DataFrame, shown: pd.DataFrame) -> str:
    """What the table does not show of the frame, and where to see it: rows past MAX_ROWS, and
    `_major` columns (shown within their amount). "" when it shows everything."""
    notes = []
    merged = [
        str(name)
        for name in frame.columns
        if isinstance(name, str) and name.endswith(MAJOR_SUFFIX) and name not in shown.columns
    ]
    if merged:
        notes.append(f"Shown once, within its amount: {', '.join(merged)} (the same money in major units).")
    if len(shown) > MAX_ROWS:
        notes.append(
            f"The first {MAX_ROWS:,} of {len(shown):,} rows are shown: the frame holds them all "
            f"(frame.iloc[{MAX_ROWS}:] for the rest, or gwkit.report.to_csv(frame, path) for a file)."
        )
    if not notes:
        return ""
    return f"<p class='gwkit-note' style='{CAPTION_STYLE}'>{html.escape(' '.join(notes))}</p>"


def caption_html(caption: str | None) -> str:
    """A table's caption above it, wrapped to the page's width: a caption inside a wide table would
    scroll sideways with it, its end out of sight."""
    if not caption:
        return ""
    return f"<p class='gwkit-caption' style='{CAPTION_STYLE}'>{html.escape(caption)}</p>"


def column_classes(
    width: int, right: list[int], unbroken: list[int], prose: Sequence[int] = ()
) -> list[dict[str, Any]]:
    """DataTables' columnDefs: each column's whole class list in one entry (where entries overlap,
    DataTables keeps one className: a time column lost its dt-left, its title right-aligned).
    `prose` columns (sentences: a status in words) get room enough to read them."""
    targets: dict[str, list[int]] = {}
    for position in range(width):
        align = "dt-right" if position in right else "dt-left"
        classes = f"{align} dt-nowrap" if position in unbroken else align
        classes = f"{classes} gwkit-prose" if position in prose else classes
        targets.setdefault(classes, []).append(position)
    return [{"className": classes, "targets": positions} for classes, positions in targets.items()]


def prose_columns(shown: pd.DataFrame) -> list[int]:
    """The positions of the columns of sentences (some value longer than PROSE_FROM, with spaces)."""

    def prose(text: str) -> bool:
        return len(text) > PROSE_FROM and " " in text

    return [p for p in range(shown.shape[1]) if bool(shown.iloc[:, p].map(prose).any())]


def numeric_columns(frame: pd.DataFrame, shown: pd.DataFrame) -> list[int]:
    """The positions of the columns to align right: numbers and money (codes and references,
    although digits, are names: they stay left like text)."""

    def numeric(position: int) -> bool:
        name = shown.columns[position]
        source = frame.get(name)
        if not isinstance(source, pd.Series) or CODE_NAME.search(str(name)) or name in WORDED_FIELDS:
            return False
        if report_kind(str(name)) == AMOUNT or name in frame.attrs.get(MONEY_COLUMNS, ()):
            return True  # money, even as wire strings ("1050")
        return bool(pd.api.types.is_numeric_dtype(source) and not pd.api.types.is_bool_dtype(source))

    return [position for position in range(shown.shape[1]) if numeric(position)]


def plain_table_html(shown: pd.DataFrame, right: list[int], *, caption: str | None = None) -> str:
    """A frame already written for people as a plain HTML table in the one style (STYLESHEET):
    text left, the `right` columns right, scrolling sideways when wider than the page (a shadow
    at the edge where more columns wait, and a scrollbar always drawn)."""
    head = f"<caption>{html.escape(caption)}</caption>" if caption else ""

    def cell(tag: str, position: int, text: Any) -> str:
        align = " class='gwkit-num'" if position in right else ""
        return f"<{tag}{align}>{html.escape(str(text))}</{tag}>"

    header = "".join(cell("th", p, name) for p, name in enumerate(shown.columns))
    rows = "".join(
        "<tr>" + "".join(cell("td", p, value) for p, value in enumerate(row)) + "</tr>"
        for row in shown.itertuples(index=False)
    )
    return (
        f"{STYLESHEET}<div class='gwkit-scroll'><table class='gwkit-table'>{head}"
        f"<thead><tr>{header}</tr></thead><tbody>{rows}</tbody></table></div>"
    )


# JupyterLab right-aligns every table cell (.jp-RenderedHTMLCommon td, th): the one style wins here,
# headers included, so a column's title sits over its values. A table wider than the page scrolls
# sideways with its scrollbar always drawn (a coloured one is never an overlay that shows only while
# scrolling); the cue above it (SCROLL_CUE_SCRIPT) names the columns out of sight.
DATATABLE_STYLE = """<style>
table.gwkit-datatable th.dt-left, table.gwkit-datatable td.dt-left { text-align: left !important; }
table.gwkit-datatable th.dt-right, table.gwkit-datatable td.dt-right { text-align: right !important; }
table.gwkit-datatable td.gwkit-prose { min-width: 16em; }
.dt-container:has(table.gwkit-datatable) .dt-scroll-body { scrollbar-color: #8a94a6 #eef1f5; }
.dt-container:has(table.gwkit-datatable) .dt-scroll-body::-webkit-scrollbar { height: 12px; background: #eef1f5; }
.dt-container:has(table.gwkit-datatable) .dt-scroll-body::-webkit-scrollbar-thumb { background: #8a94a6; border-radius: 6px; }
.gwkit-scroll-cue { margin: 2px 0; color: #1f4e99; font-size: 90%; font-weight: 600; text-align: left; }
</style>"""

CAPTION_STYLE = "margin:6px 0 2px;color:#4a5568;font-size:90%;text-align:left;max-width:100%"

STYLESHEET = """<style>
.gwkit-scroll { max-width: 100%; overflow-x: auto; scrollbar-color: #8a94a6 #eef1f5;
  background: linear-gradient(to left, #fff 30%, rgba(255,255,255,0)) right / 40px 100% no-repeat local,
    radial-gradient(farthest-side at 100% 50%, rgba(0,0,0,.25), rgba(0,0,0,0)) right / 12px 100% no-repeat scroll; }
.gwkit-scroll::-webkit-scrollbar { height: 12px; background: #eef1f5; }
.gwkit-scroll::-webkit-scrollbar-thumb { background: #8a94a6; border-radius: 6px; }
.gwkit-table { border-collapse: collapse; margin: 4px 0 8px; font-size: 92%; }
.gwkit-table th { text-align: left !important; background: #eef1f5; border-bottom: 2px solid #c5ccd6; padding: 4px 12px; }
.gwkit-table td { text-align: left !important; border-bottom: 1px solid #e3e7ed; padding: 4px 12px; white-space: nowrap; }
.gwkit-table .gwkit-num { text-align: right !important; font-variant-numeric: tabular-nums; }
.gwkit-table tr:nth-child(even) td { background: #f8f9fb; }
</style>"""


# DataTables' drawCallback (itables 2.9 drops an initComplete of ours), for the table TABLE_ID: the
# cue above a table wider than its frame says which columns are out of sight and which way to
# scroll, kept true as it scrolls, is resized or redrawn (searched, paged).
SCROLL_CUE_SCRIPT = """function () {
  const table = document.getElementById("TABLE_ID"), cue = document.getElementById("TABLE_ID-cue");
  const body = table && table.closest(".dt-scroll-body");
  if (!cue || !body) { return; }
  const head = table.closest(".dt-container").querySelector(".dt-scroll-head table") || table;
  const update = () => {
    const left = body.scrollLeft, right = left + body.clientWidth;
    const titles = [...head.querySelectorAll("thead th")];
    const after = titles.filter(th => th.offsetLeft + th.offsetWidth > right + 1).map(th => th.textContent.trim());
    const before = titles.filter(th => th.offsetLeft < left - 1).map(th => th.textContent.trim());
    const parts = [];
    if (after.length) { parts.push("Scroll right → for " + after.length + " more column" + (after.length > 1 ? "s" : "") + ": " + after.join(", ")); }
    if (before.length) { parts.push("← scroll left for " + before.join(", ")); }
    cue.textContent = parts.length ? parts.join("; ") + " (shift + mouse wheel, or drag the bar under the table)" : "";
    cue.hidden = parts.length === 0;
  };
  if (!body.dataset.gwkitCue) {
    body.dataset.gwkitCue = "on";
    body.addEventListener("scroll", update, { passive: true });
    new ResizeObserver(update).observe(body);
  }
  update();
}"""


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
    """A dict as a person reads it: a two-column table of fields and values, card data masked, codes
    with their words, amounts with their currency, times without the ISO `T`, yes/no for flags."""
    masked = mask_data(dict(mapping))
    rows = "".join(
        f"<tr><th style='text-align:left;padding-right:1em'><code>{html.escape(str(name))}</code></th>"
        f"<td style='text-align:left'>{html.escape(field_text(str(name), value, masked))}</td></tr>"
        for name, value in masked.items()
    )
    return f"<table class='gwkit-fields'>{rows}</table>"


ISO_TIME = re.compile(r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2})?")


def field_text(name: str, value: Any, mapping: Mapping[str, Any]) -> str:
    """One value of a record-like mapping as a person reads it."""
    if isinstance(value, bool):
        return "yes" if value else "no"
    if report_kind(name) == AMOUNT and isinstance(value, str) and value.isdigit():
        currency = mapping.get(CURRENCY_COLUMN)
        return f"{format_money(int(value), currency if isinstance(currency, str) else None)} · {value} in base units"
    if isinstance(value, str) and ISO_TIME.fullmatch(value):
        return value.replace("T", " ")
    return labelled(name, value, mapping) if name in WORDED_FIELDS else _text(value)


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
