"""Excel workbooks (`.xlsx`, openpyxl) a finance user opens as they are.

    to_xlsx(frame, "exports/transactions.xlsx", caption=when.caption)   # any frame
    gwkit.report.accounting_view(frame, gw).export("exports", "accounts")    # the accounting view's workbook

Every cell has its type: text as text (references and codes keep their leading zeros and never turn
into dates), dates as dates, times as times, money as numbers with the currency's decimals, counts
as whole numbers. A sheet per currency (amounts are never added across currencies), and a summary
sheet first that says what the workbook holds, as of when, by which clock, and in which time zone.

Text never runs as a formula in a workbook: a cell typed as text is shown, not evaluated. Text that
would run if someone retyped it (`would_evaluate`, the rule of `export`), or that Excel would turn
into a number or a date, is also marked with Excel's own text prefix (`quotePrefix`): the cell
shows the text exactly, without an apostrophe, and stays text when edited.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from datetime import date, datetime
from pathlib import Path
from typing import Any

import pandas as pd
from openpyxl import Workbook
from openpyxl.cell.cell import ILLEGAL_CHARACTERS_RE
from openpyxl.styles import Alignment, Font, PatternFill
from openpyxl.utils import get_column_letter
from openpyxl.worksheet.worksheet import Worksheet
from pandas.api.types import (
    is_bool_dtype,
    is_datetime64_any_dtype,
    is_float_dtype,
    is_integer_dtype,
    is_numeric_dtype,
)

from ..interface.currency import exponent
from ..interface.fields import AMOUNT
from .frames import MAJOR_SUFFIX, MONEY_COLUMNS, flat, report_kind
from .textcells import CURRENCY_COLUMNS, excel_would_convert, would_evaluate
from .timing import REPORT_TIME, ReportTime, caption_of

DATE_FORMAT = "yyyy-mm-dd"
TIME_FORMAT = "yyyy-mm-dd hh:mm:ss"
TEXT_FORMAT = "@"
HEADER_FILL = PatternFill("solid", fgColor="EEF1F5")
FONT = "Calibri"  # the workbook's default font, named: a style without a name prints in a serif
BOLD = Font(name=FONT, bold=True)
MAX_WIDTH = 80
LINE_HEIGHT = 15  # points, a line of 11-point text
WRAPPED = Alignment(wrap_text=True, vertical="top")
LEFT = Alignment(horizontal="left")
NO_CURRENCY = "no currency"
PERCENT_WORDS = ("rate", "share", "percent")


def money_format(currency: str | None) -> str:
    """Thousands separated, the currency's decimals, a minus sign for money out."""
    places = exponent(currency)
    number = "#,##0" + ("." + "0" * places if places else "")
    return f"{number};-{number}"


def to_xlsx(frame: pd.DataFrame, path: str | os.PathLike[str], *, caption: str | None = None) -> Path:
    """A workbook of `frame`: a summary sheet (the caption, the rows per currency), then a sheet per
    currency (`currencyiso3a` or `currency` column), else one sheet of all rows; returns the path."""
    frame = flat(frame)  # a month and a currency in the index are columns of the workbook
    currency_column = next((c for c in CURRENCY_COLUMNS if c in frame.columns), None)
    caption = caption if caption is not None else caption_of(frame)
    book = Workbook()
    summary = book.active
    summary.title = "Summary"
    lines: list[tuple[str, Any]] = [("What this is", caption or "An export of gwkit.report")]
    when = ReportTime.from_attrs(frame.attrs.get(REPORT_TIME))
    if when is not None:
        lines += when.lines()
    if currency_column is None:
        write_table(book.create_sheet("Data"), frame, caption=caption)
        lines.append(("Rows", len(frame)))
    else:
        groups = by_currency(frame, currency_column)
        lines.append(("Sheets", "one per currency: amounts are never added across currencies"))
        for code, rows in groups:
            write_table(
                book.create_sheet(code), rows, currency=None if code == NO_CURRENCY else code, caption=caption
            )
            lines.append((f"Rows in {code}", len(rows)))
    write_lines(summary, lines)
    return save(book, path)


