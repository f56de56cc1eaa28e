"""The proxy: each request validated, perhaps faulted, forwarded (or answered here), recorded.

`Proxy.answer(headers, body)` is the whole of it, without HTTP: app.py serves it on loopback.
"""

from __future__ import annotations

import asyncio
import itertools
import logging
import queue
import threading
import time
from collections import deque
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

from ..cassette import Cassette, Recording
from ..exchange import Exchange, error_text
from ..interface.masking import mask_text
from ..interface.validation import Problem, validate_request
from ..journal import Journal
from ..sandbox.gateway.envelopes import answer_reference
from ..sandbox.http import BodyError, read_json
from .answers import JSON_TYPE, Answer, as_json, faulted, json_object, objects_of, passed, refused, types_of
from .drift import Shadow
from .exchanges import PROXY, UPSTREAM, ProxyExchange, problem_line
from .faults import ProxyFaults
from .upstreams import Upstream, UpstreamAnswer, UpstreamError

log = logging.getLogger("gwkit.proxy")
KEPT_EXCHANGES = 10_000  # the most recent exchanges kept in memory for views; the journal keeps all


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
        reference = answer_reference(headers.get("requestreference"), objects_of(sent))
        fault = None
        drift: tuple[str, ...] = ()
        if problems and self.strict:
            answer, answered_by, error = refused(sent, problems, reference), PROXY, None
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
            response=json_object(answer.body) if answer.silence is None else None,
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
                answer = Answer(
                    502, dict(JSON_TYPE), as_json({"error": "upstream failed", "detail": str(exc)})
                )
                return answer, PROXY, str(exc), None
        if fault is None:
            return passed(upstream), UPSTREAM, None, upstream
        answer = faulted(fault, upstream, types, reference)
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
            except Exception as exc:
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


def _request_types(sent: Any) -> tuple[str, ...]:
    """One entry per request object, as the client's exchanges have them (`AUTH+SUBSCRIPTION`)."""
    return tuple("+".join(types_of(o)) or "?" for o in objects_of(sent))


def _site_and_amounts(sent: Any) -> tuple[str | None, list[int | None]]:
    objects = objects_of(sent)
    sites = sorted(o["sitereference"] for o in objects if isinstance(o.get("sitereference"), str))
    return (sites[0] if sites else None), [_amount(o.get("baseamount")) for o in objects]


def _amount(value: Any) -> int | None:
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    return int(value) if isinstance(value, str) and value.isdigit() else None
