"""The team sandbox's persistence: PostgreSQL, shared by every worker process (docs/team-sandbox.md).

The same interface as the SQLite `Store` (`write()`, `read()`, `connection()`, cards, transactions,
meta), so every gateway module runs unchanged: the connections it is handed take the modules'
SQLite SQL and run it as PostgreSQL (`pgdialect`), and rows read by name or by position.

- Connections come from a pool (psycopg_pool); a thread inside `write()` or `read()` keeps its
  transaction's connection, so `connection()` there sees that transaction, as with SQLite.
- Writes take turns across every worker, as SQLite's single writer does: a write transaction first
  takes one transaction-scoped advisory lock (per schema). So a batch of the subscription engine
  or of settlement re-reads what is due under that lock, and two workers or two clock moves
  cannot both make a payment; the unique (number, subscription) is the last line of defence.
  A worker killed mid-transaction leaves nothing: PostgreSQL rolls it back and frees the lock.
- Reads run in REPEATABLE READ READ ONLY transactions beside the writers.
- References come from a sequence; card numbers are encrypted by the same `Vault`, its key in a
  file (GWKIT_SANDBOX_KEY_FILE, else under ~/.gwkit/team-sandbox/), never in the database.
- The schema is versioned (`gwkit_schema_version`): `MIGRATIONS` are applied at start, under the
  writers' lock, so workers starting together apply them once and no write is under way meanwhile;
  a database of a newer gwkit is refused (`SchemaTooNew`).
"""

from __future__ import annotations

import hashlib
import os
import threading
from collections import deque
from contextlib import contextmanager
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Iterable, Iterator, Sequence
from urllib.parse import parse_qs, urlsplit, urlunsplit

try:  # the `team` extra: the SQLite sandbox needs neither
    import psycopg
    from psycopg_pool import ConnectionPool
except ImportError:  # pragma: no cover - checked when a PgStore is made
    psycopg = ConnectionPool = None  # type: ignore[assignment]

from . import pgdialect
from .store import CORE_SCHEMA, Store
from .vault import Vault

URL_SCHEMES = ("postgresql://", "postgres://")
POOL_SIZE = 16  # connections per worker process; a request holds one for its transaction only
REFERENCE_SEQUENCE = "transaction_reference"
REFERENCE_BLOCK = 50  # sequence numbers a worker takes at once

# Versioned changes a `CREATE TABLE IF NOT EXISTS` cannot make; applied in order, each once.
# The tables the modules declare are (re)declared at every start after these, idempotently.
MIGRATIONS: tuple[tuple[int, str, tuple[str, ...]], ...] = (
    (1, "baseline: reference sequence and json_set", (
        f"CREATE SEQUENCE IF NOT EXISTS {REFERENCE_SEQUENCE}",
        pgdialect.JSON_SET_FUNCTION,
    )),
)
SCHEMA_VERSION = MIGRATIONS[-1][0]


class StoreError(RuntimeError):
    """The PostgreSQL store cannot be opened: no driver, no server, a schema of a newer gwkit."""


class SchemaTooNew(StoreError):
    """The database was migrated by a newer gwkit than this one: upgrade gwkit, never downgrade it."""


class MissingDriver(StoreError):
    """psycopg or psycopg_pool is not installed (the `team` extra)."""


def is_postgres_url(db: Any) -> bool:
    return isinstance(db, str) and db.startswith(URL_SCHEMES)


def redacted(url: str) -> str:
    """The URL without its password, fit to print and log."""
    parts = urlsplit(url)
    if parts.password is None:
        return url
    host = parts.hostname or ""
    netloc = f"{parts.username}:***@{host}" + (f":{parts.port}" if parts.port else "")
    return urlunsplit(parts._replace(netloc=netloc))


class Row(tuple):
    """A row read by position or by column name, like sqlite3.Row."""

    def __new__(cls, values: Sequence[Any], index: dict[str, int]) -> "Row":
        row = super().__new__(cls, values)
        row._index = index
        return row

    def __getitem__(self, key):  # type: ignore[override]
        if isinstance(key, str):
            return tuple.__getitem__(self, self._index[key])
        return tuple.__getitem__(self, key)

    def keys(self) -> list[str]:
        return list(self._index)


def _row_factory(cursor: Any) -> Any:
    description = cursor.description
    if description is None:
        return tuple
    index = {column.name: position for position, column in enumerate(description)}
    return lambda values: Row(values, index)


class Connection:
    """A connection in a transaction, taking the modules' SQLite SQL."""

    dialect = "postgresql"

    def __init__(self, raw: Any):
        self.raw = raw

    def execute(self, sql: str, params: Sequence[Any] | None = None) -> Any:
        return self.raw.execute(pgdialect.statement(sql), _params(params))

    def executemany(self, sql: str, seq: Iterable[Sequence[Any]]) -> Any:
        cursor = self.raw.cursor()
        rows = [_params(p) for p in seq]
        if rows:
            cursor.executemany(pgdialect.statement(sql), rows)
        return cursor


