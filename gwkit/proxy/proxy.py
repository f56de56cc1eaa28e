"""The proxy: each request validated, perhaps faulted, forwarded (or answered here), recorded.

`Proxy.answer(headers, body)` is the whole of it, without HTTP: app.py serves it on loopback.

The body is read once (`gwkit.interface.jsonread.read_json`: bounded, duplicate keys refused), and
what was validated is what is forwarded, re-encoded: an upstream can never read a value the
validation did not see. A body that cannot be read is forwarded as it came (the journal says so),
or with `strict` answered here.
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
from dataclasses import dataclass
from typing import Any

from ..cassette import Cassette, Recording
from ..exchange import Exchange, error_text
from ..interface.faults import with_outcome_card
from ..interface.jsonread import BodyError, read_json
from ..interface.masking import mask_text
from ..interface.validation import Problem, normalised, validate_request
from ..interface.wire import FAULT_HEADER
from ..journal import Journal
from ..sandbox.gateway.chains import with_envelope_parent
from ..sandbox.gateway.envelopes import answer_reference
from .answers import (
    JSON_TYPE,
    Answer,
    as_json,
    faulted,
    json_object,
    objects_of,
    passed,
    refusal_record,
    refused,
    types_of,
    with_problems,
)
from .drift import Shadow
from .exchanges import PROXY, UPSTREAM, ProxyExchange, ProxyProblem, problem_line
from .faults import ProxyFaults
from .notes import ProxyNotes, owner_only
from .upstreams import Upstream, UpstreamAnswer, UpstreamError

log = logging.getLogger("gwkit.proxy")
KEPT_EXCHANGES = 10_000  # the most recent exchanges kept in memory for views; the journal keeps all
PASSING_KINDS = ("latency", "threeds")  # faults whose answer is the upstream's (late, or for another card)


class Proxy:
    """A validating, recording, fault-injecting proxy in front of one upstream.

    `strict`: an invalid request object is answered here as the gateway would answer it (30000,
    its `errordata` naming the fields) and never forwarded; the valid objects of the same envelope
    are forwarded and answered, each record in its object's place (see `_parts`). `echo(line)` is
    called with a line for each validation problem as it is met and a summary of each exchange (the
    CLI prints them).

    An exchange is kept in `exchanges` before its answer is sent; the journal (with every problem
    and drift line, `notes.py`), the cassette, the summary line and the listeners get it from one
    writer thread, in order, off the answer's path (`flush()` waits for them). The files written are
    their owner's only (0600).
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
        self.notes = ProxyNotes(journal.path) if journal is not None else None
        self.cassette = cassette
        for written in (journal, cassette):  # (both have a length: an empty one is false)
            if written is not None:
                owner_only(written.path)
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
        reading = _read(body)
        sent, problems = reading.sent, reading.problems
        types = _request_types(sent)
        for found in problems:
            self._say(problem_line(number, types, found))
        reference = answer_reference(headers.get("requestreference"), objects_of(sent))
        fault = None
        drift: tuple[str, ...] = ()
        parts = _parts(reading, body, self.strict)
        if not parts:  # --strict, and nothing of the request may be forwarded
            answer, answered_by, error = refused(sent, reference), PROXY, None
        else:
            site, amounts = _site_and_amounts(sent)
            fault = self.faults.pick(site, list(types), amounts) if self.faults else None
            if fault is not None and fault.kind == "threeds":  # the outcome's test card in the card's place
                parts = [_with_outcome_card(part, fault.params["outcome"]) for part in parts]
            answer, answered_by, error, answered = await self._forward(
                headers, parts, fault, types, reference
            )
            if self.shadow is not None:
                for part, upstream in answered:
                    drift += await self.shadow.drift(headers, part.envelope, upstream)
        answer = with_problems(answer, problems)
        readable = json_object(answer.body) if answer.silence is None else None
        exchange = Exchange.at(
            started,
            elapsed=time.perf_counter() - clock,
            target=self.upstream.url,
            alias=str(sent.get("alias") or "") if isinstance(sent, dict) else "",
            request=_as_recorded(sent, self.strict),
            response=readable,
            status_code=answer.status if answer.silence is None else None,
            error=error,
            request_types=types,
            requestreference=reference,
            fault=fault.kind if fault else answer.headers.get(FAULT_HEADER),
        )
        unread = answer.body if answer.silence is None and readable is None else None
        kept = ProxyExchange(
            number,
            exchange,
            tuple(problems),
            answered_by,
            drift,
            unread,
            answer.headers.get("content-type"),
        )
        self._keep(kept)
        return answer

    async def _forward(
        self,
        headers: Mapping[str, str],
        parts: list[_Part],
        fault: Any,
        types: tuple[str, ...],
        reference: str | None,
    ) -> tuple[Answer, str, str | None, list[tuple[_Part, UpstreamAnswer]]]:
        """Forward (unless the fault says not to), then act on the fault; the upstream's answers too."""
        forwards = (
            fault is None
            or fault.kind in PASSING_KINDS
            or fault.params.get("process", fault.params.get("made"))
        )
        upstream: UpstreamAnswer | None = None
        answered: list[tuple[_Part, UpstreamAnswer]] = []
        if forwards:
            try:
                upstream, answered = await self._send(headers, parts)
            except UpstreamError as exc:
                if exc.silence is not None:  # the upstream answered nothing on purpose: nor does the proxy
                    marked = {FAULT_HEADER: exc.fault} if exc.fault else {}
                    return Answer(0, marked, b"", silence=exc.silence), UPSTREAM, str(exc), []
                answer = Answer(
                    502, dict(JSON_TYPE), as_json({"error": "upstream failed", "detail": str(exc)})
                )
                return answer, PROXY, str(exc), []
        if fault is None:
            return passed(upstream), UPSTREAM, None, answered
        answer = faulted(fault, upstream, types, reference)
        if fault.delay:
            await self._sleep(fault.delay)
        error = f"injected fault: {fault.kind}" if answer.silence else None
        return answer, (UPSTREAM if fault.kind in PASSING_KINDS else PROXY), error, answered

    async def _send(
        self, headers: Mapping[str, str], parts: list[_Part]
    ) -> tuple[UpstreamAnswer, list[tuple[_Part, UpstreamAnswer]]]:
        """The upstream's answer to each part, in order, and the one answer the application gets:
        a lone part's as it came; several parts' records each in its object's place, with the
        proxy's ERROR record for each object refused between them. An answer that is not a gateway
        envelope (an HTTP error, a page) ends it: the application gets that one."""
        answered: list[tuple[_Part, UpstreamAnswer]] = []
        for part in parts:
            if part.refused is not None:
                continue
            upstream = await self.upstream.send(headers, part.body, part.envelope)
            answered.append((part, upstream))
            if len(parts) > 1 and _records_of(upstream) is None:
                return upstream, answered
        if len(parts) == 1:
            return answered[0][1], answered
        return _merged(parts, answered), answered

    def flush(self) -> None:
        """Wait until every exchange so far is journalled, recorded, echoed and given to the listeners."""
        self._written.join()

    def close(self) -> None:
        """Flush, then close the proxy's own connection to the journal."""
        self.flush()
        if self.notes is not None:
            self.notes.close()

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
        journal_id = None
        if self.journal is not None:
            journal_id = self.journal.record(exchange.exchange, kind="proxy")
            if self.notes is not None:
                self.notes.add(journal_id, exchange.problems, exchange.drift)
        if self.cassette is not None:
            self.cassette.append(Recording.of(exchange.exchange, exchange.answer_body, exchange.answer_type))
        self._say(exchange.summary(journal_id))
        for listener in tuple(self._listeners):
            listener(exchange)

    def _say(self, line: str) -> None:
        if self._echo is not None:
            self._echo(line)


