"""The journal: every exchange with the gateway, masked, in a local SQLite file.

    journal = Journal()                      # $GWKIT_JOURNAL, else .gwkit/journal.db
    client.add_exchange_hook(journal.hook(kind="sandbox"))
    journal.entries(limit=10)                # newest first

Plain SQL, so any SQLite tool can read it:

    exchanges(id, started_at, elapsed_ms, kind, target, alias, sitereference, request_types,
              requestreference, status_code, outcome, errorcode, errormessage, error,
              request_json, response_json, fault, gateway_time)
    records(exchange_id, position, requesttypedescription, transactionreference, errorcode,
            record_json)

`started_at` is the wall clock (UTC, ISO 8601) when the request was sent; `gateway_time` is the
gateway's own clock then, the one the records' timestamps follow (`YYYY-MM-DD HH:MM:SS`): the
sandbox's virtual clock against the sandbox, the local time against a real gateway. Summaries
show `gateway_time`, so a journal and its records tell one time. `outcome` is `ok` (every record errorcode 0 and
not cancelled), `error` (the gateway answered an error record) or `failed` (no readable answer).
Everything is masked before it is written (PANs as 411111######1111, secrets redacted): the
client's exchanges are masked already, and the journal masks again, so a clear card number can
never reach the file. `fault` is the kind of fault the sandbox injected into the answer (from its
`x-gwkit-fault` header), so a journal shows what was injected beside what the client did.
"""

from __future__ import annotations

import json
import logging
import os
import sqlite3
import threading
import warnings
from collections import abc
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from .interface.masking import mask_data, mask_text

ENV_VAR = "GWKIT_JOURNAL"
DEFAULT_PATH = Path(".gwkit") / "journal.db"
SCHEMA_VERSION = 3  # 2: exchanges.fault; 3: exchanges.gateway_time

log = logging.getLogger("gwkit.journal")

_SCHEMA = """
CREATE TABLE IF NOT EXISTS exchanges (
    id               INTEGER PRIMARY KEY AUTOINCREMENT,
    started_at       TEXT NOT NULL,
    elapsed_ms       REAL,
    kind             TEXT,
    target           TEXT,
    alias            TEXT,
    sitereference    TEXT,
    request_types    TEXT,
    requestreference TEXT,
    status_code      INTEGER,
    outcome          TEXT NOT NULL CHECK (outcome IN ('ok', 'error', 'failed')),
    errorcode        TEXT,
    errormessage     TEXT,
    error            TEXT,
    request_json     TEXT NOT NULL,
    response_json    TEXT,
    fault            TEXT,
    gateway_time     TEXT
);
CREATE TABLE IF NOT EXISTS records (
    exchange_id            INTEGER NOT NULL REFERENCES exchanges(id) ON DELETE CASCADE,
    position               INTEGER NOT NULL,
    requesttypedescription TEXT,
    transactionreference   TEXT,
    errorcode              TEXT,
    record_json            TEXT NOT NULL,
    PRIMARY KEY (exchange_id, position)
);
CREATE INDEX IF NOT EXISTS records_by_reference ON records(transactionreference);
CREATE INDEX IF NOT EXISTS exchanges_by_time ON exchanges(started_at);
"""


def default_path() -> Path:
    """$GWKIT_JOURNAL, else .gwkit/journal.db in the working directory."""
    return Path(os.environ.get(ENV_VAR) or DEFAULT_PATH)


@dataclass(frozen=True)
class JournalEntry:
    """One journalled exchange, as read back (request and response masked)."""

    id: int
    started_at: datetime
    elapsed_ms: float | None
    kind: str | None
    target: str | None
    alias: str | None
    sitereference: str | None
    request_types: tuple[str, ...]
    requestreference: str | None
    status_code: int | None
    outcome: str
    errorcode: str | None
    errormessage: str | None
    error: str | None
    request: dict[str, Any]
    response: dict[str, Any] | None
    fault: str | None = None  # the kind of fault the sandbox injected into the answer
    gateway_time: datetime | None = None  # the gateway's clock when sent (the sandbox's virtual clock)

    @property
    def ok(self) -> bool:
        return self.outcome == "ok"

    @property
    def records(self) -> list[dict[str, Any]]:
        return _records_of(self.response)

    @property
    def summary(self) -> str:
        """`12:01:02 AUTH 70000 Decline 23-9-1`, for lists and history panels."""
        first = self.records[0] if self.records else {}
        what = self.error or " ".join(
            str(p) for p in (self.errorcode, self.errormessage, first.get("transactionreference")) if p
        )
        injected = f" [injected fault: {self.fault}]" if self.fault else ""
        when = self.gateway_time or self.started_at
        return f"{when:%H:%M:%S} {' + '.join(self.request_types) or '?'} {what}{injected}".strip()


