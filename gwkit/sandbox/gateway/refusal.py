"""Refusal: a request the gateway refuses, answered with a code of the interface's error table."""

from __future__ import annotations

import logging
import os
import sqlite3
import traceback

from ...interface.codes import message_of
from ...interface.errors import GwkitError
from ...interface.masking import mask_text


class Refusal(GwkitError):
    """A refused request: answered as an error record, and nothing of it is kept.

    The errormessage is the code's, from the interface's table (`gwkit.interface.codes`)."""

    def __init__(self, errorcode: int, errordata: list[str] | None = None):
        self.errorcode = errorcode
        self.errormessage = message_of(errorcode)
        self.errordata = list(errordata or [])
        super().__init__(f"{errorcode} {self.errormessage} {self.errordata}")


def invalid_field(*names: str) -> Refusal:
    return Refusal(30000, list(names))


def unknown_error(exc: BaseException) -> Refusal:
    """A sandbox bug, answered 99999 with a short reference; the traceback is logged under it."""
    reference = log_internal_error(exc, "answered 99999")
    return Refusal(99999, [f"reference {reference} (the sandbox's log has the details)"])


def log_internal_error(exc: BaseException, answered: str) -> str:
    """Log a sandbox bug under a new short reference (`E-` and 8 letters and digits) and return it.

    The exception's message is not shown, and logged only for a failure of the storage (a full
    disk, an I/O error: the cause the operator must act on), card numbers in it masked: another
    exception's message may quote request values such as card data. Its class and the frames say
    where to look."""
    reference = "E-" + "".join(_REFERENCE_ALPHABET[byte % len(_REFERENCE_ALPHABET)] for byte in os.urandom(8))
    log.error(
        "internal error %s: %s (%s)\n%s",
        reference,
        _cause(exc),
        answered,
        "".join(traceback.format_tb(exc.__traceback__)).rstrip(),
    )
    return reference


def storage_failure(exc: BaseException) -> bool:
    """A failure of the storage (a full disk, an I/O error, a lost database connection), not a bug."""
    return isinstance(exc, (sqlite3.Error, OSError)) or type(exc).__module__.startswith("psycopg")


def _cause(exc: BaseException) -> str:
    """The exception's class, and for a storage failure its masked message ("database or disk is full")."""
    return f"{type(exc).__name__}: {mask_text(str(exc))}" if storage_failure(exc) else type(exc).__name__


_REFERENCE_ALPHABET = "ABCDEFGHJKLMNPQRSTUVWXYZ23456789"  # no 0/O or 1/I to misread
log = logging.getLogger("gwkit.sandbox")
