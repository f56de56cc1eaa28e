"""`gwkit.connect()`: one call that returns a client for the configured target.

    gw = gwkit.connect()      # a real gateway when configured, else the embedded sandbox
    gw                         # shows the target: sandbox or real, base URL, site, user

Configuration, first match wins for each setting:

1. keyword arguments of `connect()`;
2. environment variables: GWKIT_BASE_URL, GWKIT_USERNAME, GWKIT_PASSWORD, GWKIT_SITEREFERENCE,
   GWKIT_CURRENCY, GWKIT_JOURNAL (journal file), GWKIT_SANDBOX_DB (sandbox database),
   GWKIT_TARGET (`sandbox` forces the sandbox even when a gateway is configured),
   GWKIT_CASSETTE (record and replay, see below);
3. `gwkit.toml` in the working directory (or the file named by GWKIT_CONFIG):

       [gateway]
       base_url = "https://webservices.securetrading.net"
       username = "webservices@example.com"
       password_env = "MY_GATEWAY_PASSWORD"   # the name of a variable holding the password
       # password = "..."                     # possible, but then keep the file out of git
       sitereference = "test_site12345"
       currencyiso3a = "GBP"

       [journal]
       path = ".gwkit/journal.db"             # or: enabled = false

       [sandbox]
       db = ".gwkit/sandbox.db"

With a base URL configured, the username, password and site reference are required, and a clear
error names whichever is missing. Without one, the embedded sandbox is started on a free loopback
port (once per database file and process, so re-running a notebook cell reuses it).

`connect(notebook="04_subscriptions")` gives a notebook a sandbox of its own, started afresh each time
the cell runs: its own database beside the default one (`.gwkit/sandbox-04_subscriptions.db`), so
Restart & Run All tells the same story every time, in any order, beside the other notebooks. Against
a real gateway the name only labels the connection.

`connect(cassette="run.jsonl")` (or GWKIT_CASSETTE) records and replays like vcrpy's "once" mode:
when the file does not exist, every exchange of the connection is recorded into it; when it
exists, the requests are answered from it and none reaches the gateway (the sandbox still starts
for its control API). A request with no recording left raises `gwkit.cassette.CassetteMiss`.
"""

from __future__ import annotations

import atexit
import html
import os
import re
import threading
from collections import deque
from collections.abc import Mapping
from datetime import date
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .cassette import Cassette
from .changes import EXCHANGE, ChangeSignal, Listener
from .client import Client
from .config import (
    CONFIG_FILE,
    DEFAULT_CURRENCY,
    ENV_VARS,
    GATEWAY,
    REQUIRED_FOR_GATEWAY,
    SANDBOX,
    ConfigError,
    Target,
    read_settings,
)
from .interface.masking import REDACTED
from .journal import DEFAULT_PATH as DEFAULT_JOURNAL_PATH
from .journal import ENV_VAR as JOURNAL_ENV_VAR
from .journal import Journal
from .querying import Progress, query_all
from .reconcile import Reconciliation, reconcile

if TYPE_CHECKING:  # pragma: no cover
    import pandas as pd

    from .sandbox import SandboxHandle

HISTORY_SIZE = 500
CASSETTE_ENV_VAR = "GWKIT_CASSETTE"
RECORDING, REPLAYING = "recording", "replaying"


