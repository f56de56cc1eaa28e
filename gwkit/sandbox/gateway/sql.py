"""SQL written for each database: `Sql`, a statement's two texts side by side.

A statement both stores run as written stays a plain string; one that differs is an `Sql`, and each
store's connection runs its own text (store/sqlite.py, store/postgres.py).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

DATABASES = ("sqlite", "postgresql")


@dataclass(frozen=True)
class Sql:
    """One statement (or a part of one, or a schema script) written for each database."""

    sqlite: str
    postgresql: str

    def map(self, make: Callable[[str], str]) -> Sql:
        """`make` applied to each text: a statement built around this part."""
        return Sql(make(self.sqlite), make(self.postgresql))


Statement = str | Sql


def both(statement: Statement) -> Sql:
    """A statement as an `Sql` (a plain one: the same text for each database)."""
    return statement if isinstance(statement, Sql) else Sql(statement, statement)


def text_for(statement: Statement, database: str) -> str:
    """The text of `statement` that `database` ("sqlite" or "postgresql") runs."""
    return statement if isinstance(statement, str) else getattr(statement, database)


def in_json_list(column: str) -> Sql:
    """`column` is one of the JSON list given as a parameter (`json.dumps(list)`)."""
    return Sql(
        sqlite=f"{column} IN (SELECT value FROM json_each(?))",
        postgresql=f"{column} IN (SELECT json_array_elements_text(?::json))",
    )


OF_SITES = in_json_list("sitereference")  # the sites of a JSON list: JobContext.sites_json
