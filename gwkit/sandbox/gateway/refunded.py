"""What the refunds of one AUTH add up to: the bound a refund, and an update of the AUTH, must keep.

A refund gives back money the AUTH took, so the AUTH must go on settling for at least what its
refunds add up to, and no later than they do: refunds.py refuses a refund past it (20007), update.py
an update of the AUTH that would cancel or suspend it (60017), move its settle day past its refunds'
(60017) or lower its settle amount below them (20007).
"""

from __future__ import annotations

from dataclasses import dataclass

from .store import Connection

_LIVE_REFUNDS = (
    "FROM transactions WHERE parenttransactionreference = ? AND requesttypedescription = 'REFUND' "
    "AND errorcode = '0' AND settlestatus != '3'"
)


@dataclass(frozen=True)
class Refunded:
    """The live (not failed, not cancelled) refunds of one AUTH: their total and their earliest settle day."""

    total: int
    first_due: str | None  # YYYY-MM-DD; None without refunds


def refunded_so_far(conn: Connection, parent_reference: str) -> int:
    """What the successful refunds of one AUTH add up to (each for its settle amount where one was set)."""
    return refunds_of(conn, parent_reference).total


def refunds_of(conn: Connection, parent_reference: str) -> Refunded:
    total, first_due = conn.execute(
        "SELECT COALESCE(SUM(CAST(COALESCE(settlebaseamount, baseamount) AS INTEGER)), 0), "
        f"MIN(settleduedate) {_LIVE_REFUNDS}",
        (parent_reference,),
    ).fetchone()
    return Refunded(int(total), first_due)
