"""Which rows of the store belong to which site: for snapshots and for a reset of some sites.

Read from the schemas (`SiteTables`): tables with a `sitereference` column (or an expression given
for those without one), the tables whose foreign keys point at those (subscription_payments), and
the card rows they point at.
"""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass
from typing import Iterable, Mapping

SITE_COLUMN = "sitereference"


@dataclass(frozen=True)
class SiteTables:
    """The tables of a store, as snapshots see them."""

    roots: dict[str, str]  # table -> SQL expression of a row's site
    children: dict[str, tuple[str, str, str]]  # table -> (column, root table, root column) it points at
    id_offsets_from: tuple[str, ...]  # tables with an `id` INTEGER PRIMARY KEY that restores move
    card_columns: tuple[tuple[str, str], ...]  # (table, column) pointing at cards(id)

    @classmethod
    def of(
        cls, conn: sqlite3.Connection, schema: str = "main", site_expressions: Mapping[str, str] | None = None
    ) -> "SiteTables":
        if getattr(conn, "dialect", "sqlite") == "postgresql":
            tables, columns, keys = _postgres_catalog(conn)
        else:
            tables, columns, keys = _sqlite_catalog(conn, schema)
        overrides = site_expressions or {}
        roots = {
            t: overrides.get(t, SITE_COLUMN) for t in tables if t in overrides or SITE_COLUMN in columns[t]
        }
        children: dict[str, tuple[str, str, str]] = {}
        card_columns = []
        for table in tables:
            for parent, column, parent_column in keys.get(table, ()):
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
        return (
            f'"{column}" IN (SELECT "{parent_column}" FROM {schema}."{parent}" '
            f"WHERE coalesce({self.roots[parent]}, '') IN ({listed}))"
        )

    def cards_used(self, schema: str = "main") -> str:
        """A SELECT of every card id a site's row points at."""
        return (
            " UNION ".join(
                f'SELECT "{c}" FROM {schema}."{t}" WHERE "{c}" IS NOT NULL' for t, c in self.card_columns
            )
            or "SELECT NULL WHERE 1 = 0"
        )


Catalog = tuple[list[str], dict[str, list[str]], dict[str, list[tuple[str, str, str]]]]


def _sqlite_catalog(conn: sqlite3.Connection, schema: str) -> Catalog:
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


def _postgres_catalog(conn) -> Catalog:
    """The same, from PostgreSQL's catalog (the current schema's tables; the store's own, gwkit_*, aside)."""
    tables = [
        r[0]
        for r in conn.execute(
            "SELECT c.relname FROM pg_class c WHERE c.relnamespace = current_schema()::regnamespace "
            "AND c.relkind = 'r' AND c.relname NOT LIKE 'gwkit\\_%' ORDER BY c.oid"
        )
    ]  # the store's own tables
    columns: dict[str, list[str]] = {t: [] for t in tables}
    for table, column in conn.execute(
        "SELECT table_name, column_name FROM information_schema.columns "
        "WHERE table_schema = current_schema() ORDER BY table_name, ordinal_position"
    ):
        columns.setdefault(table, []).append(column)
    keys: dict[str, list[tuple[str, str, str]]] = {}
    for table, parent, column, parent_column in conn.execute(
        "SELECT c.conrelid::regclass::text, c.confrelid::regclass::text, a.attname, pa.attname "
        "FROM pg_constraint c "
        "JOIN pg_attribute a ON a.attrelid = c.conrelid AND a.attnum = c.conkey[1] "
        "JOIN pg_attribute pa ON pa.attrelid = c.confrelid AND pa.attnum = c.confkey[1] "
        "WHERE c.contype = 'f' AND c.connamespace = current_schema()::regnamespace"
    ):
        keys.setdefault(table.strip('"'), []).append((parent.strip('"'), column, parent_column))
    return tables, columns, keys


def _literal(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


def delete_sites(
    conn: sqlite3.Connection, tables: SiteTables, sites: Iterable[str], *, keep: Iterable[str] = ()
) -> None:
    """Inside the caller's write transaction: delete every row of `sites` (but of the tables `keep`),
    and the card rows only those pointed at."""
    sites, kept = list(sites), set(keep)
    conn.execute("PRAGMA defer_foreign_keys=ON")
    conn.execute("CREATE TEMP TABLE IF NOT EXISTS restore_cards (id INTEGER PRIMARY KEY)")
    conn.execute("DELETE FROM temp.restore_cards")
    for table, column in tables.card_columns:
        conn.execute(
            f'INSERT OR IGNORE INTO temp.restore_cards SELECT "{column}" FROM main."{table}" '
            f'WHERE "{column}" IS NOT NULL AND {tables.site_filter(table, sites)}'
        )
    for table in [*tables.children, *tables.roots]:
        if table not in kept:
            conn.execute(f'DELETE FROM main."{table}" WHERE {tables.site_filter(table, sites)}')
    conn.execute(
        "DELETE FROM main.cards WHERE id IN (SELECT id FROM temp.restore_cards) "
        f"AND id NOT IN ({tables.cards_used()})"
    )
