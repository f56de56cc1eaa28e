"""The clock moves under way, for `GET /_sandbox/clock/progress`: how far each one is.

The store makes the board they are kept on (`Store.moves()`): `Moves`, in memory, where one
process serves the store (SQLite); the PostgreSQL store's `StoredMoves` (store/postgres.py) keeps
them in the database, so every worker of a team sandbox shows a move that another worker runs.
"""

from __future__ import annotations

import itertools
import threading
from collections.abc import Iterable
from typing import Any, Protocol

STALE_SECONDS = 300.0  # a stored move of another host that said nothing for this long has ended


class Board(Protocol):
    """Where moves are shown: `Moves`, or the PostgreSQL store's `StoredMoves`."""

    def start(self, move: Move) -> Any: ...

    def changed(self, move: Move) -> None: ...

    def finish(self, move: Move) -> None: ...

    def of(self, sites: Iterable[str]) -> list[dict[str, Any]]: ...


class Move(dict):
    """One move's state (sites, from, to, day of days, the job's step, done of total); every
    `update` is shown to the readers of its board."""

    def __init__(self, board: Board, state: dict[str, Any]):
        super().__init__(state)
        self._board = board
        self.key = board.start(self)

    def update(self, *args: Any, **changes: Any) -> None:
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