@dataclass(frozen=True)
class _Reading:
    """The one reading of a request: the envelope sent (or its `BodyError`), every problem of it,
    and the request objects found invalid (their indexes)."""

    sent: Any
    problems: list[ProxyProblem]
    invalid: frozenset[int]


@dataclass(frozen=True)
class _Part:
    """What is forwarded in one post (`body`, the JSON of `envelope`; the body as it came when it
    cannot be read), or a request object answered here (`refused`: its ERROR record)."""

    body: bytes
    envelope: Any = None
    refused: dict[str, Any] | None = None


def _read(body: bytes) -> _Reading:
    """The envelope sent and every problem of it, each naming the object, the field and the rule; a
    body that cannot be read as JSON (not UTF-8, not JSON, over a limit, a key named twice) is its
    `BodyError`."""
    try:
        sent = read_json(body)
    except BodyError as exc:
        problem = Problem(exc.where, f"the body must be JSON within the limits: {exc.what}")
        return _Reading(exc, [ProxyProblem(None, problem)], frozenset())
    if not isinstance(sent, dict):
        return _Reading(sent, [_whole("the body must be a JSON object (an envelope)")], frozenset())
    objects = sent.get("request")
    if not isinstance(objects, list) or not objects:
        return _Reading(sent, [_whole("must be a non-empty list of request objects")], frozenset())
    problems: list[ProxyProblem] = []
    invalid: set[int] = set()
    for index, obj in enumerate(objects):
        chained = index > 0 and index - 1 not in invalid and _chains(objects[index - 1], obj)
        found = (
            validate_request({**obj, "parenttransactionreference": _CHAINED} if chained else obj)
            if isinstance(obj, dict)
            else [Problem("request", "each request object must be a JSON object")]
        )
        problems += [ProxyProblem(index, problem) for problem in found]
        if found:
            invalid.add(index)
    return _Reading(sent, problems, frozenset(invalid))


