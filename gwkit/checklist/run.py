"""The checklist's run: one step at a time, each armed for the next payment and judged on its exchanges.

`Checklist.before(headers, body)` sees every `POST /json/` before the proxy answers it (the proxy
then picks the armed fault for it, in the same turn of the event loop). A request that begins a
payment (an AUTH or a THREEDQUERY) under a new key ends the current step, which is judged on the
exchanges kept so far, and is the next step's payment. `next()`, `claim(name)` and `finish()` are
the explicit signals (a key in the terminal, a call in `--auto`, a test claiming its step); nothing
ever waits on a clock.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ..interface.jsonread import BodyError, read_json
from ..interface.masking import mask_data
from ..proxy import Answer, Proxy, ProxyExchange
from ..proxy.answers import JSON_TYPE, as_json, json_object, objects_of, types_of
from ..proxy.upstreams import UpstreamError
from ..sandbox.web.notification_controls import DELIVERIES, RULES
from .payments import Payment, PaymentKey, paying_key
from .steps import ChecklistError, Step, Verdict, steps_named

REFERENCE = re.compile(r"[A-Za-z0-9-]{1,64}")  # a transactionreference, safe in a control API path
STEP_HEADER = "x-gwkit-checklist-step"  # a request claiming its step by name (tests in any order)


@dataclass
class _Attempt:
    """The step in progress: exchanges numbered after `after` are its; `seen` once its payment began."""

    step: Step
    after: int
    seen: bool = False
    key: PaymentKey | None = None


@dataclass(frozen=True)
class ChecklistResult:
    """Every verdict of a finished run, in the steps' order, and the exchanges of the run."""

    verdicts: tuple[Verdict, ...]
    exchanges: tuple[ProxyExchange, ...] = field(default=(), repr=False)

    @property
    def passed(self) -> bool:
        """No required outcome mishandled (a failure) or never exercised (no payment seen)."""
        return not self.failures

    @property
    def failures(self) -> list[Verdict]:
        return [verdict for verdict in self.verdicts if verdict.required_failed]

    def verdict(self, step: str) -> Verdict:
        for verdict in self.verdicts:
            if verdict.step == step:
                return verdict
        raise KeyError(f"no step {step!r} in this run: {', '.join(v.step for v in self.verdicts)}")

    def summary(self) -> str:
        counts: dict[str, int] = {}
        for verdict in self.verdicts:
            counts[verdict.status] = counts.get(verdict.status, 0) + 1
        shown = ", ".join(f"{count} {status}" for status, count in counts.items())
        return f"{'PASSED' if self.passed else 'FAILED'}: {len(self.verdicts)} steps ({shown})"


