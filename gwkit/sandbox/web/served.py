"""Served: what every page of the sandbox is given (the Sandbox, seen without importing it)."""

from __future__ import annotations

from typing import Any, Protocol

from ..gateway.core import Gateway
from .faults import Faults


class Served(Protocol):
    gateway: Gateway
    faults: Faults

    def health(self) -> dict[str, Any]: ...
