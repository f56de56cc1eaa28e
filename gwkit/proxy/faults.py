"""Faults on forwarded traffic: the sandbox's fault kinds and JSON, acted on by the proxy.

A fault is the JSON the sandbox's control API takes (`POST /_sandbox/faults`): a `kind` with its
parameters and a selector (`count` or `fraction`, `seed`, `requesttypes`, `amounts`, and
`sitereference` to narrow it to one site of the application). A `--faults` file holds one such
object or a list of them. The sandbox's own `FaultBook` decides which request gets which fault,
so a seeded fault picks the same requests and draws the same delays here as in the sandbox.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from ..errors import GwkitError
from ..interface.jsonread import BodyError, read_json
from ..sandbox.web.faults import FaultBook

ANY_SITE = "*"  # the faults that name no sitereference: every site of the application


class FaultsError(GwkitError, ValueError):
    """A faults file or fault that cannot be used; the message names the fault and the rule."""


class ProxyFaults:
    """The faults in force on forwarded traffic: `add`, `active`, `clear`, as the sandbox's controls."""

    def __init__(self, faults: Iterable[dict[str, Any]] = ()):
        self._book = FaultBook()
        self._added_for: set[str] = set()  # the sites faults were added for (FaultBook lists by site)
        for position, payload in enumerate(faults):
            try:
                self.add_json(payload)
            except FaultsError as exc:
                raise FaultsError(f"fault {position + 1}: {exc}") from None

    @classmethod
    def from_file(cls, path: str | os.PathLike[str]) -> ProxyFaults:
        try:
            data = read_json(Path(path).read_bytes())
        except OSError as exc:
            raise FaultsError(f"cannot read the faults file {path}: {exc.strerror}") from None
        except BodyError as exc:
            raise FaultsError(f"the faults file {path} is not JSON within the limits: {exc}") from None
        faults = data if isinstance(data, list) else [data]
        try:
            return cls(faults)
        except FaultsError as exc:
            raise FaultsError(f"{path}: {exc}") from None

    def __bool__(self) -> bool:
        return bool(self._book)

    def __repr__(self) -> str:
        return f"ProxyFaults(active={len(self.active())})"

    def add(self, kind: str, **params: Any) -> dict[str, Any]:
        """Add a fault (the sandbox's kinds and parameters); returns it with its id."""
        return self.add_json({"kind": kind, **params})

    def add_json(self, payload: Any) -> dict[str, Any]:
        if not isinstance(payload, dict):
            raise FaultsError('a fault is a JSON object: {"kind": ..., parameters, selector}')
        site = payload.get("sitereference", ANY_SITE)
        if not isinstance(site, str) or not site:
            raise FaultsError("sitereference must be a site reference (text)")
        try:
            fault = self._book.add(payload, site).as_dict()
        except ValueError as exc:
            raise FaultsError(str(exc)) from None
        self._added_for.add(site)
        return fault

    def active(self) -> list[dict[str, Any]]:
        return [fault.as_dict() for fault in self._book.active(self._sites())]

    def clear(self) -> int:
        return self._book.clear(self._sites())

    def pick(self, sitereference: str | None, requesttypes: list[str], amounts: list[int | None]) -> Any:
        """The fault this request gets, if any: one for its own site first, then one for every site."""
        fault = self._book.pick(sitereference, requesttypes, amounts) if sitereference else None
        return fault or self._book.pick(ANY_SITE, requesttypes, amounts)

    def _sites(self) -> list[str]:
        return sorted(self._added_for)
