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

from collections.abc import Callable, Iterable
from contextlib import AbstractContextManager
from typing import Any

from .store import Connection, Store

# Payments (each a record, a claim and a counter) per commit: the store's `rows_per_commit`. Measured
# on the 2-core machine, 12 months of 10,000 subscriptions: on SQLite 4,000 held the lock at most 0.5
# to 0.9 s, as 2,000 did when each payment still rewrote its SUBSCRIPTION record, and save a tenth of
# the engine's time; a writer of the process waiting there is let in at the next batch anyway.
DAYS_PER_COMMIT = 31  # days of the clock, idle ones skipped included: a long quiet move commits now and then
# Rows written between the WAL checkpoints a shared write makes itself (SQLite). Left to SQLite's
# automatic checkpoint (each 64 MB of WAL, store/sqlite.py) a 12-month run of 10,000 subscriptions made
# seven, each some 0.4 s inside a COMMIT, so with the write lock held; each copies the index and
# subscription pages every commit since the last rewrote. Made here, after a commit, the lock is
# free meanwhile, and a checkpoint per 60,000 rows (a WAL of some 130 MB) copies those pages fewer
# times: 3.4 s of commits became 2.6 s.
CHECKPOINT_ROWS = 60000


class SharedWrite:
    """A write transaction opened on first use and committed at the bounds; as a context manager,
    what is left commits on leaving, and an exception rolls back what was not committed."""

    def __init__(self, store: Store, sites: Iterable[str] | None = None):
        self._store = store
        self._sites = None if sites is None else tuple(sites)  # those the jobs write to (Store.write)
        self._opened: AbstractContextManager | None = None
        self._conn: Connection | None = None
        self._put_back: Callable[[], None] = lambda: None  # the connection's settings (Store.long_write)
        self._unchecked = 0  # rows committed since the last checkpoint
        self.rows = 0  # written since the last commit
        self.days = 0  # finished since the last commit

    @property
    def conn(self) -> Connection:
        """The open transaction's connection, opening it (taking the write lock) if none is."""
        if self._conn is None:
            opened = self._store.write(self._sites)
            self._conn = opened.__enter__()
            self._opened = opened
            self._put_back = self._store.long_write(self._conn)
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

    def day_done(self, days: int = 1) -> None:
        """A day and its marks are written, `days` of the clock since the last (the idle ones between
        skipped): commit if its rows or days reached their bound, or another writer is waiting."""
        self.days += days
        if self._full() or self.days >= DAYS_PER_COMMIT or self._let_in():
            self.commit()

    def _full(self) -> bool:
        return self.rows >= self._store.rows_per_commit

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
        self._store.checkpoint_beside_writers()

    def __enter__(self) -> SharedWrite:
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
        opened, self._opened, self._conn = self._opened, None, None
        try:
            opened.__exit__(kind, error, trace)
        finally:
            self._put_back()  # the connection serves small requests again
