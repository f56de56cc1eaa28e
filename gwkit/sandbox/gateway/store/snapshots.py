"""Scenario snapshots: an account's sites saved by name, and put back, with SQLite's online backup
(the team sandbox keeps them in PostgreSQL itself: pgsnapshots.py).

A snapshot is a SQLite file, `<database>.snapshots/<owner>/<name>.db` (`<owner>`: a hash of the
user name): a backup of the whole store, from which every row of other sites is then deleted
(which rows are a site's: sitedata.SiteTables).

A restore replaces exactly the snapshot's sites' rows: delete them, copy the snapshot's rows in
(integer ids moved past the store's own, foreign keys moved with them). SQLite has one writer, so a
restore is cut into short write transactions (`RESTORE_STEP_ROWS` rows each), and another tenant's
payment waits for one of them at most; the restoring sites' own writes wait for the whole restore
(SqliteStore.restoring). A table's rows are copied from its highest id down: the first step takes
the top of the block of ids the rows move to, so others' new rows get ids past it. A mark in `meta`
says a restore is under way: one whose step failed is done again at once from the snapshot in one
transaction, and one cut short (that failed too, or the process was killed) at the next start
(`resume_restores`): never left half done.
Each site's clock and daily-job marks are rows of that site (`site_clocks`, `site_jobs`), so they
are put back with the rest: advancing again makes the same subscription payments as the first
time. Transaction references stay unique: the reference counter is never restored.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import logging
import os
import re
import secrets
import sqlite3
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any, Protocol

from ....interface.errors import GwkitError
from ..accounts import Account
from ..sitedata import SiteTables, delete_sites
from .common import create_private

ISO = "%Y-%m-%dT%H:%M:%S"  # how snapshots write when they were saved (clock.ISO)
RESTORE_STEP_ROWS = 500  # rows per write transaction of a restore on SQLite
RESTORE_MARK = "restore under way: "  # meta: a restore's mark, the snapshot's path after it
log = logging.getLogger("gwkit.sandbox")

NAME = re.compile(r"[A-Za-z0-9_-]{1,64}")
INFO_TABLE = "snapshot_info"


class SnapshotError(GwkitError, ValueError):
    """A snapshot request that cannot be done: a bad name."""


class SnapshotNotFound(GwkitError, LookupError):
    """No snapshot of that name for this account."""


def check_name(name: Any) -> str:
    if not isinstance(name, str) or not NAME.fullmatch(name):
        raise SnapshotError("name must be 1 to 64 letters, digits, '-' or '_'")
    return name


class Gateway(Protocol):
    """What snapshots use of the gateway: its store, its clock, and what counts the moves under way."""

    store: Any
    clock: Any
    advance_lock: Any


class Snapshots:
    """One account's snapshots: `save`, `list`, `restore`, `delete` (the store makes them:
    `FileSnapshots` for SQLite, postgres_snapshots.RowSnapshots for PostgreSQL)."""

    def __init__(
        self,
        gateway: Gateway,
        account: Account,
        site_expressions: Mapping[str, str] | None = None,
        sites: Iterable[str] | None = None,
    ):
        self.gateway, self.account = gateway, account
        self.sites = tuple(account.sitereferences if sites is None else sites)  # an operator's: every site
        self.site_expressions = dict(site_expressions or {})
        self.owner = hashlib.sha256(account.username.encode("utf-8")).hexdigest()[:16]

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.account.username!r}, {len(self.list())} saved)"

    def save(self, name: str) -> dict[str, Any]:
        raise NotImplementedError

    def list(self) -> list[dict[str, Any]]:
        raise NotImplementedError

    def delete(self, name: str) -> dict[str, Any]:
        raise NotImplementedError

    def restore(self, name: str) -> dict[str, Any]:
        raise NotImplementedError


class FileSnapshots(Snapshots):
    """An account's snapshots as SQLite files beside the database (`<db>.snapshots/<owner>/<name>.db`)."""

    @property
    def directory(self) -> Path:
        return Path(f"{self.gateway.store.path}.snapshots") / self.owner

    def _path(self, name: str) -> Path:
        return self.directory / f"{check_name(name)}.db"

    def save(self, name: str) -> dict[str, Any]:
        """Save this account's sites as `name` (an existing snapshot of that name is replaced)."""
        path = self._path(name)
        self.directory.mkdir(mode=0o700, parents=True, exist_ok=True)
        partial = path.with_name(f".{name}.{secrets.token_hex(4)}.partial")
        create_private(partial)  # its owner's only, as the database it copies
        target = sqlite3.connect(partial, isolation_level=None)
        try:
            self.gateway.store.connection().backup(target)
            sites = list(self.sites)
            catalog = self.gateway.store.catalog(target)
            _keep_only(target, SiteTables.of(catalog, site_expressions=self.site_expressions), sites)
            saved = self.gateway.clock.now(sites).strftime(ISO)
            target.execute(f"CREATE TABLE {INFO_TABLE} (key TEXT PRIMARY KEY, value TEXT NOT NULL)")
            target.executemany(
                f"INSERT INTO {INFO_TABLE} VALUES (?, ?)", [("saved", saved), ("sites", json.dumps(sites))]
            )
            target.execute("VACUUM")
            target.execute("PRAGMA journal_mode=DELETE")  # one file, readable without write access
        except BaseException:
            target.close()
            partial.unlink(missing_ok=True)
            raise
        target.close()
        os.replace(partial, path)
        return _info(path)

    def list(self) -> list[dict[str, Any]]:
        return (
            [_info(path) for path in sorted(self.directory.glob("*.db"))] if self.directory.is_dir() else []
        )

    def delete(self, name: str) -> dict[str, Any]:
        path = self._existing(name)
        path.unlink()
        return {"deleted": name}

    def restore(self, name: str) -> dict[str, Any]:
        """Replace this account's sites' data with the snapshot's, in short write transactions."""
        path = self._existing(name)
        info = _info(path)
        sites = [s for s in info["sites"] if s in self.sites]
        store = self.gateway.store
        conn = store.connection()
        with self.gateway.advance_lock, store.hold(self.sites), store.restoring(self.sites):
            conn.execute("ATTACH DATABASE ? AS snap", (str(path),))
            try:
                tables = SiteTables.of(store.catalog(conn), site_expressions=self.site_expressions)
                try:
                    _restore_in_steps(store, conn, tables, sites, path)
                except Exception:
                    log.warning(
                        "a step of the restore of %s failed: doing it again in one transaction", sites
                    )
                    _restore_at_once(store, conn, tables, sites, RESTORE_MARK + str(path))
            finally:
                conn.execute("DETACH DATABASE snap")
        return {
            **info,
            "restored": name,
            "clock_restored": True,
            "now": self.gateway.clock.now(sites).strftime(ISO),
        }

    def _existing(self, name: str) -> Path:
        path = self._path(name)
        if not path.is_file():
            raise SnapshotNotFound(f"no snapshot named {name!r}: see GET /_sandbox/snapshots")
        return path


