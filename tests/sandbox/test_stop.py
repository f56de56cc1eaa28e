"""Stopping a sandbox served in a background thread (`SandboxHandle.stop`, what a notebook's kernel
does at exit): a request under way is still answered, an idle kept-alive connection is closed, the
port then refuses connections, and stopping twice is harmless.

Nothing waits on wall-clock time: a query is held inside the sandbox (in the server's thread for
slow work) on a threading.Event until the test has seen the server begin to stop.
"""

from __future__ import annotations

import base64
import http.client
import json
import socket
import threading

import pytest

import gwkit.sandbox
from support.sandbox import CLOCK, query_request

pytestmark = pytest.mark.both_stores  # each test on SQLite and on PostgreSQL

BOUND = 30  # seconds: an upper bound so a broken server fails the test instead of hanging it


def host_port(handle) -> tuple[str, int]:
    host, port = handle.base_url.removeprefix("http://").rsplit(":", 1)
    return host, int(port)


def refuses_connections(handle) -> bool:
    try:
        socket.create_connection(host_port(handle), timeout=BOUND).close()
    except ConnectionRefusedError:
        return True
    return False


@pytest.fixture
def handle(db_path):
    started = gwkit.sandbox.start(db_path, clock_start=CLOCK)
    yield started
    started.stop()


def test_a_request_under_way_when_stop_begins_is_answered_then_the_port_refuses(handle, monkeypatch):
    answer = handle.sandbox.answer
    held, release = threading.Event(), threading.Event()

    def held_answer(request):
        held.set()
        assert release.wait(BOUND), "the test never released the request"
        return answer(request)

    monkeypatch.setattr(handle.sandbox, "answer", held_answer)
    stopping = threading.Event()
    stop_work = handle.sandbox.gateway.stop_work

    def stop_work_then_note() -> None:  # the server's shutdown calls this first
        stop_work()
        stopping.set()

    monkeypatch.setattr(handle.sandbox.gateway, "stop_work", stop_work_then_note)
    conn = http.client.HTTPConnection(*host_port(handle), timeout=BOUND)
    credentials = base64.b64encode(f"{handle.username}:{handle.password}".encode()).decode()
    envelope = {
        "alias": handle.username,
        "version": "1.00",
        "request": [query_request(orderreference="held")],
    }
    answered: dict[str, object] = {}

    def ask() -> None:
        conn.request(
            "POST",
            "/json/",
            body=json.dumps(envelope),
            headers={"content-type": "application/json", "authorization": f"Basic {credentials}"},
        )
        response = conn.getresponse()
        answered.update(status=response.status, body=json.loads(response.read()))
        answered["then"] = conn.sock.recv(1) if conn.sock else b""

    asker = threading.Thread(target=ask)
    asker.start()
    assert held.wait(BOUND)
    stopper = threading.Thread(target=handle.stop)
    stopper.start()
    assert stopping.wait(BOUND)
    release.set()
    asker.join(BOUND)
    stopper.join(BOUND)
    conn.close()

    assert not stopper.is_alive() and not handle.running
    assert answered["status"] == 200
    assert [(r["errorcode"], r["records"]) for r in answered["body"]["response"]] == [("0", [])]
    assert answered["then"] == b""  # then the server closed the connection
    assert refuses_connections(handle)


def test_an_idle_kept_alive_connection_is_closed_at_stop(handle):
    conn = http.client.HTTPConnection(*host_port(handle), timeout=BOUND)
    conn.request("GET", "/_sandbox/health")
    assert conn.getresponse().read()
    kept = conn.sock

    handle.stop()

    assert kept.recv(1) == b""  # closed by the server, not left open
    conn.close()
    assert refuses_connections(handle)


def test_stopping_twice_is_harmless_and_a_handle_stopped_before_any_request_refuses(handle):
    handle.stop()
    handle.stop()

    assert not handle.running
    assert refuses_connections(handle)
