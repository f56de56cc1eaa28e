"""The write transaction one run of the daily jobs shares: several days commit at once.

A commit costs SQLite about as much as writing a few hundred payments (it rewrites every index
page the transaction touched), so a clock move that committed each job's day on its own spent
most of its time committing. Here the jobs of many days write into one transaction, opened at
the first write, and it commits once it holds `ROWS_PER_COMMIT` rows (per store) or `DAYS_PER_COMMIT` days.

Exactly once: what a day's jobs wrote and the marks of that day commit together or not at all.
A commit happens only where what is written is whole: between days, after the marks, and
between the engine's batches (whole payments with their claims and counters; the day's mark
waits, and a day run again skips what was made). The bounds keep the write lock held for a
short time, and on SQLite a writer waiting for the lock (a payment beside a long clock move) makes
the run commit at its next such point and let it in.
"""

from __future__ import annotations

import sqlite3
from contextlib import AbstractContextManager
from typing import Any

from .store import checkpoint_beside_writers

# Payments (each a record, a claim and a counter) per commit. Measured on the 2-core machine, 12
# months of 10,000 subscriptions: on SQLite 4,000 held the lock at most 0.5 to 0.9 s, as 2,000 did
# when each payment still rewrote its SUBSCRIPTION record, and save a tenth of the engine's time; a
# writer of the process waiting there is let in at the next batch anyway. On PostgreSQL, whose other
# workers' writers are not known, 4,000 held it 2.4 s (2,000 subscriptions; 2,000 rows: 0.75 s).
ROWS_PER_COMMIT = {"sqlite": 4000, "postgresql": 2000}
DAYS_PER_COMMIT = 31  # idle days still read and write a little: a long quiet move commits now and then
# SQLite's page cache while the shared write is open (KiB). Its default, 2 MB, is far less than the
# pages such a transaction dirties (its new rows, and the index and subscription pages it revisits):
# SQLite would spill them to the WAL during the transaction and write many twice.
CACHE_KIB = 65536
# Rows written between the WAL checkpoints a shared write makes itself (SQLite). Left to SQLite's
# automatic checkpoint (each 64 MB of WAL, store.py) a 12-month run of 10,000 subscriptions made
# seven, each some 0.4 s inside a COMMIT, so with the write lock held; each copies the index and
# subscription pages every commit since the last rewrote. Made here, after a commit, the lock is
# free meanwhile, and a checkpoint per 60,000 rows (a WAL of some 130 MB) copies those pages fewer
# times: 3.4 s of commits became 2.6 s.
CHECKPOINT_ROWS = 60000


class SharedWrite:
    """A write transaction opened on first use and committed at the bounds; as a context manager,
    what is left commits on leaving, and an exception rolls back what was not committed."""

    def __init__(self, store: Any):
        self._store = store
        self._opened: AbstractContextManager | None = None
        self._conn: sqlite3.Connection | None = None
        self._cache_size: int | None = None  # the connection's own page cache, put back at commit
        self._autocheckpoint: int | None = None  # and its automatic checkpoint, off while open
        self._unchecked = 0  # rows committed since the last checkpoint
        self._dialect = store.dialect
        self.rows = 0  # written since the last commit
        self.days = 0  # finished since the last commit

    @property
    def conn(self) -> sqlite3.Connection:
        """The open transaction's connection, opening it (taking the write lock) if none is."""
        if self._conn is None:
            opened = self._store.write()
            self._conn = opened.__enter__()
            self._opened = opened
            self._cache_size = _set_pragma(self._store, self._conn, "cache_size", -CACHE_KIB)
            self._autocheckpoint = _set_pragma(self._store, self._conn, "wal_autocheckpoint", 0)
        return self._conn

    @property
    def is_open(self) -> bool:
        return self._conn is not None

    def wrote(self, rows: int) -> None:
        self.rows += rows

    def commit_if_full(self) -> None:
        """At a point where what is written is whole: commit if the rows reached their bound, or a
        payment (any other writer) is waiting for the lock."""
        if self._full() or self._let_in():
            self.commit()

    def day_done(self) -> None:
        """A day and its marks are written: commit if its rows or days reached their bound, or
        another writer is waiting."""
        self.days += 1
        if self._full() or self.days >= DAYS_PER_COMMIT or self._let_in():
            self.commit()

    def _full(self) -> bool:
        return self.rows >= ROWS_PER_COMMIT[self._dialect]

    def _let_in(self) -> bool:
        return self.is_open and self._store.writer_waiting

    def commit(self) -> None:
        self._unchecked += self.rows if self.is_open else 0
        self.rows = self.days = 0
        self._close(None, None, None)
        if self._unchecked >= CHECKPOINT_ROWS:
            self.checkpoint()

    def checkpoint(self) -> None:
        """Copy the WAL into the database (SQLite; readers and writers are not held up)."""
        self._unchecked = 0
        if self._dialect == "sqlite":
            checkpoint_beside_writers(self._store.connection())

    def __enter__(self) -> "SharedWrite":
        return self

    def __exit__(self, kind: Any, error: Any, trace: Any) -> None:
        if error is None:
            self.commit()
            if self._unchecked:  # not left for the next writer's commit to make
                self.checkpoint()
        else:
            self._close(kind, error, trace)  # rolls back

    def _close(self, kind: Any, error: Any, trace: Any) -> None:
        if self._opened is None:
            return
        opened, conn, self._opened, self._conn = self._opened, self._conn, None, None
        try:
            opened.__exit__(kind, error, trace)
        finally:
            # the connection serves small requests again
            _set_pragma(self._store, conn, "cache_size", self._cache_size)
            _set_pragma(self._store, conn, "wal_autocheckpoint", self._autocheckpoint)


def _set_pragma(store: Any, conn: sqlite3.Connection, name: str, setting: int | None) -> int | None:
    """Set a SQLite connection's `PRAGMA name` (cache_size, wal_autocheckpoint); what it was
    (PostgreSQL: nothing to do)."""
    if store.dialect != "sqlite" or setting is None:
        return None
    (before,) = conn.execute(f"PRAGMA {name}").fetchone()
    conn.execute(f"PRAGMA {name} = {int(setting)}")
    return before
