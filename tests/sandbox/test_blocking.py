"""Nothing holds the server: long work runs beside other requests, slow and idle connections are
closed, a bug answers a JSON 500 on a connection that stays usable, and stopping ends a long clock move.

A long operation is made long without wall time: it waits on a threading.Event inside the gateway
(a daily job or a query handler of the test's own) while the test shows other requests are answered.
"""

from __future__ import annotations

import base64
import http.client
import json
import logging
import os
import select
import socket
import threading
from datetime import date
from pathlib import Path
from typing import Any

import httpx
import pytest

import gwkit.sandbox
from gwkit.sandbox import ServerLimits
from gwkit.sandbox.gateway.context import DailyJob
from support.databases import Database, open_store
from support.sandbox import CLOCK, VISA, Gateway, card_auth, query_request

pytestmark = pytest.mark.both_stores  # each test on SQLite and on PostgreSQL

BOUND = 30  # seconds: an upper bound so a broken server fails the test instead of hanging it


class Held:
    """Work inside the gateway that waits until the test releases it."""

    def __init__(self) -> None:
        self.started = threading.Event()
        self.release = threading.Event()
        self.days: list[date] = []

    def wait(self) -> None:
        self.started.set()
        assert self.release.wait(BOUND), "the test never released the held work"

    def add_to(self, gateway) -> None:
        """Run as a daily job of `gateway`, from its clock's today on."""
        gateway.store.meta_set_default("job:held:through", gateway.clock.today().isoformat())
        gateway.daily_jobs.append(DailyJob("held", 99, self.daily_job))

    def daily_job(self, job: Any, day: date) -> dict[str, Any]:
        self.days.append(day)
        if len(self.days) == 1:
            self.wait()
        return {}


class InBackground:
    """A call made in a thread; its result (or exception) read once it is done."""

    def __init__(self, call) -> None:
        self.result: Any = None
        self.error: BaseException | None = None
        self.thread = threading.Thread(target=self._run, args=(call,))
        self.thread.start()

    def _run(self, call) -> None:
        try:
            self.result = call()
        except BaseException as exc:  # reported by `value`
            self.error = exc

    @property
    def done(self) -> bool:
        return not self.thread.is_alive()

    def value(self) -> Any:
        self.thread.join(BOUND)
        assert self.done, "the background call did not finish"
        if self.error:
            raise self.error
        return self.result


def control(sandbox, path: str, payload: dict[str, Any]) -> httpx.Response:
    return httpx.post(
        f"{sandbox.base_url}{path}", json=payload, auth=(sandbox.username, sandbox.password), timeout=BOUND
    )


def test_health_and_an_auth_are_answered_while_a_clock_move_is_held(sandbox, gateway):
    held = Held()
    held.add_to(sandbox.sandbox.gateway)
    advance = InBackground(lambda: control(sandbox, "/_sandbox/clock/advance", {"by": "P1D"}))
    assert held.started.wait(BOUND)

    health = httpx.get(f"{sandbox.base_url}/_sandbox/health", timeout=BOUND)
    record = gateway.one(card_auth(orderreference="during-the-move"))

    assert health.status_code == 200
    assert record["errorcode"] == "0"
    assert not advance.done  # both were answered while the clock move was still held
    held.release.set()
    assert advance.value().status_code == 200


def test_a_long_clock_move_commits_and_lets_a_waiting_writer_in(db_path, store_kind):
    """The days of a move share one transaction (jobwrites.py); a payment waiting for the write lock
    makes it commit at the end of the day it is on, instead of at its bounds (31 days here)."""
    if store_kind == "postgresql":
        pytest.skip("another worker's waiting writer is not known to PostgreSQL's store: the bounds apply")
    sandbox = gwkit.sandbox.Sandbox(db_path, clock_start=CLOCK)
    gateway, held, seen = sandbox.gateway, Held(), []

    def writing_job(job: Any, day: date) -> dict[str, Any]:
        job.writes.conn.execute("INSERT INTO meta (key, value) VALUES (?, 'x')", (f"moved-{day}",))
        if day == CLOCK.date().replace(day=CLOCK.day + 2):
            held.wait()  # day 2 of the move, its rows not committed
        return {}

    def payment() -> None:  # a writer beside the move: what has the move committed when it gets in?
        with gateway.store.write() as conn:
            seen.append(conn.execute("SELECT count(*) FROM meta WHERE key LIKE 'moved-%'").fetchone()[0])

    gateway.store.meta_set_default("job:writing:through", CLOCK.date().isoformat())
    gateway.daily_jobs.append(DailyJob("writing", 98, writing_job))
    try:
        move = InBackground(lambda: sandbox.advance(by="P10D"))
        assert held.started.wait(BOUND)
        waiting = InBackground(payment)
        while not gateway.store.writer_waiting:  # until the payment queues for the lock (no sleep)
            assert not waiting.done, waiting.value()
            threading.Event().wait(0.001)
        held.release.set()
        move.value(), waiting.value()
    finally:
        sandbox.close()
    assert seen == [2]  # days 1 and 2, committed for it; the other 8 days came after
    assert Database(db_path).value("SELECT count(*) FROM meta WHERE key LIKE 'moved-%'") == 10


