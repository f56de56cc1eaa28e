"""The two stores the sandbox tests run on: a SQLite file, and a schema of its own in PostgreSQL.

PostgreSQL is the one `scripts/pg-up` starts (as root it also installs Debian's package when
missing), or the server GWKIT_TEST_PG_URL names. Where neither can be had, the PostgreSQL half of
the tests is skipped with `POSTGRES_HOWTO` as its reason; but where PostgreSQL is required
(GWKIT_TEST_REQUIRE_POSTGRES=1, which `.ci/run` sets in CI as root), it fails instead.

`Database` reads a store's tables directly, whichever it is, for tests that check what was kept;
`open_store` opens the sandbox's own store of either kind, for tests of the store itself.
"""

from __future__ import annotations

import functools
import os
import secrets
import sqlite3
import subprocess
from pathlib import Path
from typing import Any, NoReturn
from urllib.parse import quote

import pytest

from gwkit.sandbox.gateway import store
from gwkit.sandbox.gateway.sql import Sql

ROOT = Path(__file__).resolve().parents[2]
STORE_KINDS = ("sqlite", "postgresql")
POSTGRES_HOWTO = (
    "no PostgreSQL server: run `scripts/pg-up --install` as root (Debian's postgresql), "
    "or set GWKIT_TEST_PG_URL=postgresql://user:password@127.0.0.1/db"
)


REQUIRE_POSTGRES = "GWKIT_TEST_REQUIRE_POSTGRES"


def without_postgres(why_not: str) -> NoReturn:
    """Skip the PostgreSQL half of a test, saying why; fail it where PostgreSQL is required (CI)."""
    if os.environ.get(REQUIRE_POSTGRES) == "1":
        pytest.fail(f"PostgreSQL is required here ({REQUIRE_POSTGRES}=1) but: {why_not}", pytrace=False)
    pytest.skip(why_not)


@functools.lru_cache(maxsize=1)
def postgres_server() -> tuple[str | None, str]:
    """(URL of a database the tests may make schemas in, or None; why not)."""
    given = os.environ.get("GWKIT_TEST_PG_URL")
    if given:
        return given, ""
    try:
        import psycopg  # noqa: F401  (the `team` extra)
    except ImportError:
        return None, f"psycopg is not installed (pip install 'gwkit[team]'); {POSTGRES_HOWTO}"
    try:
        done = subprocess.run(
            [str(ROOT / "scripts" / "pg-up"), "gwkit_test"], capture_output=True, text=True, timeout=120
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        return None, f"scripts/pg-up failed ({exc}); {POSTGRES_HOWTO}"
    if done.returncode != 0:
        return (
            None,
            f"{done.stderr.strip().splitlines()[-1] if done.stderr.strip() else 'scripts/pg-up failed'}; "
            f"{POSTGRES_HOWTO}",
        )
    return done.stdout.strip().splitlines()[-1], ""


def new_schema(server: str) -> tuple[str, str]:
    """A fresh, empty schema in the server's database: (its name, a URL whose connections use it)."""
    import psycopg

    name = f"t_{secrets.token_hex(6)}"
    with psycopg.connect(server, autocommit=True) as conn:
        conn.execute(f"CREATE SCHEMA {name}")
    separator = "&" if "?" in server else "?"
    return name, f"{server}{separator}options={quote(f'-csearch_path={name}')}"


def drop_schema(server: str, name: str) -> None:
    import psycopg

    with psycopg.connect(server, autocommit=True) as conn:
        conn.execute(f"DROP SCHEMA IF EXISTS {name} CASCADE")


# A payment's subscription number, read from its record (for tests reading through a store's connection).
SUBSCRIPTION_NUMBER = Sql(
    sqlite="record ->> '$.subscriptionnumber'", postgresql="record::json ->> 'subscriptionnumber'"
)


# The json_set functions of the current schema: what gwkit before issue 31 made, and migration 5 drops.
JSON_SET_FUNCTIONS = "SELECT count(*) FROM pg_proc WHERE proname = 'json_set' AND pronamespace = current_schema()::regnamespace"


def open_store(db: str | Path) -> Any:
    """The sandbox's own store of `db`, of its core tables only (store.open_store)."""
    return store.open_store(db)


class Database:
    """Direct reads of a sandbox's database, a SQLite file or a PostgreSQL URL alike."""

    def __init__(self, db: str | Path):
        self.db = db
        self.postgres = isinstance(db, str) and db.startswith("postgresql://")

    def rows(self, sql: str, params: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
        if self.postgres:
            import psycopg

            with psycopg.connect(self.db, autocommit=True) as conn:
                return [tuple(r) for r in conn.execute(sql.replace("?", "%s"), params).fetchall()]
        with sqlite3.connect(self.db) as conn:
            return [tuple(r) for r in conn.execute(sql, params).fetchall()]

    def execute(self, sql: str) -> None:
        """A statement that returns nothing (a test making an older schema by hand)."""
        if self.postgres:
            import psycopg

            with psycopg.connect(self.db, autocommit=True) as conn:
                conn.execute(sql)
            return
        with sqlite3.connect(self.db) as conn:
            conn.execute(sql)

    def value(self, sql: str, params: tuple[Any, ...] = ()) -> Any:
        found = self.rows(sql, params)
        return found[0][0] if found else None

    def tables(self) -> list[str]:
        if self.postgres:
            return [
                r[0]
                for r in self.rows(
                    "SELECT tablename FROM pg_tables WHERE schemaname = current_schema() "
                    "AND tablename != 'gwkit_schema_version'"
                )
            ]
        return [
            r[0]
            for r in self.rows(
                "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'"
            )
        ]

    def at_rest(self) -> bytes:
        """What the store keeps, to look for data that must never be kept in clear: for SQLite the
        bytes of the file and its WAL as they are on disk (leftovers of deleted rows included); for
        PostgreSQL every value of every row of the schema's tables (bytea as its bytes)."""
        if not self.postgres:
            files = [Path(self.db), Path(f"{self.db}-wal")]
            return b"".join(f.read_bytes() for f in files if f.exists())
        values = [
            value for table in self.tables() for row in self.rows(f'SELECT * FROM "{table}"') for value in row
        ]
        return b"\x00".join(
            bytes(v) if isinstance(v, (bytes, memoryview)) else str(v).encode() for v in values
        )

    def columns(self, table: str) -> list[str]:
        if self.postgres:
            return [
                r[0]
                for r in self.rows(
                    "SELECT column_name FROM information_schema.columns "
                    "WHERE table_schema = current_schema() AND table_name = ?",
                    (table,),
                )
            ]
        return [r[1] for r in self.rows(f'PRAGMA table_info("{table}")')]

    def count(self, table: str) -> int:
        return self.value(f'SELECT COUNT(*) FROM "{table}"')

    def counts(self, tables: list[str]) -> dict[str, int]:
        """Row counts of `tables`, read in one statement (one connection, one consistent view)."""
        if not tables:
            return {}
        found = self.rows("SELECT " + ", ".join(f'(SELECT COUNT(*) FROM "{t}")' for t in tables))[0]
        return dict(zip(tables, found, strict=True))

    def references_made(self) -> Any:
        """How many transaction references were handed out (a sequence, or a counter in `meta`)."""
        if self.postgres:
            return self.value("SELECT CASE WHEN is_called THEN last_value END FROM transaction_reference")
        return self.value("SELECT value FROM meta WHERE key = 'reference_counter'")
