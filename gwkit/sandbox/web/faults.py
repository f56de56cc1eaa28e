"""Fault injection for tests of clients (`POST /_sandbox/faults`): HTTP only, not persisted.

`drop_next` answers of `POST /json/` are never sent: the connection is closed instead. With
`process` the gateway handles the request first (the payment is made and the answer lost, as when
a connection fails after the request went out); without it the request is dropped unread.
`Faults.dropped` is the one decision; the Starlette app and the httpx transports act on it.
"""

from __future__ import annotations

import threading
from typing import Any

from ...interface.wire import GATEWAY_PATH

GATEWAY_PATHS = (GATEWAY_PATH.rstrip("/"), GATEWAY_PATH)  # the gateway endpoint, with or without its slash


class Faults:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.drop_next = 0
        self.process = True

    def set(self, drop_next: int, process: bool = True) -> dict[str, Any]:
        if not isinstance(drop_next, int) or isinstance(drop_next, bool) or drop_next < 0:
            raise ValueError("drop_next must be a whole number, 0 or more")
        with self._lock:
            self.drop_next, self.process = drop_next, bool(process)
        return self.state()

    def state(self) -> dict[str, Any]:
        return {"drop_next": self.drop_next, "process": self.process}

    def dropped(self, method: str, path: str) -> bool | None:
        """None: answer this request normally; otherwise drop its answer (True: after processing it)."""
        if not self.drop_next or method != "POST" or path not in GATEWAY_PATHS:
            return None
        with self._lock:
            if not self.drop_next:
                return None
            self.drop_next -= 1
            return self.process
