"""What handlers and daily jobs see: the gateway's tables, one request's Context, a JobContext."""

from __future__ import annotations

import difflib
import json
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from datetime import date, datetime
from functools import lru_cache
from types import ModuleType
from typing import Any

from ...interface.errors import GwkitError
from ...interface.wire import TIMESTAMP
from .accounts import Account
from .clock import Clock
from .jobwrites import SharedWrite
from .refusal import Refusal
from .sql import Statement
from .store import Connection, Row, Store

Record = dict[str, Any]

# The constants a handler module may define (see Tables).
TABLE_NAMES = (
    "REQUEST_HANDLERS",
    "CARD_SOURCES",
    "PARENT_RULES",
    "UPDATE_RULES",
    "DAILY_JOBS",
    "SCHEMA",
    "READ_ONLY_REQUESTS",
    "ADDED_COLUMNS",
    "RECORD_VIEWS",
)


class TablesError(GwkitError, ValueError):
    """Handler modules whose tables cannot be merged: a module offering none (or a misspelt one), or
    a key two modules both claim."""


@dataclass(frozen=True)
class DailyJob:
    """Work done once per day of the sandbox clock, in `order` (settlement 10, subscriptions 20).

    `next_day(job, day)` answers the first day on or after `day` whose `run` would do anything for
    `job.sites` (None: none), reading through `job.store.connection()`; a clock move skips the days before the
    earliest any job answers (daily.DailyRunner.run). A job without it runs every day."""

    name: str
    order: int
    run: Callable[[JobContext, date], dict[str, Any]]
    next_day: Callable[[JobContext, date], date | None] | None = None


def day_of(text: str) -> date:
    """The day a stored date or timestamp names; the earliest day for one that names none (so it runs)."""
    try:
        return date.fromisoformat(text[:10])
    except ValueError:
        return date.min


@dataclass(frozen=True)
class Tables:
    """What the handler modules offer, merged: each module lists its own in plain constants.

    - REQUEST_HANDLERS: request type key (`AUTH`, `AUTH+SUBSCRIPTION`, ...) -> fn(ctx, request) -> records
    - CARD_SOURCES: AUTH variant (`card`, `parent`, `cachetoken`, `threeds`) -> fn(ctx, request) -> Card
    - PARENT_RULES: request type of a parent record -> fn(ctx, row, request) -> Card
    - UPDATE_RULES: request type of an updated record -> fn(ctx, row, updates) -> changes
    - DAILY_JOBS: DailyJob, run in their order; SCHEMA: the module's tables (SQL)
    - READ_ONLY_REQUESTS: request type keys whose handlers only read (run in a read transaction)
    - RECORD_VIEWS: request type of a kept record -> fn(conn, records) setting, in place, the fields a
      module keeps in its own tables rather than in the record (a subscription's next number)
    - ADDED_COLUMNS: (table, column, SQL declaration) added by a later gwkit to a table of SCHEMA:
      a database made by an earlier one gets them when it opens
    """

    request_handlers: dict[str, Callable[..., list[Record]]]
    card_sources: dict[str, Callable[..., Any]]
    parent_rules: dict[str, Callable[..., Any]]
    update_rules: dict[str, Callable[..., Any]]
    daily_jobs: list[DailyJob]
    schemas: tuple[Statement, ...]
    read_only: frozenset[str] = frozenset()
    added_columns: tuple[tuple[str, str, str], ...] = ()
    record_views: dict[str, Callable[..., None]] = field(default_factory=dict)

    @classmethod
    def of(cls, modules: Iterable[ModuleType]) -> Tables:
        """The tables of `modules`; TablesError for a module offering none, a constant whose name is
        a misspelt table's, or a key offered twice (a later module does not silently replace it)."""
        modules = tuple(modules)
        for module in modules:
            _check_offers(module)

        def merged(name: str) -> dict[str, Callable[..., Any]]:
            table: dict[str, Callable[..., Any]] = {}
            owners: dict[str, str] = {}
            for module in modules:
                for key, fn in getattr(module, name, {}).items():
                    if key in table:
                        raise TablesError(
                            f"{name}[{key!r}] is offered by both {owners[key]} and {module.__name__}"
                        )
                    table[key], owners[key] = fn, module.__name__
            return table

        jobs = sorted(
            (job for module in modules for job in getattr(module, "DAILY_JOBS", ())),
            key=lambda job: job.order,
        )
        return cls(
            merged("REQUEST_HANDLERS"),
            merged("CARD_SOURCES"),
            merged("PARENT_RULES"),
            merged("UPDATE_RULES"),
            jobs,
            tuple(module.SCHEMA for module in modules if hasattr(module, "SCHEMA")),
            frozenset(key for module in modules for key in getattr(module, "READ_ONLY_REQUESTS", ())),
            tuple(column for module in modules for column in getattr(module, "ADDED_COLUMNS", ())),
            merged("RECORD_VIEWS"),
        )


