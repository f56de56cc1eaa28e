"""The store interface without a server: statements written for each database, the placeholders,
the factory, the SQLite version check, and the rules the source keeps (no SQL translated by
regular expression, no store-kind branch outside the store package, no SQL in the web layer)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from gwkit.sandbox.gateway import store
from gwkit.sandbox.gateway.sql import Sql, both, text_for
from gwkit.sandbox.gateway.store import postgres, sqlite

GWKIT = Path(store.__file__).resolve().parents[3]
STORE_PACKAGE = Path(store.__file__).resolve().parent


def test_a_printed_url_has_no_password():
    assert (
        store.redacted("postgresql://gwkit:secret@127.0.0.1:5432/db")
        == "postgresql://gwkit:***@127.0.0.1:5432/db"
    )
    assert store.redacted("postgresql://gwkit@db.internal/db") == "postgresql://gwkit@db.internal/db"
    assert store.shown("postgresql://gwkit:secret@h/db") == "postgresql://gwkit:***@h/db"


def test_a_target_names_its_store():
    assert store.store_target("postgresql://u@h/db") == "postgresql://u@h/db"
    assert store.store_target("postgres://u@h/db") == "postgres://u@h/db"
    assert store.store_target("data/sandbox.db") == Path("data/sandbox.db")
    assert store.serves_workers("postgresql://u@h/db") and not store.serves_workers(Path("x.db"))


def test_open_store_opens_a_sqlite_file_for_a_path(tmp_path):
    opened = store.open_store(tmp_path / "s.db")
    try:
        assert isinstance(opened, store.SqliteStore) and opened.path == tmp_path / "s.db"
    finally:
        opened.close()


def test_each_sqlite_connection_runs_the_sqlite_text_of_a_statement(tmp_path):
    opened = store.SqliteStore(tmp_path / "s.db")
    try:
        conn = opened.connection()
        statement = Sql(sqlite="SELECT max(2, 5)", postgresql="SELECT GREATEST(2, 5)")
        assert conn.execute(statement).fetchone()[0] == 5
        assert conn.execute("SELECT ? || ?", ("a", "b")).fetchone()[0] == "ab"
    finally:
        opened.close()


def test_postgresql_text_gets_psycopg_placeholders_and_nothing_else():
    statement = Sql(
        sqlite="SELECT * FROM t WHERE a = ? AND b LIKE 'x%'",
        postgresql="SELECT * FROM t WHERE a = ? AND b LIKE 'x%' AND c = ANY(?)",
    )
    assert (
        postgres._psycopg_text(statement) == "SELECT * FROM t WHERE a = %s AND b LIKE 'x%%' AND c = ANY(%s)"
    )
    assert postgres._psycopg_text("SELECT max(id) FROM t WHERE a = ?") == "SELECT max(id) FROM t WHERE a = %s"


def test_a_statement_and_its_parts_are_written_for_each_database():
    part = both("sitereference").map(lambda column: f"{column} = ?")
    assert part == Sql("sitereference = ?", "sitereference = ?")
    assert text_for(Sql("a", "b"), "postgresql") == "b" and text_for("c", "sqlite") == "c"


def test_a_python_with_an_old_sqlite_is_told_which_it_needs():
    with pytest.raises(store.StoreError, match=r"needs SQLite 3\.38\.0 or later; this Python has 3\.31\.1"):
        sqlite.check_sqlite_version((3, 31, 1))
    sqlite.check_sqlite_version(sqlite.MINIMUM_SQLITE)


def _sources(under: Path) -> list[Path]:
    return sorted(under.rglob("*.py"))


def test_no_module_translates_sql_by_regular_expression():
    translating = [
        str(path.relative_to(GWKIT))
        for path in _sources(GWKIT / "sandbox")
        if re.search(r"re\.(compile|sub)\([^)]*(INSERT|SELECT|json_|PRAGMA|TEXT|INTEGER)", path.read_text())
    ]
    assert translating == []
    assert not (GWKIT / "sandbox" / "gateway" / "pgdialect.py").exists()


def test_nothing_outside_the_store_package_asks_which_database_it_is():
    asking = re.compile(
        r"\bdialect\b|is_postgres_url|PgStore|PostgresStore|SqliteStore|isinstance\([^)]*Store"
    )
    found = [
        f"{path.relative_to(GWKIT)}:{number}"
        for path in _sources(GWKIT)
        if STORE_PACKAGE not in path.parents
        for number, line in enumerate(path.read_text().splitlines(), 1)
        if asking.search(line)
    ]
    assert found == []


def test_the_web_layer_holds_no_sql():
    statement = re.compile(r"\b(SELECT|INSERT INTO|UPDATE \w+ SET|DELETE FROM|CREATE TABLE)\b|\.execute\(")
    found = [
        f"{path.relative_to(GWKIT)}:{number}"
        for path in _sources(GWKIT / "sandbox" / "web")
        for number, line in enumerate(path.read_text().splitlines(), 1)
        if statement.search(line)
    ]
    assert found == []


def test_a_missing_postgresql_skips_its_half_unless_it_is_required(monkeypatch):
    from support.databases import REQUIRE_POSTGRES, without_postgres

    monkeypatch.delenv(REQUIRE_POSTGRES, raising=False)
    with pytest.raises(pytest.skip.Exception, match="no server here"):
        without_postgres("no server here")
    monkeypatch.setenv(REQUIRE_POSTGRES, "1")
    with pytest.raises(pytest.fail.Exception, match=r"PostgreSQL is required here .*: no server here"):
        without_postgres("no server here")


CORE_INDEXES = {
    "transactions_site_started",
    "transactions_of_parent",
    "transactions_order",
    "transactions_settle",
    "cards_index",
}


def test_a_sqlite_store_has_its_indexes(tmp_path):
    opened = store.SqliteStore(tmp_path / "s.db")
    try:
        names = {
            r[0] for r in opened.connection().execute("SELECT name FROM sqlite_master WHERE type = 'index'")
        }
    finally:
        opened.close()
    assert names >= CORE_INDEXES
