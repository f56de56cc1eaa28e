"""gwkit/sandbox/web/uvicorn_adapter.py: what the sandbox needs of a server beyond uvicorn's options,
through uvicorn's public `Config` and `Server` and a protocol that wraps uvicorn's HTTP/1.1 one.
These run a small ASGI app (no sandbox) on loopback over whichever uvicorn is installed:
`make test-uvicorn-matrix` runs them over each supported version."""

from __future__ import annotations

import ast
import logging
import os
import re
import socket
import threading
import tomllib
from collections.abc import Iterator
from pathlib import Path

import pytest
import uvicorn

from gwkit.sandbox.web.app import CLOSE_CONNECTION
from gwkit.sandbox.web.server import bind
from gwkit.sandbox.web.uvicorn_adapter import BackgroundServer, Connections, config_for

ROOT = Path(__file__).resolve().parents[2]
BOUND = 30  # seconds: a broken server fails the test instead of hanging it


async def small_app(scope, receive, send):
    """`/close`: the connection closed without an answer; anything else: 200 and the path."""
    if scope["path"] == "/close":
        scope["extensions"][CLOSE_CONNECTION]()
        return
    body = scope["path"].encode()
    await send(
        {"type": "http.response.start", "status": 200, "headers": [(b"content-length", b"%d" % len(body))]}
    )
    await send({"type": "http.response.body", "body": body})


class Served:
    def __init__(self, connections: Connections):
        self.connections = connections
        self.sock = bind("127.0.0.1", 0)
        self.stopping, self.stopped = threading.Event(), threading.Event()
        config = config_for(
            small_app, connections, log_level="warning", lifespan="off", timeout_keep_alive=2 * BOUND
        )
        self.server = BackgroundServer(config, stopping=self.stopping.set, stopped=self.stopped.set)
        self.thread = threading.Thread(target=self.server.run, kwargs={"sockets": [self.sock]}, daemon=True)
        self.thread.start()

    def connect(self) -> socket.socket:
        return socket.create_connection(self.sock.getsockname()[:2], timeout=BOUND)

    def stop(self) -> None:
        self.server.request_exit()
        self.thread.join(BOUND)
        self.sock.close()


@pytest.fixture
def serve() -> Iterator:
    started: list[Served] = []

    def serve_(
        max_connections: int | None = None, header_seconds: float = BOUND, allowance=lambda: 0
    ) -> Served:
        connections = Connections(
            max_connections=max_connections,
            header_seconds=header_seconds,
            write_stall_seconds=BOUND,
            allowance=allowance,
        )
        started.append(Served(connections))
        return started[-1]

    yield serve_
    for served in started:
        served.stop()


def get(path: str, *, close: bool = False) -> bytes:
    return f"GET {path} HTTP/1.1\r\nHost: x\r\n{'Connection: close' if close else ''}\r\n\r\n".replace(
        "\r\n\r\n\r\n", "\r\n\r\n"
    ).encode()


def read_until_closed(sock: socket.socket) -> bytes:
    received = b""
    while chunk := sock.recv(65536):
        received += chunk
    return received


def answer_head(sock: socket.socket) -> bytes:
    head = b""
    while b"\r\n\r\n" not in head:
        byte = sock.recv(1)
        assert byte, f"closed before an answer: {head!r}"
        head += byte
    return head


def test_the_app_closes_the_connection_without_an_answer_and_uvicorn_logs_nothing(serve, caplog):
    served = serve()
    with caplog.at_level(logging.WARNING, logger="uvicorn"):
        with served.connect() as sock:
            sock.sendall(get("/close"))
            assert read_until_closed(sock) == b""  # not one byte: no status line, no 500
        with served.connect() as sock:  # the server goes on serving
            sock.sendall(get("/after", close=True))
            assert read_until_closed(sock).endswith(b"/after")
    assert [r.getMessage() for r in caplog.records if r.name.startswith("uvicorn")] == []


def test_answers_carry_a_date_in_canonical_case_and_no_server_header(serve):
    with serve().connect() as sock:
        sock.sendall(get("/", close=True))
        answer = read_until_closed(sock)
    head = answer.split(b"\r\n\r\n")[0]
    assert re.search(rb"\r\nDate: \w{3}, \d\d \w{3} \d{4} \d\d:\d\d:\d\d GMT", head)
    assert b"\r\nserver:" not in head.lower()


def test_connections_beyond_the_bound_get_503_unless_allowed(serve):
    allowed = [0]
    served = serve(max_connections=2, allowance=lambda: allowed[0])
    with served.connect() as first:
        first.sendall(get("/first"))
        assert answer_head(first).startswith(b"HTTP/1.1 200")
        with served.connect() as second:
            second.sendall(get("/second"))
            assert read_until_closed(second).startswith(b"HTTP/1.1 503")  # two open connections: the bound
        with served.connect() as third:
            allowed[0] = 1  # one connection more is allowed (a request waiting out a latency)
            third.sendall(get("/third"))
            assert answer_head(third).startswith(b"HTTP/1.1 200")


