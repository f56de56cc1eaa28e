"""Scenario snapshots: an account's sites saved by name, and put back, with SQLite's online backup
(the team sandbox keeps them in PostgreSQL itself: pgsnapshots.py).

A snapshot is a SQLite file, `<database>.snapshots/<owner>/<name>.db` (`<owner>`: a hash of the
user name): a backup of the whole store, from which every row of other sites is then deleted
(which rows are a site's: sitedata.SiteTables).

A restore replaces exactly the snapshot's sites' rows in one write transaction: delete them, copy
the snapshot's rows in (integer ids moved past the store's own, foreign keys moved with them).
Each site's clock and daily-job marks are rows of that site (`site_clocks`, `site_jobs`), so they
are put back with the rest: advancing again makes the same subscription payments as the first
time. Transaction references stay unique: the reference counter is never restored.
"""

from __future__ import annotations

import hashlib
import json
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
    """What snapshots use of the gateway: its store, its clock, and the lock that advances take."""

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
        """Replace this account's sites' data with the snapshot's, in one write transaction."""
        path = self._existing(name)
        info = _info(path)
        sites = [s for s in info["sites"] if s in self.sites]
        store = self.gateway.store
        conn = store.connection()
        with self.gateway.advance_lock:
            conn.execute("ATTACH DATABASE ? AS snap", (str(path),))
            try:
                tables = SiteTables.of(store.catalog(conn), site_expressions=self.site_expressions)
                with store.write():
                    replace_sites(conn, tables, sites)
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


def replace_sites(conn: sqlite3.Connection, tables: SiteTables, sites: Iterable[str]) -> None:
    """Inside the caller's write transaction: the store's rows of `sites` (their clocks and job marks
    too) become the attached `snap`'s."""
    sites = list(sites)
    delete_sites(conn, tables, sites)
    offsets = {t: _offset(conn, t) for t in tables.id_offsets_from}
    conn.execute(
        f"INSERT INTO main.cards {_moved_select(conn, 'cards', tables, offsets)} "
        f"WHERE id IN ({tables.cards_used('snap')})"
    )
    for table in [*tables.roots, *tables.children]:
        copy_rows(conn, table, tables, offsets, sites)


def copy_rows(
    conn: sqlite3.Connection, table: str, tables: SiteTables, offsets: Mapping[str, int], sites: list[str]
) -> None:
    """The snapshot's rows of `sites` of one table, copied in with moved ids."""
    if not conn.execute(f'PRAGMA snap.table_info("{table}")').fetchone():
        return  # a snapshot made before the table existed
    conn.execute(
        f'INSERT INTO main."{table}" {_moved_select(conn, table, tables, offsets)} '
        f"WHERE {tables.site_filter(table, sites, schema='snap').sqlite}"
    )


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
