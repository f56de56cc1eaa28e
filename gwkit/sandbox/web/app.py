"""The Starlette app: hands every request to the Sandbox, in a worker thread, and acts on its fault
injection (injection.py): waits a latency out (the event loop keeps serving; the wait ends when the
client disconnects, and gives back its site's slot, latency.py), holds a
timed-out request until the client gives up, and closes the connection of a dropped answer, the one
thing only a real server can do.

Gateway work (SQLite, card encryption, JSON of big answers) never runs on the event loop, and
slow work never runs where quick work waits (`Workers`). Each thread keeps its own SQLite
connection (Store.connection); writes take turns.
"""

from __future__ import annotations

import asyncio
import logging
import queue
import secrets
import threading
import traceback
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Awaitable, Callable, NamedTuple

from starlette.applications import Starlette
from starlette.requests import ClientDisconnect, Request
from starlette.responses import JSONResponse, PlainTextResponse, Response

from ..http import SandboxRequest
from .faults import GATEWAY_PATHS
from .injection import Outcome
from .sandbox import Sandbox, too_large

METHODS = ["GET", "POST", "OPTIONS", "PUT", "DELETE", "PATCH", "HEAD"]
TIMEOUT_CAP_SECONDS = 600.0  # a timed-out request is held at most this long
RAW_SEND = "gwkit.send"  # the server's own `send`, kept in the scope for closing a connection
WORKER_THREADS = 4  # queries and large bodies
CONTROL_THREADS = 2  # POST /_sandbox/*: clock moves, settle, reset, snapshots, faults
MOST_TOGETHER = 32  # gateway requests answered in one write transaction (WorkerThread)
QUICK_BODY_BYTES = 8192  # a larger body (many request objects) is answered with the slow work
BODY_READ_SECONDS = 30.0  # a body not received in full by then is refused (408)
log = logging.getLogger("gwkit.sandbox")

Scope = dict[str, Any]
Receive = Callable[[], Awaitable[dict[str, Any]]]
Send = Callable[[dict[str, Any]], Awaitable[None]]


class NoAnswer(Response):
    """Sends nothing: the connection was closed instead."""

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        return None


class WorkerThread:
    """One thread answering jobs in order: lighter than a one-thread executor (no concurrent
    futures, one wake-up of the event loop per round of answers).

    Jobs submitted with a store (`together`) that are waiting at the same time are answered in one
    write transaction of that store (`Store.batch`, group commit): each one's writes are kept or
    rolled back on their own, and all are answered once the batch has committed. If the commit
    fails (a full disk), nothing of the batch was kept, and each job is run again on its own: the
    gateway answers each (99999 if the store still fails), never an HTTP 500 for the whole round.
    A job that is alone in the queue runs on its own, as without a store."""

    def __init__(self, name: str, most_together: int = MOST_TOGETHER):
        self._jobs: queue.SimpleQueue = queue.SimpleQueue()
        self._most_together = most_together
        self._thread = threading.Thread(target=self._serve, name=name, daemon=True)
        self._thread.start()

    def submit(self, work: Callable[[Any], Any], argument: Any, *, together: Any = None) -> asyncio.Future:
        loop = asyncio.get_running_loop()
        future = loop.create_future()
        self._jobs.put(_Job(loop, future, work, argument, together))
        return future

    def _serve(self) -> None:
        job = self._jobs.get()
        while job is not None:
            jobs, job = self._round(job)
            self._answer(jobs)
            if job is _NEXT:
                job = self._jobs.get()

    def _round(self, first: "_Job") -> tuple[list["_Job"], Any]:
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
    def _answer(jobs: list["_Job"]) -> None:
        together = jobs[0].together
        if together is None or (len(jobs) == 1 and not together.batch_alone):
            answers = [_run(jobs[0])]
        else:
            try:
                with together.batch():
                    answers = [_run(job) for job in jobs]
            except Exception:  # the batch's commit failed (a full disk): nothing of it was kept
                answers = [_run(job) for job in jobs]  # so each is answered on its own, once
        by_loop: dict[asyncio.AbstractEventLoop, list[tuple[asyncio.Future, Any, BaseException | None]]] = {}
        for job, (result, error) in zip(jobs, answers):
            by_loop.setdefault(job.loop, []).append((job.future, result, error))
        for loop, settled in by_loop.items():
            try:
                loop.call_soon_threadsafe(_settle_all, settled)
            except RuntimeError:  # the loop has closed: nobody is waiting
                pass

    def shutdown(self) -> None:
        self._jobs.put(None)
        self._thread.join()


class _Job(NamedTuple):
    loop: asyncio.AbstractEventLoop
    future: asyncio.Future
    work: Callable[[Any], Any]
    argument: Any
    together: Any  # a Store whose batch() it may share, or None


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

    async def answer(self, sandbox: Sandbox, request: SandboxRequest) -> Outcome:
        if self.on_event_loop:
            return sandbox.answer(request)
        if request.method == "POST" and request.path.startswith("/_sandbox/"):
            return await self._in_thread(self._in(self.control, sandbox.answer, request))
        if len(request.body) > QUICK_BODY_BYTES or b"TRANSACTIONQUERY" in request.body:
            return await self._in_thread(self._in(self.slow, sandbox.answer, request))
        if self._may_answer_inline(sandbox):
            return sandbox.answer(request)
        together = sandbox.store if request.method == "POST" and request.path in GATEWAY_PATHS else None
        return await self._in_thread(self.quick.submit(sandbox.answer, request, together=together))

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

    async def _in_thread(self, job: Awaitable[Outcome]) -> Outcome:
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