def _info(path: Path) -> dict[str, Any]:
    conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        info = dict(conn.execute(f"SELECT key, value FROM {INFO_TABLE}").fetchall())
        (count,) = conn.execute("SELECT COUNT(*) FROM transactions").fetchone()
    finally:
        conn.close()
    return {
        "name": path.stem,
        "saved": info["saved"],
        "sites": json.loads(info["sites"]),
        "transactions": count,
    }


def _keep_only(conn: sqlite3.Connection, tables: SiteTables, sites: list[str]) -> None:
    """Delete every row of other sites (and rows of no site) from a snapshot being made."""
    known = {"meta", "cards", *tables.roots, *tables.children}
    every = [
        r[0]
        for r in conn.execute(
            "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'"
        )
    ]
    conn.execute("BEGIN")
    for table in [*tables.children, *tables.roots]:
        conn.execute(f'DELETE FROM "{table}" WHERE NOT ({tables.site_filter(table, sites).sqlite})')
    for table in every:
        if table not in known:
            conn.execute(f'DELETE FROM "{table}"')
    conn.execute(f"DELETE FROM cards WHERE id NOT IN ({tables.cards_used()})")
    conn.execute("COMMIT")


def _restore_in_steps(
    store: Any, conn: sqlite3.Connection, tables: SiteTables, sites: list[str], path: Path
) -> None:
    """The restore of `sites` from the attached `snap`, step by step (the module's docstring)."""
    mark = RESTORE_MARK + str(path)
    with store.write(sites):
        store.meta_set(conn, mark, json.dumps(sites))
        delete_sites(conn, tables, sites)
    _after_step()
    offsets: dict[str, int] = {}
    for table in ["cards", *tables.roots, *tables.children]:
        if not conn.execute(f'PRAGMA snap.table_info("{table}")').fetchone():
            continue  # a snapshot made before the table existed
        rows = (
            f"id IN ({tables.cards_used('snap')})"
            if table == "cards"
            else tables.site_filter(table, sites, schema="snap").sqlite
        )
        for step in _steps(conn, table, rows, table in tables.id_offsets_from):
            with store.write(sites):
                if table in tables.id_offsets_from and table not in offsets:  # the top of its block first
                    offsets[table] = _offset(conn, table)
                conn.execute(
                    f'INSERT INTO main."{table}" {_moved_select(conn, table, tables, offsets)} WHERE {rows} {step}'
                )
            _after_step()
    with store.write(sites):
        conn.execute("DELETE FROM meta WHERE key = ?", (mark,))


