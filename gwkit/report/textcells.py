"""Which text a spreadsheet would run as a formula, or turn into a number or a date (`export`'s rules)."""

from __future__ import annotations

import re

from .frames import CURRENCY_COLUMN

FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")
# What may follow a leading + or - and still be a name, not a formula: letters, with single spaces,
# apostrophes, dots or hyphens between them (Lee, Anne-Marie, O'Neil, St. John).
NAME_AFTER_SIGN = re.compile(r"[^\W\d_]+(?:[ '’.\-]{1,2}[^\W\d_]+)*\.?")
_MONTH = (
    r"(?:jan(?:uary)?|feb(?:ruary)?|mar(?:ch)?|apr(?:il)?|may|june?|july?|aug(?:ust)?"
    r"|sep(?:t(?:ember)?)?|oct(?:ober)?|nov(?:ember)?|dec(?:ember)?)"
)
# Text Excel reads as a number, a date, a time, a fraction or a percentage when it opens a CSV.
EXCEL_CONVERTS = re.compile(
    r"\s*[+-]?(?=[\d\s.,:/\-]*\d)[\d\s.,:/\-]+(?:[eE][+-]?\d+)?%?\s*"
    rf"|\s*\d{{1,4}}[-/ ]?{_MONTH}(?:[-/ ]\d{{1,4}})?\s*|\s*{_MONTH}[-/ ]?\d{{1,4}}\s*",
    re.IGNORECASE,
)
# The columns that name each row's currency: a gateway record's, and the accounting view's.
CURRENCY_COLUMNS = (CURRENCY_COLUMN, "currency")


def would_evaluate(text: str) -> bool:
    """Whether a spreadsheet would run this text as a formula (the module's rule)."""
    if not text.startswith(FORMULA_STARTS):
        return False
    if text[0] in "+-":
        return not NAME_AFTER_SIGN.fullmatch(text[1:])
    return True


def excel_would_convert(text: str) -> bool:
    """Whether Excel, opening a CSV, would turn this text into a number or a date."""
    return bool(EXCEL_CONVERTS.fullmatch(text))
