"""The clock moves under way, for `GET /_sandbox/clock/progress`: how far each one is.

`Moves` keeps them in memory: one process sees its own. `StoredMoves` keeps them in PostgreSQL
(`gwkit_clock_moves`, schema version 4), so every worker of a team sandbox shows a move that
another worker runs. Each change is written at once, outside the move's own transaction (which
commits only every few days), on a connection of its own. A move whose worker was killed leaves
a row: it is dropped when read, once its process is gone (same host) or it has not changed for
`STALE_SECONDS` (another host).
"""

from __future__ import annotations

import itertools
import json
import os
import secrets
import socket
import threading
import time
from typing import Any, Iterable

STALE_SECONDS = 300.0  # a move of another host that said nothing for this long has ended


class Move(dict):
    """One move's state (sites, from, to, day of days, the job's step, done of total); every
    `update` is shown to the readers of its board."""

    def __init__(self, board: "Moves | StoredMoves", state: dict[str, Any]):
        super().__init__(state)
        self._board = board
        self.key = board.start(self)

    def update(self, *args: Any, **changes: Any) -> None:  # type: ignore[override]
        super().update(*args, **changes)
        self._board.changed(self)

    def finish(self) -> None:
        self._board.finish(self)


class Moves:
    """The moves of this process, in memory."""

    def __init__(self) -> None:
        self._running: dict[Any, Move] = {}
        self._ids = itertools.count(1)
        self._lock = threading.Lock()

    def start(self, move: Move) -> Any:
        with self._lock:
            key = next(self._ids)
            self._running[key] = move
        return key

    def changed(self, move: Move) -> None:
        """In memory a reader sees the move itself: nothing to do."""

    def finish(self, move: Move) -> None:
        with self._lock:
            self._running.pop(move.key, None)

    def of(self, sites: Iterable[str]) -> list[dict[str, Any]]:
        wanted = set(sites)
        with self._lock:
            running = list(self._running.values())
        return [dict(move) for move in running if wanted & set(move["sites"])]


class StoredMoves:
    """The moves of every worker, in the team sandbox's database (the same methods as `Moves`)."""

    def __init__(self, store: Any):
        self._store = store
        self._worker = f"{socket.gethostname()}:{os.getpid()}"

    def start(self, move: Move) -> Any:
        key = f"{self._worker}:{secrets.token_hex(8)}"  # unique also between two sandboxes of one process
        self._store.autocommit().execute(
            "INSERT INTO gwkit_clock_moves (key, worker, sites, state, changed) VALUES (?, ?, ?::jsonb, ?::jsonb, ?)",
            (key, self._worker, json.dumps(move["sites"]), json.dumps(dict(move)), time.time()),
        )
        return key

    def changed(self, move: Move) -> None:
        self._store.autocommit().execute(
            "UPDATE gwkit_clock_moves SET state = ?::jsonb, changed = ? WHERE key = ?",
            (json.dumps(dict(move)), time.time(), move.key),
        )

    def finish(self, move: Move) -> None:
        self._store.autocommit().execute("DELETE FROM gwkit_clock_moves WHERE key = ?", (move.key,))

    def of(self, sites: Iterable[str]) -> list[dict[str, Any]]:
        wanted = set(sites)
        rows = (
            self._store.autocommit()
            .execute("SELECT key, worker, state, changed FROM gwkit_clock_moves ORDER BY key")
            .fetchall()
        )
        shown = []
        for key, worker, state, changed in rows:
            if self._ended(worker, changed):
                self._store.autocommit().execute("DELETE FROM gwkit_clock_moves WHERE key = ?", (key,))
            elif wanted & set(state["sites"]):
                shown.append(state)
        return shown

    def _ended(self, worker: str, changed: float) -> bool:
        host, _, pid = worker.rpartition(":")
        if host == socket.gethostname():
            try:
                os.kill(int(pid), 0)
            except ProcessLookupError:
                return True
            except PermissionError:  # alive, someone else's
                return False
            return False
        return time.time() - changed > STALE_SECONDS