def _steps(conn: sqlite3.Connection, table: str, rows: str, by_id: bool) -> list[str]:
    """How the snapshot's `rows` of `table` are cut into steps: ranges of ids from the highest down, or
    (a table without ids) pages of its rows in the order the attached snapshot, never changed, gives."""
    if by_id:
        ids = [r[0] for r in conn.execute(f'SELECT id FROM snap."{table}" WHERE {rows} ORDER BY id DESC')]
        chunks = [ids[at : at + RESTORE_STEP_ROWS] for at in range(0, len(ids), RESTORE_STEP_ROWS)]
        return [f"AND id BETWEEN {int(chunk[-1])} AND {int(chunk[0])}" for chunk in chunks]
    (count,) = conn.execute(f'SELECT count(*) FROM snap."{table}" WHERE {rows}').fetchone()
    return [f"LIMIT {RESTORE_STEP_ROWS} OFFSET {at}" for at in range(0, count, RESTORE_STEP_ROWS)]


def _after_step() -> None:
    """Called after each step of a restore has committed (the tests cut a restore short here)."""


def resume_restores(store: Any, site_expressions: Mapping[str, Any]) -> None:
    """At start: the restores a stopped process cut short, done again from their snapshots in one
    transaction each (nothing else writes yet). One whose snapshot is gone leaves its sites empty, and
    says so: never half restored."""
    conn = store.connection()
    marks = conn.execute("SELECT key, value FROM meta WHERE key LIKE ?", (RESTORE_MARK + "%",)).fetchall()
    for key, value in marks:
        path, sites = Path(key[len(RESTORE_MARK) :]), json.loads(value)
        tables = SiteTables.of(store.catalog(conn), site_expressions=site_expressions)
        if not path.is_file():
            with store.write(sites):
                delete_sites(conn, tables, sites)
                conn.execute("DELETE FROM meta WHERE key = ?", (key,))
            log.error(
                "a restore of %s was cut short and its snapshot %s is gone: the sites are empty", sites, path
            )
            continue
        conn.execute("ATTACH DATABASE ? AS snap", (str(path),))
        try:
            _restore_at_once(store, conn, tables, sites, key)
        finally:
            conn.execute("DETACH DATABASE snap")
        log.warning("a restore of %s cut short was done again from the snapshot %s", sites, path.name)


