"""Every use gwkit makes of uvicorn beyond its public `Config` and `Server.run`/`serve`: the one
module that breaks when uvicorn changes what it overrides or reads.

uvicorn has no public API for these, and the sandbox needs them:
- `GuardedH11Protocol` (uvicorn's HTTP/1.1 protocol class, given as `Config(http=...)`): deadlines
  uvicorn lacks (a request's head, an answer the client stops reading), and an ASGI scope extension
  (`CLOSE_CONNECTION`) by which the app closes a connection without answering (fault injection).
- `PromptServer` (a `uvicorn.Server`): `main_loop` and `shutdown` are uvicorn 0.54's without their
  fixed 0.1 s pauses, so a notebook kernel's exit does not wait for them.

`tests/sandbox/test_uvicorn_adapter.py` holds the source of each uvicorn function these copy or
depend on, as of the versions `pyproject.toml` allows; it fails, naming the function, when a uvicorn
changes one of them.
"""

from __future__ import annotations

import asyncio
import socket
import struct
from collections.abc import Callable
from typing import Any

import h11
import uvicorn
from uvicorn.protocols.http.h11_impl import DEFAULT_MAX_INCOMPLETE_EVENT_SIZE, H11Protocol

from .app import CLOSE_CONNECTION
from .framing import FramingCheckedConnection
from .headercase import canonical
from .latency import LatencyBudget

__all__ = ["GuardedH11Protocol", "PromptServer", "SandboxConfig"]


class SandboxConfig(uvicorn.Config):
    """uvicorn's settings plus the deadline for a request's head (uvicorn has none), the stall allowed
    a client reading its answer, and the sandbox's latency budget (`latency`, set by its server)."""

    def __init__(self, app: Any, *, timeout_header_read: float, timeout_write_stall: float, **kwargs: Any):
        super().__init__(app, **kwargs)
        self.timeout_header_read = timeout_header_read
        self.timeout_write_stall = timeout_write_stall
        self.latency: LatencyBudget | None = None


class GuardedH11Protocol(H11Protocol):
    """uvicorn's HTTP/1.1 protocol, closing a connection whose request head is too slow to arrive,
    or whose client stops reading its answer, and refusing ambiguous framing (framing.py); and
    offering the app, in each request's scope, a way to close the connection without an answer
    (`scope["extensions"][CLOSE_CONNECTION]()`).

    uvicorn times out only idle keep-alive connections, and any byte received resets that; a client
    that connects and sends nothing, or sends a header a byte at a time, would hold it forever. One
    that never reads a large answer would hold it too: the answer waits for the socket to drain."""

    _head_timer: asyncio.TimerHandle | None = None
    _stall_timer: asyncio.TimerHandle | None = None

    _max_connections: int | None = None
    config: SandboxConfig

    def __init__(self, config: SandboxConfig, server_state: Any, app_state: Any, _loop: Any = None) -> None:
        self._latency = config.latency
        super().__init__(config, server_state, app_state, _loop)
        size = config.h11_max_incomplete_event_size or DEFAULT_MAX_INCOMPLETE_EVENT_SIZE
        self.conn = FramingCheckedConnection(h11.SERVER, size)  # ambiguous framing: 400 and close
        self.app = self._offering_close(self.app)

    @property
    def limit_concurrency(self) -> int | None:
        """uvicorn's bound on connections and tasks (beyond it, 503), not counting the requests that
        wait out an injected latency: those hold only their own site's budget (latency.py)."""
        if self._max_connections is None or self._latency is None:
            return self._max_connections
        return self._max_connections + self._latency.delayed

    @limit_concurrency.setter
    def limit_concurrency(self, value: int | None) -> None:  # set by uvicorn's __init__
        self._max_connections = value

    def send_400_response(self, msg: str) -> None:
        super().send_400_response(getattr(self.conn, "refusal", None) or msg)

    def _offering_close(self, app: Any) -> Any:
        async def with_close(scope: dict[str, Any], receive: Any, send: Any) -> None:
            scope.setdefault("extensions", {})[CLOSE_CONNECTION] = self.transport.close
            await app(scope, receive, send)

        return with_close

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self._start_head_timer()

    def data_received(self, data: bytes) -> None:
        if self._head_timer is None and self.conn.their_state is h11.IDLE:
            self._start_head_timer()  # the first bytes of a new request on a kept-alive connection
        super().data_received(data)
        if self.conn.their_state is not h11.IDLE:
            self._stop_head_timer()

    def connection_lost(self, exc: Exception | None) -> None:
        self._stop_head_timer()
        self._stop_stall_timer()
        super().connection_lost(exc)

    def pause_writing(self) -> None:
        super().pause_writing()
        if self._stall_timer is None:
            self._watch_drain(None)

    def resume_writing(self) -> None:
        self._stop_stall_timer()
        super().resume_writing()

    def _watch_drain(self, size_before: int | None) -> None:
        """While the answer waits for the client, check it keeps draining; if nothing left the buffer
        in `timeout_write_stall`, the client stopped reading: drop the connection. (A slow reader that
        keeps reading is never cut, however long its answer takes.)"""
        size = self.transport.get_write_buffer_size()
        if size_before is not None and size >= size_before:
            self._stall_timer = None
            self._reset()
            return
        self._stall_timer = self.loop.call_later(self.config.timeout_write_stall, self._watch_drain, size)

    def _reset(self) -> None:
        """Drop the connection at once, what the kernel still holds for it included (a reset, not a
        close: close() waits for the buffer to drain, and the kernel would go on holding the rest)."""
        sock = self.transport.get_extra_info("socket")
        if sock is not None:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        self.transport.abort()

    def _stop_stall_timer(self) -> None:
        if self._stall_timer is not None:
            self._stall_timer.cancel()
            self._stall_timer = None

    def _start_head_timer(self) -> None:
        self._head_timer = self.loop.call_later(self.config.timeout_header_read, self._head_too_slow)

    def _stop_head_timer(self) -> None:
        if self._head_timer is not None:
            self._head_timer.cancel()
            self._head_timer = None

    def _head_too_slow(self) -> None:
        self._head_timer = None
        if not self.transport.is_closing():
            self.transport.close()


