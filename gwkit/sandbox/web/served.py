"""Served: what every page of the sandbox is given (the Sandbox, seen without importing it), and a Page."""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from typing import Any, Protocol

from ..gateway.accounts import Account
from ..gateway.core import Gateway
from ..gateway.store.snapshots import Snapshots
from ..http import SandboxRequest, SandboxResponse
from .faults import FaultBook
from .latency import LatencyBudget


class Served(Protocol):
    gateway: Gateway
    fault_book: FaultBook
    latency: LatencyBudget

    def health(self) -> dict[str, Any]: ...

    def snapshots_of(self, account: Account) -> Snapshots: ...

    # the one control API of the clock, settlement and reset (they send the change signal)
    def advance(
        self,
        by: str | None = None,
        to: str | datetime | None = None,
        progress: Callable[[str, int, int], None] | None = None,
        sitereference: str | None = None,
        *,
        account: Account | None = None,
    ) -> dict[str, Any]: ...

    def settle(
        self, all_pending: bool = False, sitereference: str | None = None, *, account: Account | None = None
    ) -> dict[str, Any]: ...

    def reset(
        self, sitereference: str | None = None, *, account: Account | None = None, clock: bool = False
    ) -> None: ...


Page = Callable[[Served, SandboxRequest], SandboxResponse]  # what the routes table (routes.py) maps to