def by_currency(frame: pd.DataFrame, column: str) -> list[tuple[str, pd.DataFrame]]:
    codes = frame[column].astype("string")
    groups = [(str(code), frame[codes == code]) for code in sorted(codes.dropna().unique())]
    if codes.isna().any():
        groups.append((NO_CURRENCY, frame[codes.isna()]))
    return groups


def write_lines(sheet: Worksheet, lines: Iterable[tuple[str, Any]], *, start_row: int = 1) -> int:
    """(label, value) rows in two columns; returns the next free row."""
    row, longest = start_row, 0
    for label, value in lines:
        sheet.cell(row=row, column=1, value=label).font = BOLD
        _set(sheet.cell(row=row, column=2), value)
        row, longest = row + 1, max(longest, len(label))
    sheet.column_dimensions["A"].width = max(sheet.column_dimensions["A"].width or 0, longest + 2)
    # a long value runs on over the empty cells to its right, as a spreadsheet shows text: column B
    # keeps the width of the table below it
    return row


def write_table(
    sheet: Worksheet,
    frame: pd.DataFrame,
    *,
    start_row: int = 1,
    currency: str | None = None,
    per_row_currency: str | None = None,
    caption: str | None = None,
    zone: str | None = None,
) -> int:
    """`frame` on `sheet` from `start_row`: the caption, a header (times named with their zone),
    one typed row per record. Money in `currency`, or in each row's `per_row_currency` column.
    A base-unit amount with a `_major` twin is written once, in major units. Returns the next free row."""
    columns = [c for c in frame.columns if not _has_major_twin(frame, c)]
    row = start_row
    if caption:
        sheet.cell(row=row, column=1, value=caption).font = Font(name=FONT, italic=True)
        row += 1
    header_row = row
    for position, name in enumerate(columns, start=1):
        cell = sheet.cell(row=row, column=position, value=_header(frame, name, currency, zone))
        cell.font, cell.fill = BOLD, HEADER_FILL
        cell.alignment = Alignment(wrap_text=True, vertical="top")
    widths = [len(str(sheet.cell(row=row, column=p).value)) for p in range(1, len(columns) + 1)]
    row_currencies = frame[per_row_currency].astype("string") if per_row_currency else None
    for position, name in enumerate(columns, start=1):
        writer = _writer(frame, name)
        for offset, value in enumerate(frame[name].tolist()):
            code = currency if row_currencies is None else row_currencies.iloc[offset]
            cell = sheet.cell(row=row + 1 + offset, column=position)
            writer(cell, value, None if code is None or pd.isna(code) else str(code))
            widths[position - 1] = max(widths[position - 1], _width(cell))
    for position, width in enumerate(widths, start=1):
        if width > MAX_WIDTH:  # sentences (a status in words) wrap within the column, never cut
            for offset in range(len(frame)):
                cell = sheet.cell(row=row + 1 + offset, column=position)
                cell.alignment = WRAPPED
                lines = -(-_width(cell) // MAX_WIDTH)
                if lines > 1:  # a spreadsheet does not always grow a row for wrapped text it opens
                    height = sheet.row_dimensions[cell.row].height or 0
                    sheet.row_dimensions[cell.row].height = max(height, LINE_HEIGHT * lines)
        letter = get_column_letter(position)
        known = sheet.column_dimensions[letter].width if letter in sheet.column_dimensions else 0
        # a width counts characters of the default font; a wider substitute font (LibreOffice's, a
        # printer's) needs the margin, or a column's text runs into the next one's
        sheet.column_dimensions[letter].width = max(known or 0, min(MAX_WIDTH, round(width * 1.2) + 3))
    if start_row == 1 and len(frame):
        sheet.freeze_panes = sheet.cell(row=header_row + 1, column=1)
        sheet.auto_filter.ref = f"A{header_row}:{get_column_letter(len(columns))}{header_row + len(frame)}"
    return row + 1 + len(frame)


def _has_major_twin(frame: pd.DataFrame, name: Any) -> bool:
    return report_kind(str(name)) == AMOUNT and f"{name}{MAJOR_SUFFIX}" in frame.columns


def _header(frame: pd.DataFrame, name: Any, currency: str | None, zone: str | None) -> str:
    text = str(name)
    if text.endswith(MAJOR_SUFFIX):
        text = text[: -len(MAJOR_SUFFIX)]
    if _is_money(frame, name) and currency:
        return f"{text} ({currency})"
    if is_datetime64_any_dtype(frame[name]) and zone and not _dates_only(frame[name]):
        return f"{text} ({zone})"
    return text


def _is_money(frame: pd.DataFrame, name: Any) -> bool:
    return (
        name in frame.attrs.get(MONEY_COLUMNS, ())
        or str(name).endswith(MAJOR_SUFFIX)
        or report_kind(str(name)) == AMOUNT
    ) and is_numeric_dtype(frame[name])


def _dates_only(values: pd.Series) -> bool:
    present = values.dropna()
    return bool(((present.dt.hour == 0) & (present.dt.minute == 0) & (present.dt.second == 0)).all())


def _writer(frame: pd.DataFrame, name: Any) -> Any:
    """How to write one column's cells: (cell, value, currency) -> None."""
    values = frame[name]
    if is_datetime64_any_dtype(values):
        only_dates = _dates_only(values)

        def write_time(cell: Any, value: Any, currency: str | None) -> None:
            if pd.isna(value):
                return
            moment = (
                pd.Timestamp(value).tz_localize(None) if pd.Timestamp(value).tzinfo else pd.Timestamp(value)
            )
            cell.value = moment.date() if only_dates else moment.to_pydatetime()
            cell.number_format = DATE_FORMAT if only_dates else TIME_FORMAT
            cell.alignment = (
                LEFT  # a date reads as a label of its row, not as a number beside the next column
            )

        return write_time
    if _is_money(frame, name):
        in_base_units = report_kind(str(name)) == AMOUNT and is_integer_dtype(values)

        def write_money(cell: Any, value: Any, currency: str | None) -> None:
            if pd.isna(value):
                return
            amount = float(value) / 10 ** exponent(currency) if in_base_units else float(value)
            cell.value = round(amount, exponent(currency))
            cell.number_format = money_format(currency)

        return write_money
    if is_bool_dtype(values):
        return lambda cell, value, currency: _set(
            cell, None if pd.isna(value) else ("yes" if value else "no")
        )
    if is_numeric_dtype(values):
        percent = any(word in str(name) for word in PERCENT_WORDS) and is_float_dtype(values)

        def write_number(cell: Any, value: Any, currency: str | None) -> None:
            if pd.isna(value):
                return
            whole = is_integer_dtype(values)
            cell.value = int(value) if whole else float(value)
            cell.number_format = "0.0%" if percent else ("0" if whole else "#,##0.00")

        return write_number
    return lambda cell, value, currency: _set(cell, value)


def _set(cell: Any, value: Any) -> None:
    """A cell's value; text typed as text, never a formula (see the module)."""
    if value is None or (not isinstance(value, (str, date, datetime, Mapping)) and pd.isna(value)):
        return
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        cell.value = value
        return
    text = ILLEGAL_CHARACTERS_RE.sub("\ufffd", str(value))
    cell.value = text
    cell.data_type = "s"  # openpyxl makes text starting with "=" a formula: it stays text here
    cell.number_format = TEXT_FORMAT
    if would_evaluate(text) or excel_would_convert(text):
        cell.quotePrefix = True


def _width(cell: Any) -> int:
    value = cell.value
    if value is None:
        return 0
    if isinstance(value, datetime):
        return 19
    if isinstance(value, date):
        return 10
    if isinstance(value, float):
        return len(f"{value:,.2f}") + 1
    return len(str(value))


def save(book: Workbook, path: str | os.PathLike[str]) -> Path:
    """Write the workbook; every sheet prints landscape, one page wide (a wide sheet would print
    its last columns on pages of their own)."""
    for sheet in book.worksheets:
        sheet.page_setup.orientation = "landscape"
        sheet.sheet_properties.pageSetUpPr.fitToPage = True
        sheet.page_setup.fitToWidth, sheet.page_setup.fitToHeight = 1, 0
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    book.save(target)
    return target