class Checklist:
    """The steps of one run (default: every registered step) and their verdicts so far."""

    def __init__(self, steps: Sequence[Step] | None = None, *, echo: Callable[[str], Any] | None = None):
        self.steps = list(steps) if steps is not None else steps_named()
        if not self.steps:
            raise ChecklistError("a checklist needs at least one step")
        self._echo = echo
        self._lock = threading.RLock()
        self._waiting = [step for step in self.steps if step.per_payment]
        self.current: _Attempt | None = None
        self.verdicts: dict[str, Verdict] = {}
        self.proxy: Proxy | None = None
        self._result: ChecklistResult | None = None
        self._before_run = 0
        # What ChecklistProxy read from a sandbox upstream: the ACS's sessions by THREEDQUERY, the URL
        # notifications by AUTH, and why a step's notification rule could not be added.
        self.acs_sessions: dict[str, dict[str, Any]] = {}
        self.deliveries: dict[str, list[dict[str, Any]]] = {}
        self.rule_refused: dict[str, str] = {}

    def __repr__(self) -> str:
        current = self.current.step.name if self.current else None
        return f"Checklist(steps={len(self.steps)}, judged={len(self.verdicts)}, current={current!r})"

    @property
    def finished(self) -> bool:
        return self._result is not None

    def attach(self, proxy: Proxy) -> None:
        """Run on `proxy`'s traffic (its faults are the checklist's to arm): the first step is armed."""
        with self._lock:
            self.proxy = proxy
            self._before_run = self._last_number()
            self._start_next()

    def before(self, headers: Mapping[str, str], body: bytes) -> Answer | None:
        """See a request before the proxy answers it; an `Answer` when the checklist refuses it (a
        step claimed by the STEP_HEADER that does not exist or has been judged)."""
        try:
            sent = mask_data(read_json(body))
        except BodyError:
            sent = None
        paying, key = paying_key(sent)
        with self._lock:
            claimed = headers.get(STEP_HEADER)
            if claimed:
                try:
                    self.claim(claimed)
                except ChecklistError as exc:
                    return _refusal(str(exc))
            current = self.current
            if not paying or current is None:
                return None
            if not current.seen:
                self._seen(current, key)
            elif key is not None and current.key is not None and key != current.key:
                if claimed:
                    return _refusal(
                        f"step {claimed} has its payment already ({current.key}): one payment a step"
                    )
                self._end_current()  # a new payment: the next step's
                if self.current is not None:
                    self._seen(self.current, key)
        return None

    def next(self) -> Verdict | None:
        """End the current step (the person moves on): its verdict; the next step is armed."""
        with self._lock:
            self._check_running()
            return self._end_current()

    def claim(self, name: str) -> None:
        """Make step `name` the current one (a test claiming its step): the current step ends."""
        with self._lock:
            self._check_running()
            if self.current is not None and self.current.step.name == name:
                return
            wanted = next((step for step in self._waiting if step.name == name), None)
            if wanted is None:
                if name in self.verdicts:
                    raise ChecklistError(f"step {name} has been judged already: each step runs once a run")
                names = ", ".join(step.name for step in self.steps if step.per_payment)
                raise ChecklistError(f"no step {name!r} in this run; its payment steps are {names}")
            self._waiting.remove(wanted)
            if self.current is not None and self.current.seen:
                self._judge(self.current)
            elif self.current is not None:
                self._waiting.insert(0, self.current.step)  # claimed over before its payment: it waits
            self._start(wanted)

    def finish(self) -> ChecklistResult:
        """End the run: the current step judged, steps never reached "no payment seen", the run's own
        steps (validation) judged on every exchange. Called again, the same result."""
        with self._lock:
            if self._result is not None:
                return self._result
            if self.current is not None:
                self._judge(self.current)
                self.current = None
            for step in self._waiting:
                self._record(step.not_seen())
            self._waiting = []
            exchanges = self._run_exchanges()
            for step in self.steps:
                if not step.per_payment:
                    self._record(step.judge_run(exchanges))
            if self.proxy is not None:
                self.proxy.faults.clear()
            verdicts = tuple(self.verdicts[step.name] for step in self.steps)
            self._result = ChecklistResult(verdicts, tuple(exchanges))
            self._say(self._result.summary())
            return self._result

    def status(self) -> dict[str, Any]:
        """The run as JSON: each step with its verdict so far, the current step, finished or not."""
        with self._lock:
            return {
                "current": None if self.current is None else self.current.step.name,
                "instruction": None if self.current is None else self.current.step.instruction,
                "finished": self.finished,
                "steps": [
                    {"step": step.name, "title": step.title, "status": "to do"}
                    | (self.verdicts[step.name].as_dict() if step.name in self.verdicts else {})
                    for step in self.steps
                ],
            }

    def _check_running(self) -> None:
        if self._result is not None:
            raise ChecklistError("the run has finished")
        if self.proxy is None:
            raise ChecklistError("the checklist is not attached to a proxy (checklist.start attaches it)")

    def _seen(self, attempt: _Attempt, key: PaymentKey | None) -> None:
        attempt.seen, attempt.key = True, key
        shown = f"known by {key}" if key else "with no key: its verdict will be advisory"
        self._say(f"{attempt.step.title}: payment seen, {shown}")
        if self._waiting:
            following = self._waiting[0]
            self._say(f"Next: {following.title}: your next payment (or Enter to judge this one first)")

    def _end_current(self) -> Verdict | None:
        ended = self.current
        self.current = None
        verdict = self._judge(ended) if ended is not None else None
        self._start_next()
        return verdict

    def _start_next(self) -> None:
        if self._waiting:
            self._start(self._waiting.pop(0))
        else:
            self._disarm()
            self._say("Every payment step has been run: finish the run (q, or POST /_checklist/finish).")

    def _start(self, step: Step) -> None:
        self._disarm()
        assert self.proxy is not None
        if step.fault is not None:
            self.proxy.faults.add_json(dict(step.fault))
        self.current = _Attempt(step, self._last_number())
        position = [s.name for s in self.steps].index(step.name) + 1
        self._say(f"Step {position}/{len(self.steps)}: {step.title}: {step.instruction}")

    def _judge(self, attempt: _Attempt) -> Verdict:
        if not attempt.seen:
            return self._record(attempt.step.not_seen())
        exchanges = [e for e in self._run_exchanges() if e.number > attempt.after]
        payment = Payment(
            attempt.key,
            acs=dict(self.acs_sessions),
            deliveries=dict(self.deliveries),
            rule_refused=self.rule_refused.get(attempt.step.name),
        ).gather(exchanges)
        return self._record(attempt.step.judge(payment))

    def _record(self, verdict: Verdict) -> Verdict:
        self.verdicts[verdict.step] = verdict
        self._say(verdict.explain())
        return verdict

    def _disarm(self) -> None:
        if self.proxy is not None:
            self.proxy.faults.clear()

    def _run_exchanges(self) -> list[ProxyExchange]:
        assert self.proxy is not None
        return [e for e in self.proxy.exchanges if e.number > self._before_run]

    def _last_number(self) -> int:
        kept = self.proxy.exchanges if self.proxy is not None else []
        return kept[-1].number if kept else 0

    def _say(self, line: str) -> None:
        if self._echo is not None:
            self._echo(line)