def test_an_auth_is_written_while_a_query_is_held_and_the_query_sees_one_consistent_view(
    sandbox, gateway, monkeypatch
):
    before = gateway.one(card_auth(orderreference="before"))["transactionreference"]
    held = Held()
    handlers = sandbox.sandbox.gateway.tables.request_handlers
    query = handlers["TRANSACTIONQUERY"]

    def held_query(ctx, request):
        held.wait()
        return query(ctx, request)

    monkeypatch.setitem(handlers, "TRANSACTIONQUERY", held_query)
    asker = Gateway(sandbox.base_url)
    try:
        answer = InBackground(lambda: asker.one(query_request(orderreference=["before", "during"])))
        assert held.started.wait(BOUND)
        during = gateway.one(
            card_auth(orderreference="during")
        )  # needs the write lock the query does not hold
        assert during["errorcode"] == "0"
        assert not answer.done
        held.release.set()
        found = [r["transactionreference"] for r in answer.value()["records"]]
    finally:
        asker.close()
    assert found == [before]  # the view the query started with: the AUTH written meanwhile is not half in it
    assert {r["transactionreference"] for r in gateway.query(orderreference=["before", "during"])} == {
        before,
        during["transactionreference"],
    }


def test_stopping_the_server_ends_a_long_clock_move_after_its_day_and_keeps_that_day(db_path, store_kind):
    handle = gwkit.sandbox.start(db_path, clock_start=CLOCK)
    held = Held()
    gateway = handle.sandbox.gateway
    held.add_to(gateway)
    stop_work = gateway.stop_work

    def stop_then_release() -> None:  # the held day ends only once the server has asked the work to stop
        stop_work()
        held.release.set()

    gateway.stop_work = stop_then_release
    advance = InBackground(lambda: control(handle, "/_sandbox/clock/advance", {"by": "P1Y"}))
    assert held.started.wait(BOUND)
    stopping = InBackground(handle.stop)
    stopping.value()
    advance.thread.join(BOUND)

    assert held.days == [date(2026, 1, 16)]  # one day of 365 ran: the move stopped after it
    database = Database(db_path)
    if store_kind == "sqlite":  # PostgreSQL has no file of its own to check: its transactions are whole
        assert database.rows("PRAGMA integrity_check") == [("ok",)]
    marks = dict(database.rows("SELECT job, through FROM site_jobs"))  # the one site's
    assert marks["held"] == "2026-01-16"  # the day that ran is committed
    assert all(day <= "2026-01-16" for day in marks.values())


def test_an_internal_error_is_a_json_500_with_a_logged_reference_and_the_connection_stays_usable(
    sandbox, monkeypatch, caplog
):
    answer = sandbox.sandbox.answer

    def broken(request):
        raise RuntimeError(f"a bug that quotes the card {VISA}")

    monkeypatch.setattr(sandbox.sandbox, "answer", broken)
    conn = http.client.HTTPConnection(sandbox.base_url.removeprefix("http://"), timeout=BOUND)
    try:
        with caplog.at_level(logging.ERROR, logger="gwkit.sandbox"):
            conn.request("GET", "/_sandbox/health")
            failed = conn.getresponse()
            body = json.loads(failed.read())
        sock = conn.sock
        monkeypatch.setattr(sandbox.sandbox, "answer", answer)
        conn.request("GET", "/_sandbox/health")
        again = conn.getresponse()
        again.read()
    finally:
        conn.close()

    # the one internal-error answer (web/sandbox.internal_error): JSON as every sandbox answer is
    assert failed.status == 500 and failed.getheader("content-type") == "application/json"
    assert body["error"] == "internal error" and body["reference"].startswith("E-")
    assert "RuntimeError" not in json.dumps(body)
    assert again.status == 200 and sock is not None and conn.sock is None  # same socket, closed only by us
    logged = caplog.text
    assert body["reference"] in logged and "RuntimeError" in logged and VISA not in logged


