"""The sandbox's store in one SQLite file, in WAL mode (a notebook's, a single server's).

Every record the gateway answers is kept in `transactions`, its columns named after the wire
fields (values kept as the strings that went over the wire) and the whole record as JSON, so a
TRANSACTIONQUERY answers exactly what was answered before, with later updates applied. Card
numbers live in `cards`, encrypted by the vault; a security code is never stored.

Other parts of the sandbox (3-D Secure sessions, subscriptions, tokens, the demo merchant) bring
their own tables as SQL (`schemas`), applied, idempotently, whenever a store opens; a table an
earlier gwkit made gets the columns added since (`added_columns`).
"""

from __future__ import annotations

import os
import sqlite3
import tempfile
import threading
import time
from collections import deque
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import AbstractContextManager, contextmanager
from pathlib import Path
from typing import Any

from ..moves import DEFAULT_LEASE_SECONDS, Moves
from ..references import ReferenceNumbers
from ..sitedata import Catalog
from ..vault import Vault
from .common import (
    CARDS_INDEX,
    CORE_SCHEMA,
    MemoryFaultRows,
    Records,
    SiteTurns,
    Sql,
    Statement,
    StoreError,
    WaitTally,
    changed_columns,
    create_private,
    savepoint,
    text_for,
)
from .snapshots import FileSnapshots

# SQLite 3.35 brought RETURNING and 3.38 the ->> operator, which the modules' SQL uses.
MINIMUM_SQLITE = (3, 38, 0)
# The page cache of a connection in a long run of writes (KiB). SQLite's default, 2 MB, is far less
# than the pages such a transaction dirties (its new rows, and the index and subscription pages it
# revisits): SQLite would spill them to the WAL during the transaction and write many twice.
LONG_WRITE_CACHE_KIB = 65536
CHECKPOINT_EVERY = 500  # commits between checkpoints (Checkpointer): a WAL of some 13 MB of payments


class WriteTurns:
    """Who writes next, in order of arrival: one writer at a time, handed over first come, first served.

    SQLite allows one writer; its own busy wait is neither fair nor quick (it sleeps and retries), so
    the threads of one process take turns here, and a long run of short writes (a clock move, day by
    day) cannot starve a payment that is waiting. Other processes still meet the busy timeout.
    """

    def __init__(self) -> None:
        self._mutex = threading.Lock()
        self._waiting: deque[threading.Lock] = deque()
        self._holder: int | None = None

    def acquire(self) -> None:
        me = threading.get_ident()
        with self._mutex:
            if self._holder == me:
                raise RuntimeError("a write transaction was opened inside another one on the same thread")
            if self._holder is None:
                self._holder = me
                return
            turn = threading.Lock()
            turn.acquire()
            self._waiting.append(turn)
        try:
            turn.acquire()  # released by the writer before us, who made us the holder
        except BaseException:  # Ctrl-C in a notebook while waiting: leave the queue, or pass the turn on
            self._give_up(turn)
            raise
        self._holder = me

    @property
    def waited_for(self) -> bool:
        """Whether a writer waits for the turn (a glance, for the holder deciding to let go early)."""
        return bool(self._waiting)

    @property
    def taken(self) -> bool:
        """Whether a writer holds the turn or waits for it (a glance: it may change the next moment)."""
        return self._holder is not None or bool(self._waiting)

    def _give_up(self, turn: threading.Lock) -> None:
        with self._mutex:
            if turn in self._waiting:
                self._waiting.remove(turn)
                return
        self.release()  # it was handed to us just as we gave up

    def release(self) -> None:
        with self._mutex:
            if self._waiting:
                self._holder = -1  # handed over: nobody else may take it meanwhile
                self._waiting.popleft().release()
            else:
                self._holder = None


