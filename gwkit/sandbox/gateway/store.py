"""The sandbox's persistence: one SQLite file in WAL mode.

Every record the gateway answers is kept in `transactions`, its columns named after the wire
fields (values kept as the strings that went over the wire) and the whole record as JSON, so a
TRANSACTIONQUERY answers exactly what was answered before, with later updates applied. Card
numbers live in `cards`, encrypted by the vault; a security code is never stored.

Other parts of the sandbox (3-D Secure sessions, subscriptions, tokens, the demo merchant) bring
their own tables as SQL (`schemas`), applied, idempotently, whenever a store opens.
"""

from __future__ import annotations

import functools
import json
import os
import secrets
import sqlite3
import tempfile
import threading
from collections import deque
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Iterable, Iterator, Mapping

from ...interface.masking import mask_pan
from .references import ReferenceNumbers
from .vault import Vault

# Columns of `transactions` that mirror wire fields of the record, for filters and updates.
TRANSACTION_COLUMNS = (
    "transactionreference",
    "sitereference",
    "requesttypedescription",
    "accounttypedescription",
    "parenttransactionreference",
    "orderreference",
    "currencyiso3a",
    "baseamount",
    "settlestatus",
    "settlebaseamount",
    "settleduedate",
    "errorcode",
    "transactionactive",
    "paymenttypedescription",
    "transactionstartedtimestamp",
)

CORE_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS cards (
    id INTEGER PRIMARY KEY,
    pan_encrypted BLOB NOT NULL,
    maskedpan TEXT NOT NULL,
    expirydate TEXT NOT NULL,
    paymenttypedescription TEXT,
    card_index BLOB  -- vault.index(pan, expirydate) of reusable rows (see Store.card_for); else NULL
);
CREATE TABLE IF NOT EXISTS transactions (
    id INTEGER PRIMARY KEY,
    transactionreference TEXT NOT NULL UNIQUE,
    sitereference TEXT NOT NULL,
    requesttypedescription TEXT NOT NULL,
    accounttypedescription TEXT,
    parenttransactionreference TEXT,
    orderreference TEXT,
    currencyiso3a TEXT,
    baseamount TEXT,
    settlestatus TEXT,
    settlebaseamount TEXT,
    settleduedate TEXT,
    errorcode TEXT NOT NULL,
    transactionactive TEXT,
    paymenttypedescription TEXT,
    transactionstartedtimestamp TEXT NOT NULL,
    card_id INTEGER REFERENCES cards(id),
    record TEXT NOT NULL,
    details TEXT NOT NULL DEFAULT '{}'
);
CREATE INDEX IF NOT EXISTS transactions_site_started ON transactions (sitereference, transactionstartedtimestamp);
-- Only children are indexed by parent: a payment without one writes a page less (an earlier gwkit's
-- index had every row)
DROP INDEX IF EXISTS transactions_parent;
CREATE INDEX IF NOT EXISTS transactions_of_parent ON transactions (parenttransactionreference)
    WHERE parenttransactionreference IS NOT NULL;
