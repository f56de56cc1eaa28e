"""What the journal keeps of the proxy beyond the exchange: every validation problem and every
drift line of each journalled exchange, in a table of the journal's own file.

    proxy_notes(exchange_id, kind, position, object, text)

`exchange_id` is the journal's `exchanges.id`; `kind` is `problem` or `drift`; `object` is the
request object's index (problems of the body or envelope as a whole: NULL). Plain SQL, as the
journal: `SELECT text FROM proxy_notes WHERE exchange_id = 17 AND kind = 'drift' ORDER BY position`.
`gwkit proxy --show-drift` prints them.
"""

from __future__ import annotations

import os
import sqlite3
import threading
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from .exchanges import ProxyProblem

PROBLEM, DRIFT = "problem", "drift"

_SCHEMA = """
CREATE TABLE IF NOT EXISTS proxy_notes (
    exchange_id INTEGER NOT NULL REFERENCES exchanges(id) ON DELETE CASCADE,
    kind        TEXT NOT NULL CHECK (kind IN ('problem', 'drift')),
    position    INTEGER NOT NULL,
    object      INTEGER,
    text        TEXT NOT NULL,
    PRIMARY KEY (exchange_id, kind, position)
);
"""


@dataclass(frozen=True)
class DriftEntry:
    """The drift of one journalled exchange."""

    exchange_id: int
    started_at: str
    request_types: str
    lines: tuple[str, ...]

    def __str__(self) -> str:
        shown = "\n".join(f"  {line}" for line in self.lines)
        return f"journal entry {self.exchange_id} ({self.started_at}, {self.request_types or '?'}):\n{shown}"


class ProxyNotes:
    """The proxy's notes in the journal at `path` (the journal makes the file and its tables first)."""

    def __init__(self, path: str | os.PathLike[str]):
        self.path = Path(path)
        self._lock = threading.Lock()
        self._db = sqlite3.connect(self.path, check_same_thread=False, isolation_level=None, timeout=10)
        with self._lock:
            self._db.execute("PRAGMA foreign_keys=ON")
            self._db.executescript(_SCHEMA)

    def add(self, exchange_id: int, problems: Iterable[ProxyProblem], drift: Iterable[str]) -> None:
        """Keep an exchange's problems (masked as they are shown) and its drift lines, all of them."""
        rows = [(exchange_id, PROBLEM, n, p.index, str(p.problem)) for n, p in enumerate(problems)]
        rows += [(exchange_id, DRIFT, n, None, line) for n, line in enumerate(drift)]
        if not rows:
            return
        with self._lock, self._db:
            self._db.execute("BEGIN IMMEDIATE")
            self._db.executemany("INSERT INTO proxy_notes VALUES (?, ?, ?, ?, ?)", rows)

    def drift(self, exchange_id: int | None = None) -> list[DriftEntry]:
        """Every journalled exchange's drift, oldest first (`exchange_id`: that exchange's only)."""
        where, args = ("AND n.exchange_id = ?", (exchange_id,)) if exchange_id is not None else ("", ())
        with self._lock:
            rows = self._db.execute(
                "SELECT n.exchange_id, e.started_at, e.request_types, n.text FROM proxy_notes n "
                f"JOIN exchanges e ON e.id = n.exchange_id WHERE n.kind = 'drift' {where} "
                "ORDER BY n.exchange_id, n.position",
                args,
            ).fetchall()
        entries: dict[int, DriftEntry] = {}
        for exchange, started, types, text in rows:
            known = entries.get(exchange) or DriftEntry(exchange, started, types, ())
            entries[exchange] = DriftEntry(exchange, started, types, (*known.lines, text))
        return list(entries.values())

    def close(self) -> None:
        with self._lock:
            self._db.close()


def owner_only(path: str | os.PathLike[str]) -> None:
    """Make a file the proxy writes its owner's only (0600), with SQLite's `-wal` and `-shm` beside
    it: files SQLite makes later take the database's mode."""
    for name in (os.fspath(path), f"{os.fspath(path)}-wal", f"{os.fspath(path)}-shm"):
        try:
            os.chmod(name, 0o600)
        except FileNotFoundError:
            pass