class PromptServer(uvicorn.Server):
    """uvicorn, stopping without fixed pauses (a notebook's kernel waits for it at every exit):
    `request_exit()`, from any thread, ends the main loop at once, where uvicorn's looks at
    `should_exit` every 0.1 s, and `shutdown` waits only for the connections still open, where
    uvicorn's also sleeps 0.1 s. `stopping()` is called as the shutdown begins, `stopped()` (in a
    thread) once every connection is done. (`main_loop` and `shutdown` are uvicorn 0.54's, less the
    pauses.)"""

    TICK_SECONDS = 0.1  # uvicorn's: `on_tick` counts these (its Date header changes every 10 ticks)
    CLOSE_POLL_SECONDS = 0.005  # at stop, how often to look whether the last connections have closed

    def __init__(
        self, config: uvicorn.Config, *, stopping: Callable[[], None], stopped: Callable[[], None]
    ) -> None:
        super().__init__(config)
        self.stopping = stopping
        self.stopped = stopped
        self._loop: asyncio.AbstractEventLoop | None = None
        self._wake: asyncio.Event | None = None

    async def main_loop(self) -> None:
        """uvicorn's loop (ticks of 0.1 s), whose wait between ticks `request_exit()` cuts short."""
        self._wake, self._loop = asyncio.Event(), asyncio.get_running_loop()
        counter = 0
        while not await self.on_tick(counter):
            counter = (counter + 1) % 864000
            try:
                await asyncio.wait_for(self._wake.wait(), self.TICK_SECONDS)
            except TimeoutError:
                pass

    async def on_tick(self, counter: int) -> bool:
        """uvicorn's tick, its own headers (Date, Server) put in canonical case as the app's are."""
        should_exit = await super().on_tick(counter)
        state = self.server_state
        state.default_headers = [(canonical(name), value) for name, value in state.default_headers]
        return should_exit

    def request_exit(self) -> None:
        """Ask the server to stop (any thread): it stops taking connections and ends what is under way."""
        self.should_exit = True
        if self._loop is None or self._wake is None:
            return  # not in its main loop yet: its first tick sees should_exit
        try:
            self._loop.call_soon_threadsafe(self._wake.set)
        except RuntimeError:  # its loop has already closed: the server has stopped
            pass

    async def shutdown(self, sockets: list[socket.socket] | None = None) -> None:
        """uvicorn's shutdown, without its fixed 0.1 s pauses: no new connections, each open one
        closed once its answer is sent (an idle one at once), tasks given `timeout_graceful_shutdown`."""
        self.stopping()
        for server in self.servers:
            server.close()
        for sock in sockets or []:
            sock.close()
        for connection in list(self.server_state.connections):
            connection.shutdown()
        try:
            await asyncio.wait_for(self._connections_done(), self.config.timeout_graceful_shutdown)
        except TimeoutError:
            for task in self.server_state.tasks:
                task.cancel(msg="Task cancelled, timeout graceful shutdown exceeded")
        if not self.force_exit:
            await self.lifespan.shutdown()
        try:
            await asyncio.to_thread(self.stopped)
        except RuntimeError:  # the interpreter is exiting: its executors take no more work
            self.stopped()

    async def _connections_done(self) -> None:
        while (self.server_state.connections or self.server_state.tasks) and not self.force_exit:
            await asyncio.sleep(self.CLOSE_POLL_SECONDS)
        for server in self.servers:
            await server.wait_closed()
