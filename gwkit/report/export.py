"""Export typed frames to CSV (for spreadsheets) and Parquet (types kept, for pandas/Arrow tools).

CSV cells are read by spreadsheets, which run a cell starting with `=`, `+`, `-` or `@` as a formula
(and skip a leading tab or carriage return to find one). An order reference such as
`=HYPERLINK(...)` would run on the finance user's machine ("CSV injection"). So `to_csv`, as OWASP
advises, puts a `'` before every text cell that starts with one of those characters; numeric,
datetime and boolean columns are written as they are (a negative amount stays a number). Parquet is
read by data tools, not spreadsheets, and keeps every value unchanged.
"""

from __future__ import annotations

import os
from pathlib import Path

import pandas as pd
from pandas.api.types import is_bool_dtype, is_datetime64_any_dtype, is_numeric_dtype

FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")


def to_csv(frame: pd.DataFrame, path: str | os.PathLike[str], *, neutralise_formulas: bool = True) -> Path:
    """CSV with a header, no index, rows ending CRLF, timestamps as `YYYY-MM-DD HH:MM:SS`; returns the path.

    `neutralise_formulas` (default): text cells starting with `=`, `+`, `-`, `@`, tab or CR get a
    leading `'`, so a spreadsheet shows them instead of running them; False writes them unchanged."""
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    written = neutralised(frame) if neutralise_formulas else frame
    # CRLF rows (RFC 4180): the csv writer then quotes a cell holding a lone CR, which a spreadsheet
    # would otherwise read as the end of a row, and the rest of the cell as a new (unneutralised) one.
    written.to_csv(target, index=False, date_format="%Y-%m-%d %H:%M:%S", lineterminator="\r\n")
    return target


def neutralised(frame: pd.DataFrame) -> pd.DataFrame:
    """A copy of `frame` whose text cells cannot start a spreadsheet formula (OWASP's rule)."""
    safe = frame.copy()
    for column in safe.columns:
        values = safe[column]
        if is_numeric_dtype(values) or is_bool_dtype(values) or is_datetime64_any_dtype(values):
            continue
        safe[column] = values.map(_neutral_cell, na_action="ignore")
    return safe


def _neutral_cell(value: object) -> object:
    if isinstance(value, str) and value.startswith(FORMULA_STARTS):
        return "'" + value
    return value


def to_parquet(frame: pd.DataFrame, path: str | os.PathLike[str]) -> Path:
    """Parquet (pyarrow) keeping the dtypes: Int64, datetime64, category, string; returns the path."""
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    frame.to_parquet(target, engine="pyarrow", index=False)
    return target


def export(
    frame: pd.DataFrame, directory: str | os.PathLike[str], name: str, *, neutralise_formulas: bool = True
) -> dict[str, Path]:
    """Both files, `<directory>/<name>.csv` and `.parquet`; returns {"csv": path, "parquet": path}.
    `neutralise_formulas`: see `to_csv` (the Parquet file is never changed)."""
    folder = Path(directory)
    return {
        "csv": to_csv(frame, folder / f"{name}.csv", neutralise_formulas=neutralise_formulas),
        "parquet": to_parquet(frame, folder / f"{name}.parquet"),
    }
