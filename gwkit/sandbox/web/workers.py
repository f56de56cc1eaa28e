"""The sandbox's worker threads and which of them answers a request (`Workers`).

Gateway work (SQLite, card encryption, JSON of big answers) never runs on the event loop, and
slow work never runs where quick work waits. Each thread keeps its own SQLite connection
(Store.connection); writes take turns, and gateway requests waiting together are answered in one
write transaction (`WorkerThread`, group commit).
"""

from __future__ import annotations

import asyncio
import queue
import threading
from collections.abc import Awaitable, Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from typing import Any, NamedTuple

from ..gateway.delivery import Outbox
from ..http import BodyError, SandboxRequest
from .endpoint import sites_written_by
from .faults import GATEWAY_PATHS
from .injection import Answer
from .sandbox import Sandbox

WORKER_THREADS = 4  # queries and large bodies
CONTROL_THREADS = 2  # POST /_sandbox/*: clock moves, settle, reset, snapshots, faults
MOST_TOGETHER = 32  # gateway requests answered in one write transaction (WorkerThread)
QUICK_BODY_BYTES = 8192  # a larger body (many request objects) is answered with the slow work


class WorkerThread:
    """One thread answering jobs in order: lighter than a one-thread executor (no concurrent
    futures, one wake-up of the event loop per round of answers).

    Jobs submitted with a store (`together`) that are waiting at the same time are answered in one
    write transaction of that store (`Store.batch`, group commit): each one's writes are kept or
    rolled back on their own, and all are answered once the batch has committed. On a store whose
    writers of different sites write side by side (PostgreSQL), the jobs are grouped by the sites
    they write to (`sites`, their account's): a batch waits for the first group's locks and takes in
    every other group whose locks are free at that moment (`Store.batch_of`); the groups another
    worker holds go in a later batch. So one worker alone commits all its waiting requests at once,
    and a tenant's requests never wait for another tenant's batch. If the commit
    fails (a full disk), nothing of the batch was kept, and each job is run again on its own: the
    gateway answers each (99999 if the store still fails), never an HTTP 500 for the whole round.
    A job that is alone in the queue runs on its own, as without a store."""

    def __init__(self, name: str, most_together: int = MOST_TOGETHER):
        self._jobs: queue.SimpleQueue = queue.SimpleQueue()
        self._most_together = most_together
        self._thread = threading.Thread(target=self._serve, name=name, daemon=True)
        self._thread.start()

    def submit(
        self, work: Callable[[Any], Any], argument: Any, *, together: Any = None, sites: tuple[str, ...] = ()
    ) -> asyncio.Future:
        loop = asyncio.get_running_loop()
        future = loop.create_future()
        self._jobs.put(_Job(loop, future, work, argument, together, sites))
        return future

    def _serve(self) -> None:
        job = self._jobs.get()
        while job is not None:
            jobs, job = self._round(job)
            self._answer(jobs)
            if job is _NEXT:
                job = self._jobs.get()

    def _round(self, first: _Job) -> tuple[list[_Job], Any]:
        """The jobs to answer together, from `first` on, and the job that did not fit (or _NEXT)."""
        jobs = [first]
        if first.together is None:
            return jobs, _NEXT
        while len(jobs) < self._most_together:
            try:
                job = self._jobs.get_nowait()
            except queue.Empty:
                break
            if job is None or job.together is not first.together:
                return jobs, job
            jobs.append(job)
        return jobs, _NEXT

    @staticmethod
    def _answer(jobs: list[_Job]) -> None:
        together = jobs[0].together
        if together is None or (len(jobs) == 1 and not together.batch_alone):
            _settle_jobs(jobs, [_run(jobs[0])])
            return
        waiting = _by_sites(jobs) if together.writes_side_by_side else [jobs]
        while waiting:
            answered = waiting[:1]  # what a batch that fails before saying which groups it holds answers
            try:
                with together.batch_of([_sites_of(group) for group in waiting]) as held:
                    answered = [waiting[index] for index in held]
                    answers = [_run(job) for group in answered for job in group]
            except Exception:  # the batch's commit failed (a full disk): nothing of it was kept
                answers = [
                    _run(job) for group in answered for job in group
                ]  # so each is answered alone, once
            _settle_jobs([job for group in answered for job in group], answers)
            waiting = [group for group in waiting if not any(group is done for done in answered)]

    def shutdown(self) -> None:
        self._jobs.put(None)
        self._thread.join()


