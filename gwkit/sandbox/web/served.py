"""Served: what every page of the sandbox is given (the Sandbox, seen without importing it)."""

from __future__ import annotations

from typing import Any, Protocol

from ..gateway.accounts import Account
from ..gateway.core import Gateway
from ..gateway.store.snapshots import Snapshots
from .faults import FaultBook
from .latency import LatencyBudget


class Served(Protocol):
    gateway: Gateway
    fault_book: FaultBook
    latency: LatencyBudget

    def health(self) -> dict[str, Any]: ...

    def snapshots_of(self, account: Account) -> Snapshots: ...