def _restore_at_once(
    store: Any, conn: sqlite3.Connection, tables: SiteTables, sites: list[str], mark: str
) -> None:
    """The restore of `sites` from the attached `snap` in one write transaction, its mark removed in it."""
    with store.write(sites):
        replace_sites(conn, tables, sites)
        conn.execute("DELETE FROM meta WHERE key = ?", (mark,))


def replace_sites(conn: sqlite3.Connection, tables: SiteTables, sites: Iterable[str]) -> None:
    """Inside the caller's write transaction: the store's rows of `sites` (their clocks and job marks
    too) become the attached `snap`'s."""
    sites = list(sites)
    delete_sites(conn, tables, sites)
    offsets = {t: _offset(conn, t) for t in tables.id_offsets_from}
    # a snapshot made before a table existed has none of its rows, so none of its cards
    in_snapshot = [(t, c) for t, c in tables.card_columns if _in_snapshot(conn, t)]
    used = dataclasses.replace(tables, card_columns=tuple(in_snapshot)).cards_used("snap")
    conn.execute(
        f"INSERT INTO main.cards {_moved_select(conn, 'cards', tables, offsets)} WHERE id IN ({used})"
    )
    for table in [*tables.roots, *tables.children]:
        copy_rows(conn, table, tables, offsets, sites)


def copy_rows(
    conn: sqlite3.Connection, table: str, tables: SiteTables, offsets: Mapping[str, int], sites: list[str]
) -> None:
    """The snapshot's rows of `sites` of one table, copied in with moved ids."""
    if not _in_snapshot(conn, table):
        return  # a snapshot made before the table existed
    conn.execute(
        f'INSERT INTO main."{table}" {_moved_select(conn, table, tables, offsets)} '
        f"WHERE {tables.site_filter(table, sites, schema='snap').sqlite}"
    )


def _in_snapshot(conn: sqlite3.Connection, table: str) -> bool:
    return conn.execute(f'PRAGMA snap.table_info("{table}")').fetchone() is not None


def _offset(conn: sqlite3.Connection, table: str) -> int:
    """How far the snapshot's ids of `table` move: past every id the store has."""
    (top,) = conn.execute(f'SELECT coalesce(max(id), 0) FROM main."{table}"').fetchone()
    (low,) = conn.execute(f'SELECT coalesce(min(id), 1) FROM snap."{table}"').fetchone()
    return top + 1 - low


def moved_columns(table: str, tables: SiteTables, offsets: Mapping[str, int]) -> dict[str, int | None]:
    """The columns of `table` a restore moves, and by how much: its id, and its keys to moved ids."""
    moved = {"id": offsets.get(table)} if table in offsets else {}
    moved.update({c: offsets["cards"] for t, c in tables.card_columns if t == table and "cards" in offsets})
    if table in tables.children:
        column, parent, parent_column = tables.children[table]
        if parent_column == "id" and parent in offsets:
            moved[column] = offsets[parent]
    return moved


def _moved_select(
    conn: sqlite3.Connection, table: str, tables: SiteTables, offsets: Mapping[str, int]
) -> str:
    """`(columns) SELECT ...` of the snapshot's `table`, ids and the foreign keys to them moved."""
    mine = [c[1] for c in conn.execute(f'PRAGMA main.table_info("{table}")')]
    theirs = {c[1] for c in conn.execute(f'PRAGMA snap.table_info("{table}")')}
    columns = [c for c in mine if c in theirs]
    moved = moved_columns(table, tables, offsets)
    exprs = [f'"{c}" + {moved[c]}' if moved.get(c) is not None else f'"{c}"' for c in columns]
    names = ", ".join(f'"{c}"' for c in columns)
    return f'({names}) SELECT {", ".join(exprs)} FROM snap."{table}"'
