"""The numbers of transaction references (`N-9-M`), taken from the SQLite counter a block at a time.

M is a number of `meta.reference_counter`, which only grows (a reset or a snapshot's restore
leaves it alone): no number is given twice, across threads and processes. Moving the counter
writes the meta table's page, one page of the six an AUTH's commit writes and about a sixth of the
gateway's time for it; so a process takes `BLOCK` numbers ahead and gives them out without SQL.

The counter is transactional; numbers held in memory are not. Numbers taken ahead are pending
until the transaction that took them commits, and are given out before that only while the
counter, read back, still ends where they end (a savepoint rolled back since would have lowered
it). A rolled-back transaction's pending numbers are dropped, and so are a forked parent's. A
number a process never gives out is never used: references have gaps, as the real gateway's have.
PostgreSQL takes its numbers from a sequence instead (store/postgres.py).
"""

from __future__ import annotations

import os
import sqlite3

BLOCK = 64
_ADVANCE = (
    "UPDATE meta SET value = CAST(value AS INTEGER) + ? WHERE key = 'reference_counter' RETURNING value"
)
_READ = "SELECT CAST(value AS INTEGER) FROM meta WHERE key = 'reference_counter'"


class ReferenceNumbers:
    """One store's numbers taken ahead. Used by the thread holding the store's write turn only,
    whose `Store.write` tells it how each transaction ends: so numbers are pending only while the
    transaction that took them holds SQLite's write lock, and no other process moves the counter."""

    def __init__(self) -> None:
        self._pid = os.getpid()
        self._next = self._end = 0  # committed: [next, end) are this process's to give out
        self._pending: list[int] | None = None  # [next, end), taken in the open transaction

    def take(self, conn: sqlite3.Connection, count: int) -> range:
        """`count` numbers no one else has or will have, inside `conn`'s write transaction."""
        if self._pid != os.getpid():
            self.__init__()  # type: ignore[misc]  # a fork's copy of its parent's numbers: never used
        if self._end - self._next >= count:
            return self._given(count)
        pending = self._pending
        if pending is not None and pending[1] - pending[0] >= count and self._in_place(conn, pending):
            pending[0] += count
            return range(pending[0] - count, pending[0])
        last = _advance(conn, count + BLOCK)
        first = last - BLOCK - count + 1
        self._next = self._end  # what is left of the block before is dropped: references grow
        if conn.in_transaction:
            self._pending = [first + count, last + 1]
        else:  # the UPDATE committed on its own
            self._next, self._end = first + count, last + 1
        return range(first, first + count)

    def before_commit(self, conn: sqlite3.Connection) -> list[int] | None:
        """The numbers taken ahead in the transaction about to commit, if still the counter's; for
        `committed` once the COMMIT has succeeded."""
        pending, self._pending = self._pending, None
        return pending if pending is not None and self._in_place(conn, pending) else None

    def committed(self, pending: list[int] | None) -> None:
        if pending is not None:
            self._next, self._end = pending

    def rolled_back(self) -> None:
        self._pending = None

    def _given(self, count: int) -> range:
        self._next += count
        return range(self._next - count, self._next)

    @staticmethod
    def _in_place(conn: sqlite3.Connection, pending: list[int]) -> bool:
        row = conn.execute(_READ).fetchone()
        return row is not None and row[0] == pending[1] - 1


def _advance(conn: sqlite3.Connection, count: int) -> int:
    """Move the counter on by `count`; its new value, the last of the numbers taken."""
    row = conn.execute(_ADVANCE, (count,)).fetchone()
    if row is not None:
        return int(row[0])
    conn.execute("INSERT INTO meta (key, value) VALUES ('reference_counter', ?)", (str(count),))
    return count
