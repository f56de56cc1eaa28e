"""One change signal per connection: panels and tables redraw when data or the clock changes,
wherever in the kernel the change was made (a cell, another panel), without polling.

    gw.on_change(panel.refresh_on_change)   # called as listener(kind) after each change

Kinds: "exchange" (a request that can change data was answered), "clock" (the sandbox clock
moved), "settle", "reset". Bound methods are held weakly, so a panel that is no longer shown
stops listening when it is garbage collected. An exception in one listener does not stop the
others; the first is raised again once all have run.
"""

from __future__ import annotations

import threading
import weakref
from collections.abc import Callable
from typing import Any

Listener = Callable[[str], Any]

EXCHANGE, CLOCK, SETTLE, RESET = "exchange", "clock", "settle", "reset"


class ChangeSignal:
    def __init__(self) -> None:
        self._listeners: list[Callable[[], Listener | None]] = []
        self._lock = threading.Lock()

    def connect(self, listener: Listener) -> Listener:
        ref: Callable[[], Listener | None]
        if hasattr(listener, "__self__") and hasattr(listener, "__func__"):
            ref = weakref.WeakMethod(listener)
        else:  # plain functions are held strongly

            def ref() -> Listener:
                return listener

        with self._lock:
            self._listeners.append(ref)
        return listener

    def disconnect(self, listener: Listener) -> None:
        with self._lock:
            self._listeners = [r for r in self._listeners if r() not in (None, listener)]

    def emit(self, kind: str) -> None:
        with self._lock:
            alive = [(ref, ref()) for ref in self._listeners]
            self._listeners = [ref for ref, listener in alive if listener is not None]
        first_error: BaseException | None = None
        for _ref, listener in alive:
            if listener is None:
                continue
            try:
                listener(kind)
            except Exception as error:
                first_error = first_error or error
        if first_error is not None:
            raise first_error

    def __len__(self) -> int:
        return sum(1 for ref in self._listeners if ref() is not None)
