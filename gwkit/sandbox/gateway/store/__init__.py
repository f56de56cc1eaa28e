"""The sandbox's store: one interface (`Store`), two databases side by side.

- `sqlite.SqliteStore`: one SQLite file (a notebook's sandbox, a single server);
- `postgres.PostgresStore`: a PostgreSQL database shared by the worker processes of a team sandbox
  (docs/team-sandbox.md).

`open_store(target)` opens the one a target names (a postgresql:// URL, else a file path). Each
store makes what depends on its database (`moves()`, `fault_rows()`, `snapshots()`, `catalog()`,
`long_write()`), so nothing outside this package asks which database it is. The gateway's modules
write a statement once where both databases run it as written, and as an `Sql` (sql.py) where they
differ.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Any, Protocol, TypeGuard

from ..moves import Board
from ..sitedata import Catalog
from ..sql import Sql, Statement, text_for
from ..vault import Vault
from .common import (
    TRANSACTION_COLUMNS,
    Connection,
    Cursor,
    FaultPicking,
    FaultRow,
    FaultRows,
    MemoryFaultRows,
    MissingDriver,
    Row,
    SchemaTooNew,
    StoreError,
    create_private,
    details_of,
    record_of,
    savepoint,
    transaction_row,
)
from .postgres import PostgresStore, redacted
from .sqlite import MINIMUM_SQLITE, SqliteStore

URL_SCHEMES = ("postgresql://", "postgres://")

__all__ = [
    "MINIMUM_SQLITE",
    "TRANSACTION_COLUMNS",
    "Connection",
    "Cursor",
    "FaultPicking",
    "FaultRow",
    "FaultRows",
    "MemoryFaultRows",
    "MissingDriver",
    "PostgresStore",
    "Row",
    "SchemaTooNew",
    "Sql",
    "SqliteStore",
    "Statement",
    "Store",
    "StoreError",
    "create_private",
    "details_of",
    "open_store",
    "record_of",
    "redacted",
    "savepoint",
    "serves_workers",
    "shown",
    "store_target",
    "text_for",
    "transaction_row",
]


class Store(Protocol):
    """What the gateway and the web layer use of a store, whichever database it keeps."""

    vault: Vault
    batch_alone: bool  # whether a request alone in the queue is answered in `batch()` too
    rows_per_commit: int  # of a long run of writes (jobwrites.SharedWrite)
    shared_by_workers: bool  # whether several worker processes may serve it (`--workers`)
    writes_side_by_side: bool  # whether writers of different sites write at once (else one at a time)

    @property
    def path(self) -> Any: ...

    @property
    def writing(self) -> bool: ...

    @property
    def writer_waiting(self) -> bool: ...

    # connections and transactions
    def connection(self) -> Any: ...
    def write(self, sites: Iterable[str] | None = None) -> AbstractContextManager[Any]: ...
    def read(self) -> AbstractContextManager[Any]: ...
    def batch(self, sites: Iterable[str] | None = None) -> AbstractContextManager[None]: ...
    def batch_of(self, groups: Sequence[Sequence[str]]) -> AbstractContextManager[list[int]]: ...
    def write_turns(self) -> dict[str, float]: ...
    def apply_schemas(self) -> None: ...
    def close(self) -> None: ...
    def wipe(self) -> None: ...
    def checkpoint(self) -> None: ...
    def checkpoint_beside_writers(self) -> None: ...
    def faults_present(self) -> bool: ...

    # what the store makes for the rest of the sandbox
    def moves(self, lease_seconds: float = ...) -> Board: ...
    def hold(self, sites: Iterable[str], wait: bool = True) -> AbstractContextManager[bool]: ...
    def fault_rows(self) -> FaultRows: ...
    def snapshots(self, gateway: Any, account: Any, site_expressions: Any, sites: Iterable[str]) -> Any: ...
    def catalog(self, conn: Any) -> Catalog: ...
    def long_write(self, conn: Any) -> Callable[[], None]: ...

    # meta, cards, transactions (common.Records)
    def meta_get(self, key: str, conn: Any = None) -> str | None: ...
    def meta_set_default(self, key: str, value: str) -> None: ...
    def meta_set(self, conn: Any, key: str, value: str) -> None: ...
    def add_card(self, conn: Any, pan: str, expirydate: str, paymenttype: str | None) -> int: ...
    def card_for(self, conn: Any, pan: str, expirydate: str, paymenttype: str | None) -> int: ...
    def card(self, conn: Any, card_id: int) -> dict[str, str]: ...
    def next_reference(self, conn: Any) -> str: ...
    def reserve_references(self, conn: Any, count: int) -> list[str]: ...
    def add_transaction(
        self,
        conn: Any,
        record: Mapping[str, Any],
        *,
        card_id: int | None = None,
        details: Mapping[str, Any] | None = None,
    ) -> None: ...
    def add_transactions(
        self, conn: Any, kept: Iterable[tuple[Mapping[str, Any], int | None, Mapping[str, Any] | None]]
    ) -> None: ...
    def add_transaction_rows(
        self, conn: Any, columns: tuple[str, ...], rows: Sequence[Sequence[Any]]
    ) -> None: ...
    def each_row(self, conn: Any, statement: Sql, rows: Sequence[Sequence[Any]]) -> None: ...
    def transaction(self, conn: Any, reference: str, sites: Iterable[str] | None = None) -> Any: ...
    def update_transaction(self, conn: Any, reference: str, changes: Mapping[str, str]) -> None: ...
    def update_transactions(
        self, conn: Any, references: Sequence[str], changes: Mapping[str, str]
    ) -> None: ...
    def update_details(self, conn: Any, reference: str, details: Mapping[str, Any]) -> None: ...


def store_target(text: str | Path) -> str | Path:
    """What a user gave as a database: a postgresql:// URL as it is, else a file path."""
    return text if _is_url(text) else Path(text)


def shown(target: str | Path | None) -> str:
    """A target fit to print and log: a URL without its password."""
    return redacted(target) if _is_url(target) else str(target)


def serves_workers(target: str | Path | None) -> bool:
    """Whether the store `target` names may be served by several worker processes (PostgreSQL)."""
    return _is_url(target)


def open_store(
    target: str | Path | None = None,
    *,
    schemas: Iterable[Statement] = (),
    added_columns: Iterable[tuple[str, str, str]] = (),
) -> Store:
    """The store a target names: a postgresql:// URL (the team sandbox), else a SQLite file (None: a
    temporary one). `schemas`: the tables of the modules; `added_columns`: columns later gwkits
    added to them, added to a database an earlier one made."""
    if _is_url(target):
        return PostgresStore(str(target), schemas=schemas, added_columns=added_columns)
    return SqliteStore(target, schemas=schemas, added_columns=added_columns)


def _is_url(target: object) -> TypeGuard[str]:
    return isinstance(target, str) and target.startswith(URL_SCHEMES)
