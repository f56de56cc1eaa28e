"""The proxy: each request validated, perhaps faulted, forwarded (or answered here), recorded.

`Proxy.answer(headers, body)` is the whole of it, without HTTP: app.py serves it on loopback.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import logging
import queue
import threading
import time
from collections import deque
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Any

from ..cassette import Cassette, Recording
from ..exchange import Exchange, error_text
from ..interface.codes import message_of
from ..interface.masking import mask_text
from ..interface.requests import SINGLE_TYPES
from ..interface.validation import Problem, errordata, normalised, validate_request
from ..interface.wire import FAULT_HEADER
from ..journal import Journal
from ..sandbox.gateway.envelopes import answer_reference, envelope, error_record
from ..sandbox.gateway.fault import Fault
from ..sandbox.http import BodyError, read_json
from .drift import Shadow
from .exchanges import PROXY, UPSTREAM, ProxyExchange, problem_line
from .faults import ProxyFaults
from .upstreams import Upstream, UpstreamAnswer, UpstreamError

log = logging.getLogger("gwkit.proxy")
JSON_TYPE = {"content-type": "application/json; charset=utf-8"}
KEPT_EXCHANGES = 10_000  # the most recent exchanges kept in memory for views; the journal keeps all
_PROXY_REASONS = {
    500: "Internal Server Error",
    502: "Bad Gateway",
    503: "Service Unavailable",
    504: "Gateway Timeout",
}
GARBAGE = b"\x00\xff<html>upstream sent garbage\xfe\x1f"


@dataclass
class Answer:
    """What the application gets: an HTTP answer, or `silence` ("drop": the connection is closed;
    "timeout": no answer until the application gives up)."""

    status: int
    headers: dict[str, str]
    body: bytes
    silence: str | None = None


class Proxy:
    """A validating, recording, fault-injecting proxy in front of one upstream.

    `strict`: an invalid request is answered here as the gateway would answer it (30000, its
    `errordata` naming the fields) and never forwarded. `echo(line)` is called with a line for each
    validation problem as it is met and a summary of each exchange (the CLI prints them).

    An exchange is kept in `exchanges` before its answer is sent; the journal, the cassette, the
    summary line and the listeners get it from one writer thread, in order, off the answer's path
    (`flush()` waits for them).
    """

    def __init__(
        self,
        upstream: Upstream,
        *,
        strict: bool = False,
        faults: ProxyFaults | None = None,
        journal: Journal | None = None,
        cassette: Cassette | None = None,
        echo: Callable[[str], Any] | None = None,
        sleep: Callable[[float], Awaitable[Any]] = asyncio.sleep,
        shadow: Shadow | None = None,
    ):
        self.upstream = upstream
        self.strict = strict
        self.faults = faults if faults is not None else ProxyFaults()
        self.journal = journal
        self.cassette = cassette
        self._echo = echo
        self._sleep = sleep
        self.shadow = shadow  # drift: each forwarded request also answered by a shadow sandbox
        self._numbers = itertools.count(1)
        self._exchanges: deque[ProxyExchange] = deque(maxlen=KEPT_EXCHANGES)
        self._listeners: list[Callable[[ProxyExchange], Any]] = []
        self._lock = threading.Lock()
        self._written: queue.Queue[ProxyExchange] = queue.Queue()
        threading.Thread(target=self._write, name="gwkit-proxy-writer", daemon=True).start()

    def __repr__(self) -> str:
        return f"Proxy(upstream={self.upstream!r}, strict={self.strict}, exchanges={len(self._exchanges)})"

    @property
    def exchanges(self) -> list[ProxyExchange]:
        """The exchanges so far (the most recent KEPT_EXCHANGES), oldest first."""
        with self._lock:
            return list(self._exchanges)

    def on_exchange(self, listener: Callable[[ProxyExchange], Any]) -> Callable[[ProxyExchange], Any]:
        """Call `listener(exchange)` after each exchange (from the proxy's thread)."""
        self._listeners.append(listener)
        return listener

    async def answer(self, headers: Mapping[str, str], body: bytes) -> Answer:
        """Answer one `POST /json/` (`headers` with lower-case names)."""
        number, started, clock = next(self._numbers), time.time(), time.perf_counter()
        sent, problems = _read(body)
        types = _request_types(sent)
        for problem in problems:
            self._say(problem_line(number, types, problem))
        reference = answer_reference(headers.get("requestreference"), _objects(sent))
        fault = None
        drift: tuple[str, ...] = ()
        if problems and self.strict:
            answer, answered_by, error = _refused(sent, problems, reference), PROXY, None
        else:
            site, amounts = _site_and_amounts(sent)
            fault = self.faults.pick(site, list(types), amounts) if self.faults else None
            answer, answered_by, error, upstream = await self._forward(headers, body, fault, types, reference)
            if self.shadow is not None and upstream is not None:
                drift = await self.shadow.drift(headers, body, upstream)
        exchange = Exchange.at(
            started,
            elapsed=time.perf_counter() - clock,
            target=self.upstream.url,
            alias=str(sent.get("alias") or "") if isinstance(sent, dict) else "",
            request=sent if isinstance(sent, dict) else {"body": "(not a JSON object)"},  # a BodyError too
            response=_json_object(answer.body) if answer.silence is None else None,
            status_code=answer.status if answer.silence is None else None,
            error=error,
            request_types=types,
            requestreference=reference,
            fault=fault.kind if fault else None,
        )
        self._keep(ProxyExchange(number, exchange, tuple(problems), answered_by, drift))
        return answer

    async def _forward(
        self,
        headers: Mapping[str, str],
        body: bytes,
        fault: Any,
        types: tuple[str, ...],
        reference: str | None,
    ) -> tuple[Answer, str, str | None, UpstreamAnswer | None]:
        """Forward (unless the fault says not to), then act on the fault; the upstream's own answer too."""
        forwards = (
            fault is None or fault.kind == "latency" or fault.params.get("process", fault.params.get("made"))
        )
        upstream: UpstreamAnswer | None = None
        if forwards:
            try:
                upstream = await self.upstream.send(headers, body)
            except UpstreamError as exc:
                answer = Answer(502, dict(JSON_TYPE), _json({"error": "upstream failed", "detail": str(exc)}))
                return answer, PROXY, str(exc), None
        if fault is None:
            return _passed(upstream), UPSTREAM, None, upstream
        answer = _faulted(fault, upstream, types, reference)
        if fault.delay:
            await self._sleep(fault.delay)
        error = f"injected fault: {fault.kind}" if answer.silence else None
        return answer, (UPSTREAM if fault.kind == "latency" else PROXY), error, upstream

    def flush(self) -> None:
        """Wait until every exchange so far is journalled, recorded, echoed and given to the listeners."""
        self._written.join()

    def _keep(self, exchange: ProxyExchange) -> None:
        with self._lock:
            self._exchanges.append(exchange)
        self._written.put(exchange)

    def _write(self) -> None:
        while True:
            exchange = self._written.get()
            try:
                self._record(exchange)
            # A full disk, a listener's bug: the proxy goes on answering, and says so.
            except Exception as exc:  # noqa: BLE001
                log.error(
                    "exchange #%d could not be recorded: %s", exchange.number, mask_text(error_text(exc))
                )
            finally:
                self._written.task_done()

    def _record(self, exchange: ProxyExchange) -> None:
        if self.journal is not None:
            self.journal.record(exchange.exchange, kind="proxy")
        if self.cassette is not None:
            self.cassette.append(Recording.of(exchange.exchange))
        self._say(exchange.summary())
        for listener in tuple(self._listeners):
            listener(exchange)

    def _say(self, line: str) -> None:
        if self._echo is not None:
            self._echo(line)


def _read(body: bytes) -> tuple[Any, list[Problem]]:
    """The envelope sent and every problem of it, each naming the field and the rule; a body that
    cannot be read as JSON (not UTF-8, not JSON, over a limit) is its `BodyError`."""
    try:
        sent = read_json(body)
    except BodyError as exc:
        return exc, [Problem(exc.where, f"the body must be JSON within the limits: {exc.what}")]
    if not isinstance(sent, dict):
        return sent, [Problem("request", "the body must be a JSON object (an envelope)")]
    objects = sent.get("request")
    if not isinstance(objects, list) or not objects:
        return sent, [Problem("request", "must be a non-empty list of request objects")]
    problems: list[Problem] = []
    for obj in objects:
        problems += (
            validate_request(obj)
            if isinstance(obj, dict)
            else [Problem("request", "each request object must be a JSON object")]
        )
    return sent, problems


def _objects(sent: Any) -> list[dict[str, Any]]:
    objects = sent.get("request") if isinstance(sent, dict) else None
    return [o for o in objects if isinstance(o, dict)] if isinstance(objects, list) else []


def _types_of(obj: dict[str, Any]) -> list[str]:
    types = normalised(obj)[0].get("requesttypedescriptions")
    return [t for t in types if isinstance(t, str)] if isinstance(types, list) else []


def _request_types(sent: Any) -> tuple[str, ...]:
    """One entry per request object, as the client's exchanges have them (`AUTH+SUBSCRIPTION`)."""
    return tuple("+".join(_types_of(o)) or "?" for o in _objects(sent))


def _site_and_amounts(sent: Any) -> tuple[str | None, list[int | None]]:
    objects = _objects(sent)
    sites = sorted(o["sitereference"] for o in objects if isinstance(o.get("sitereference"), str))
    return (sites[0] if sites else None), [_amount(o.get("baseamount")) for o in objects]


def _amount(value: Any) -> int | None:
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    return int(value) if isinstance(value, str) and value.isdigit() else None


def _refused(sent: Any, problems: list[Problem], reference: str | None) -> Answer:
    """--strict: the gateway's answer to an invalid request, made here (the gateway is never asked):
    10205 for a body that is not JSON, 30000 for an envelope without request objects, and for each
    invalid object 60018 (request types it does not offer) or 30000 naming the fields."""
    objects = _objects(sent)
    if isinstance(sent, BodyError) or not objects:
        fault = _body_fault(sent) if isinstance(sent, BodyError) else Fault(30000, ["request"])
        return Answer(200, dict(JSON_TYPE), _json(envelope([error_record("ERROR", fault)], reference)))
    records = []
    for obj in objects:
        types = obj.get("requesttypedescriptions", obj.get("requesttypedescription"))
        listed = types if isinstance(types, list) else [types]
        if not types or not all(isinstance(t, str) and t in SINGLE_TYPES for t in listed):
            records.append(error_record("ERROR", Fault(60018, [str(t)[:40] for t in listed[:5]])))
        elif found := validate_request(obj):
            records += [error_record(str(t), Fault(30000, errordata(found))) for t in listed]
    return Answer(200, dict(JSON_TYPE), _json(envelope(records, reference)))


def _body_fault(error: BodyError) -> Fault:
    """As the gateway answers: not JSON is 10205 saying why; a value over a limit is 30000 naming where."""
    return Fault(10205, [error.what]) if error.limit is None else Fault(30000, [error.where, error.what])


def _passed(upstream: UpstreamAnswer | None) -> Answer:
    assert upstream is not None
    kept = {k: v for k, v in upstream.headers.items() if k.lower() in ("content-type", FAULT_HEADER)}
    return Answer(upstream.status, kept, upstream.body)


def _faulted(
    fault: Any, upstream: UpstreamAnswer | None, types: tuple[str, ...], reference: str | None
) -> Answer:
    """The application's answer under `fault`, given the upstream's answer (None: not forwarded)."""
    marked = {FAULT_HEADER: fault.kind}
    if fault.kind == "latency":
        answer = _passed(upstream)
        return Answer(answer.status, {**answer.headers, **marked}, answer.body)
    if fault.kind in ("drop", "timeout"):
        return Answer(0, marked, b"", silence=fault.kind)
    if fault.kind == "http_status":
        status = fault.params["status"]
        title = f"{status} {_PROXY_REASONS[status]}"
        page = f"<html><head><title>{title}</title></head><body><h1>{title}</h1><hr>proxy</body></html>"
        return Answer(status, {"content-type": "text/html; charset=utf-8", **marked}, page.encode())
    if fault.kind == "malformed":
        if fault.params["body"] == "garbage":
            return Answer(200, {**JSON_TYPE, **marked}, GARBAGE)
        whole = upstream.body if upstream is not None else _json(envelope([], reference))
        return Answer(200, {**JSON_TYPE, **marked}, whole[: len(whole) // 2])
    return Answer(200, {**JSON_TYPE, **marked}, _json(_gateway_error(fault, upstream, types, reference)))


def _gateway_error(
    fault: Any, upstream: UpstreamAnswer | None, types: tuple[str, ...], reference: str | None
) -> dict[str, Any]:
    """An error record for each record the upstream made (with its transactionreference), or for each
    request type sent when it was not forwarded."""
    code = fault.params["code"]
    answered = _json_object(upstream.body) if upstream is not None else None
    records = (answered or {}).get("response") if isinstance(answered, dict) else None
    made = [
        (r.get("requesttypedescription"), r.get("transactionreference"))
        for r in (records if isinstance(records, list) else [])
        if isinstance(r, dict)
    ]
    sent = [(t, None) for key in types or ("ERROR",) for t in key.split("+")]
    return envelope(
        [
            {
                "requesttypedescription": requesttype,
                "errorcode": str(code),
                "errormessage": message_of(code),
                "errordata": [],
                **({"transactionreference": made_reference} if made_reference else {}),
            }
            for requesttype, made_reference in made or sent
        ],
        (answered or {}).get("requestreference") if isinstance(answered, dict) else reference,
    )


def _json(data: Any) -> bytes:
    return json.dumps(data).encode("utf-8")


def _json_object(body: bytes) -> dict[str, Any] | None:
    try:
        value = json.loads(body)
    except ValueError:
        return None
    return value if isinstance(value, dict) else None
