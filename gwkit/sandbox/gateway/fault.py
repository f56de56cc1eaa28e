"""Fault: a request the gateway refuses, answered with a code of the interface's error table."""

from __future__ import annotations

from ...interface.codes import message_of


class Fault(Exception):
    """A refused request: answered as an error record, and nothing of it is kept.

    The errormessage is the code's, from the interface's table (`gwkit.interface.codes`)."""

    def __init__(self, errorcode: int, errordata: list[str] | None = None):
        self.errorcode = errorcode
        self.errormessage = message_of(errorcode)
        self.errordata = list(errordata or [])
        super().__init__(f"{errorcode} {self.errormessage} {self.errordata}")


def invalid_field(*names: str) -> Fault:
    return Fault(30000, list(names))
