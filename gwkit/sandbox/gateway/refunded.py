"""What the refunds of one AUTH add up to: the bound a refund, and an update of the AUTH, must keep.

A refund gives back money the AUTH took, so the AUTH must go on settling for at least what its
refunds add up to: refunds.py refuses a refund past it (20007), update.py an update of the AUTH
that would cancel it (60017) or lower its settle amount below it (20007).
"""

from __future__ import annotations

import sqlite3


def refunded_so_far(conn: sqlite3.Connection, parent_reference: str) -> int:
    """What the successful refunds of one AUTH add up to (each for its settle amount where one was set)."""
    (total,) = conn.execute(
        "SELECT COALESCE(SUM(CAST(COALESCE(settlebaseamount, baseamount) AS INTEGER)), 0) FROM transactions "
        "WHERE parenttransactionreference = ? AND requesttypedescription = 'REFUND' AND errorcode = '0' "
        "AND settlestatus != '3'",
        (parent_reference,),
    ).fetchone()
    return int(total)
