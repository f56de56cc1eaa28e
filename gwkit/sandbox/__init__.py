"""The embedded sandbox gateway: stateful, persistent, at parity with the real test environment.

    >>> from gwkit import sandbox
    >>> handle = sandbox.start()          # a free loopback port, in a background thread
    >>> handle.base_url, handle.username, handle.sitereference
    >>> handle.advance(by="P1M")          # move the virtual clock; returns what ran meanwhile
    >>> handle.stop()

Layers: `http` (request and response values), `gateway` (the gateway without HTTP), `web` (HTTP).
"""

from . import supervisor as supervisor  # `gwkit sandbox --workers N` (cli.py)
from .gateway.accounts import DEFAULT_ACCOUNT, Account, AccountsError, load_accounts
from .gateway.clock import ClockError
from .http import SandboxRequest, SandboxResponse
from .web.sandbox import Sandbox
from .web.server import SandboxHandle, ServerLimits, default_db_path, start
from .web.transport import AsyncSandboxTransport, SandboxTransport

__all__ = [
    "DEFAULT_ACCOUNT",
    "Account",
    "AccountsError",
    "AsyncSandboxTransport",
    "ClockError",
    "Sandbox",
    "SandboxHandle",
    "SandboxRequest",
    "SandboxResponse",
    "SandboxTransport",
    "ServerLimits",
    "default_db_path",
    "load_accounts",
    "start",
]