def _refusal(reason: str) -> Answer:
    """The answer to a request whose STEP_HEADER cannot be followed (never forwarded)."""
    return Answer(409, dict(JSON_TYPE), as_json({"error": f"{STEP_HEADER}: {reason}", "field": STEP_HEADER}))


class ChecklistProxy(Proxy):
    """The validating proxy, with the checklist seeing each request first (never strict)."""

    def __init__(self, checklist: Checklist, upstream: Any, **options: Any):
        super().__init__(upstream, strict=False, **options)
        self.checklist = checklist
        checklist.attach(self)

    async def answer(self, headers: Mapping[str, str], body: bytes) -> Answer:
        refused = self.checklist.before(headers, body)
        if refused is not None:
            return refused
        await self._read_acs_sessions(headers, body)
        rule = await self._notification_rule(headers, body)
        answer = await super().answer(headers, body)
        if rule is not None:
            await self._read_deliveries(headers, answer, rule)
        return answer

    async def _notification_rule(self, headers: Mapping[str, str], body: bytes) -> str | None:
        """Before the AUTH of a URL notification step's payment: an online rule notifying the shop's
        listener of it, added on the sandbox (its id; None for any other request, or when the
        upstream refuses it: the step then says why)."""
        step = self.checklist.current.step if self.checklist.current is not None else None
        if step is None or not step.needs_listener or not pays_body(body):
            return None
        rule = {
            "url": step.listener,
            "flow": "online",
            "requesttypes": ["AUTH"],
            **({"password": step.rule_password} if step.rule_password else {}),
        }
        try:
            answer = await self.upstream.control("POST", RULES, {}, as_json(rule), _as_json_call(headers))
        except UpstreamError as exc:
            answer, error = None, str(exc)
        else:
            error = "the upstream is not a gwkit sandbox: only a sandbox notifies your listener"
        added = json_object(answer.body) if answer is not None else None
        if answer is not None and answer.status == 200 and added is not None:
            return str(added["id"])
        if added is not None:
            error = f"the sandbox refused the rule for {step.listener}: {added.get('detail') or added}"
        with self.checklist._lock:
            self.checklist.rule_refused[step.name] = error
        return None

    async def _read_deliveries(self, headers: Mapping[str, str], answer: Answer, rule: str) -> None:
        """After that AUTH was answered (an online notification is sent before the answer): its
        deliveries, for the step's verdict; then the rule goes, so no other payment is notified."""
        records = (json_object(answer.body) or {}).get("response") if answer.silence is None else None
        references = [
            r["transactionreference"]
            for r in (records if isinstance(records, list) else [])
            if isinstance(r, dict) and isinstance(r.get("transactionreference"), str)
        ]
        call = _as_json_call(headers)
        for reference in references:
            try:
                found = await self.upstream.control(
                    "GET", DELIVERIES, {"transactionreference": reference}, b"", call
                )
            except UpstreamError:
                continue
            listed = (json_object(found.body) or {}).get("deliveries") if found is not None else None
            if isinstance(listed, list):
                with self.checklist._lock:
                    self.checklist.deliveries[reference] = [d for d in listed if d.get("rule") == rule]
        try:
            await self.upstream.control("DELETE", f"{RULES}/{rule}", {}, b"{}", call)
        except UpstreamError:
            pass

    async def _read_acs_sessions(self, headers: Mapping[str, str], body: bytes) -> None:
        """Before an AUTH back from a challenge (one with a `threedresponse`): what the sandbox's ACS
        saw of its THREEDQUERY (`GET /_sandbox/threeds/{reference}`), for the 3-D Secure steps. No
        sandbox upstream, or none that answers: nothing is read, and those steps say so."""
        for reference in returned_from_acs(body):
            try:
                answer = await self.upstream.control(
                    "GET", f"/_sandbox/threeds/{reference}", {}, b"", headers
                )
            except UpstreamError:
                continue
            session = json_object(answer.body) if answer is not None and answer.status == 200 else None
            if isinstance(session, dict):
                with self.checklist._lock:
                    self.checklist.acs_sessions[reference] = session


def _as_json_call(headers: Mapping[str, str]) -> dict[str, str]:
    """The application's headers (its credentials), for a JSON call to the sandbox's control API."""
    return {**headers, "content-type": "application/json"}


def pays_body(body: bytes) -> bool:
    """Does this request send an AUTH (the payment a notification step's rule is for)?"""
    try:
        sent = read_json(body)
    except BodyError:
        return False
    return any("AUTH" in types_of(obj) for obj in objects_of(sent))


def returned_from_acs(body: bytes) -> list[str]:
    """The THREEDQUERY references named by the objects of `body` that carry a `threedresponse`."""
    try:
        sent = read_json(body)
    except BodyError:
        return []
    return [
        obj["parenttransactionreference"]
        for obj in objects_of(sent)
        if obj.get("threedresponse")
        and isinstance(obj.get("parenttransactionreference"), str)
        and REFERENCE.fullmatch(obj["parenttransactionreference"])
    ]
