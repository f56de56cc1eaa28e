"""Record and replay: exchanges with a gateway kept in a cassette file, replayed as an httpx transport.

    with gwkit.Client(url, user, password, on_exchange=Cassette("auth.jsonl").recorder()) as gw:
        gw.auth(...)                                   # recorded: one exchange a line
    with gwkit.Client(url, user, password, transport=Cassette("auth.jsonl").transport()) as gw:
        gw.auth(...)                                   # answered from the cassette, no network

A cassette is JSON lines, one exchange a line, fields in the order the gateway sent them: readable,
and diff-friendly in git.
Card data is masked before it is written (a PAN as `411111######1111`, security codes never
kept), as everywhere in gwkit. Replay follows vcrpy's and respx's conventions: each recording
answers once, in order, the request that matches it; a request with no recording is a
`CassetteMiss` naming it. The answer is the recorded body, with the request reference echoed as
the gateway echoes it. An answer that carried an injected fault replays as the application saw it:
a JSON answer with its `x-gwkit-fault` header, a page that is not JSON (a proxy's 503, garbage) as
it came, and a dropped connection as a `RecordedSilence` (an `httpx.RemoteProtocolError`, what an
httpx client meets when a server closes without answering).

What is never in a cassette: card numbers in clear (any field, any spelling), security codes,
`pares`, `md`, `cachetoken`, passwords, and any HTTP header (credentials included). Its file is
its owner's only (mode 0600).
"""

from __future__ import annotations

import base64
import json
import os
import threading
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx

from .errors import GwkitError
from .interface.jsonread import BodyError, read_json
from .interface.masking import mask_data, mask_text
from .interface.wire import FAULT_HEADER

# Fields that differ on every run of the same request: left out when requests are matched.
VOLATILE_REQUEST_FIELDS = frozenset({"requestreference"})


class CassetteMiss(GwkitError, LookupError):
    """A replayed request has no recording left in the cassette."""


class RecordedSilence(GwkitError, httpx.RemoteProtocolError):
    """A replayed exchange whose answer never came (a dropped connection, a timeout): `silence` is
    "drop" or "timeout", `fault` the injected fault's kind when one was recorded."""

    def __init__(self, message: str, *, request: httpx.Request, silence: str, fault: str | None):
        super().__init__(message, request=request)
        self.silence = silence
        self.fault = fault


@dataclass(frozen=True)
class Recording:
    """One recorded exchange: the masked request envelope and what the gateway answered."""

    request: Mapping[str, Any]
    response: Mapping[str, Any] | None
    status_code: int | None = None
    request_types: tuple[str, ...] = ()
    error: str | None = None
    fault: str | None = None  # the kind of fault injected into the answer (its x-gwkit-fault header)
    body: bytes | None = None  # an answer that is not a JSON object (a 503 page, garbage), masked
    content_type: str | None = None  # the answer's, when it was recorded

    def as_line(self) -> str:
        line: dict[str, Any] = {
            "request": self.request,
            "response": self.response,
            "status_code": self.status_code,
            "request_types": list(self.request_types),
            "error": self.error,
        }
        if self.fault is not None:
            line["fault"] = self.fault
        if self.body is not None:
            line["body_base64"] = base64.b64encode(self.body).decode("ascii")
        if self.content_type is not None:
            line["content_type"] = self.content_type
        return json.dumps(line, ensure_ascii=False)

    @classmethod
    def from_line(cls, line: str) -> Recording:
        data = json.loads(line)
        body = data.get("body_base64")
        return cls(
            data["request"],
            data.get("response"),
            data.get("status_code"),
            tuple(data.get("request_types") or ()),
            data.get("error"),
            data.get("fault"),
            base64.b64decode(body) if isinstance(body, str) else None,
            data.get("content_type"),
        )

    @classmethod
    def of(cls, exchange: Any, body: bytes | None = None, content_type: str | None = None) -> Recording:
        """From a `gwkit.Exchange` or a journal entry (both masked already; masked again here);
        `body`: the answer as it came when it is not a JSON object."""
        return cls(
            mask_data(dict(exchange.request)),
            None if exchange.response is None else mask_data(dict(exchange.response)),
            exchange.status_code,
            tuple(exchange.request_types),
            exchange.error,
            getattr(exchange, "fault", None),
            None if body is None or exchange.response is not None else masked_bytes(body),
            content_type,
        )

    @property
    def key(self) -> str:
        return match_key(self.request)


def masked_bytes(body: bytes) -> bytes:
    """A body that is not JSON with any card number in it masked, every other byte kept."""
    return mask_text(body.decode("latin-1")).encode("latin-1")


def match_key(envelope: Mapping[str, Any]) -> str:
    """What two requests must share to match: the masked envelope without its volatile fields."""
    return json.dumps(_without_volatile(mask_data(dict(envelope))), sort_keys=True, ensure_ascii=False)


def _without_volatile(value: Any) -> Any:
    if isinstance(value, Mapping):
        return {k: _without_volatile(v) for k, v in value.items() if k not in VOLATILE_REQUEST_FIELDS}
    if isinstance(value, list):
        return [_without_volatile(v) for v in value]
    return value