def test_a_request_head_that_never_completes_after_a_pipelined_answer_is_closed(serve):
    """A next request's head sent with the first, completed a byte at a time after its answer, is
    held to the head deadline (not to the longer keep-alive, which a test would wait out)."""
    served = serve(header_seconds=0.2)
    with served.connect() as sock:
        sock.sendall(get("/first") + b"GET /second HTTP/1.1\r\nHo")
        assert answer_head(sock).startswith(b"HTTP/1.1 200") and sock.recv(6) == b"/first"
        sock.sendall(b"s")
        assert read_until_closed(sock) == b""


def test_request_exit_stops_the_server_at_once_with_its_hooks_called(serve, caplog):
    """Idle connections are closed, one with a head half sent too, and nothing is logged (a request
    under way is answered first: test_stop.py)."""
    served = serve()
    with caplog.at_level(logging.INFO, logger="uvicorn"), served.connect() as idle, served.connect() as busy:
        idle.sendall(get("/"))
        assert answer_head(idle).startswith(b"HTTP/1.1 200") and idle.recv(1) == b"/"
        busy.sendall(b"GET /late HTTP/1.1\r\nHost: x\r\n")  # its head not yet complete
        served.server.request_exit()
        assert served.stopping.is_set()  # at once, in the caller's thread
        assert idle.recv(1) == b""  # the idle kept-alive connection is closed
        served.thread.join(BOUND)
        assert busy.recv(1) == b""  # so is one whose request had not begun
    assert not served.thread.is_alive() and served.stopped.is_set()
    assert served.connections.open == {}
    assert [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING] == []


def test_an_app_with_a_lifespan_is_stopped_by_uvicorn_which_runs_its_shutdown():
    shut_down = threading.Event()

    async def app_with_lifespan(scope, receive, send):
        if scope["type"] == "lifespan":
            while (await receive())["type"] != "lifespan.shutdown":
                await send({"type": "lifespan.startup.complete"})
            shut_down.set()
            await send({"type": "lifespan.shutdown.complete"})
            return
        await small_app(scope, receive, send)

    connections = Connections(max_connections=None, header_seconds=BOUND, write_stall_seconds=BOUND)
    sock = bind("127.0.0.1", 0)
    server = BackgroundServer(config_for(app_with_lifespan, connections, log_level="warning", lifespan="on"))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    with socket.create_connection(sock.getsockname()[:2], timeout=BOUND) as client:
        client.sendall(get("/", close=True))
        assert read_until_closed(client).endswith(b"/")
    server.request_exit()
    thread.join(BOUND)
    sock.close()
    assert not thread.is_alive() and shut_down.is_set()


def test_the_installed_uvicorn_is_one_pyproject_allows():
    extras = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"]
    [requirement] = [r for r in extras["sandbox"] if r.startswith("uvicorn")]
    lowest = re.fullmatch(r"uvicorn>=(\d+)\.(\d+)", requirement)
    assert lowest, f"{requirement}: a lower bound only (the adapter relies on no one version's internals)"
    installed = tuple(int(part) for part in uvicorn.__version__.split(".")[:2])
    assert installed >= tuple(map(int, lowest.groups())), (
        f"uvicorn {uvicorn.__version__} is below {requirement}"
    )


def test_the_uvicorn_a_matrix_run_asked_for_is_the_one_imported():
    """`make test-uvicorn-matrix` names the version it pins: a run over another would prove nothing."""
    expected = os.environ.get("GWKIT_EXPECT_UVICORN")
    if not expected:
        pytest.skip("not a run of make test-uvicorn-matrix")
    assert uvicorn.__version__ == expected


# What gwkit takes from uvicorn: its public Config and Server, and (for the adapter to wrap) the
# HTTP/1.1 protocol class that `Config(http="h11")` names.
ALLOWED = {"uvicorn": {"Config", "Server"}, "uvicorn.protocols.http.h11_impl": {"H11Protocol"}}


def uvicorn_uses(source: str) -> set[str]:
    """Each name of uvicorn a module imports or reads (`uvicorn.X`), as "module:name"."""
    uses = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] == "uvicorn":
            uses |= {f"{node.module}:{alias.name}" for alias in node.names}
        elif isinstance(node, ast.Import):
            uses |= {f"{a.name}:*" for a in node.names if a.name.startswith("uvicorn.")}
        elif (
            isinstance(node, ast.Attribute)
            and isinstance(node.value, ast.Name)
            and node.value.id == "uvicorn"
        ):
            uses.add(f"uvicorn:{node.attr}")
    return uses


def test_gwkit_takes_from_uvicorn_only_config_server_and_the_protocol_it_wraps():
    found = {
        f"{path.relative_to(ROOT)} {use}"
        for path in (ROOT / "gwkit").rglob("*.py")
        for use in uvicorn_uses(path.read_text(encoding="utf-8"))
        if use.split(":")[1] not in ALLOWED.get(use.split(":")[0], set())
    }
    assert found == set()


def test_the_use_reader_sees_imports_and_attributes():
    source = "import uvicorn.server\nfrom uvicorn.main import run\nuvicorn.Server(uvicorn.Config(a))\nuvicorn.run(a)"
    assert uvicorn_uses(source) == {
        "uvicorn.server:*",
        "uvicorn.main:run",
        "uvicorn:Server",
        "uvicorn:Config",
        "uvicorn:run",
    }
