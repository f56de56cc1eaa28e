"""Scenario snapshots: an account's sites saved by name, and put back, with SQLite's online backup.

A snapshot is a SQLite file, `<database>.snapshots/<owner>/<name>.db` (`<owner>`: a hash of the
user name): a backup of the whole store, from which every row of other sites is then deleted. Which
rows are a site's is read from the schemas (`SiteTables`): tables with a `sitereference` column
(or an expression given for those without one), the tables whose foreign keys point at those
(subscription_payments), and the card rows they point at.

A restore replaces exactly the snapshot's sites' rows in one write transaction: delete them, copy
the snapshot's rows in (integer ids moved past the store's own, foreign keys moved with them).
Transaction references stay unique: the reference counter is never restored. The clock and the
daily jobs' marks are sandbox-wide: they are restored only when the snapshot covers every site of
the sandbox; otherwise they stay, and the next run of the jobs makes what the restored
subscriptions have due by then (see docs/sandbox.md, "Snapshots").
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import secrets
import sqlite3
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable, Mapping

from .accounts import Account
from .clock import ISO
from .core import Gateway
from .store import create_private

NAME = re.compile(r"[A-Za-z0-9_-]{1,64}")
INFO_TABLE = "snapshot_info"
SITE_COLUMN = "sitereference"


class SnapshotError(ValueError):
    """A snapshot request that cannot be done: a bad name."""


class SnapshotNotFound(LookupError):
    """No snapshot of that name for this account."""


@dataclass(frozen=True)
class SiteTables:
    """The tables of a store, as snapshots see them."""

    roots: dict[str, str]  # table -> SQL expression of a row's site
    children: dict[str, tuple[str, str, str]]  # table -> (column, root table, root column) it points at
    id_offsets_from: tuple[str, ...]  # tables with an `id` INTEGER PRIMARY KEY that restores move
    card_columns: tuple[tuple[str, str], ...]  # (table, column) pointing at cards(id)

    @classmethod
    def of(cls, conn: sqlite3.Connection, schema: str = "main",
           site_expressions: Mapping[str, str] | None = None) -> "SiteTables":
        tables = [r[0] for r in conn.execute(f"SELECT name FROM {schema}.sqlite_master WHERE type = 'table' "
                                             "AND name NOT LIKE 'sqlite_%' ORDER BY rowid")]
        columns = {t: [c[1] for c in conn.execute(f'PRAGMA {schema}.table_info("{t}")')] for t in tables}
        overrides = site_expressions or {}
        roots = {t: overrides.get(t, SITE_COLUMN) for t in tables
                 if t in overrides or SITE_COLUMN in columns[t]}
        children: dict[str, tuple[str, str, str]] = {}
        card_columns = []
        for table in tables:
            for key in conn.execute(f'PRAGMA {schema}.foreign_key_list("{table}")'):
                parent, column, parent_column = key[2], key[3], key[4]
                if parent == "cards" and table in roots:
                    card_columns.append((table, column))
                elif parent in roots and table not in roots:
                    children[table] = (column, parent, parent_column)
        moved = tuple(t for t in ("cards", *roots, *children) if "id" in columns[t])
        return cls(roots, children, moved, tuple(card_columns))

    def site_filter(self, table: str, sites: list[str], schema: str = "main") -> str:
        """A WHERE clause selecting `sites`' rows of a root or child table (sites inlined as literals)."""
        listed = ", ".join(_literal(s) for s in sites)
        if table in self.roots:
            return f"coalesce({self.roots[table]}, '') IN ({listed})"
        column, parent, parent_column = self.children[table]
        return (f'"{column}" IN (SELECT "{parent_column}" FROM {schema}."{parent}" '
                f"WHERE coalesce({self.roots[parent]}, '') IN ({listed}))")

    def cards_used(self, schema: str = "main") -> str:
        """A SELECT of every card id a site's row points at."""
        return " UNION ".join(f'SELECT "{c}" FROM {schema}."{t}" WHERE "{c}" IS NOT NULL'
                              for t, c in self.card_columns) or "SELECT NULL WHERE 0"