class Checkpointer:
    """Copies the WAL into the database on a thread of its own, every `every` commits of this process.

    A checkpoint syncs the WAL and the database to disk. Left to SQLite's auto-checkpoint, it runs in
    the commit that crosses the limit, and that payment's answer waits for the disk (up to hundreds of
    ms on a busy one). Here it runs beside the writers (PASSIVE: it blocks no writer and no reader), so
    the auto-checkpoint, kept as a bound, is only reached when this one falls behind."""

    def __init__(self, path: Path, every: int):
        self._path = path
        self._every = every
        self._commits = 0  # counted by the writer holding the turn (Store.write): one at a time
        self._asked = self._done = 0  # passes asked for; the last asked for when the last pass began
        self._changed = threading.Condition()
        self._stopping = False
        self._thread: threading.Thread | None = None
        self._pid = os.getpid()

    def committed(self) -> None:
        self._commits += 1
        if self._commits < self._every:
            return
        self._commits = 0
        with self._changed:
            if self._thread is None or self._pid != os.getpid():  # not yet, or a forked child's: its own
                self._pid = os.getpid()
                self._thread = threading.Thread(target=self._run, name="gwkit-checkpoint", daemon=True)
                self._thread.start()
            self._asked += 1
            self._changed.notify_all()

    def wait(self, timeout: float) -> bool:
        """Whether every pass asked for so far has been made within `timeout` seconds."""
        with self._changed:
            return self._changed.wait_for(lambda: self._done >= self._asked, timeout)

    def _run(self) -> None:
        conn = sqlite3.connect(self._path, isolation_level=None, check_same_thread=False, timeout=30)
        try:
            while True:
                with self._changed:
                    self._changed.wait_for(lambda: self._stopping or self._asked > self._done)
                    if self._stopping:
                        return
                    asked = self._asked
                checkpoint_beside_writers(conn)
                with self._changed:
                    self._done = asked
                    self._changed.notify_all()
        finally:
            conn.close()

    def stop(self) -> None:
        with self._changed:
            self._stopping = True
            self._changed.notify_all()
        if self._thread is not None and self._pid == os.getpid():
            self._thread.join()


def checkpoint_beside_writers(conn: sqlite3.Connection) -> None:
    """Copy the WAL into the database file without holding up any writer or reader (PASSIVE). If
    another connection checkpoints meanwhile, or the file went away, the next pass does it."""
    try:
        conn.execute("PRAGMA wal_checkpoint(PASSIVE)")
    except sqlite3.Error:
        pass


class SqliteConnection(sqlite3.Connection):
    """A SQLite connection that runs the SQLite text of an `Sql` (common.py) given to it."""

    def execute(self, sql: Statement, parameters: Any = (), /) -> sqlite3.Cursor:
        return super().execute(sql if sql.__class__ is str else sql.sqlite, parameters)  # type: ignore[union-attr]

    def executemany(self, sql: Statement, parameters: Any, /) -> sqlite3.Cursor:
        return super().executemany(sql if sql.__class__ is str else sql.sqlite, parameters)  # type: ignore[union-attr]


def check_sqlite_version(version: tuple[int, ...] = sqlite3.sqlite_version_info) -> None:
    if version < MINIMUM_SQLITE:
        raise StoreError(
            f"the sandbox needs SQLite {'.'.join(map(str, MINIMUM_SQLITE))} or later; this Python has "
            f"{'.'.join(map(str, version))} (use a Python built with a newer SQLite)"
        )