class Connection(Client):
    """A `gwkit.Client` that knows its target, keeps the session's exchanges, journals them, and
    shows itself in notebooks. `sandbox` is the sandbox handle (None for a real gateway)."""

    def __init__(
        self,
        target: Target,
        password: str,
        *,
        sandbox: SandboxHandle | None = None,
        journal: Journal | None = None,
        cassette: Cassette | None = None,
        cassette_mode: str | None = None,
        **client_options: Any,
    ):
        super().__init__(
            target.base_url,
            target.username,
            password,
            sitereference=target.sitereference,
            currencyiso3a=target.currencyiso3a,
            **client_options,
        )
        self.target = target
        self.sandbox = sandbox
        self.notebook: str | None = None  # set by connect(notebook=...): this notebook's own sandbox
        self.changes = ChangeSignal()
        self.add_exchange_hook(self._exchanged)
        if sandbox is not None:
            sandbox.on_change(self.changes.emit)
        self.journal = journal
        self.exchanges: deque[Any] = deque(maxlen=HISTORY_SIZE)
        self.add_exchange_hook(self.exchanges.append)
        if journal is not None:  # stamped with the sandbox's clock, the one its records follow
            self.add_exchange_hook(
                journal.hook(kind=target.kind, clock=sandbox.now if sandbox is not None else None)
            )
        self.cassette = cassette
        self.cassette_mode = cassette_mode if cassette is not None else None  # RECORDING or REPLAYING
        if cassette is not None and cassette_mode == RECORDING:
            self.add_exchange_hook(cassette.recorder())

    def on_change(self, listener: Listener) -> Listener:
        """Call `listener(kind)` whenever data or the clock may have changed: after a request that can
        change data (any but TRANSACTIONQUERY) and after the sandbox clock moves, settles or resets,
        from any cell or panel (gwkit.changes). Panels redraw on it."""
        return self.changes.connect(listener)

    def _exchanged(self, exchange: Any) -> None:
        if any(kind != "TRANSACTIONQUERY" for kind in getattr(exchange, "request_types", ())):
            self.changes.emit(EXCHANGE)

    @property
    def cassette_status(self) -> str | None:
        """`recording to <path>`, `replaying <path>`, or None without a cassette."""
        if self.cassette is None:
            return None
        if self.cassette_mode == RECORDING:
            return f"recording to {self.cassette.path}"
        return f"replaying {self.cassette.path}"

    def reconcile(
        self,
        *,
        orderreference: str | None = None,
        transactionreference: str | None = None,
        exchange: Any = None,
    ) -> Reconciliation:
        """Whether a payment with an unknown outcome exists, and in which state (one TRANSACTIONQUERY;
        never re-sends). `exchange` defaults to nothing; pass a failed one from `gw.exchanges`."""
        return reconcile(
            self, orderreference=orderreference, transactionreference=transactionreference, exchange=exchange
        )

    def query_all(
        self,
        filters: Mapping[str, Any] | None = None,
        *,
        start: date,
        end: date,
        progress: Progress | None = None,
    ) -> pd.DataFrame:
        """Every record `filters` match from `start` to `end`, past the 500-record cap, as a typed
        DataFrame (newest first); `progress(days_done, days_in_all)` follows the windows."""
        from .report.frames import records_frame  # pandas only when a frame is asked for

        return records_frame(
            [dict(r) for r in query_all(self, filters, start=start, end=end, progress=progress)]
        )

    def __repr__(self) -> str:
        t = self.target
        return (
            f"<gwkit {t.title}: {t.base_url} site={t.sitereference} user={t.username} "
            f"password={REDACTED} journal={self.journal.path if self.journal is not None else None}"
            + (f" {self.cassette_status}>" if self.cassette is not None else ">")
        )

    def _repr_html_(self) -> str:
        t = self.target
        colour = "#1b7f3b" if t.is_sandbox else ("#b35c00" if t.is_test_site else "#b00020")
        badge = (
            "SANDBOX"
            if t.is_sandbox
            else ("REAL GATEWAY (test site)" if t.is_test_site else "REAL GATEWAY (not a test_ site!)")
        )
        rows = [
            ("Target", t.title),
            ("Base URL", t.base_url),
            ("Site reference", t.sitereference),
            ("User", t.username),
            ("Password", "(hidden)"),
            ("Currency", t.currencyiso3a),
            ("Settings from", t.source),
            ("Journal", str(self.journal.path) if self.journal is not None else "off"),
        ]
        if self.cassette is not None:
            rows.append(("Cassette", self.cassette_status))
        if self.sandbox is not None:
            rows.append(("Sandbox clock", f"{self.sandbox.now():%Y-%m-%d %H:%M:%S}"))
            if self.notebook is not None:
                rows.append(("Sandbox data", f"this notebook's own, started afresh: {self.sandbox.db_path}"))
        cells = "".join(
            f"<tr><th style='text-align:left;padding-right:1em'>{html.escape(k)}</th>"
            f"<td style='text-align:left'>{html.escape(str(v))}</td></tr>"
            for k, v in rows
        )
        where = (t.sitereference or "no site reference") + (
            f", clock {self.sandbox.now():%Y-%m-%d}" if self.sandbox is not None else ""
        )
        # a small badge; the details one click away
        return (
            f"<details class='gwkit-connection'><summary style='cursor:pointer'><span style='background:{colour};"
            f"color:white;padding:2px 8px;border-radius:4px;font-weight:bold'>{badge}</span> "
            f"<span style='color:#555'>{html.escape(where)} (details)</span></summary>"
            f"<table style='margin-top:4px'>{cells}</table></details>"
        )


