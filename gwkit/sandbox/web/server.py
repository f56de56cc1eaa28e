"""Running the sandbox on a loopback port: in a background thread (notebooks, tests) or in the
foreground (`gwkit sandbox`).

A shared server must not be held by its clients: an idle keep-alive connection is closed after
`keep_alive_seconds`, a request whose head has not fully arrived `header_read_seconds` after it
started (or after the connection opened) is closed, a body has `body_read_seconds`, and beyond
`max_connections` open connections a request gets 503 (`ServerLimits`); requests waiting out an
injected latency are not counted, they hold their own site's budget (`delayed_per_site`, latency.py).
"""

from __future__ import annotations

import os
import socket
import threading
import warnings
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

import uvicorn

from ..gateway.accounts import Account
from ..gateway.cachetokens import token_rows
from ..gateway.store import store_target
from ..gateway.store.snapshots import Snapshots
from .app import BODY_READ_SECONDS, create_app
from .fault_controls import FaultControls
from .headercase import canonical_header_case
from .latency import DELAYED_PER_SITE, LatencyBudget
from .notification_controls import NotificationControls
from .sandbox import Sandbox
from .transport import SandboxTransport
from .uvicorn_adapter import BackgroundServer, Connections, config_for
from .workers import WORKER_THREADS, Workers

DEFAULT_DB = Path(".gwkit") / "sandbox.db"


def default_db_path() -> Path | str:
    """$GWKIT_SANDBOX_DB (a file, or a postgresql:// URL) or .gwkit/sandbox.db."""
    return db_location(os.environ.get("GWKIT_SANDBOX_DB") or DEFAULT_DB)


def db_location(text: str | Path) -> Path | str:
    """A database given by the user: a postgresql:// URL as it is, else a file path."""
    return store_target(text)


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


def server_for(
    sandbox: Sandbox, log_level: str = "warning", limits: ServerLimits | None = None
) -> BackgroundServer:
    """The uvicorn server of `sandbox`: at stop, a long clock move ends at its next day, and the
    worker threads are waited for, so what was committed stays and nothing keeps the process alive."""
    limits = limits or ServerLimits()
    latency = sandbox.latency = LatencyBudget(limits.delayed_per_site)
    workers = Workers(limits.threads)
    app = canonical_header_case(
        create_app(sandbox, workers=workers, body_read_seconds=limits.body_read_seconds)
    )

    def stopping() -> None:  # the gateway's at stop time (a test may have replaced it)
        sandbox.gateway.stop_work()

    config = uvicorn_config(app, log_level, limits, allowance=lambda: latency.delayed)
    return BackgroundServer(config, stopping=stopping, stopped=workers.shutdown)


def uvicorn_config(
    app: Any,
    log_level: str = "warning",
    limits: ServerLimits | None = None,
    allowance: Callable[[], int] = lambda: 0,
) -> uvicorn.Config:
    """The server settings of every sandbox (and of the proxy, and the benchmark's baseline endpoint).
    `allowance()`: connections allowed beyond `max_connections` (the requests waiting out a latency)."""
    limits = limits or ServerLimits()
    connections = Connections(
        max_connections=limits.max_connections,
        header_seconds=limits.header_read_seconds,
        write_stall_seconds=limits.write_stall_seconds,
        allowance=allowance,
    )
    return config_for(
        app,
        connections,
        log_level=log_level,
        lifespan="off",
        access_log=False,
        timeout_graceful_shutdown=2,
        timeout_keep_alive=limits.keep_alive_seconds,
    )


@dataclass
class SandboxHandle:
    """A sandbox serving on loopback in a background thread."""

    sandbox: Sandbox
    base_url: str
    account: Account
    _server: BackgroundServer = field(repr=False)
    _thread: threading.Thread = field(repr=False)
    _sock: socket.socket = field(repr=False)

    def on_change(self, listener: Callable[[str], Any]) -> Callable[[str], Any]:
        """Call `listener(kind)` after the sandbox's clock moves ("clock"), it settles or resets
        (`Sandbox.on_change`)."""
        return self.sandbox.on_change(listener)

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
        """`Sandbox.advance` for this handle's account's sites (or one of them)."""
        return self.sandbox.advance(by, to, progress, sitereference, account=self.account)

    def settle(self, all_pending: bool = False, sitereference: str | None = None) -> dict[str, Any]:
        """`Sandbox.settle` for this handle's account's sites (or one of them)."""
        return self.sandbox.settle(all_pending, sitereference, account=self.account)

    def reset(self, sitereference: str | None = None, *, clock: bool = False) -> None:
        """`Sandbox.reset` for this handle's account's sites (or one of them); `clock=True` starts
        them afresh, their clocks back at `start()`."""
        self.sandbox.reset(sitereference, account=self.account, clock=clock)

    def start(self) -> datetime:
        """Where every site's clock stands before it first moves, and where `reset(clock=True)` puts it."""
        return self.sandbox.gateway.clock.start()

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
    def notifications(self) -> NotificationControls:
        """URL notifications of this handle's account: `add_rule`, `rules`, `deliveries`, `resend`,
        `wait_for` (docs/notifications.md)."""
        return NotificationControls(self.sandbox.gateway, self.account)

    @property
    def snapshots(self) -> Snapshots:
        """Scenario snapshots of this handle's account: `save`, `list`, `restore`, `delete` (snapshots.py)."""
        return self.sandbox.snapshots

    def drop_next(self, count: int = 1, process: bool = True) -> dict[str, Any]:
        """Deprecated: `faults.add("drop", count=count, process=process)`."""
        warnings.warn(
            'SandboxHandle.drop_next is deprecated: use handle.faults.add("drop", count=N, process=...)',
            DeprecationWarning,
            stacklevel=2,
        )
        return self.sandbox.faults.replace_drops(count, process)

    def transport(self) -> SandboxTransport:
        return SandboxTransport(self.sandbox)

    def stop(self) -> None:
        self._server.request_exit()
        self._thread.join(timeout=30)
        self._sock.close()
        self.sandbox.close()

    def __enter__(self) -> SandboxHandle:
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