class SqliteStore(Records):
    """A SQLite database shared by threads (one connection each) and by processes (WAL).

    Writes take turns (`WriteTurns`); reads run in their own transactions beside them (WAL)."""

    batch_alone = False  # whether a request alone in the queue is answered in `batch()` too
    rows_per_commit = 4000  # of a long run of writes (jobwrites.SharedWrite): see there
    shared_by_workers = False  # one process writes it: --workers needs a PostgreSQL store
    writes_side_by_side = False  # one writer at a time, whatever the sites

    def __init__(
        self,
        path: str | Path | None = None,
        *,
        schemas: Iterable[Statement] = (),
        added_columns: Iterable[tuple[str, str, str]] = (),
    ):
        check_sqlite_version()
        if path is None:
            self._tempdir = tempfile.TemporaryDirectory(prefix="gwkit-sandbox-")
            path = Path(self._tempdir.name) / "sandbox.db"
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        create_private(self.path)
        self.vault = Vault.beside(self.path)
        self._local = threading.local()
        self._connections: dict[threading.Thread, sqlite3.Connection] = {}  # each thread's own
        self._lock = threading.Lock()
        self._turns = WriteTurns()
        self._turns_of_sites = SiteTurns()  # hold()
        self._restoring: dict[str, int] = {}  # site -> the thread restoring it (restoring())
        self._restores_changed = threading.Condition()
        self._waits = WaitTally()  # write_turns()
        self.checkpointer = Checkpointer(self.path, CHECKPOINT_EVERY)
        self._prefix: str | None = None  # of transaction references: set once per database
        self._numbers = ReferenceNumbers()  # of transaction references, taken ahead
        self._schemas = tuple(schemas)
        self._added_columns = tuple(added_columns)
        self.apply_schemas()

    def __repr__(self) -> str:
        return f"SqliteStore({str(self.path)!r})"

    # what the store makes for the rest of the sandbox

    def moves(self, lease_seconds: float = DEFAULT_LEASE_SECONDS) -> Moves:
        """The clock moves under way: one process moves this store's clocks, so in memory (no lease)."""
        return Moves()

    def hold(self, sites: Iterable[str], wait: bool = True) -> AbstractContextManager[bool]:
        """The turn of `sites` for a change that spans many transactions (common.SiteTurns)."""
        return self._turns_of_sites.hold(sites, wait)

    @contextmanager
    def restoring(self, sites: Iterable[str]) -> Iterator[None]:
        """While this thread restores `sites` in several transactions (snapshots.py), other threads'
        writes to any of them (or to the whole sandbox) wait until it is done; others write between
        its transactions."""
        sites, me = list(sites), threading.get_ident()
        with self._restores_changed:
            self._restoring.update(dict.fromkeys(sites, me))
        try:
            yield
        finally:
            with self._restores_changed:
                for site in sites:
                    self._restoring.pop(site, None)
                self._restores_changed.notify_all()

    def _after_restores(self, sites: Iterable[str] | None) -> None:
        if not self._restoring:  # the common case, without taking the condition's lock
            return
        me, wanted = threading.get_ident(), None if sites is None else set(sites)
        with self._restores_changed:
            self._restores_changed.wait_for(
                lambda: (
                    not any(
                        thread != me and (wanted is None or site in wanted)
                        for site, thread in self._restoring.items()
                    )
                )
            )

    def fault_rows(self) -> MemoryFaultRows:
        """Where injected faults are kept: one process serves this store, so in memory."""
        return MemoryFaultRows()

    def snapshots(self, gateway: Any, account: Any, site_expressions: Any, sites: Iterable[str]) -> Any:
        """An account's scenario snapshots: SQLite files beside the database (snapshots.py)."""
        return FileSnapshots(gateway, account, site_expressions, sites=sites)

    def catalog(self, conn: Any, schema: str = "main") -> Catalog:
        """The tables in creation order, their columns, their foreign keys (parent, column, parent column)."""
        tables = [
            r[0]
            for r in conn.execute(
                f"SELECT name FROM {schema}.sqlite_master WHERE type = 'table' "
                "AND name NOT LIKE 'sqlite_%' ORDER BY rowid"
            )
        ]
        columns = {t: [c[1] for c in conn.execute(f'PRAGMA {schema}.table_info("{t}")')] for t in tables}
        keys = {
            t: [(k[2], k[3], k[4]) for k in conn.execute(f'PRAGMA {schema}.foreign_key_list("{t}")')]
            for t in tables
        }
        return tables, columns, keys

    def long_write(self, conn: sqlite3.Connection) -> Callable[[], None]:
        """Set a connection up for a long run of writes (a bigger page cache, no automatic checkpoint:
        jobwrites.SharedWrite checkpoints between its commits); what puts it back as it was."""
        cache_size = _set_pragma(conn, "cache_size", -LONG_WRITE_CACHE_KIB)
        autocheckpoint = _set_pragma(conn, "wal_autocheckpoint", 0)

        def put_back() -> None:
            _set_pragma(conn, "cache_size", cache_size)
            _set_pragma(conn, "wal_autocheckpoint", autocheckpoint)

        return put_back

    def checkpoint_beside_writers(self) -> None:
        """Copy the WAL into the database, holding up no writer or reader."""
        checkpoint_beside_writers(self.connection())

    # connections and transactions

    def connection(self) -> sqlite3.Connection:
        conn = getattr(self._local, "conn", None)
        if conn is None:
            conn = sqlite3.connect(
                self.path,
                isolation_level=None,
                check_same_thread=False,
                timeout=30,
                factory=SqliteConnection,
            )
            conn.row_factory = sqlite3.Row
            conn.execute("PRAGMA journal_mode=WAL")
            conn.execute("PRAGMA synchronous=NORMAL")
            conn.execute("PRAGMA foreign_keys=ON")
            conn.execute("PRAGMA secure_delete=ON")  # deleted rows are overwritten, not left in free pages
            conn.execute("PRAGMA busy_timeout=30000")
            conn.execute(
                "PRAGMA wal_autocheckpoint=16384"
            )  # daily runs write many pages: checkpoint per 64 MB
            self._local.conn = conn
            with self._lock:
                self._close_finished_threads_connections()
                self._connections[threading.current_thread()] = conn
        return conn

    def _close_finished_threads_connections(self) -> None:
        """Threads come and go (a notebook's, a client's): a finished one's connection is closed, not kept open."""
        for thread in [t for t in self._connections if not t.is_alive()]:
            self._connections.pop(thread).close()

    @contextmanager
    def write(self, sites: Iterable[str] | None = None) -> Iterator[sqlite3.Connection]:
        """A write transaction (BEGIN IMMEDIATE): all of it is kept, or none of it. SQLite has one
        writer at a time whatever `sites` it writes to.

        Inside `batch()` it is a savepoint of the batch's transaction instead: kept or rolled back on
        its own, committed with the batch."""
        batch = getattr(self._local, "batch", None)
        if batch is not None:
            with savepoint(batch):
                yield batch
            return
        conn = self.connection()
        asked = time.perf_counter()
        self._after_restores(sites)
        self._turns.acquire()
        try:
            conn.execute("BEGIN IMMEDIATE")  # after another process's writer (busy timeout)
            self._waits.count(time.perf_counter() - asked)
            try:
                yield conn
            except BaseException:
                conn.execute("ROLLBACK")
                self._numbers.rolled_back()
                raise
            taken_ahead = self._numbers.before_commit(conn)
            try:
                conn.execute("COMMIT")
            except sqlite3.Error:  # a full disk, an I/O error: nothing of it is kept
                if conn.in_transaction:  # SQLite may leave it open; the next BEGIN would fail
                    conn.execute("ROLLBACK")
                self._numbers.rolled_back()
                raise
            self._numbers.committed(taken_ahead)
            self.checkpointer.committed()
        finally:
            self._turns.release()

    def write_turns(self) -> dict[str, float]:
        """How long this process's write transactions waited for their turn (common.WaitTally)."""
        return self._waits.figures()

    @property
    def writing(self) -> bool:
        """Whether a thread of this process holds a write transaction or waits for one."""
        return self._turns.taken

    @property
    def writer_waiting(self) -> bool:
        """Whether another thread of this process waits to write: a long run of writes commits and
        lets it in (jobwrites.SharedWrite)."""
        return self._turns.waited_for

    @contextmanager
    def read(self) -> Iterator[sqlite3.Connection]:
        """A read transaction: one consistent view, without the write lock (writers go on meanwhile).
        Inside `batch()`, the batch's own view (what the requests before it in the batch wrote)."""
        batch = getattr(self._local, "batch", None)
        if batch is not None:
            yield batch
            return
        conn = self.connection()
        conn.execute("BEGIN")
        try:
            yield conn
        finally:
            conn.execute("COMMIT")

    def apply_schemas(self) -> None:
        conn = self.connection()
        for script in (CORE_SCHEMA, *self._schemas):
            conn.executescript(text_for(script, "sqlite"))
        for table, column, declaration in (("cards", "card_index", "BLOB"), *self._added_columns):
            if column not in {row["name"] for row in conn.execute(f'PRAGMA table_info("{table}")')}:
                conn.execute(
                    f'ALTER TABLE "{table}" ADD COLUMN "{column}" {declaration}'
                )  # an earlier gwkit's
        conn.execute(CARDS_INDEX)

    def close(self) -> None:
        self.checkpointer.stop()
        with self._lock:
            for conn in self._connections.values():
                try:
                    conn.close()
                except sqlite3.ProgrammingError:  # pragma: no cover - closed from its own thread
                    pass
            self._connections.clear()
        self._local = threading.local()

    def wipe(self) -> None:
        """Delete every row of every table except `meta` (the clock and the reference prefix)."""
        with self.write() as conn:
            tables = [
                r[0]
                for r in conn.execute(
                    "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'"
                )
            ]
            conn.execute("PRAGMA defer_foreign_keys=ON")
            for table in tables:
                if table != "meta":
                    conn.execute(f'DELETE FROM "{table}"')
        self.checkpoint()

    def checkpoint(self) -> None:
        """Copy the WAL into the database and empty it, so deleted data lives on in neither file."""
        self.connection().execute("PRAGMA wal_checkpoint(TRUNCATE)")

    def each_row(self, conn: sqlite3.Connection, statement: Sql, rows: Sequence[Sequence[Any]]) -> None:
        """Run `statement` for each of `rows` (its SQLite text: one row's parameters, executemany)."""
        conn.executemany(statement.sqlite, rows)

    def faults_present(self) -> bool:
        """Faults live in memory here (fault_rows): the web layer asks its fault book instead."""
        return False

    # transactions

    def _numbers_for(self, conn: sqlite3.Connection, count: int) -> Iterable[int]:
        return self._numbers.take(conn, count)

    def update_transactions(
        self, conn: sqlite3.Connection, references: Sequence[str], changes: Mapping[str, str]
    ) -> None:
        """Change fields of kept records: their columns and their JSON alike (json_set, in place)."""
        assignments, params = changed_columns(changes)
        assignments.append(f"record = json_set(record, {', '.join('?, ?' for _ in changes)})")
        for name, value in changes.items():
            params.extend([f'$."{name}"', value])
        conn.executemany(
            f"UPDATE transactions SET {', '.join(assignments)} WHERE transactionreference = ?",
            [[*params, reference] for reference in references],
        )


def _set_pragma(conn: sqlite3.Connection, name: str, setting: int | None) -> int | None:
    """Set a connection's `PRAGMA name`; what it was."""
    if setting is None:
        return None
    (before,) = conn.execute(f"PRAGMA {name}").fetchone()
    conn.execute(f"PRAGMA {name} = {int(setting)}")
    return before
