"""Running the sandbox on a loopback port: in a background thread (notebooks, tests) or in the
foreground (`gwkit sandbox`).

A shared server must not be held by its clients: an idle keep-alive connection is closed after
`keep_alive_seconds`, a request whose head has not fully arrived `header_read_seconds` after it
started (or after the connection opened) is closed, a body has `body_read_seconds`, and beyond
`max_connections` open connections a request gets 503 (`ServerLimits`); requests waiting out an
injected latency are not counted, they hold their own site's budget (`delayed_per_site`, latency.py).
"""

from __future__ import annotations

import asyncio
import os
import socket
import struct
import threading
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any, Callable, Iterable

import h11
import uvicorn
from uvicorn.protocols.http.h11_impl import DEFAULT_MAX_INCOMPLETE_EVENT_SIZE, H11Protocol

from ..gateway.accounts import Account
from ..gateway.cachetokens import token_rows
from ..gateway.pgstore import is_postgres_url
from ..gateway.snapshots import Snapshots
from .app import BODY_READ_SECONDS, WORKER_THREADS, Workers, create_app
from .fault_controls import FaultControls
from .framing import FramingCheckedConnection
from .headercase import canonical, canonical_header_case
from .latency import DELAYED_PER_SITE, LatencyBudget
from .sandbox import Sandbox
from .transport import SandboxTransport

DEFAULT_DB = Path(".gwkit") / "sandbox.db"


def default_db_path() -> Path | str:
    """$GWKIT_SANDBOX_DB (a file, or a postgresql:// URL) or .gwkit/sandbox.db."""
    return db_location(os.environ.get("GWKIT_SANDBOX_DB") or DEFAULT_DB)


def db_location(text: str | Path) -> Path | str:
    """A database given by the user: a postgresql:// URL as it is, else a file path."""
    return text if is_postgres_url(text) else Path(text)


