"""Gateway records (dicts of strings) -> pandas DataFrames typed from the spec tables.

Each field's `report` kind in `gwkit.interface.FIELDS` decides its column type:

    AMOUNT    Int64 in base units, plus `<name>_major` (float64, by the currency's exponent)
    DATETIME  datetime64 (the gateway's `YYYY-MM-DD HH:MM:SS`)
    DATE      datetime64 (`YYYY-MM-DD`)
    CATEGORY  category
    INTEGER   Int64
    TEXT      string (also every field the table does not know)

The conversion is columnar: the records are turned into Arrow string columns in one pass, each
column is cast by Arrow's compute kernels with an explicit format, and the major units are one
vectorised division. A value that breaks its column's format raises `ReportError` naming the
column, the row and the value, unless `errors="coerce"` turns it into a missing value.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Mapping, Sequence
from itertools import chain
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from ..errors import GwkitError
from ..interface import FIELDS
from ..interface.currency import DEFAULT_EXPONENT, exponent
from ..interface.fields import AMOUNT, CATEGORY, DATE, DATETIME, INTEGER, TEXT
from ..interface.masking import mask_value

CURRENCY_COLUMN = "currencyiso3a"
MAJOR_SUFFIX = "_major"
# A frame's attrs key naming its money columns whose names do not say so (a reconciliation's "settled").
MONEY_COLUMNS = "money_columns"

_FORMATS = {DATETIME: "%Y-%m-%d %H:%M:%S", DATE: "%Y-%m-%d"}
_RULES = {
    AMOUNT: "an integer amount in base units",
    INTEGER: "a whole number",
    DATETIME: "a timestamp YYYY-MM-DD HH:MM:SS",
    DATE: "a date YYYY-MM-DD",
}
_PANDAS_TYPES = {
    pa.int64(): pd.Int64Dtype(),
    pa.string(): pd.StringDtype("pyarrow"),
    pa.large_string(): pd.StringDtype("pyarrow"),
}


class ReportError(GwkitError, ValueError):
    """A record's value does not fit its column's type; names the column, row, value and rule."""

    def __init__(self, column: str, row: int, value: Any, rule: str):
        self.column, self.row, self.value, self.rule = column, row, value, rule
        super().__init__(
            f"{column}: row {row} has {value!r}, which is not {rule} "
            "(pass errors='coerce' to read it as missing)"
        )


def report_kind(name: str) -> str:
    """How the report types column `name` (TEXT for fields the spec tables do not know)."""
    spec = FIELDS.get(name)
    return spec.report if spec else TEXT


def records_frame(
    records: Iterable[Mapping[str, Any]], *, columns: Sequence[str] | None = None, errors: str = "raise"
) -> pd.DataFrame:
    """A typed DataFrame of gateway records, one row per record.

    `columns` picks and orders the columns (default: every field, in order of first appearance).
    `errors="coerce"` reads values that break their column's format as missing instead of raising.
    """
    if errors not in ("raise", "coerce"):
        raise ValueError("errors must be 'raise' or 'coerce'")
    records = records if isinstance(records, list) else list(records)
    names = list(columns) if columns is not None else list(dict.fromkeys(chain.from_iterable(records)))
    table = _string_table(records, names)
    typed = [_typed(name, column, errors) for name, column in zip(names, table.columns, strict=True)]
    frame = pa.Table.from_arrays(typed, names=names).to_pandas(types_mapper=_PANDAS_TYPES.get)
    return _add_major_units(frame)


def _string_table(records: list[Mapping[str, Any]], names: list[str]) -> pa.Table:
    # One struct array is Arrow's fastest way from a list of dicts to columns (missing keys -> null).
    row_type = pa.struct([(name, pa.string()) for name in names])
    try:
        rows = pa.array(records, type=row_type)
    except (pa.ArrowTypeError, pa.ArrowInvalid):
        # Some value is not a string (a list such as errordata, a nested object, a number).
        rows = pa.array([_as_strings(r) for r in records], type=row_type)
    return pa.Table.from_struct_array(rows)


def _as_strings(record: Mapping[str, Any]) -> dict[str, Any]:
    return {k: _as_string(v) for k, v in record.items()}


def _as_string(value: Any) -> str | None:
    if value is None or isinstance(value, str):
        return value
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        return ", ".join(value)
    if isinstance(value, (list, dict)):
        return json.dumps(value, sort_keys=True)
    return str(value)


def _typed(name: str, column: pa.ChunkedArray, errors: str) -> pa.ChunkedArray:
    kind = report_kind(name)
    # The gateway sends "" for a field that has no value; a report reads that as missing.
    if kind != TEXT:
        column = pc.if_else(pc.equal(column, ""), pa.scalar(None, pa.string()), column)
    if kind in (AMOUNT, INTEGER):
        return _cast(name, column, kind, lambda c: pc.cast(c, pa.int64()), _is_whole_number, errors)
    if kind in (DATE, DATETIME):
        fmt = _FORMATS[kind]
        return _cast(
            name,
            column,
            kind,
            lambda c: pc.strptime(c, format=fmt, unit="s"),
            lambda c: pc.is_valid(pc.strptime(c, format=fmt, unit="s", error_is_null=True)),
            errors,
        )
    if kind == CATEGORY:
        return column.dictionary_encode()
    return column


def _is_whole_number(column: pa.ChunkedArray) -> pa.ChunkedArray:
    return pc.match_substring_regex(column, r"^-?[0-9]{1,18}$")


def _cast(
    name: str,
    column: pa.ChunkedArray,
    kind: str,
    convert: Callable[[Any], Any],
    is_valid: Callable[[Any], Any],
    errors: str,
) -> pa.ChunkedArray:
    """`convert(column)`; when a value breaks the format, raise naming it, or read it as missing."""
    try:
        return convert(column)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
        pass
    valid = pc.fill_null(is_valid(column), True)
    if errors == "raise":
        row = pc.index(valid, False).as_py()
        raise ReportError(name, row, mask_value(name, column[row].as_py()), _RULES[kind])
    return convert(pc.if_else(valid, column, pa.scalar(None, pa.string())))


def _add_major_units(frame: pd.DataFrame) -> pd.DataFrame:
    amounts = [c for c in frame.columns if report_kind(c) == AMOUNT]
    if not amounts:
        return frame
    remember_one_currency(frame)
    scale = _scale(frame)
    for name in amounts:
        values = frame[name].to_numpy(dtype="float64", na_value=np.nan)
        frame.insert(frame.columns.get_loc(name) + 1, name + MAJOR_SUFFIX, values / scale)
    return frame


def remember_one_currency(frame: pd.DataFrame) -> pd.DataFrame:
    """`frame` (changed in place) knowing its currency when all its rows have one: a selection of
    its columns without `currencyiso3a` still shows money with its sign (`£15.00`, not `15.00`)."""
    if CURRENCY_COLUMN in frame.columns and frame[CURRENCY_COLUMN].nunique() == 1:
        frame.attrs["currency"] = str(frame[CURRENCY_COLUMN].dropna().iloc[0])
    return frame


def _scale(frame: pd.DataFrame) -> np.ndarray | float:
    """10 ** exponent of each row's currency (one lookup per distinct currency, not per row)."""
    if CURRENCY_COLUMN not in frame.columns:
        return float(10**DEFAULT_EXPONENT)
    currency = frame[CURRENCY_COLUMN]
    if not isinstance(currency.dtype, pd.CategoricalDtype):
        currency = currency.astype("category")
    per_category = np.array(
        [10.0 ** exponent(str(c)) for c in currency.cat.categories] + [10.0**DEFAULT_EXPONENT]
    )
    codes = currency.cat.codes.to_numpy()  # -1 (missing currency) picks the default at the end
    return per_category[codes]


def flat(frame: pd.DataFrame) -> pd.DataFrame:
    """`frame` with a meaningful index (named, or other than 0, 1, 2, ...) as its first columns, as
    a table is shown and exported (a month and a currency are columns of a file); attrs kept."""
    if frame.index.names != [None] or not isinstance(frame.index, pd.RangeIndex):
        return frame.reset_index()
    return frame
