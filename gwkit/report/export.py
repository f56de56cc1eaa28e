"""Export typed frames: CSV that Excel opens as it is, Parquet for data tools, `.xlsx` for finance.

CSV for Excel (`to_csv`, the default `for_excel=True`):
- UTF-8 with a byte-order mark, so that Excel on Windows reads "Chloé" as Chloé;
- text that Excel would turn into a number or a date (a reference `18-9-17`, a code `05`, a long
  number) is written `="18-9-17"`: Excel shows the text exactly, leading zeros kept;
- a column of dates alone is written `YYYY-MM-DD`, timestamps `YYYY-MM-DD HH:MM:SS`;
- money in major units is written with its currency's decimals (`10.50`, `1050` for yen);
- a caption (what the file holds, as of when, which clock, which time zone) is the first line
  when one is given; the header is then the second line (`pandas.read_csv(path, skiprows=1)`).
`for_excel=False` writes plain UTF-8 for data tools, without any of those.

Formulas (both kinds of CSV, and `.xlsx`). A spreadsheet runs a cell starting with `=`, `+`, `-` or
`@` as a formula; an order reference `=HYPERLINK(...)` or `+cmd|' /C calc'!A0` would run on the finance
user's machine ("CSV injection"). The rule (`would_evaluate`): text starting with `=` or `@`, with a
tab or a carriage return, or with `+` or `-` followed by anything but a name (letters, with single
spaces, apostrophes, dots or hyphens between them) is neutralised; in CSV it gets a leading `'`, as
OWASP advises. So `-Lee`, `+Anne-Marie` or `-O'Neil` stay as they are: a name calls no function and
reaches no other cell or program. Numbers, dates and flags are written as they are (a refund of
-5.00 stays a number). Parquet keeps every value unchanged.
"""

from __future__ import annotations

import os
from pathlib import Path

import pandas as pd
from pandas.api.types import is_bool_dtype, is_datetime64_any_dtype, is_float_dtype, is_numeric_dtype

from ..interface.currency import exponent
from .frames import MAJOR_SUFFIX, MONEY_COLUMNS, flat
from .spreadsheet import to_xlsx
from .textcells import CURRENCY_COLUMNS, excel_would_convert, would_evaluate
from .timing import caption_of


def to_csv(
    frame: pd.DataFrame,
    path: str | os.PathLike[str],
    *,
    neutralise_formulas: bool = True,
    for_excel: bool = True,
    caption: str | None = None,
) -> Path:
    """CSV with a header, no index, rows ending CRLF; returns the path. See the module for what
    `for_excel` (default) and `neutralise_formulas` (default) do; `caption`, the file's first line
    (for Excel, default: the frame's caption, else as of when and by which clock it was read, when
    the frame knows: `timing.caption_of`)."""
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    frame = _periods_as_text(flat(frame))  # a month and a currency in the index are columns of the file
    if for_excel:
        written = _for_excel(frame, neutralise_formulas)
    else:
        written = neutralised(frame) if neutralise_formulas else frame
    if caption is None and for_excel:  # a data tool reads the header on the first line
        caption = caption_of(frame)
    with open(target, "w", encoding="utf-8-sig" if for_excel else "utf-8", newline="") as out:
        if caption:
            pd.DataFrame([[caption]]).to_csv(out, index=False, header=False, lineterminator="\r\n")
        # CRLF rows (RFC 4180): the csv writer then quotes a cell holding a lone CR, which a spreadsheet
        # would otherwise read as the end of a row, and the rest of the cell as a new (unneutralised) one.
        written.to_csv(out, index=False, date_format="%Y-%m-%d %H:%M:%S", lineterminator="\r\n")
    return target


def _periods_as_text(frame: pd.DataFrame) -> pd.DataFrame:
    """Months (periods) as `2026-01`: the CSV writer's date format would make one its last day."""
    periods = [c for c in frame.columns if isinstance(frame[c].dtype, pd.PeriodDtype)]
    if not periods:
        return frame
    out = frame.copy()
    for name in periods:
        out[name] = frame[name].astype("string")
    return out