def bind(host: str, port: int, *, shared: bool = False, listen: bool = True) -> socket.socket:
    """A listening socket: clients can connect as soon as this returns, before the server runs.

    `shared`: several processes bind the port (SO_REUSEPORT, `gwkit sandbox --workers`), and the
    kernel spreads new connections over them; `listen=False` only holds the port for them."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    # proto must be IPPROTO_TCP, not 0: asyncio only sets TCP_NODELAY on accepted sockets whose
    # proto says TCP, and without it every keep-alive answer waits ~40 ms for a delayed ACK.
    sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    if shared:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
    sock.bind((host, port))
    if not listen:
        return sock
    sock.listen(2048)
    sock.set_inheritable(True)
    return sock


@dataclass(frozen=True)
class ServerLimits:
    """What one connection or request may hold of a server (documented in docs/sandbox.md)."""

    keep_alive_seconds: float = 15.0  # longer than httpx's 5 s pool expiry: the client always lets go first
    header_read_seconds: float = 10.0
    write_stall_seconds: float = 30.0  # an answer the client stops reading: closed after this long
    body_read_seconds: float = BODY_READ_SECONDS
    max_connections: int = 200  # beyond this, 503; well under the usual 1024 file descriptors
    # requests of one site waiting out an injected latency; beyond, 429 (not counted in max_connections)
    delayed_per_site: int = DELAYED_PER_SITE
    threads: int = WORKER_THREADS  # for queries and large bodies (payments have their own thread)


class SandboxConfig(uvicorn.Config):
    """uvicorn's settings plus the deadline for a request's head (uvicorn has none)."""

    def __init__(self, app, *, timeout_header_read: float, timeout_write_stall: float, **kwargs: Any):
        super().__init__(app, **kwargs)
        self.timeout_header_read = timeout_header_read
        self.timeout_write_stall = timeout_write_stall


class GuardedH11Protocol(H11Protocol):
    """uvicorn's HTTP/1.1 protocol, closing a connection whose request head is too slow to arrive,
    or whose client stops reading its answer, and refusing ambiguous framing (framing.py).

    uvicorn times out only idle keep-alive connections, and any byte received resets that; a client
    that connects and sends nothing, or sends a header a byte at a time, would hold it forever. One
    that never reads a large answer would hold it too: the answer waits for the socket to drain."""

    _head_timer: asyncio.TimerHandle | None = None
    _stall_timer: asyncio.TimerHandle | None = None

    _max_connections: int | None = None

    def __init__(self, config: Any, server_state: Any, app_state: Any, _loop: Any = None) -> None:
        self._latency: LatencyBudget | None = getattr(config, "latency", None)
        super().__init__(config, server_state, app_state, _loop)
        size = config.h11_max_incomplete_event_size or DEFAULT_MAX_INCOMPLETE_EVENT_SIZE
        self.conn = FramingCheckedConnection(h11.SERVER, size)  # ambiguous framing: 400 and close

    @property
    def limit_concurrency(self) -> int | None:  # type: ignore[override]
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


def uvicorn_config(app, log_level: str = "warning", limits: ServerLimits | None = None) -> uvicorn.Config:
    """The server settings of every sandbox (and of the benchmark's baseline endpoint)."""
    limits = limits or ServerLimits()
    return SandboxConfig(
        app,
        log_level=log_level,
        lifespan="off",
        access_log=False,
        timeout_graceful_shutdown=2,
        http=GuardedH11Protocol,
        timeout_keep_alive=limits.keep_alive_seconds,
        limit_concurrency=limits.max_connections,
        timeout_header_read=limits.header_read_seconds,
        timeout_write_stall=limits.write_stall_seconds,
    )


class SandboxServer(uvicorn.Server):
    """uvicorn, stopping the sandbox's work with it: a long clock move ends at its next day, and the
    worker threads are waited for, so what was committed stays and nothing keeps the process alive.

    Stopping takes no fixed pauses (a notebook's kernel waits for it at every exit): `request_exit()`,
    from any thread, ends the main loop at once, where uvicorn's looks at `should_exit` every 0.1 s,
    and `shutdown` waits only for the connections still open, where uvicorn's also sleeps 0.1 s.
    (`main_loop` and `shutdown` are uvicorn 0.54's, on its public attributes, less the pauses.)"""

    TICK_SECONDS = 0.1  # uvicorn's: `on_tick` counts these (its Date header changes every 10 ticks)
    CLOSE_POLL_SECONDS = 0.005  # at stop, how often to look whether the last connections have closed

    def __init__(self, config: uvicorn.Config, sandbox: Sandbox, workers: Workers):
        super().__init__(config)
        self.sandbox = sandbox
        self.workers = workers
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
            except asyncio.TimeoutError:
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
        self.sandbox.gateway.stop_work()
        for server in self.servers:
            server.close()
        for sock in sockets or []:
            sock.close()
        for connection in list(self.server_state.connections):
            connection.shutdown()
        try:
            await asyncio.wait_for(self._connections_done(), self.config.timeout_graceful_shutdown)
        except asyncio.TimeoutError:
            for task in self.server_state.tasks:
                task.cancel(msg="Task cancelled, timeout graceful shutdown exceeded")
        if not self.force_exit:
            await self.lifespan.shutdown()
        try:
            await asyncio.to_thread(self.workers.shutdown)
        except RuntimeError:  # the interpreter is exiting: its executors take no more work
            self.workers.shutdown()

    async def _connections_done(self) -> None:
        while (self.server_state.connections or self.server_state.tasks) and not self.force_exit:
            await asyncio.sleep(self.CLOSE_POLL_SECONDS)
        for server in self.servers:
            await server.wait_closed()


def server_for(
    sandbox: Sandbox, log_level: str = "warning", limits: ServerLimits | None = None
) -> SandboxServer:
    limits = limits or ServerLimits()
    sandbox.latency = LatencyBudget(limits.delayed_per_site)
    workers = Workers(limits.threads)
    app = canonical_header_case(
        create_app(sandbox, workers=workers, body_read_seconds=limits.body_read_seconds)
    )
    config = uvicorn_config(app, log_level, limits)
    config.latency = sandbox.latency  # type: ignore[attr-defined]  # GuardedH11Protocol's allowance
    return SandboxServer(config, sandbox, workers)


@dataclass
class SandboxHandle:
    """A sandbox serving on loopback in a background thread."""

    sandbox: Sandbox
    base_url: str
    account: Account
    _server: SandboxServer = field(repr=False)
    _thread: threading.Thread = field(repr=False)
    _sock: socket.socket = field(repr=False)
    _listeners: list[Callable[[str], Any]] = field(default_factory=list, repr=False)

    def on_change(self, listener: Callable[[str], Any]) -> Callable[[str], Any]:
        """Call `listener(kind)` after this handle moves the clock ("clock"), settles or resets."""
        self._listeners.append(listener)
        return listener

    def _changed(self, kind: str) -> None:
        for listener in tuple(self._listeners):
            listener(kind)

    @property
    def username(self) -> str:
        return self.account.username

    @property
    def password(self) -> str:
        return self.account.password

    @property
    def sitereference(self) -> str:
        return self.account.sitereferences[0]

    @property
    def db_path(self) -> Path | str:
        """The database file, or the PostgreSQL URL without its password."""
        return self.sandbox.store.path

    @property
    def running(self) -> bool:
        return self._thread.is_alive()

    def __repr__(self) -> str:
        return (
            f"SandboxHandle(base_url={self.base_url!r}, username={self.username!r}, password=[redacted], "
            f"sitereference={self.sitereference!r})"
        )

    def now(self, sitereference: str | None = None) -> datetime:
        """The handle's account's clock (its sites move together), or one site's."""
        return self.sandbox.gateway.clock.now(sitereference or self.account.sitereferences)

    def advance(
        self,
        by: str | None = None,
        to: str | datetime | None = None,
        progress=None,
        sitereference: str | None = None,
    ) -> dict[str, Any]:
        report = self.sandbox.gateway.advance(
            by=by, to=to, progress=progress, sites=self._sites(sitereference)
        )
        self._changed("clock")
        return report

    def settle(self, all_pending: bool = False, sitereference: str | None = None) -> dict[str, Any]:
        report = self.sandbox.gateway.settle(all_pending=all_pending, sites=self._sites(sitereference))
        self._changed("settle")
        return report

    def reset(self, sitereference: str | None = None) -> None:
        self.sandbox.gateway.reset(self._sites(sitereference))
        self._changed("reset")

    def _sites(self, sitereference: str | None) -> tuple[str, ...]:
        return self.sandbox.gateway.sites_of(self.account, sitereference)

    def health(self) -> dict[str, Any]:
        return self.sandbox.health()

    def cachetokens(self, sitereference: str | None = None) -> list[dict[str, Any]]:
        """The cachetokens issued on this handle's site (or `sitereference`), newest first: masked
        card, times and state (used, expired or live). The tokens themselves are never kept."""
        site = self._sites(sitereference or self.sitereference)[0]
        return token_rows(self.sandbox.store, self.sandbox.gateway.clock, site)

    @property
    def faults(self) -> FaultControls:
        """Fault injection, in-process: `add(kind, **params)`, `active()`, `clear()`, `log()` (faults.py)."""
        return self.sandbox.faults

    @property
    def snapshots(self) -> Snapshots:
        """Scenario snapshots of this handle's account: `save`, `list`, `restore`, `delete` (snapshots.py)."""
        return self.sandbox.snapshots

    def drop_next(self, count: int = 1, process: bool = True) -> dict[str, Any]:
        """Fault injection: the next `count` gateway answers are not sent (see faults.py)."""
        return self.sandbox.faults.set(count, process)

    def transport(self) -> SandboxTransport:
        return SandboxTransport(self.sandbox)

    def stop(self) -> None:
        self._server.request_exit()
        self._thread.join(timeout=30)
        self._sock.close()
        self.sandbox.close()

    def __enter__(self) -> "SandboxHandle":
        return self

    def __exit__(self, *exc) -> None:
        self.stop()


def start(
    db_path: str | Path | None = None,
    *,
    host: str = "127.0.0.1",
    port: int = 0,
    accounts: Iterable[Account] | None = None,
    clock_start: datetime | None = None,
    sandbox: Sandbox | None = None,
    log_level: str = "warning",
    limits: ServerLimits | None = None,
) -> SandboxHandle:
    """Start the sandbox on `host`:`port` (0 picks a free port) in a background thread.

    `db_path` defaults to $GWKIT_SANDBOX_DB or .gwkit/sandbox.db; the server is accepting
    connections when this returns. `limits`: timeouts and connection bound (`ServerLimits`).
    """
    sandbox = sandbox or Sandbox(
        db_path if db_path is not None else default_db_path(), accounts=accounts, clock_start=clock_start
    )
    sock = bind(host, port)
    server = server_for(sandbox, log_level, limits)
    thread = threading.Thread(
        target=server.run, kwargs={"sockets": [sock]}, name="gwkit-sandbox", daemon=True
    )
    thread.start()
    bound_host, bound_port = sock.getsockname()[:2]
    shown = f"[{bound_host}]" if ":" in bound_host else bound_host
    return SandboxHandle(
        sandbox, f"http://{shown}:{bound_port}", sandbox.default_account, server, thread, sock
    )