def create_app(
    sandbox: Sandbox, *, workers: Workers | None = None, body_read_seconds: float = BODY_READ_SECONDS
) -> Callable[[Scope, Receive, Send], Awaitable[None]]:
    workers = workers or Workers()

    async def endpoint(request: Request) -> Response:
        try:
            return await _answer(request)
        except ClientDisconnect:
            return NoAnswer()  # the client left while sending: nobody to answer
        except (
            Exception
        ) as exc:  # a sandbox bug: a JSON 500 the client can quote, and the connection stays usable
            return internal_error(request, exc)

    async def _answer(request: Request) -> Response:
        declared = request.headers.get("content-length")
        if declared and declared.isdigit() and int(declared) > sandbox.max_body_bytes:
            outcome = Outcome(too_large(sandbox.max_body_bytes))
        else:
            try:
                async with asyncio.timeout(body_read_seconds):  # unlike wait_for, no task per request
                    body = await _read_limited(request, sandbox.max_body_bytes)
            except TimeoutError:
                return _body_too_slow(body_read_seconds)
            url = request.url
            outcome = await workers.answer(
                sandbox,
                SandboxRequest(
                    method=request.method,
                    path=url.path,
                    headers={k.lower(): v for k, v in request.headers.items()},
                    body=body,
                    query=dict(request.query_params) if url.query else {},
                    base_url=f"{url.scheme}://{url.netloc}",
                ),
            )
        if outcome.delay:  # ends early when the client leaves: nobody is waiting for the answer
            try:
                left = await _until_disconnected(request.receive, outcome.delay)
            finally:
                if outcome.slot is not None:
                    outcome.slot.release()
            if left:
                return NoAnswer()
        if outcome.silence == "timeout":
            try:
                await _until_disconnected(request.receive, TIMEOUT_CAP_SECONDS)
            finally:
                if outcome.slot is not None:
                    outcome.slot.release()
        if outcome.response is None:
            await _close_connection(request.scope[RAW_SEND])
            return NoAnswer()
        answer = outcome.response
        return Response(answer.body, status_code=answer.status, headers=answer.headers)

    starlette = Starlette()  # the lifespan only

    async def app(scope: Scope, receive: Receive, send: Send) -> None:
        """Every path is the one endpoint: called directly, without Starlette's router and middleware,
        work a gateway request does not need (the endpoint answers every error itself)."""
        if scope["type"] != "http":
            return await starlette(scope, receive, send)
        scope[RAW_SEND] = send
        workers.requests += 1
        try:
            response = (
                await endpoint(Request(scope, receive)) if scope["method"] in METHODS else _not_allowed()
            )
            await response(scope, receive, send)
        finally:
            workers.requests -= 1

    app.sandbox = sandbox  # type: ignore[attr-defined]
    app.workers = workers  # type: ignore[attr-defined]
    return app


def internal_error(request: Request, exc: BaseException) -> JSONResponse:
    """Log the traceback under a short reference and answer it. The exception's message is left out of
    both: it may quote request values such as card data."""
    reference = f"E-{secrets.token_hex(4)}"
    log.error(
        "internal error %s on %s %s: %s\n%s",
        reference,
        request.method,
        request.url.path,
        type(exc).__name__,
        "".join(traceback.format_tb(exc.__traceback__)),
    )
    return JSONResponse(
        {
            "error": "internal error",
            "reference": reference,
            "detail": f"the sandbox failed on this request; its log has the details under {reference}",
        },
        status_code=500,
    )


def _not_allowed() -> Response:
    return PlainTextResponse("Method Not Allowed", status_code=405, headers={"allow": ", ".join(METHODS)})


def _body_too_slow(seconds: float) -> JSONResponse:
    return JSONResponse(
        {
            "error": "request body too slow",
            "detail": f"the body was not received within {seconds:g} s",
            "limit_seconds": seconds,
        },
        status_code=408,
        headers={"connection": "close"},
    )


async def _until_disconnected(receive: Receive, cap_seconds: float) -> bool:
    """Wait until the client disconnects (True) or `cap_seconds` pass (False)."""

    async def disconnected() -> None:
        while (await receive())["type"] != "http.disconnect":
            pass

    try:
        await asyncio.wait_for(disconnected(), cap_seconds)
    except asyncio.TimeoutError:
        return False
    return True


async def _read_limited(request: Request, limit: int) -> bytes:
    chunks, size = [], 0
    async for chunk in request.stream():
        size += len(chunk)
        chunks.append(chunk)
        if size > limit:
            break  # the Sandbox refuses it as too large
    return b"".join(chunks)


async def _close_connection(send: Send) -> None:
    """Close the client's connection without an answer.

    ASGI has no message for that, so the transport is taken from uvicorn's `send`, a method of
    its request cycle (found through the wrappers uvicorn adds at log level trace).
    """
    transport = _transport_of(send)
    if transport is None:  # pragma: no cover - another ASGI server: the nearest thing, a broken answer
        await send({"type": "http.response.start", "status": 200, "headers": [(b"content-length", b"1")]})
        raise ConnectionAbortedError("fault injection: answer dropped")
    transport.close()
    await asyncio.sleep(0)  # let the server see the disconnection before the app returns


def _transport_of(send: Any, depth: int = 0) -> asyncio.BaseTransport | None:
    transport = getattr(getattr(send, "__self__", None), "transport", None)
    if isinstance(transport, asyncio.BaseTransport):
        return transport
    for cell in (getattr(send, "__closure__", None) or ()) if depth < 4 else ():
        try:
            inner = cell.cell_contents
        except ValueError:  # an empty cell
            continue
        if callable(inner):
            transport = _transport_of(inner, depth + 1)
            if transport is not None:
                return transport
    return None