CREATE INDEX IF NOT EXISTS transactions_order ON transactions (orderreference);
CREATE INDEX IF NOT EXISTS transactions_settle ON transactions (settlestatus, settleduedate);
"""

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


class Store:
    """A SQLite database shared by threads (one connection each) and by processes (WAL).

    The team sandbox's PostgreSQL store (pgstore.PgStore) has the same interface.

    Writes take turns (`WriteTurns`); reads run in their own transactions beside them (WAL)."""

    dialect = "sqlite"
    batch_alone = False  # whether a request alone in the queue is answered in `batch()` too (PgStore)

    def __init__(
        self,
        path: str | Path | None = None,
        *,
        schemas: Iterable[str] = (),
        added_columns: Iterable[tuple[str, str, str]] = (),
    ):
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
        self.checkpointer = Checkpointer(self.path, CHECKPOINT_EVERY)
        self._prefix: str | None = None  # of transaction references: set once per database
        self._numbers = ReferenceNumbers()  # of transaction references, taken ahead
        self._schemas = tuple(schemas)
        self._added_columns = tuple(added_columns)
        self.apply_schemas()

    def __repr__(self) -> str:
        return f"Store({str(self.path)!r})"

    # connections and transactions

    def connection(self) -> sqlite3.Connection:
        conn = getattr(self._local, "conn", None)
        if conn is None:
            conn = sqlite3.connect(self.path, isolation_level=None, check_same_thread=False, timeout=30)
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
    def write(self) -> Iterator[sqlite3.Connection]:
        """A write transaction (BEGIN IMMEDIATE): all of it is kept, or none of it.

        Inside `batch()` it is a savepoint of the batch's transaction instead: kept or rolled back on
        its own, committed with the batch."""
        batch = getattr(self._local, "batch", None)
        if batch is not None:
            with savepoint(batch):
                yield batch
            return
        conn = self.connection()
        self._turns.acquire()
        try:
            conn.execute("BEGIN IMMEDIATE")
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

    @contextmanager
    def batch(self) -> Iterator[None]:
        """One write transaction for several requests in a row, on this thread (group commit).

        Each `write()` (and `read()`) inside it is a savepoint of this transaction, kept or rolled
        back on its own as if it were a transaction of its own; all of them commit together when the
        batch ends, and none is answered before that (the caller's part: web.app.WorkerThread). It
        saves a COMMIT per request, and the rewrite of the same index pages by each one.
        If the batch fails as a whole (its COMMIT), nothing of it is kept."""
        with self.write() as conn:
            self._local.batch = conn
            try:
                yield
            finally:
                self._local.batch = None

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
        for sql in (CORE_SCHEMA, *self._schemas):
            conn.executescript(sql)
        for table, column, declaration in (("cards", "card_index", "BLOB"), *self._added_columns):
            if column not in {row["name"] for row in conn.execute(f'PRAGMA table_info("{table}")')}:
                conn.execute(
                    f'ALTER TABLE "{table}" ADD COLUMN "{column}" {declaration}'
                )  # an earlier gwkit's database
        conn.execute(
            "CREATE INDEX IF NOT EXISTS cards_index ON cards (card_index) WHERE card_index IS NOT NULL"
        )

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

    # meta

    def meta_get(self, key: str, conn: sqlite3.Connection | None = None) -> str | None:
        row = (conn or self.connection()).execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
        return row[0] if row else None

    def meta_set_default(self, key: str, value: str) -> None:
        self.connection().execute("INSERT OR IGNORE INTO meta (key, value) VALUES (?, ?)", (key, value))

    def meta_set(self, conn: sqlite3.Connection, key: str, value: str) -> None:
        conn.execute(
            "INSERT INTO meta (key, value) VALUES (?, ?) "
            "ON CONFLICT (key) DO UPDATE SET value = excluded.value",
            (key, value),
        )

    # cards

    def add_card(self, conn: sqlite3.Connection, pan: str, expirydate: str, paymenttype: str | None) -> int:
        (card_id,) = conn.execute(
            "INSERT INTO cards (pan_encrypted, maskedpan, expirydate, paymenttypedescription) VALUES (?, ?, ?, ?) "
            "RETURNING id",
            (self.vault.encrypt(pan), mask_pan(pan), expirydate, paymenttype),
        ).fetchone()
        return int(card_id)

    def card_for(self, conn: sqlite3.Connection, pan: str, expirydate: str, paymenttype: str | None) -> int:
        """The row of a card paid with card fields: the same one each time the card comes back.

        Only rows made here are reused, so the rows of tokens and 3-D Secure sessions, which their
        owners may delete, are never shared. Saves an encryption and a row per repeated card.
        """
        index = self.vault.index(pan, expirydate)
        row = conn.execute("SELECT id FROM cards WHERE card_index = ?", (index,)).fetchone()
        if row is not None:
            return int(row[0])
        (card_id,) = conn.execute(
            "INSERT INTO cards (pan_encrypted, maskedpan, expirydate, paymenttypedescription, card_index) "
            "VALUES (?, ?, ?, ?, ?) RETURNING id",
            (self.vault.encrypt(pan), mask_pan(pan), expirydate, paymenttype, index),
        ).fetchone()
        return int(card_id)

    def card(self, conn: sqlite3.Connection, card_id: int) -> dict[str, str]:
        """The card in clear, for the gateway's own use only: never log or answer it."""
        row = conn.execute("SELECT * FROM cards WHERE id = ?", (card_id,)).fetchone()
        return {
            "pan": self.vault.decrypt(row["pan_encrypted"]),
            "expirydate": row["expirydate"],
            "maskedpan": row["maskedpan"],
            "paymenttypedescription": row["paymenttypedescription"],
        }

    # transactions

    def next_reference(self, conn: sqlite3.Connection) -> str:
        """`N-9-M`: a per-database prefix and a counter that never repeats, even after a reset.

        Call inside a write transaction, which serialises it across threads and processes.
        """
        return self.reserve_references(conn, 1)[0]

    def reserve_references(self, conn: sqlite3.Connection, count: int) -> list[str]:
        """`count` new references at once, for a batch of records; inside a write transaction, like
        `next_reference` (references.py: the counter's numbers, taken a block ahead)."""
        if count <= 0:
            return []
        prefix = self._reference_prefix(conn)
        return [f"{prefix}-9-{number}" for number in self._numbers.take(conn, count)]

    def _reference_prefix(self, conn: sqlite3.Connection) -> str:
        prefix = self._prefix
        if prefix is None:
            prefix = self.meta_get("reference_prefix", conn)
            if prefix is None:
                prefix = str(10 + secrets.randbelow(90))
                self.meta_set(conn, "reference_prefix", prefix)
                return prefix  # cached only once committed: see the next call
            self._prefix = prefix
        return prefix

    def add_transaction(
        self,
        conn: sqlite3.Connection,
        record: Mapping[str, Any],
        *,
        card_id: int | None = None,
        details: Mapping[str, Any] | None = None,
    ) -> None:
        """Keep an answered record. `record` must carry its `transactionreference`."""
        self.add_transactions(conn, [(record, card_id, details)])

    def add_transactions(
        self,
        conn: sqlite3.Connection,
        kept: Iterable[tuple[Mapping[str, Any], int | None, Mapping[str, Any] | None]],
    ) -> None:
        """Keep many answered records (record, card_id, details): one statement per shape of record."""
        by_columns: dict[tuple[str, ...], list[list[Any]]] = {}
        for record, card_id, details in kept:
            columns, row = transaction_row(record, card_id, details)
            by_columns.setdefault(columns, []).append(row)
        for columns, rows in by_columns.items():
            self.add_transaction_rows(conn, columns, rows)

    def add_transaction_rows(
        self, conn: sqlite3.Connection, columns: tuple[str, ...], rows: list[list[Any]]
    ) -> None:
        """Keep records already laid out: each row the values of `columns`, card_id, the record's JSON, the details'."""
        conn.executemany(_insert_transaction_sql(columns), rows)

    def transaction(
        self, conn: sqlite3.Connection, reference: str, sites: Iterable[str] | None = None
    ) -> sqlite3.Row | None:
        """The row of a transaction, or None; with `sites`, other sites' rows do not exist."""
        row = conn.execute(
            "SELECT * FROM transactions WHERE transactionreference = ?", (reference,)
        ).fetchone()
        if row is None or (sites is not None and row["sitereference"] not in set(sites)):
            return None
        return row

    def update_transaction(
        self, conn: sqlite3.Connection, reference: str, changes: Mapping[str, str]
    ) -> None:
        """Change fields of a kept record: its columns and its JSON alike."""
        columns = [c for c in changes if c in TRANSACTION_COLUMNS]
        assignments = [f"{c} = ?" for c in columns]
        params: list[Any] = [changes[c] for c in columns]
        json_paths = ", ".join("?, ?" for _ in changes)
        assignments.append(f"record = json_set(record, {json_paths})")
        for name, value in changes.items():
            params.extend([f'$."{name}"', value])
        conn.execute(
            f"UPDATE transactions SET {', '.join(assignments)} WHERE transactionreference = ?",
            [*params, reference],
        )

    def update_details(self, conn: sqlite3.Connection, reference: str, details: Mapping[str, Any]) -> None:
        """Replace the details (billing, names) a kept record holds and lends to its children."""
        conn.execute(
            "UPDATE transactions SET details = ? WHERE transactionreference = ?",
            (json.dumps(dict(details)), reference),
        )


def transaction_row(
    record: Mapping[str, Any], card_id: int | None, details: Mapping[str, Any] | None
) -> tuple[tuple[str, ...], list[Any]]:
    """A record laid out as a row of `transactions`: the columns it fills, and the row (their values,
    card_id, the record's JSON, the details' JSON) that `add_transaction_rows` keeps."""
    columns = tuple(c for c in TRANSACTION_COLUMNS if record.get(c) is not None)
    return columns, [
        *(record[c] for c in columns),
        card_id,
        json.dumps(record),
        json.dumps(details) if details else "{}",
    ]


@functools.lru_cache(maxsize=64)
def _insert_transaction_sql(columns: tuple[str, ...]) -> str:
    return (
        f"INSERT INTO transactions ({', '.join(columns)}, card_id, record, details) "
        f"VALUES ({', '.join('?' * len(columns))}, ?, ?, ?)"
    )


@contextmanager
def savepoint(conn: Any, name: str = "batched_write") -> Iterator[None]:
    """Part of a transaction that is kept, or rolled back alone if its block raises."""
    conn.execute(f"SAVEPOINT {name}")
    try:
        yield
    except BaseException:
        conn.execute(f"ROLLBACK TO {name}")
        conn.execute(f"RELEASE {name}")
        raise
    conn.execute(f"RELEASE {name}")


def create_private(path: Path) -> None:
    """Create the database file readable by its owner only (SQLite gives its -wal and -shm files
    the same mode); an existing file keeps its mode."""
    try:
        os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600))
    except FileExistsError:
        pass


def record_of(row: sqlite3.Row) -> dict[str, Any]:
    return json.loads(row["record"])


def details_of(row: sqlite3.Row) -> dict[str, Any]:
    return json.loads(row["details"])
