"""The clock moves under way, for `GET /_sandbox/clock/progress`: how far each one is.

The store makes the board they are kept on (`Store.moves()`): `Moves`, in memory, where one
process serves the store (SQLite); the PostgreSQL store's `StoredMoves` (store/postgres.py) keeps
them in the database, each on a lease its process renews, so every worker and host of a team
sandbox shows a move that another runs, and takes over the move of one that died (`MoveKeeper`).
"""

from __future__ import annotations

import itertools
import logging
import os
import threading
import weakref
from collections.abc import Callable, Iterable
from typing import Any, Protocol

DEFAULT_LEASE_SECONDS = 30.0  # a move's lease: how long a host may be silent before another takes over
LEASE_ENV = "GWKIT_SANDBOX_MOVE_LEASE"  # the lease in seconds, when `gwkit sandbox --move-lease` is not given
log = logging.getLogger("gwkit.sandbox")


class Board(Protocol):
    """Where moves are shown: `Moves`, or the PostgreSQL store's `StoredMoves`."""

    def start(self, move: Move) -> Any: ...

    def changed(self, move: Move) -> None: ...

    def finish(self, move: Move) -> None: ...

    def release(self, move: Move) -> None: ...

    def renew(self) -> None: ...

    def abandoned(self, at: float | None = None) -> list[tuple[str, str, dict[str, Any]]]: ...

    def take(self, key: str, worker: str, at: float | None = None) -> dict[str, Any] | None: ...

    def of(self, sites: Iterable[str]) -> list[dict[str, Any]]: ...


class Move(dict):
    """One move's state (sites, from, to, day of days, the job's step, done of total); every
    `update` is shown to the readers of its board. `key`: a move taken over, already on the board."""

    def __init__(self, board: Board, state: dict[str, Any], key: Any = None):
        super().__init__(state)
        self._board = board
        self.key = board.start(self) if key is None else key

    def update(self, *args: Any, **changes: Any) -> None:
        super().update(*args, **changes)
        self._board.changed(self)

    def finish(self) -> None:
        self._board.finish(self)

    def release(self) -> None:
        self._board.release(self)


class Moves:
    """The moves of this process, in memory: no other process can take one over (one process serves
    a SQLite store; a stopped one's days are run at its next start)."""

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

    release = finish

    def renew(self) -> None:
        """No lease: the moves live and die with this process."""

    def abandoned(self, at: float | None = None) -> list[tuple[str, str, dict[str, Any]]]:
        return []

    def take(self, key: str, worker: str, at: float | None = None) -> dict[str, Any] | None:
        return None

    def of(self, sites: Iterable[str]) -> list[dict[str, Any]]:
        wanted = set(sites)
        with self._lock:
            running = list(self._running.values())
        return [dict(move) for move in running if wanted & set(move["sites"])]


def lease_seconds(given: float | None = None) -> float:
    """The lease length: `given`, else GWKIT_SANDBOX_MOVE_LEASE, else 30 s; a positive number."""
    text = given if given is not None else os.environ.get(LEASE_ENV) or DEFAULT_LEASE_SECONDS
    try:
        value = float(text)
    except ValueError:
        value = 0.0
    if not 0 < value < float("inf"):
        raise ValueError(
            f"{LEASE_ENV}: the clock moves' lease must be a positive number of seconds, not {text!r}"
        )
    return value


class MoveKeeper:
    """The sweeper of one process: every third of the lease it renews this process's leases, then
    sweeps (takes over the moves whose host died). A thread of its own; `stop()` ends it, and so does
    the end of the gateway whose `sweep` it was given (held weakly: a gateway dropped without
    `close()` leaves no thread sweeping a database that may be gone)."""

    def __init__(self, board: Board, sweep: Callable[[], Any], lease: float):
        self._board, self._every = board, lease / 3
        self._sweep = weakref.WeakMethod(sweep)
        self._stopping = threading.Event()
        self._thread = threading.Thread(target=self._run, name="gwkit-move-keeper", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stopping.wait(self._every):
            sweep = self._sweep()
            if sweep is None:
                return
            try:
                self._board.renew()
                sweep()
            except Exception:  # the database out of reach for a moment: the next round tries again
                log.exception("the clock moves' sweeper failed; it tries again in %.1f s", self._every)

    def stop(self) -> None:
        self._stopping.set()
        if self._thread is not threading.current_thread():
            self._thread.join()


class UnderWay:
    """How many clock moves, settlements or restores this process runs now (`with` counts one):
    while any does, the web layer answers no request inline on its event loop (web/workers.py)."""

    def __init__(self) -> None:
        self._count = 0
        self._lock = threading.Lock()

    def __enter__(self) -> UnderWay:
        with self._lock:
            self._count += 1
        return self

    def __exit__(self, *exc: Any) -> None:
        with self._lock:
            self._count -= 1

    def locked(self) -> bool:
        return self._count > 0