def connect(
    *,
    target: str | None = None,
    base_url: str | None = None,
    username: str | None = None,
    password: str | None = None,
    sitereference: str | None = None,
    currencyiso3a: str | None = None,
    journal: bool | str | os.PathLike[str] | Journal | None = None,
    sandbox_db: str | os.PathLike[str] | None = None,
    config: str | os.PathLike[str] | None = None,
    cassette: str | os.PathLike[str] | None = None,
    notebook: str | None = None,
    **client_options: Any,
) -> Connection:
    """A client for the configured target (see the module docstring for the settings).

    `target="sandbox"` forces the embedded sandbox, `target="gateway"` requires a configured
    gateway. `journal=False` turns the journal off; a path or a `Journal` chooses the file.
    `cassette` (default $GWKIT_CASSETTE) records into a new file or replays an existing one.
    `notebook` names a notebook whose sandbox is its own and starts afresh (module docstring).
    Other keyword arguments (timeout, transport, retries, ...) go to `gwkit.Client`.
    """
    settings, source = read_settings(
        config,
        {
            "base_url": base_url,
            "username": username,
            "password": password,
            "sitereference": sitereference,
            "currencyiso3a": currencyiso3a,
        },
    )
    wanted = (target or os.environ.get("GWKIT_TARGET") or "auto").lower()
    if wanted not in ("auto", SANDBOX, GATEWAY):
        raise ConfigError(f"target must be 'sandbox', 'gateway' or 'auto', got {wanted!r}")
    use_gateway = wanted == GATEWAY or (wanted == "auto" and settings["gateway"].get("base_url"))
    chosen_journal = _journal(journal, settings)
    client_options.update(_cassette(cassette or os.environ.get(CASSETTE_ENV_VAR) or None, client_options))
    if use_gateway:
        connection = _gateway_connection(settings["gateway"], source, chosen_journal, client_options)
    else:
        db_path = sandbox_db or os.environ.get("GWKIT_SANDBOX_DB") or settings["sandbox"].get("db")
        handle = sandbox_handle(db_path, notebook=notebook)
        kind_target = Target(
            SANDBOX,
            handle.base_url,
            handle.username,
            handle.sitereference,
            settings["gateway"].get("currencyiso3a") or DEFAULT_CURRENCY,
            "embedded sandbox",
        )
        connection = Connection(
            kind_target, handle.password, sandbox=handle, journal=chosen_journal, **client_options
        )
    connection.notebook = notebook
    return connection


def _gateway_connection(
    gateway: Mapping[str, Any], source: str, journal: Journal | None, client_options: dict[str, Any]
) -> Connection:
    missing = [name for name in ("base_url",) + REQUIRED_FOR_GATEWAY if not gateway.get(name)]
    if missing:
        where = ", ".join(f"{ENV_VARS[name]} (or {name} in [gateway] of {CONFIG_FILE})" for name in missing)
        raise ConfigError(f"a real gateway needs {', '.join(missing)}: set {where}")
    found = Target(
        GATEWAY,
        str(gateway["base_url"]),
        str(gateway["username"]),
        str(gateway["sitereference"]),
        str(gateway.get("currencyiso3a") or DEFAULT_CURRENCY),
        source,
    )
    return Connection(found, str(gateway["password"]), journal=journal, **client_options)