def _literal(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


def check_name(name: Any) -> str:
    if not isinstance(name, str) or not NAME.fullmatch(name):
        raise SnapshotError("name must be 1 to 64 letters, digits, '-' or '_'")
    return name


class Snapshots:
    """One account's snapshots: `save`, `list`, `restore`, `delete`."""

    def __init__(self, gateway: Gateway, account: Account, site_expressions: Mapping[str, str] | None = None):
        self.gateway, self.account = gateway, account
        self.site_expressions = dict(site_expressions or {})
        owner = hashlib.sha256(account.username.encode("utf-8")).hexdigest()[:16]
        self.directory = Path(f"{gateway.store.path}.snapshots") / owner

    def __repr__(self) -> str:
        return f"Snapshots({self.account.username!r}, {len(self.list())} saved)"

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
            sites = list(self.account.sitereferences)
            _keep_only(target, SiteTables.of(target, site_expressions=self.site_expressions), sites)
            saved = self.gateway.clock.now().strftime(ISO)
            target.execute(f"CREATE TABLE {INFO_TABLE} (key TEXT PRIMARY KEY, value TEXT NOT NULL)")
            target.executemany(f"INSERT INTO {INFO_TABLE} VALUES (?, ?)",
                               [("saved", saved), ("sites", json.dumps(sites))])
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
        return [_info(path) for path in sorted(self.directory.glob("*.db"))] if self.directory.is_dir() else []

    def delete(self, name: str) -> dict[str, Any]:
        path = self._existing(name)
        path.unlink()
        return {"deleted": name}

    def restore(self, name: str) -> dict[str, Any]:
        """Replace this account's sites' data with the snapshot's, in one write transaction."""
        path = self._existing(name)
        info = _info(path)
        sites = [s for s in info["sites"] if s in self.account.sitereferences]
        every_site = {s for a in self.gateway.accounts.values() for s in a.sitereferences}
        whole_sandbox = every_site <= set(sites)
        store = self.gateway.store
        conn = store.connection()
        with self.gateway.advance_lock:
            conn.execute("ATTACH DATABASE ? AS snap", (str(path),))
            try:
                tables = SiteTables.of(conn, site_expressions=self.site_expressions)
                with store.write():
                    replace_sites(conn, tables, sites, restore_clock=whole_sandbox)
            finally:
                conn.execute("DETACH DATABASE snap")
        return {**info, "restored": name, "clock_restored": whole_sandbox,
                "now": self.gateway.clock.now().strftime(ISO)}

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
    return {"name": path.stem, "saved": info["saved"], "sites": json.loads(info["sites"]), "transactions": count}


def _keep_only(conn: sqlite3.Connection, tables: SiteTables, sites: list[str]) -> None:
    """Delete every row of other sites (and rows of no site) from a snapshot being made."""
    known = {"meta", "cards", *tables.roots, *tables.children}
    every = [r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table' "
                                        "AND name NOT LIKE 'sqlite_%'")]
    conn.execute("BEGIN")
    for table in [*tables.children, *tables.roots]:
        conn.execute(f'DELETE FROM "{table}" WHERE NOT ({tables.site_filter(table, sites)})')
    for table in every:
        if table not in known:
            conn.execute(f'DELETE FROM "{table}"')
    conn.execute(f"DELETE FROM cards WHERE id NOT IN ({tables.cards_used()})")
    conn.execute("COMMIT")


def replace_sites(conn: sqlite3.Connection, tables: SiteTables, sites: Iterable[str], *,
                  restore_clock: bool) -> None:
    """Inside the caller's write transaction: the store's rows of `sites` become the attached `snap`'s."""
    sites = list(sites)
    conn.execute("PRAGMA defer_foreign_keys=ON")
    conn.execute("CREATE TEMP TABLE IF NOT EXISTS restore_cards (id INTEGER PRIMARY KEY)")
    conn.execute("DELETE FROM temp.restore_cards")
    for table, column in tables.card_columns:
        conn.execute(f'INSERT OR IGNORE INTO temp.restore_cards SELECT "{column}" FROM main."{table}" '
                     f'WHERE "{column}" IS NOT NULL AND {tables.site_filter(table, sites)}')
    for table in [*tables.children, *tables.roots]:
        conn.execute(f'DELETE FROM main."{table}" WHERE {tables.site_filter(table, sites)}')
    conn.execute(f"DELETE FROM main.cards WHERE id IN temp.restore_cards AND id NOT IN ({tables.cards_used()})")
    offsets = {t: _offset(conn, t) for t in tables.id_offsets_from}
    conn.execute(f"INSERT INTO main.cards {_moved_select(conn, 'cards', tables, offsets)} "
                 f"WHERE id IN ({tables.cards_used('snap')})")
    for table in [*tables.roots, *tables.children]:
        copy_rows(conn, table, tables, offsets, sites)
    if restore_clock:
        conn.execute("INSERT INTO main.meta (key, value) SELECT key, value FROM snap.meta "
                     "WHERE key = 'clock' OR key LIKE 'job:%' "
                     "ON CONFLICT (key) DO UPDATE SET value = excluded.value")


def copy_rows(conn: sqlite3.Connection, table: str, tables: SiteTables, offsets: Mapping[str, int],
              sites: list[str]) -> None:
    """The snapshot's rows of `sites` of one table, copied in with moved ids."""
    if not conn.execute(f'PRAGMA snap.table_info("{table}")').fetchone():
        return  # a snapshot made before the table existed
    conn.execute(f'INSERT INTO main."{table}" {_moved_select(conn, table, tables, offsets)} '
                 f"WHERE {tables.site_filter(table, sites, schema='snap')}")


def _offset(conn: sqlite3.Connection, table: str) -> int:
    """How far the snapshot's ids of `table` move: past every id the store has."""
    (top,) = conn.execute(f'SELECT coalesce(max(id), 0) FROM main."{table}"').fetchone()
    (low,) = conn.execute(f'SELECT coalesce(min(id), 1) FROM snap."{table}"').fetchone()
    return top + 1 - low


def _moved_select(conn: sqlite3.Connection, table: str, tables: SiteTables, offsets: Mapping[str, int]) -> str:
    """`(columns) SELECT ...` of the snapshot's `table`, ids and the foreign keys to them moved."""
    mine = [c[1] for c in conn.execute(f'PRAGMA main.table_info("{table}")')]
    theirs = {c[1] for c in conn.execute(f'PRAGMA snap.table_info("{table}")')}
    columns = [c for c in mine if c in theirs]
    moved = {"id": offsets.get(table)} if table in offsets else {}
    moved.update({c: offsets["cards"] for t, c in tables.card_columns if t == table and "cards" in offsets})
    if table in tables.children:
        column, parent, parent_column = tables.children[table]
        if parent_column == "id" and parent in offsets:
            moved[column] = offsets[parent]
    exprs = [f'"{c}" + {moved[c]}' if moved.get(c) is not None else f'"{c}"' for c in columns]
    names = ", ".join(f'"{c}"' for c in columns)
    return f'({names}) SELECT {", ".join(exprs)} FROM snap."{table}"'