# Stands for the parent an object takes from the object before it (the gateway's chaining across the
# objects of an envelope): its reference is only known once the upstream has answered that one.
_CHAINED = "1-1-1"


def _chains(previous: Any, obj: Any) -> bool:
    """Does `obj` take the record of `previous` as its parent, as the gateway chains objects?"""
    if not isinstance(previous, dict) or not isinstance(obj, dict):
        return False
    last_types = types_of(previous)
    if not last_types:
        return False
    record = {"requesttypedescription": last_types[-1], "transactionreference": _CHAINED}
    return "parenttransactionreference" in with_envelope_parent(normalised(obj)[0], record)


def _whole(rule: str) -> ProxyProblem:
    return ProxyProblem(None, Problem("request", rule))


def _parts(reading: _Reading, body: bytes, strict: bool) -> list[_Part]:
    """What is forwarded, in order. Without `strict`, the request whole (re-encoded as read; as it
    came when it cannot be read). With it, nothing of a body or envelope that cannot be read; else
    each run of valid objects in an envelope of its own, and each invalid object answered here in its
    place: the gateway chains an object only from the record before it, and an invalid object's
    ERROR record has no reference, so no chain is cut that the gateway would have kept."""
    sent = reading.sent
    if isinstance(sent, BodyError):
        return [] if strict else [_Part(body)]
    whole = _Part(as_json(sent), sent)
    if not reading.problems or not strict:
        return [whole]
    if not reading.invalid or len(reading.invalid) == len(sent["request"]):
        return []  # an envelope without objects, or none of them valid
    parts: list[_Part] = []
    run: list[Any] = []
    for index, obj in enumerate(sent["request"]):
        if index not in reading.invalid:
            run.append(obj)
            continue
        if run:
            parts.append(_envelope_part(sent, run))
            run = []
        found = [p.problem for p in reading.problems if p.index == index]
        parts.append(_Part(b"", refused=refusal_record(obj, found)))
    if run:
        parts.append(_envelope_part(sent, run))
    return parts


def _with_outcome_card(part: _Part, outcome: str) -> _Part:
    if part.envelope is None:
        return part
    changed = with_outcome_card(part.envelope, outcome)
    return _Part(as_json(changed), changed, part.refused)


def _envelope_part(sent: dict[str, Any], objects: list[Any]) -> _Part:
    envelope = {**sent, "request": objects}
    return _Part(as_json(envelope), envelope)


def _records_of(answer: UpstreamAnswer) -> list[Any] | None:
    answered = json_object(answer.body) if answer.status == 200 else None
    records = answered.get("response") if answered is not None else None
    return records if isinstance(records, list) else None


def _merged(parts: list[_Part], answered: list[tuple[_Part, UpstreamAnswer]]) -> UpstreamAnswer:
    """One envelope of the parts' records, in the objects' order (the first answer's envelope)."""
    answers = iter(answered)
    records: list[Any] = []
    for part in parts:
        if part.refused is not None:
            records.append(part.refused)
        else:
            records += _records_of(next(answers)[1]) or []
    first = answered[0][1]
    envelope = {**(json_object(first.body) or {}), "response": records}
    return UpstreamAnswer(first.status, first.headers, as_json(envelope))


def _as_recorded(sent: Any, strict: bool) -> Mapping[str, Any]:
    """The request as the journal and the cassette keep it; a body that could not be read, flagged."""
    if isinstance(sent, BodyError):
        fate = "answered by the proxy" if strict else "forwarded as it came"
        return {"body": f"not read ({sent.detail}): {fate}"}
    return sent if isinstance(sent, dict) else {"body": "(not a JSON object)"}


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
