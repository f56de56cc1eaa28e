"""Which rows of the store belong to which site: for snapshots and for a reset of some sites.

Read from the schemas (`SiteTables`): tables with a `sitereference` column (or an expression given
for those without one), the tables whose foreign keys point at those (subscription_payments), and
the card rows they point at.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from functools import partial
from typing import Any

from .sql import Sql, both

SITE_COLUMN = "sitereference"
Expression = str | Sql  # of a row's site: the same on both databases, or one for each


@dataclass(frozen=True)
class SiteTables:
    """The tables of a store, as snapshots see them."""

    roots: dict[str, Expression]  # table -> SQL expression of a row's site
    children: dict[str, tuple[str, str, str]]  # table -> (column, root table, root column) it points at
    id_offsets_from: tuple[str, ...]  # tables with an `id` INTEGER PRIMARY KEY that restores move
    card_columns: tuple[tuple[str, str], ...]  # (table, column) pointing at cards(id)

    @classmethod
    def of(cls, catalog: Catalog, site_expressions: Mapping[str, Expression] | None = None) -> SiteTables:
        """From a store's catalog (`Store.catalog(conn)`): its tables, columns and foreign keys."""
        tables, columns, keys = catalog
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

    def site_filter(self, table: str, sites: list[str], schema: str | None = None) -> Sql:
        """A WHERE clause selecting `sites`' rows of a root or child table (sites inlined as literals;
        `schema`: an attached SQLite database's name)."""
        listed = ", ".join(_literal(s) for s in sites)
        if table in self.roots:
            return both(self.roots[table]).map(lambda text: f"coalesce({text}, '') IN ({listed})")
        column, parent, parent_column = self.children[table]
        prefix = f"{schema}." if schema else ""
        return both(self.roots[parent]).map(
            lambda text: (
                f'"{column}" IN (SELECT "{parent_column}" FROM {prefix}"{parent}" '
                f"WHERE coalesce({text}, '') IN ({listed}))"
            )
        )

    def cards_used(self, schema: str | None = None) -> str:
        """A SELECT of every card id a site's row points at."""
        prefix = f"{schema}." if schema else ""
        return (
            " UNION ".join(
                f'SELECT "{c}" FROM {prefix}"{t}" WHERE "{c}" IS NOT NULL' for t, c in self.card_columns
            )
            or "SELECT NULL WHERE 1 = 0"
        )


Catalog = tuple[list[str], dict[str, list[str]], dict[str, list[tuple[str, str, str]]]]


def _literal(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


DEFER_FOREIGN_KEYS = Sql("PRAGMA defer_foreign_keys=ON", "SET CONSTRAINTS ALL DEFERRED")
RESTORE_CARDS = Sql(
    "CREATE TEMP TABLE IF NOT EXISTS restore_cards (id INTEGER PRIMARY KEY)",
    "CREATE TEMP TABLE IF NOT EXISTS restore_cards (id BIGINT PRIMARY KEY)",
)


def delete_sites(
    conn: Any, tables: SiteTables, sites: Iterable[str], *, keep: Iterable[str] = (), cards: bool = True
) -> None:
    """Inside the caller's write transaction: delete every row of `sites` (but of the tables `keep`),
    and (`cards`) the card rows only those pointed at. A writer holding only `sites`' locks keeps the
    card rows: a writer of another site may be about to point at one of them again."""
    sites, kept = list(sites), set(keep)
    conn.execute(DEFER_FOREIGN_KEYS)
    if cards:
        conn.execute(RESTORE_CARDS)
        conn.execute("DELETE FROM restore_cards")
        for table, column in tables.card_columns:
            conn.execute(tables.site_filter(table, sites).map(partial(_restore_cards_of, table, column)))
    for table in [*tables.children, *tables.roots]:
        if table not in kept:
            conn.execute(tables.site_filter(table, sites).map(partial(_delete_rows_of, table)))
    if cards:
        conn.execute(
            f"DELETE FROM cards WHERE id IN (SELECT id FROM restore_cards) AND id NOT IN ({tables.cards_used()})"
        )


def _restore_cards_of(table: str, column: str, condition: str) -> str:
    return (
        f'INSERT INTO restore_cards SELECT "{column}" FROM "{table}" '
        f'WHERE "{column}" IS NOT NULL AND {condition} ON CONFLICT DO NOTHING'
    )


def _delete_rows_of(table: str, condition: str) -> str:
    return f'DELETE FROM "{table}" WHERE {condition}'