def _cassette(path: str | os.PathLike[str] | None, client_options: Mapping[str, Any]) -> dict[str, Any]:
    """The Connection options for a cassette: record into a new file, replay an existing one."""
    if path is None:
        return {}
    chosen = Cassette(path)
    if not chosen.path.exists():
        return {"cassette": chosen, "cassette_mode": RECORDING}
    if client_options.get("transport") is not None:
        raise ConfigError(
            f"replaying {chosen.path} needs its own transport: pass either cassette or transport"
        )
    return {"cassette": chosen, "cassette_mode": REPLAYING, "transport": chosen.transport()}


_NOTEBOOK_NAME = re.compile(r"[A-Za-z0-9_.-]{1,64}")
_JOURNALS: dict[Path, Journal] = {}
_SANDBOXES: dict[Path, SandboxHandle] = {}
_LOCK = threading.Lock()


def _journal(
    choice: bool | str | os.PathLike[str] | Journal | None, settings: Mapping[str, Mapping[str, Any]]
) -> Journal | None:
    if isinstance(choice, Journal):
        return choice
    configured = settings["journal"]
    if choice is False or (choice is None and configured.get("enabled") is False):
        return None
    explicit = choice if isinstance(choice, (str, os.PathLike)) else None
    path = explicit or os.environ.get(JOURNAL_ENV_VAR) or configured.get("path") or DEFAULT_JOURNAL_PATH
    key = Path(path).resolve()
    with _LOCK:
        if key not in _JOURNALS:
            _JOURNALS[key] = Journal(key)
        return _JOURNALS[key]


def sandbox_handle(
    db_path: str | os.PathLike[str] | None = None, *, notebook: str | None = None
) -> SandboxHandle:
    """The embedded sandbox for `db_path` (default $GWKIT_SANDBOX_DB or .gwkit/sandbox.db), started
    once per process and database file, reused while it runs. With `notebook`, that notebook's own
    sandbox beside it, started afresh: re-running a notebook's first cell starts from nothing."""
    from . import sandbox as sandbox_module  # the sandbox needs the [sandbox] extra

    chosen = db_path or sandbox_module.default_db_path()
    if sandbox_module.gateway.store.serves_workers(os.fspath(chosen)):
        raise ConfigError(
            "the sandbox database is a PostgreSQL URL: that is for `gwkit sandbox` (the team "
            "sandbox); a notebook reaches it with GWKIT_BASE_URL, GWKIT_USERNAME, GWKIT_PASSWORD "
            "and GWKIT_SITEREFERENCE (docs/team-sandbox.md)"
        )
    key = Path(chosen)
    if notebook is not None:
        key = notebook_db_path(notebook, key)
        _delete_sandbox(key.resolve())
    key = key.resolve()
    with _LOCK:
        handle = _SANDBOXES.get(key)
        if handle is None or not handle.running:
            key.parent.mkdir(parents=True, exist_ok=True)
            handle = _SANDBOXES[key] = sandbox_module.start(key)
        return handle


def notebook_db_path(notebook: str, base: Path) -> Path:
    """Where a notebook's own sandbox lives: beside the database `base`, named after the notebook."""
    if not _NOTEBOOK_NAME.fullmatch(notebook):
        raise ConfigError(f"notebook must be 1 to 64 letters, digits, '-', '_' or '.', got {notebook!r}")
    return base.with_name(f"{base.stem}-{notebook}{base.suffix or '.db'}")


def _delete_sandbox(key: Path) -> None:
    """Stop the sandbox running on `key`, if any, and delete its files (database, WAL, key)."""
    with _LOCK:
        running = _SANDBOXES.pop(key, None)
    if running is not None:
        running.stop()
    for leftover in (key, *(key.with_name(key.name + suffix) for suffix in ("-wal", "-shm", ".key"))):
        leftover.unlink(missing_ok=True)


def stop_sandboxes() -> None:
    """Stop every sandbox `connect()` started in this process (also done at interpreter exit)."""
    with _LOCK:
        handles = list(_SANDBOXES.values())
        _SANDBOXES.clear()
    for handle in handles:
        try:
            handle.stop()
        except Exception:
            pass


atexit.register(stop_sandboxes)