# connections: raw sockets on loopback; a closed connection is seen as EOF (recv returns b"")


@pytest.fixture
def serve(db_path):
    """A sandbox with some limits made small: those a test waits out, never those it must beat."""
    started = []

    def serve_(**small: float) -> gwkit.sandbox.SandboxHandle:
        limits = ServerLimits(
            **{"keep_alive_seconds": BOUND, "header_read_seconds": BOUND, "body_read_seconds": BOUND, **small}
        )
        started.append(gwkit.sandbox.start(db_path, clock_start=CLOCK, limits=limits))
        return started[-1]

    yield serve_
    for handle in started:
        handle.stop()


def connect(handle) -> socket.socket:
    host, port = handle.base_url.removeprefix("http://").rsplit(":", 1)
    return socket.create_connection((host, int(port)), timeout=BOUND)


def read_until_closed(sock: socket.socket) -> bytes:
    """Everything the server sends until it closes the connection (a timeout fails the test)."""
    received = b""
    while chunk := sock.recv(65536):
        received += chunk
    return received


def health_request() -> bytes:
    return b"GET /_sandbox/health HTTP/1.1\r\nHost: sandbox\r\n\r\n"


def read_answer(sock: socket.socket, chunk: int = 1 << 20) -> tuple[int, bytes]:
    """One HTTP answer on a kept-alive connection: its status and body (read `chunk` bytes at a time)."""
    head = b""
    while b"\r\n\r\n" not in head:
        byte = sock.recv(1)
        assert byte, f"the connection closed before an answer: {head!r}"
        head += byte
    status = int(head.split(b" ", 2)[1])
    length = int(
        next(
            line.split(b":")[1] for line in head.split(b"\r\n") if line.lower().startswith(b"content-length")
        )
    )
    body = bytearray()
    while len(body) < length:
        data = sock.recv(min(chunk, length - len(body)))
        assert data, f"the connection closed after {len(body)} of {length} bytes"
        body += data
    return status, bytes(body)


def test_a_connection_that_sends_nothing_is_closed(serve):
    with connect(serve(header_read_seconds=0.2)) as sock:
        assert read_until_closed(sock) == b""


def test_a_request_head_that_never_completes_is_closed(serve):
    with connect(serve(header_read_seconds=0.2)) as sock:
        sock.sendall(b"POST /json/ HTTP/1.1\r\nHost: sandbox\r\nContent-Ty")
        assert read_until_closed(sock) == b""


def test_an_idle_kept_alive_connection_is_closed_after_its_answer(serve):
    with connect(serve(keep_alive_seconds=0.2)) as sock:
        sock.sendall(health_request())
        assert b"HTTP/1.1 200" in read_until_closed(sock)  # answered, then closed when idle


def test_a_body_that_does_not_arrive_is_a_408(serve):
    with connect(serve(body_read_seconds=0.2)) as sock:
        sock.sendall(
            b"POST /json/ HTTP/1.1\r\nHost: sandbox\r\nContent-Type: application/json\r\n"
            b'Content-Length: 500\r\n\r\n{"request": ['
        )
        answer = read_until_closed(sock)
    assert answer.startswith(b"HTTP/1.1 408")
    assert b"request body too slow" in answer


def a_large_answer(handle) -> bytes:
    """A request whose answer is 9 MB (20 queries of 500 records), more than the kernel's socket buffers
    take in, as raw HTTP with credentials."""
    gateway = Gateway(handle.base_url)
    for _ in range(5):
        gateway.records(*[card_auth(orderreference="large-answer")] * 100)
    gateway.close()
    body = json.dumps(
        {
            "request": [{**query_request(orderreference="large-answer"), "sitereference": "test_gwkit12345"}]
            * 20
        }
    ).encode()
    credentials = base64.b64encode(f"{handle.username}:{handle.password}".encode())
    return (
        b"POST /json/ HTTP/1.1\r\nHost: sandbox\r\nContent-Type: application/json\r\nAuthorization: Basic "
        + credentials
        + b"\r\nContent-Length: "
        + str(len(body)).encode()
        + b"\r\n\r\n"
        + body
    )


