"""Drift: a real upstream's session also played against a shadow sandbox, and each answer compared.

The shadow gets each request the upstream answered, with the site mapped (as `SandboxUpstream`
does) and every transaction reference the upstream made mapped to the one the shadow made for the
same request. The answers are compared with the sandbox-vs-real diff's rules (`gwkit.report.diff`:
references, timestamps and other per-answer values never count), keeping what drift is about: error
codes, fields present on one side only, and settle status. A request whose parent exists only
upstream (made before the proxy started, or by another route) is not sent to the shadow: its
comparison is limited to what needs no parent (the validation), and its drift line says so.

`Shadow.temporary()` is the shadow of one run: a sandbox in a private temporary folder (0700),
removed with everything in it at `close()` (and at the process's exit, if nothing closed it). The
key of its card vault is never on disk beside its data: it is made in a folder of its own, read
once into the sandbox's memory, and removed before the first request.
"""

from __future__ import annotations

import atexit
import json
import os
import shutil
import tempfile
import threading
from collections.abc import Mapping
from datetime import datetime
from pathlib import Path
from typing import Any

from cryptography.fernet import Fernet

from ..cassette import Recording
from ..interface.jsonread import BodyError, read_json
from ..report.diff import ERRORCODE, MISSING_EXCHANGE, MISSING_RECORD, ONLY_LEFT, ONLY_RIGHT, compare
from ..sandbox import Sandbox
from .upstreams import SandboxUpstream, UpstreamAnswer, UpstreamError

REFERENCE_FIELDS = ("parenttransactionreference",)
FILTER_REFERENCES = ("transactionreference", "parenttransactionreference")
MAX_MAPPED = 100_000  # references remembered; the oldest are forgotten beyond (a session is shorter)


class Shadow:
    """The shadow sandbox of one proxy, and the references mapped between it and the upstream."""

    def __init__(self, sandbox: SandboxUpstream, folder: Path | None = None):
        self.sandbox = sandbox
        self.folder = folder  # a temporary shadow's folder, removed at close()
        self._mapped: dict[str, str] = {}  # upstream reference -> the shadow's
        self._lock = threading.Lock()

    @classmethod
    def temporary(cls, clock_start: datetime | None = None) -> Shadow:
        """A fresh shadow sandbox for one run, in a private temporary folder removed at `close()`."""
        folder = Path(tempfile.mkdtemp(prefix="gwkit-shadow-"))  # 0700: its owner's only
        try:
            sandbox = _sandbox_without_its_key(folder / "shadow.db", clock_start)
        except BaseException:
            shutil.rmtree(folder, ignore_errors=True)
            raise
        shadow = cls(SandboxUpstream(sandbox), folder)
        atexit.register(shadow.close)
        return shadow

    def close(self) -> None:
        """Close the shadow sandbox; a temporary one's folder is removed with all in it."""
        self.sandbox.sandbox.close()
        if self.folder is not None:
            shutil.rmtree(self.folder, ignore_errors=True)
            atexit.unregister(self.close)
            self.folder = None

    async def drift(self, headers: Mapping[str, str], sent: Any, upstream: UpstreamAnswer) -> tuple[str, ...]:
        """What differs between the upstream's answer and the shadow's to the same envelope `sent`
        (as the proxy read it and forwarded it)."""
        if not isinstance(sent, dict):
            return ()
        mapped, unknown = self._mapped_envelope(sent)
        if unknown:
            parents = ", ".join(unknown)
            return (f"not compared: parent {parents} exists only upstream; compared only its validation",)
        try:
            shadow = await self.sandbox.send(headers, json.dumps(mapped).encode(), mapped)
        except UpstreamError as exc:
            return (f"the shadow sandbox gave no answer: {exc}",)
        real, mine = _json(upstream.body), _json(shadow.body)
        if not isinstance(real, dict) or not isinstance(mine, dict):
            return (f"not compared: upstream HTTP {upstream.status}, shadow HTTP {shadow.status}",)
        self._remember(real, mine)
        return _differences(sent, real, mine)

    def _mapped_envelope(self, sent: dict[str, Any]) -> tuple[dict[str, Any], list[str]]:
        unknown: list[str] = []
        objects = sent.get("request")
        if not isinstance(objects, list):
            objects = []
        mapped = [self._mapped_object(o, unknown) if isinstance(o, dict) else o for o in objects]
        return {**sent, "request": mapped}, unknown

    def _mapped_object(self, obj: dict[str, Any], unknown: list[str]) -> dict[str, Any]:
        mapped = dict(obj)
        for name in REFERENCE_FIELDS:
            if isinstance(obj.get(name), str) and obj[name]:
                mapped[name] = self._shadow_of(obj[name], unknown)
        query = obj.get("filter")
        if isinstance(query, dict):
            mapped["filter"] = {
                key: [self._filter_value(v, unknown) for v in values]
                if key in FILTER_REFERENCES and isinstance(values, list)
                else values
                for key, values in query.items()
            }
        return mapped

    def _filter_value(self, value: Any, unknown: list[str]) -> Any:
        if isinstance(value, dict) and isinstance(value.get("value"), str):
            return {**value, "value": self._shadow_of(value["value"], unknown)}
        return value

    def _shadow_of(self, reference: str, unknown: list[str]) -> str:
        with self._lock:
            found = self._mapped.get(reference)
        if found is None:
            unknown.append(reference)
            return reference
        return found

    def _remember(self, real: dict[str, Any], mine: dict[str, Any]) -> None:
        # The two answers may hold different numbers of records (that is drift): pair those both have.
        pairs = zip(_records(real), _records(mine), strict=False)
        with self._lock:
            for upstream_record, shadow_record in pairs:
                theirs, ours = (
                    upstream_record.get("transactionreference"),
                    shadow_record.get("transactionreference"),
                )
                if isinstance(theirs, str) and isinstance(ours, str) and theirs and ours:
                    if len(self._mapped) >= MAX_MAPPED:
                        self._mapped.pop(next(iter(self._mapped)))
                    self._mapped[theirs] = ours