class _Autocommit:
    """`Store.connection()` outside a transaction: each statement on a pooled connection of its own."""

    dialect = "postgresql"

    def __init__(self, pool: Any):
        self._pool = pool

    def execute(self, sql: str, params: Sequence[Any] | None = None) -> "_Fetched":
        with self._pool.connection() as raw:
            cursor = raw.execute(pgdialect.statement(sql), _params(params))
            return _Fetched(cursor.fetchall() if cursor.description else [], cursor.rowcount)

    def executemany(self, sql: str, seq: Iterable[Sequence[Any]]) -> "_Fetched":
        with self._pool.connection() as raw, raw.transaction():
            cursor = raw.cursor()
            cursor.executemany(pgdialect.statement(sql), [_params(p) for p in seq])
            return _Fetched([], cursor.rowcount)


class _Fetched:
    def __init__(self, rows: list[Any], rowcount: int):
        self._rows, self.rowcount = rows, rowcount

    def fetchone(self) -> Any:
        return self._rows.pop(0) if self._rows else None

    def fetchall(self) -> list[Any]:
        rows, self._rows = self._rows, []
        return rows

    def __iter__(self) -> Iterator[Any]:
        return iter(self.fetchall())


def _configure(raw: Any) -> None:
    """A new pooled connection: commits do not wait for the WAL to reach the disk (the durability of
    SQLite's synchronous=NORMAL: a crash of PostgreSQL or the machine may lose the last moments' commits, never
    half of one, so exactly-once holds)."""
    raw.execute("SET synchronous_commit TO off")


def _params(params: Sequence[Any] | None) -> Sequence[Any]:
    return () if params is None else params


def default_key_file(url: str) -> Path:
    """Where the card key of a database lives unless GWKIT_SANDBOX_KEY_FILE says: one per database."""
    given = os.environ.get("GWKIT_SANDBOX_KEY_FILE")
    if given:
        return Path(given)
    parts = urlsplit(url)
    name = f"{parts.hostname or 'local'}-{parts.port or 5432}-{parts.path.strip('/') or 'db'}"
    options = parse_qs(parts.query).get("options", [""])[0]
    if options:
        name += "-" + hashlib.sha256(options.encode()).hexdigest()[:8]
    return Path.home() / ".gwkit" / "team-sandbox" / f"{name}.key"