def _by_sites(jobs: list[_Job]) -> list[list[_Job]]:
    """The jobs in batches of the same sites, each batch in the order of its first job."""
    batches: dict[tuple[str, ...], list[_Job]] = {}
    for job in jobs:
        batches.setdefault(job.sites, []).append(job)
    return list(batches.values())


def _sites_of(jobs: list[_Job]) -> list[str]:
    return sorted({site for job in jobs for site in job.sites})


def _settle_jobs(jobs: list[_Job], answers: list[tuple[Any, BaseException | None]]) -> None:
    """Hand each job's answer to its event loop, one wake-up per loop."""
    by_loop: dict[asyncio.AbstractEventLoop, list[tuple[asyncio.Future, Any, BaseException | None]]] = {}
    for job, (result, error) in zip(jobs, answers, strict=True):
        by_loop.setdefault(job.loop, []).append((job.future, result, error))
    for loop, settled in by_loop.items():
        try:
            loop.call_soon_threadsafe(_settle_all, settled)
        except RuntimeError:  # the loop has closed: nobody is waiting
            pass


class _Job(NamedTuple):
    loop: asyncio.AbstractEventLoop
    future: asyncio.Future
    work: Callable[[Any], Any]
    argument: Any
    together: Any  # a Store whose batch() it may share, or None
    sites: tuple[str, ...]  # those it may write to: batches of a store that locks per site share them


_NEXT = object()  # no job waiting to be answered: take the next from the queue


def _run(job: _Job) -> tuple[Any, BaseException | None]:
    try:
        return job.work(job.argument), None
    except BaseException as exc:  # handed to the awaiting request
        return None, exc


def _settle_all(settled: list[tuple[asyncio.Future, Any, BaseException | None]]) -> None:
    for future, result, error in settled:
        _settle(future, result, error)


def _settle(future: asyncio.Future, result: Any, error: BaseException | None) -> None:
    if future.cancelled():
        return
    if error is not None:
        future.set_exception(error)
    else:
        future.set_result(result)