class Journal:
    """A SQLite journal of exchanges (WAL, safe to share between threads of a process)."""

    def __init__(self, path: str | os.PathLike[str] | None = None):
        self.path = Path(path) if path is not None else default_path()
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._lock = threading.Lock()
        self._db = sqlite3.connect(self.path, check_same_thread=False, isolation_level=None, timeout=10)
        self._db.row_factory = sqlite3.Row
        with self._lock:
            self._db.execute("PRAGMA journal_mode=WAL")
            self._db.execute("PRAGMA synchronous=NORMAL")
            self._db.execute("PRAGMA foreign_keys=ON")
            self._db.executescript(_SCHEMA)
            _migrate(self._db)
            self._db.execute(f"PRAGMA user_version={SCHEMA_VERSION}")

    def __repr__(self) -> str:
        return f"Journal({str(self.path)!r}, exchanges={len(self)})"

    # -- writing ------------------------------------------------------------------------------
    def record(self, exchange: Any, *, kind: str | None = None, gateway_time: datetime | None = None) -> int:
        """Write one `gwkit.Exchange` (masked again here); returns its id. `gateway_time`: the
        gateway's clock when it was sent (default: the local time)."""
        request = mask_data(_plain(exchange.request))
        response = mask_data(_plain(exchange.response)) if exchange.response is not None else None
        records = _records_of(response)
        errorcode, errormessage = _first_error(records)
        error = mask_text(exchange.error) if exchange.error else None
        row = {
            "started_at": _utc(exchange.started_at).isoformat(timespec="microseconds"),
            "elapsed_ms": round(float(exchange.elapsed) * 1000.0, 3),
            "kind": kind,
            "target": exchange.target,
            "alias": exchange.alias,
            "sitereference": _sitereference_of(request, records),
            "request_types": ",".join(exchange.request_types),
            "requestreference": exchange.requestreference,
            "status_code": exchange.status_code,
            "outcome": "failed" if error or response is None else ("ok" if exchange.ok else "error"),
            "errorcode": errorcode,
            "errormessage": errormessage,
            "error": error,
            "request_json": _dumps(request),
            "response_json": _dumps(response) if response is not None else None,
            "fault": getattr(exchange, "fault", None),
            "gateway_time": (gateway_time or _local(exchange.started_at)).strftime("%Y-%m-%d %H:%M:%S"),
        }
        with self._lock, self._db:
            self._db.execute("BEGIN IMMEDIATE")
            cursor = self._db.execute(
                f"INSERT INTO exchanges ({', '.join(row)}) VALUES ({', '.join('?' * len(row))})",
                tuple(row.values()),
            )
            exchange_id = cursor.lastrowid
            assert exchange_id is not None  # an INSERT's cursor has the new row's id
            self._db.executemany(
                "INSERT INTO records VALUES (?, ?, ?, ?, ?, ?)",
                [
                    (
                        exchange_id,
                        position,
                        r.get("requesttypedescription"),
                        r.get("transactionreference"),
                        _text(r.get("errorcode")),
                        _dumps(r),
                    )
                    for position, r in enumerate(records)
                ],
            )
        return exchange_id

    def hook(
        self, *, kind: str | None = None, clock: Callable[[], datetime] | None = None
    ) -> Callable[[Any], None]:
        """An exchange hook for `client.add_exchange_hook`; `clock` tells the gateway's time (the
        sandbox's `now`). A failure to write warns, and never breaks the exchange itself (the
        payment has already happened)."""

        def journal_exchange(exchange: Any) -> None:
            try:
                self.record(exchange, kind=kind, gateway_time=clock() if clock is not None else None)
            except (sqlite3.Error, OSError, TypeError, ValueError) as error:
                log.error("could not journal an exchange to %s: %s", self.path, error)
                warnings.warn(
                    f"gwkit journal {self.path}: could not record an exchange ({error})",
                    RuntimeWarning,
                    stacklevel=2,
                )

        journal_exchange.journal = self  # type: ignore[attr-defined]
        return journal_exchange

    # -- reading ------------------------------------------------------------------------------
    def __len__(self) -> int:
        with self._lock:
            return self._db.execute("SELECT count(*) FROM exchanges").fetchone()[0]

    def entries(self, limit: int | None = None, *, oldest_first: bool = False) -> list[JournalEntry]:
        """Journalled exchanges, newest first unless `oldest_first`."""
        order = "ASC" if oldest_first else "DESC"
        sql = f"SELECT * FROM exchanges ORDER BY id {order}"
        params: tuple[Any, ...] = ()
        if limit is not None:
            sql += " LIMIT ?"
            params = (int(limit),)
        with self._lock:
            rows = self._db.execute(sql, params).fetchall()
        return [_entry(row) for row in rows]

    def get(self, exchange_id: int) -> JournalEntry:
        with self._lock:
            row = self._db.execute("SELECT * FROM exchanges WHERE id = ?", (exchange_id,)).fetchone()
        if row is None:
            raise KeyError(f"no exchange {exchange_id} in the journal {self.path}")
        return _entry(row)

    def rows(
        self, sql: str = "SELECT * FROM exchanges ORDER BY id", params: tuple[Any, ...] = ()
    ) -> list[dict[str, Any]]:
        """Rows of any read-only SQL query against the journal, as dicts."""
        with self._lock:
            return [dict(row) for row in self._db.execute(sql, params).fetchall()]

    def records(self) -> Iterator[dict[str, Any]]:
        """Every response record, oldest first, with `exchange_id` and `exchange_started_at`."""
        with self._lock:
            rows = self._db.execute(
                "SELECT r.exchange_id, e.started_at, r.record_json FROM records r "
                "JOIN exchanges e ON e.id = r.exchange_id ORDER BY r.exchange_id, r.position"
            ).fetchall()
        for exchange_id, started_at, record_json in rows:
            yield {
                "exchange_id": str(exchange_id),
                "exchange_started_at": started_at,
                **json.loads(record_json),
            }

    def close(self) -> None:
        with self._lock:
            self._db.close()

    def __enter__(self) -> Journal:
        return self

    def __exit__(self, *exc_info: Any) -> None:
        self.close()