def _differences(sent: dict[str, Any], real: dict[str, Any], mine: dict[str, Any]) -> tuple[str, ...]:
    diff = compare(
        [Recording(sent, real)], [Recording(sent, mine)], left_name="upstream", right_name="shadow"
    )
    shown = []
    for d in diff.differences:
        where = f"record {d.record}" if d.record is not None else "the answer"
        if d.kind in (ERRORCODE, MISSING_RECORD, MISSING_EXCHANGE) or (
            d.field is not None and d.field.split(".")[-1] == "settlestatus"
        ):
            shown.append(
                f"{where} {d.field or ''}: upstream {d.left!r}, shadow {d.right!r}".replace("  ", " ")
            )
        elif d.kind == ONLY_LEFT:
            shown.append(f"{where}: {d.field} only upstream")
        elif d.kind == ONLY_RIGHT:
            shown.append(f"{where}: {d.field} only in the shadow sandbox")
    return tuple(shown)


def _records(answer: dict[str, Any]) -> list[dict[str, Any]]:
    records = answer.get("response")
    return [r for r in records if isinstance(r, dict)] if isinstance(records, list) else []


def _json(body: bytes) -> Any:
    try:
        return read_json(body)
    except BodyError:
        return None


def _sandbox_without_its_key(db_path: Path, clock_start: datetime | None) -> Sandbox:
    """A sandbox at `db_path` whose vault key is read once into memory and on disk nowhere after:
    the key is made in a folder of its own, found through a link beside the database (where the
    sandbox looks for it), and both are removed as soon as the sandbox has opened."""
    key_folder = Path(tempfile.mkdtemp(prefix="gwkit-shadow-key-"))
    key_link = db_path.with_name(db_path.name + ".key")
    try:
        key_file = key_folder / "key"
        fd = os.open(key_file, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "wb") as handle:
            handle.write(Fernet.generate_key())
        key_link.symlink_to(key_file)
        return Sandbox(db_path, clock_start=clock_start)
    finally:
        key_link.unlink(missing_ok=True)
        shutil.rmtree(key_folder, ignore_errors=True)