class Workers:
    """The threads the sandbox's work runs in, by how long it may take.

    - quick: one thread, for payments, updates, pages and health. Writes take turns anyway, and more
      threads running Python at once only contend for the interpreter: one is the fastest.
    - slow: `threads` for work whose length depends on the data (TRANSACTIONQUERY, large bodies),
      so a big query never holds up a payment.
    - control: `control_threads` for POST /_sandbox/* (clock moves, settle, reset, snapshots), so a
      queue of clock moves never takes the threads payments and queries need.

    Quick work is answered on the event loop itself when it is the only request in the server and
    nothing else runs: no job in any thread, no write transaction open (`Store.writing`), no clock
    move, so it does not wait for anybody, and it saves the hand-over to a thread and back. With other
    requests under way, the quick thread answers it: then the event loop reads and writes other
    connections while SQLite writes (it lets go of the interpreter), which a busy server needs more.

    The threads live as long as the server, so each one's SQLite connection is opened once."""

    def __init__(
        self,
        threads: int = WORKER_THREADS,
        control_threads: int = CONTROL_THREADS,
        *,
        inline: bool = True,
        on_event_loop: bool = False,
    ):
        self.quick = WorkerThread("gwkit-sandbox")
        self.slow = ThreadPoolExecutor(threads, thread_name_prefix="gwkit-sandbox-slow")
        self.control = ThreadPoolExecutor(control_threads, thread_name_prefix="gwkit-control")
        self.inline = inline
        # Every request answered on the event loop, as the sandbox did before it had threads: only a
        # baseline for benchmarks/sandbox_throughput.py (one long request would hold every other).
        self.on_event_loop = on_event_loop
        self._running = 0  # jobs handed to any thread and not answered yet (counted on the event loop)
        self.requests = 0  # HTTP requests in the app, read or answered (counted on the event loop)

    async def answer(self, sandbox: Sandbox, request: SandboxRequest) -> Answer:
        """The request's answer, from the thread its work belongs on. The URL notifications a gateway
        request kept are sent once its transaction committed (with a batch's, after the batch): the
        answer waits here, on no thread, for its online ones (`Notifier.send_kept`)."""
        notifier = sandbox.gateway.notifier
        outbox = Outbox()

        def answered(request: SandboxRequest) -> Answer:
            with notifier.collecting(outbox):
                return sandbox.answer(request)

        try:
            answer = await self._answer(sandbox, request, answered)
        except BaseException:
            if outbox:  # what was committed is notified all the same (a claim finds nothing else)
                notifier.send_kept(outbox)
            raise
        if outbox:
            attempts = notifier.send_kept(outbox)
            if attempts:
                await asyncio.wait([asyncio.wrap_future(attempt) for attempt in attempts])
        return answer

    async def _answer(
        self, sandbox: Sandbox, request: SandboxRequest, answered: Callable[[SandboxRequest], Answer]
    ) -> Answer:
        if self.on_event_loop:
            return answered(request)
        if request.method == "POST" and request.path.startswith("/_sandbox/"):
            return await self._in_thread(self._in(self.control, answered, request))
        if len(request.body) > QUICK_BODY_BYTES or _asks_a_query(sandbox, request):
            return await self._in_thread(self._in(self.slow, answered, request))
        if self._may_answer_inline(sandbox):
            return answered(request)
        together = sandbox.store if request.method == "POST" and request.path in GATEWAY_PATHS else None
        sites = (
            sites_written_by(sandbox.gateway, request)
            if together is not None and together.writes_side_by_side
            else ()
        )
        return await self._in_thread(self.quick.submit(answered, request, together=together, sites=sites))

    @contextmanager
    def waiting(self) -> Iterator[None]:
        """A request waiting out an injected delay does no work: while it waits it is not counted
        among the requests under way, so one tenant's delayed requests never keep the others' from
        being answered inline (on the event loop, without a hand-over to a thread)."""
        self.requests -= 1
        try:
            yield
        finally:
            self.requests += 1

    def _may_answer_inline(self, sandbox: Sandbox) -> bool:
        """The only request, and nothing else runs: no job in a thread, no write open or waited for,
        no clock move (one may run without the server, from the Python handle)."""
        return (
            self.inline
            and self.requests <= 1
            and not self._running
            and not sandbox.store.writing
            and not sandbox.gateway.advance_lock.locked()
        )

    async def _in_thread(self, job: Awaitable[Answer]) -> Answer:
        self._running += 1
        try:
            return await job
        finally:
            self._running -= 1

    @staticmethod
    async def _in(pool: ThreadPoolExecutor, work: Callable[[Any], Any], argument: Any) -> Any:
        return await asyncio.get_running_loop().run_in_executor(pool, work, argument)

    def shutdown(self) -> None:
        """Wait for the work under way (a clock move stops at its next day: Gateway.stop_work)."""
        for pool in (self.slow, self.control):
            pool.shutdown(wait=True, cancel_futures=True)
        self.quick.shutdown()


def _asks_a_query(sandbox: Sandbox, request: SandboxRequest) -> bool:
    """Whether a gateway request holds a request type that only reads (TRANSACTIONQUERY: its length
    depends on the data). Its body is parsed here once, for every later reader (`parsed_json`)."""
    if request.method != "POST" or request.path not in GATEWAY_PATHS:
        return False
    try:
        body = request.parsed_json()
    except BodyError:
        return False
    objects = body.get("request") if isinstance(body, dict) else None
    read_only = sandbox.gateway.tables.read_only
    for named in objects if isinstance(objects, list) else ():
        if not isinstance(named, dict):
            continue
        types = named.get("requesttypedescriptions", [named.get("requesttypedescription")])  # or the singular
        if (
            isinstance(types, list)
            and all(isinstance(t, str) for t in types)
            and "+".join(types) in read_only
        ):
            return True
    return False
