"""The fault controls of some sites: `add`, `active`, `clear`, `log`; `set(drop_next)`, the older
form, is deprecated (a DeprecationWarning; `add("drop", count=N)` instead).

`Sandbox.faults` controls every site (faults go to the first account's first site unless a
`sitereference` is named); the control API gives each caller the controls of their own sites.
"""

from __future__ import annotations

import warnings
from collections.abc import Iterable
from typing import Any

from ..gateway import faultlog
from ..gateway.core import Gateway
from .faults import FaultBook


class FaultControls:
    def __init__(self, book: FaultBook, gateway: Gateway, sites: Iterable[str]):
        self._book, self._gateway = book, gateway
        self.sites = tuple(sites)

    def __repr__(self) -> str:
        return f"FaultControls(sites={self.sites!r}, active={len(self.active())})"

    def add(self, kind: str, *, sitereference: str | None = None, **params: Any) -> dict[str, Any]:
        """Add a fault (see faults.py for the kinds and their parameters); returns it with its id."""
        return self._book.add({"kind": kind, **params}, self._site(sitereference)).as_dict()

    def active(self, sitereference: str | None = None) -> list[dict[str, Any]]:
        return [f.as_dict() for f in self._book.active(self._sites(sitereference))]

    def clear(self, sitereference: str | None = None) -> int:
        """Remove the active faults of one site, or of all these sites; returns how many."""
        return self._book.clear(self._sites(sitereference))

    def log(self, sitereference: str | None = None) -> list[dict[str, Any]]:
        """Every fault injected on these sites (or one of them), oldest first."""
        return faultlog.read(self._gateway.store.connection(), self._sites(sitereference))

    def set(self, drop_next: int, process: bool = True) -> dict[str, Any]:
        """Deprecated: `add("drop", count=drop_next, process=process)` (after `clear()` of the drops)."""
        warnings.warn(
            'FaultControls.set(drop_next) is deprecated: use faults.add("drop", count=N, process=...)',
            DeprecationWarning,
            stacklevel=2,
        )
        return self.replace_drops(drop_next, process)

    def replace_drops(self, drop_next: int, process: bool = True) -> dict[str, Any]:
        """The older form's meaning (the control API's `{"drop_next": N}`): the first site's counted
        drops are replaced by one dropping the next `drop_next` answers (0: none)."""
        if not isinstance(drop_next, int) or isinstance(drop_next, bool) or drop_next < 0:
            raise ValueError("drop_next must be a whole number, 0 or more")
        if not isinstance(process, bool):
            raise ValueError("process must be true or false")
        self._book.clear([self.sites[0]], kind="drop")
        if drop_next:
            self.add("drop", count=drop_next, process=process)
        return {"drop_next": drop_next, "process": process}

    def state(self) -> dict[str, Any]:
        """The older summary (drops pending on the first site) and every active fault."""
        drops = [f for f in self._book.active([self.sites[0]]) if f.kind == "drop" and f.fraction is None]
        return {
            "drop_next": sum(f.count or 0 for f in drops),
            "process": drops[0].params["process"] if drops else True,
            "faults": self.active(),
        }

    def _site(self, sitereference: str | None) -> str:
        if sitereference is None:
            return self.sites[0]
        if sitereference not in self.sites:
            raise ValueError(
                f"sitereference {sitereference!r} is not one of your sites: {', '.join(self.sites)}"
            )
        return sitereference

    def _sites(self, sitereference: str | None) -> tuple[str, ...]:
        return self.sites if sitereference is None else (self._site(sitereference),)