def _plain(value: Any) -> Any:
    """A JSON-ready copy (masked dicts and mappings become plain dicts)."""
    if value.__class__ in _SCALARS:  # most values: asked first, as a Mapping check costs an ABC lookup
        return value
    if isinstance(value, (dict, abc.Mapping)):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    return value


_SCALARS = frozenset({str, int, float, bool, type(None)})


def _dumps(data: Any) -> str:
    return json.dumps(data, ensure_ascii=False, separators=(",", ":"), default=str)


def _text(value: Any) -> str | None:
    return None if value is None else str(value)


def _local(moment: datetime) -> datetime:
    """A moment as local wall-clock time without a zone (the gateway's time where no clock is given)."""
    return moment.astimezone().replace(tzinfo=None) if moment.tzinfo is not None else moment


def _utc(moment: datetime) -> datetime:
    return moment.replace(tzinfo=UTC) if moment.tzinfo is None else moment.astimezone(UTC)


def _records_of(response: Any) -> list[dict[str, Any]]:
    records = response.get("response") if isinstance(response, dict) else None
    return [r for r in records if isinstance(r, dict)] if isinstance(records, list) else []


def _first_error(records: list[dict[str, Any]]) -> tuple[str | None, str | None]:
    """The first non-zero errorcode and its message, else the first record's (usually 0 Ok)."""
    for record in records:
        if str(record.get("errorcode", "0")) != "0":
            return _text(record.get("errorcode")), _text(record.get("errormessage"))
    if records:
        return _text(records[0].get("errorcode")), _text(records[0].get("errormessage"))
    return None, None


def _sitereference_of(request: Any, records: list[dict[str, Any]]) -> str | None:
    objects = request.get("request") if isinstance(request, dict) else None
    for obj in objects if isinstance(objects, list) else []:
        if isinstance(obj, dict):
            site = obj.get("sitereference")
            if isinstance(site, str):
                return site
            entries = (
                (obj.get("filter") or {}).get("sitereference")
                if isinstance(obj.get("filter"), dict)
                else None
            )
            if isinstance(entries, list) and entries and isinstance(entries[0], dict):
                return _text(entries[0].get("value"))
    for record in records:
        if record.get("sitereference"):
            return _text(record["sitereference"])
    return None


def _entry(row: sqlite3.Row) -> JournalEntry:
    response = row["response_json"]
    return JournalEntry(
        id=row["id"],
        started_at=datetime.fromisoformat(row["started_at"]),
        elapsed_ms=row["elapsed_ms"],
        kind=row["kind"],
        target=row["target"],
        alias=row["alias"],
        sitereference=row["sitereference"],
        request_types=tuple(t for t in (row["request_types"] or "").split(",") if t),
        requestreference=row["requestreference"],
        status_code=row["status_code"],
        outcome=row["outcome"],
        errorcode=row["errorcode"],
        errormessage=row["errormessage"],
        error=row["error"],
        request=json.loads(row["request_json"]),
        response=json.loads(response) if response is not None else None,
        fault=row["fault"],
        gateway_time=datetime.fromisoformat(row["gateway_time"]) if row["gateway_time"] else None,
    )


def _migrate(db: sqlite3.Connection) -> None:
    """Bring a journal written by an older gwkit up to this schema (1 had no fault, 2 no gateway_time)."""
    columns = {row[1] for row in db.execute("PRAGMA table_info(exchanges)")}
    if "fault" not in columns:
        db.execute("ALTER TABLE exchanges ADD COLUMN fault TEXT")
    if "gateway_time" not in columns:
        db.execute("ALTER TABLE exchanges ADD COLUMN gateway_time TEXT")