def neutralised(frame: pd.DataFrame) -> pd.DataFrame:
    """A copy of `frame` whose text cells cannot run as a spreadsheet formula (the module's rule)."""
    safe = frame.copy()
    for column in safe.columns:
        values = safe[column]
        if is_numeric_dtype(values) or is_bool_dtype(values) or is_datetime64_any_dtype(values):
            continue
        safe[column] = values.map(_neutral_cell, na_action="ignore")
    return safe


def _neutral_cell(value: object) -> object:
    if isinstance(value, str) and would_evaluate(value):
        return "'" + value
    return value


def _for_excel(frame: pd.DataFrame, neutralise_formulas: bool) -> pd.DataFrame:
    """Text Excel would convert kept as text, formulas neutralised, dates without a midnight time,
    money with its currency's decimals."""
    out = frame.copy()
    currencies = next((frame[c] for c in CURRENCY_COLUMNS if c in frame.columns), None)
    money = set(frame.attrs.get(MONEY_COLUMNS, ()))
    for name in out.columns:
        values = frame[name]
        if is_datetime64_any_dtype(values):
            out[name] = _dates(values)
        elif (
            is_float_dtype(values)
            and currencies is not None
            and (name in money or str(name).endswith(MAJOR_SUFFIX))
        ):
            out[name] = [
                "" if pd.isna(v) else f"{v:.{exponent(c if isinstance(c, str) else None)}f}"
                for v, c in zip(values, currencies, strict=True)
            ]
        elif not (is_numeric_dtype(values) or is_bool_dtype(values)):
            out[name] = values.map(lambda v: _excel_text(v, neutralise_formulas), na_action="ignore")
    return out


def _dates(values: pd.Series) -> pd.Series:
    present = values.dropna()
    if getattr(values.dt, "tz", None) is not None:
        values = values.dt.tz_localize(None)
        present = values.dropna()
    midnight = (present.dt.hour == 0) & (present.dt.minute == 0) & (present.dt.second == 0)
    pattern = "%Y-%m-%d" if bool(midnight.all()) else "%Y-%m-%d %H:%M:%S"
    return values.dt.strftime(pattern).astype(object).where(values.notna(), "")


def _excel_text(value: object, neutralise_formulas: bool) -> object:
    """`="05"` for text Excel would convert (shown exactly, and safe: the text is a string literal),
    else the cell neutralised when it would run."""
    if isinstance(value, str) and '"' not in value and excel_would_convert(value):
        return f'="{value}"'
    return _neutral_cell(value) if neutralise_formulas else value


def to_parquet(frame: pd.DataFrame, path: str | os.PathLike[str]) -> Path:
    """Parquet (pyarrow) keeping the dtypes: Int64, datetime64, category, string; returns the path."""
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    flat(frame).to_parquet(target, engine="pyarrow", index=False)
    return target


def export(
    frame: pd.DataFrame,
    directory: str | os.PathLike[str],
    name: str,
    *,
    neutralise_formulas: bool = True,
    caption: str | None = None,
) -> dict[str, Path]:
    """Three files, `<directory>/<name>.csv` (for Excel), `.xlsx` (a summary sheet and a sheet per
    currency) and `.parquet`; returns {"csv": path, "xlsx": path, "parquet": path}.
    `neutralise_formulas`: see `to_csv` (the Parquet file is never changed). `caption`: what the file
    holds and as of when (`ReportTime.caption`), first in the CSV and on the summary sheet."""
    folder = Path(directory)
    return {
        "csv": to_csv(
            frame, folder / f"{name}.csv", neutralise_formulas=neutralise_formulas, caption=caption
        ),
        "xlsx": to_xlsx(frame, folder / f"{name}.xlsx", caption=caption),
        "parquet": to_parquet(frame, folder / f"{name}.parquet"),
    }