class PgStore(Store):
    """The sandbox's data in PostgreSQL (`url`: postgresql://user[:password]@host[:port]/dbname)."""

    dialect = "postgresql"

    def __init__(self, url: str, *, schemas: Iterable[str] = (), added_columns: Iterable[tuple[str, str, str]] = (),
                 key_file: str | Path | None = None, pool_size: int = POOL_SIZE):
        if psycopg is None:
            raise MissingDriver("a PostgreSQL sandbox needs psycopg 3 and psycopg_pool: "
                                "pip install 'gwkit[team]' (or `make env`)")
        self.url = url
        key_path = Path(key_file) if key_file is not None else default_key_file(url)
        key_path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        self.vault = Vault.at(key_path)
        self._local = threading.local()
        self._prefix: str | None = None
        self._numbers: deque[int] = deque()  # of the sequence, taken ahead (next_reference)
        self._numbers_lock = threading.Lock()
        self._schemas = tuple(schemas)
        self._added_columns = tuple(added_columns)
        self._pool = ConnectionPool(url, min_size=1, max_size=pool_size, open=False, name="gwkit-sandbox",
                                    kwargs={"autocommit": True, "row_factory": _row_factory},
                                    configure=_configure)
        try:  # one connection first: a wrong password or no server is said at once, not after the pool's wait
            psycopg.connect(url, connect_timeout=10).close()
            self._pool.open(wait=True, timeout=30)
        except psycopg.Error as exc:
            self._pool.close()
            raise StoreError(f"cannot connect: {str(exc).strip().splitlines()[-1]}") from None
        try:
            with self._pool.connection() as raw:
                self._write_lock = raw.execute(
                    "SELECT hashtextextended('gwkit sandbox writes ' || current_schema(), 0)").fetchone()[0]
            self.apply_schemas()
        except BaseException:
            self._pool.close()
            raise

    @property
    def path(self) -> str:  # type: ignore[override]
        """What the sandbox reports as its database: the URL without a password."""
        return redacted(self.url)

    def __repr__(self) -> str:
        return f"PgStore({self.path!r})"

    @property
    def writing(self) -> bool:
        """Always: a write may be under way in another worker, and every statement waits on the
        network, so the web layer never answers a PostgreSQL request on its event loop."""
        return True

    # connections and transactions

    def connection(self) -> Any:
        return getattr(self._local, "conn", None) or _Autocommit(self._pool)

    @contextmanager
    def write(self) -> Iterator[Connection]:
        """A write transaction, after every earlier writer of any worker (an advisory lock); inside
        `batch()`, a savepoint of the batch's transaction (Store.batch)."""
        batch = getattr(self._local, "batch", None)
        if batch is not None:
            # psycopg's savepoint: after a failed statement it first leaves the pipeline's aborted state
            with batch.raw.transaction():
                yield batch
            return
        # One round trip: without parameters, psycopg sends both statements as one simple query.
        with self._transaction(f"BEGIN; SELECT pg_advisory_xact_lock({int(self._write_lock)})") as conn:
            yield conn

    @contextmanager
    def read(self) -> Iterator[Connection]:
        """A read transaction: one consistent view, beside the writers (inside `batch()`, the batch's)."""
        batch = getattr(self._local, "batch", None)
        if batch is not None:
            yield batch
            return
        with self._transaction("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY") as conn:
            yield conn

    @contextmanager
    def _transaction(self, begin: str) -> Iterator[Connection]:
        if getattr(self._local, "conn", None) is not None:
            raise RuntimeError("a transaction was opened inside another one on the same thread")
        with self._pool.connection() as raw:
            conn = Connection(raw)
            raw.execute(begin)
            self._local.conn = conn
            try:
                # Pipeline mode: a statement whose result nobody reads (a SAVEPOINT, an INSERT) goes
                # out with the next one that is read, or with the COMMIT, not in a round trip of its own.
                with raw.pipeline():
                    yield conn
            except BaseException:
                self._local.conn = None
                try:
                    raw.execute("ROLLBACK")
                except psycopg.Error:  # the connection broke: the server rolled it back; the pool drops it
                    pass
                raise
            self._local.conn = None
            raw.execute("COMMIT")

    def apply_schemas(self) -> None:
        with self._pool.connection() as raw, raw.transaction():
            # The writers' lock: workers starting together apply each change once, and no write
            # transaction holds a table this one locks (CREATE INDEX IF NOT EXISTS takes a share lock).
            raw.execute("SELECT pg_advisory_xact_lock(%s)", (self._write_lock,))
            raw.execute("CREATE TABLE IF NOT EXISTS gwkit_schema_version ("
                        "version INTEGER PRIMARY KEY, description TEXT NOT NULL, applied TEXT NOT NULL)")
            found = raw.execute("SELECT coalesce(max(version), 0) FROM gwkit_schema_version").fetchone()[0]
            if found > SCHEMA_VERSION:
                raise SchemaTooNew(
                    f"the database {self.path} has schema version {found}, newer than this gwkit's "
                    f"{SCHEMA_VERSION}: run the gwkit that migrated it (or a newer one)")
            for version, description, statements in MIGRATIONS:
                if version > found:
                    for sql in statements:
                        raw.execute(sql)
                    raw.execute("INSERT INTO gwkit_schema_version (version, description, applied) VALUES (%s, %s, %s)",
                                (version, description, datetime.now(timezone.utc).isoformat(timespec="seconds")))
            for script in (CORE_SCHEMA, *self._schemas):
                for sql in pgdialect.schema(script):
                    raw.execute(sql)
            for table, column, declaration in self._added_columns:  # a table an earlier gwkit made
                raw.execute(f'ALTER TABLE "{table}" ADD COLUMN IF NOT EXISTS "{column}" {declaration}')
            raw.execute("CREATE INDEX IF NOT EXISTS cards_index ON cards (card_index) WHERE card_index IS NOT NULL")

    def schema_version(self) -> int:
        return self.connection().execute("SELECT max(version) FROM gwkit_schema_version").fetchone()[0]

    def close(self) -> None:
        self._pool.close()

    def wipe(self) -> None:
        """Delete every row of every table except `meta` (the clock and the reference prefix)."""
        with self.write() as conn:
            tables = [r[0] for r in conn.raw.execute(
                "SELECT tablename FROM pg_tables WHERE schemaname = current_schema() "
                "AND tablename NOT IN ('meta', 'gwkit_schema_version')")]
            if tables:
                conn.raw.execute("TRUNCATE " + ", ".join(f'"{t}"' for t in tables))

    def checkpoint(self) -> None:
        """Nothing to do: deleted rows are PostgreSQL's to vacuum (docs/team-sandbox.md)."""

    # transactions

    def reserve_references(self, conn: Any, count: int) -> list[str]:
        """`count` new references for a batch of records (the engine's): from the sequence's blocks."""
        return [self.next_reference(conn) for _ in range(max(count, 0))]

    def next_reference(self, conn: Any) -> str:
        """`N-9-M`: a per-database prefix and a number of the sequence, unique across workers.

        Numbers are taken `REFERENCE_BLOCK` at a time (a round trip saved per payment): each worker's
        increase, the workers' interleave, and the ones a stopped worker held are never used."""
        prefix = self._reference_prefix(conn)
        with self._numbers_lock:
            if not self._numbers:
                self._numbers.extend(row[0] for row in conn.execute(
                    f"SELECT nextval('{REFERENCE_SEQUENCE}') FROM generate_series(1, {REFERENCE_BLOCK})"))
            number = self._numbers.popleft()
        return f"{prefix}-9-{number}"