def describe(envelope: Mapping[str, Any]) -> str:
    """`AUTH orderreference='o-1' baseamount='1050'`: a request named for an error message, masked."""
    objects = envelope.get("request") if isinstance(envelope.get("request"), list) else [envelope]
    parts = []
    for obj in mask_data(objects):
        if not isinstance(obj, Mapping):
            continue
        types = "+".join(obj.get("requesttypedescriptions") or ["?"])
        named = " ".join(
            f"{k}={obj[k]!r}"
            for k in ("orderreference", "baseamount", "parenttransactionreference", "filter")
            if k in obj
        )
        parts.append(f"{types} {named}".strip())
    return "; ".join(parts) or "an empty request"


class Cassette:
    """A cassette file of recordings (JSON lines)."""

    def __init__(self, path: str | os.PathLike[str]):
        self.path = Path(path)
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        return f"Cassette({str(self.path)!r})"

    def recordings(self) -> list[Recording]:
        if not self.path.exists():
            return []
        with open(self.path, encoding="utf-8") as handle:
            return [Recording.from_line(line) for line in handle if line.strip()]

    def __iter__(self) -> Iterator[Recording]:
        return iter(self.recordings())

    def __len__(self) -> int:
        return len(self.recordings())

    def append(self, recording: Recording) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with self._lock, open(self.path, "a", encoding="utf-8", opener=_owner_only) as handle:
            handle.write(recording.as_line() + "\n")

    def recorder(self) -> Callable[[Any], None]:
        """An exchange hook (`Client(on_exchange=...)`, `client.add_exchange_hook`) that records."""

        def record_exchange(exchange: Any) -> None:
            self.append(Recording.of(exchange))

        return record_exchange

    @classmethod
    def from_exchanges(cls, path: str | os.PathLike[str], exchanges: Iterable[Any]) -> Cassette:
        """A new cassette (replacing any file at `path`) of exchanges or journal entries, oldest first."""
        cassette = cls(path)
        cassette.path.unlink(missing_ok=True)
        for exchange in exchanges:
            cassette.append(Recording.of(exchange))
        return cassette

    def transport(self) -> CassetteTransport:
        return CassetteTransport(self.recordings())


class CassetteTransport(httpx.BaseTransport, httpx.AsyncBaseTransport):
    """Answers requests from recordings, each once, in the order they were recorded."""

    def __init__(self, recordings: Iterable[Recording]):
        self._unplayed = list(recordings)
        self._lock = threading.Lock()

    @property
    def unplayed(self) -> list[Recording]:
        """Recordings no request has matched yet."""
        return list(self._unplayed)

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        return self._answer(request, request.read())

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        return self._answer(request, await request.aread())

    def _answer(self, request: httpx.Request, body: bytes) -> httpx.Response:
        try:
            envelope = read_json(body)  # bounded, as every body gwkit reads
        except BodyError as exc:
            raise CassetteMiss(
                f"{request.method} {request.url.path}: the body cannot be read as JSON ({exc.detail}), "
                "so no recording can match it"
            ) from None
        recording = self._take(match_key(envelope))
        if recording is None:
            raise CassetteMiss(
                f"no recording left for {describe(envelope)} ({request.method} {request.url.path}); "
                "record it first, or check the request against the cassette"
            )
        marked = {FAULT_HEADER: recording.fault} if recording.fault else {}
        if recording.response is None and recording.body is not None:  # a page, garbage: as it came
            return httpx.Response(
                recording.status_code or 200,
                headers={"content-type": recording.content_type or "application/octet-stream", **marked},
                content=recording.body,
                request=request,
            )
        if recording.response is None:
            raise RecordedSilence(
                recording.error or "no answer was recorded",
                request=request,
                silence="timeout" if recording.fault == "timeout" else "drop",
                fault=recording.fault,
            )
        answer = dict(recording.response)
        echoed = request.headers.get("requestreference") or _single_reference(envelope)
        if echoed and "requestreference" in answer:
            answer["requestreference"] = echoed  # the gateway echoes the reference it was sent
        return httpx.Response(
            recording.status_code or 200,
            headers={"content-type": recording.content_type or "application/json", **marked},
            content=json.dumps(answer).encode("utf-8"),
            request=request,
        )

    def _take(self, key: str) -> Recording | None:
        with self._lock:
            for position, recording in enumerate(self._unplayed):
                if recording.key == key:
                    return self._unplayed.pop(position)
        return None


def _owner_only(path: str, flags: int) -> int:
    """Open a cassette file as its owner's only (0600): it is made so, and one made before is made so."""
    fd = os.open(path, flags, 0o600)
    os.fchmod(fd, 0o600)
    return fd


def _single_reference(envelope: Any) -> str | None:
    objects = envelope.get("request") if isinstance(envelope, Mapping) else None
    if isinstance(objects, list) and len(objects) == 1 and isinstance(objects[0], Mapping):
        return objects[0].get("requestreference")
    return None
