"""The interface's type classes: what characters and shapes a value of each may have."""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import date


@dataclass(frozen=True)
class TypeClass:
    name: str
    pattern: re.Pattern[str] | None
    rule: str  # the rule in words, for error messages

    def check(self, value: str) -> str | None:
        """None when `value` has this type's shape, otherwise the rule it breaks."""
        if self.pattern is not None and not self.pattern.fullmatch(value):
            return self.rule
        return None


class _DateType(TypeClass):
    def check(self, value: str) -> str | None:
        if super().check(value) is not None:
            return self.rule
        try:
            date.fromisoformat(value)
        except ValueError:
            return "must be a real calendar date"
        return None


ALPHA = TypeClass("Alpha", re.compile(r"[A-Za-z]*"), "letters A-Z only")
NUMERIC = TypeClass("Numeric", re.compile(r"[0-9]*"), "digits 0-9 only")
ALPHANUMERIC = TypeClass("Alphanumeric", re.compile(r"[A-Za-z0-9 ]*"), "letters, digits and spaces only")
ALPHANUMERIC_SYMBOLS = TypeClass(
    "Alphanumeric including symbols",
    re.compile(r"[^\x00-\x08\x0b\x0c\x0e-\x1f\x7f]*"),
    "no control characters",
)
ALPHANUMERIC_UNDERSCORE = TypeClass(
    "Alphanumeric including underscore", re.compile(r"[A-Za-z0-9_]*"), "letters, digits and _ only"
)
ALPHANUMERIC_HYPHENS = TypeClass(
    "Alphanumeric including hyphens", re.compile(r"[A-Za-z0-9-]*"), "letters, digits and - only"
)
DATE_MONTH = TypeClass("Date MM/YYYY", re.compile(r"(0[1-9]|1[0-2])/[0-9]{4}"), "format MM/YYYY")
DATE_ISO = _DateType("Date YYYY-MM-DD", re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}"), "format YYYY-MM-DD")
URL = TypeClass("URL", re.compile(r"https?://[^\s/?#]+[^\s]*", re.IGNORECASE), "an http:// or https:// URL")
EMAIL = TypeClass(
    "Email",
    re.compile(r"[^@\s]{1,64}@[^@\s]+\.[^@\s]+"),
    "an email address with at most 64 characters before the @",
)
CHAR = TypeClass("Char", re.compile(r"."), "a single character")
NUMERIC_SYMBOLS = TypeClass(
    "Numeric with symbols", re.compile(r"[0-9 +()\-]*"), "digits, spaces, +, -, ( and ) only"
)
STRING = TypeClass("string", None, "")
# Browser headers are typed Alphanumeric in the interface, but the real values carry `/`, `;`,
# `*`, `,` and so on; gwkit checks them as printable text so that real headers pass.
HEADER = TypeClass("Alphanumeric (header text)", re.compile(r"[\x20-\x7e]*"), "printable ASCII only")