def small_window(handle) -> socket.socket:
    """A connection whose client takes little at a time (a 4 KiB receive buffer): a large answer backs up."""
    host, port = handle.base_url.removeprefix("http://").rsplit(":", 1)
    sock = socket.socket()
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    sock.settimeout(BOUND)
    sock.connect((host, int(port)))
    return sock


def test_a_client_that_stops_reading_a_large_answer_is_dropped(serve):
    handle = serve(write_stall_seconds=0.2)
    request = a_large_answer(handle)
    with small_window(handle) as sock:
        sock.sendall(request)
        hang_up = select.poll()
        hang_up.register(
            sock, select.POLLRDHUP
        )  # not POLLIN: the waiting answer does not count, a reset does
        events = hang_up.poll(BOUND * 1000)
        assert events and events[0][1] & (select.POLLHUP | select.POLLERR | select.POLLRDHUP)
    with connect(handle) as other:
        other.sendall(health_request())
        assert read_answer(other)[0] == 200


def test_a_slow_client_that_keeps_reading_gets_its_whole_answer(serve):
    handle = serve(write_stall_seconds=2)
    request = a_large_answer(handle)
    with small_window(handle) as sock:
        sock.sendall(request)
        status, body = read_answer(sock, chunk=4096)
    assert status == 200 and len(body) > 4_000_000
    answer = json.loads(body)
    assert len(answer["response"]) == 20 and all(len(r["records"]) == 500 for r in answer["response"])


def test_connections_beyond_the_bound_get_503_and_those_within_it_are_served(serve):
    handle = serve(max_connections=3)
    opened: list[socket.socket] = []

    def served_on_a_new_connection() -> int:
        opened.append(connect(handle))
        opened[-1].sendall(health_request())
        return read_answer(opened[-1])[0]

    try:
        assert served_on_a_new_connection() == 200
        assert served_on_a_new_connection() == 200
        assert served_on_a_new_connection() == 503  # three open connections: the bound
        opened[0].sendall(health_request())
        assert read_answer(opened[0])[0] == 200  # those within the bound go on being served
    finally:
        for sock in opened:
            sock.close()


def test_a_write_opened_inside_another_on_the_same_thread_is_refused_and_nothing_is_kept(db_path):
    store = open_store(db_path)
    try:
        with pytest.raises(RuntimeError, match="inside another"):
            with store.write() as conn:
                store.meta_set(conn, "written", "yes")
                with store.write():
                    pass  # pragma: no cover - refused before it opens
        assert store.meta_get("written") is None
        with store.write() as conn:  # the turn was given back
            store.meta_set(conn, "written", "later")
        assert store.meta_get("written") == "later"
    finally:
        store.close()


def open_files(path) -> int:
    """How many of this process's file descriptors are open on `path` (Linux: /proc/self/fd)."""
    fds = Path("/proc/self/fd")
    return sum(1 for fd in fds.iterdir() if _target(fd) == str(path))


def _target(fd: Path) -> str | None:
    try:
        return os.readlink(fd)
    except OSError:  # closed meanwhile
        return None


@pytest.mark.skipif(not Path("/proc/self/fd").is_dir(), reason="counts file descriptors through /proc")
def test_connections_of_finished_threads_are_closed_so_descriptors_do_not_run_out(db_path, store_kind):
    if store_kind == "postgresql":
        pytest.skip("SQLite opens a connection per thread; PostgreSQL's come from a pool of a fixed size")
    store = open_store(db_path)
    try:

        def query_once() -> None:
            store.meta_get("clock")

        for _ in range(20):  # one short-lived thread after another, as a notebook's callbacks come and go
            thread = threading.Thread(target=query_once)
            thread.start()
            thread.join()
        # Each new thread's connection closed the finished ones' (SQLite may keep a closed one's
        # descriptor for reuse while the file is locked): a few, not one per thread that ever ran.
        assert open_files(db_path) <= 4
    finally:
        store.close()
    assert open_files(db_path) == 0