def _check_offers(module: ModuleType) -> None:
    for name in vars(module):
        if name.isupper() and name not in TABLE_NAMES:
            for table in difflib.get_close_matches(name, TABLE_NAMES, n=1, cutoff=0.75):
                raise TablesError(f"{module.__name__}.{name} is not a table: {table} was meant?")
    if not any(hasattr(module, name) for name in TABLE_NAMES):
        raise TablesError(f"{module.__name__} offers none of the tables ({', '.join(TABLE_NAMES)})")


@dataclass
class Context:
    """What a handler sees of one request object being answered."""

    store: Store
    tables: Tables
    conn: Connection
    account: Account
    now: datetime
    origin: str | None = None
    base_url: str = ""

    @property
    def sites(self) -> tuple[str, ...]:
        return self.account.sitereferences

    @property
    def timestamp(self) -> str:
        return timestamp_of(self.now)

    def new_reference(self) -> str:
        return self.store.next_reference(self.conn)

    def keep(
        self, record: Record, *, card_id: int | None = None, details: Mapping[str, Any] | None = None
    ) -> None:
        """Store an answered record (the subscription engine's context keeps a batch's for one write)."""
        self.store.add_transaction(self.conn, record, card_id=card_id, details=details)

    def find(self, reference: str | None, field_name: str = "parenttransactionreference") -> Row:
        """A transaction of this account's sites, or a 30000 naming `field_name`."""
        row = self.store.transaction(self.conn, reference, self.sites) if reference else None
        if row is None:
            raise Refusal(30000, [field_name])
        return row


@lru_cache(
    maxsize=64
)  # one `now` answers many: a clock stands still between moves, the engine pays a day at one
def timestamp_of(now: datetime) -> str:
    return now.strftime(TIMESTAMP)


RUN_CLOCKS = "clocks"  # JobContext.cache: the clocks of the run's sites


@dataclass
class JobContext:
    """What a daily job gets: the gateway's parts, a way to report progress on long runs, a
    cache that lasts one run of the daily jobs (the days of one `advance`), so a reset never meets it,
    the sites whose day it is (a job touches only their rows, each on its own clock), and the write
    transaction the run's days share (`writes.conn`; jobs never open one of their own).

    Jobs read through `store.connection()`: inside the shared transaction it is that transaction's
    connection, so a day sees what the days before it wrote."""

    store: Store
    clock: Clock
    tables: Tables
    accounts: Mapping[str, Account]
    writes: SharedWrite
    progress: Callable[[str, int, int], None] | None = None
    cache: dict[str, Any] = field(default_factory=dict)
    sites: tuple[str, ...] = ()

    @property
    def sites_json(self) -> str:
        """`sites` for SQL: the parameter of sql.OF_SITES."""
        return json.dumps(list(self.sites))

    def clocks(self) -> dict[str, datetime]:
        """The clocks of `sites`, read once per run (the runner starts the cache with those it read): a run
        follows a clock move, and a later move of the same sites runs the days it adds itself."""
        known = self.cache.setdefault(RUN_CLOCKS, {})
        missing = [site for site in self.sites if site not in known]
        if missing:
            known.update(self.clock.clocks(missing))
        return {site: known[site] for site in self.sites}
