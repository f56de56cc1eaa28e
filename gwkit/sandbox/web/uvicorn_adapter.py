"""uvicorn, used through its public `Config` and `Server`, and what the sandbox needs of a server
that uvicorn does not offer (docs/architecture.md, "uvicorn through its public API", says where
each of these jobs is done and why).

- `GuardedConnection`, the protocol given as `Config(http=...)`: uvicorn's HTTP/1.1 protocol
  wrapped, not subclassed. It sees only what asyncio tells every protocol (a connection made, bytes
  received, the write buffer full or drained, the connection lost) and passes each on unchanged;
  it never reads nor overrides anything of uvicorn's. With the transport that asyncio gives it, it
  closes a connection whose request head is too slow to arrive, resets one whose client stops
  reading its answer, and closes one without an answer when the app asks (the drop fault).
- `edge`, the ASGI middleware in front of the app: finds the request's `GuardedConnection` by the
  connection's two addresses (the scope's `client` and `server`), offers the app its close in the
  scope (`scope["extensions"][CLOSE_CONNECTION]()`), answers 503 beyond the connection bound, and
  adds the `Date` header (uvicorn's own is switched off: it would be in lower case); behind it,
  ambiguous framing is refused (framing.py).
- `BackgroundServer`: `uvicorn.Server.serve` awaited in an event loop of its own, stopped from any
  thread by `request_exit()` at once: the connections close themselves (each busy one after its
  answer), then the task awaiting `serve` is cancelled; with the sandbox's hooks at stop. Of the
  `Server` it reads `started` and sets `should_exit` (uvicorn's own stop, as a signal does).

Any uvicorn from `pyproject.toml`'s lower bound up works alike: `make test-uvicorn-matrix` runs the
sandbox's HTTP tests over the oldest supported, a middle one and the locked version.
"""

from __future__ import annotations

import asyncio
import socket
import struct
import time
from collections.abc import Callable
from email.utils import formatdate
from typing import Any, ClassVar

import uvicorn
from starlette.types import ASGIApp, Message, Receive, Scope, Send
from uvicorn.protocols.http.h11_impl import H11Protocol

from .app import CLOSE_CONNECTION
from .framing import refuse_ambiguous_framing

__all__ = ["BackgroundServer", "Connections", "GuardedConnection", "config_for"]

Address = tuple[str, int]


class Connections:
    """The open connections of one server, by their two addresses, and the bounds they are held to:
    `max_connections` (beyond it, 503; `allowance()` more for requests waiting out an injected
    latency, which hold their own site's budget instead), a request head within `header_seconds`, and
    an answer whose client drains nothing for `write_stall_seconds` is dropped."""

    def __init__(
        self,
        *,
        max_connections: int | None,
        header_seconds: float,
        write_stall_seconds: float,
        allowance: Callable[[], int] = lambda: 0,
    ) -> None:
        self.max_connections = max_connections
        self.header_seconds = header_seconds
        self.write_stall_seconds = write_stall_seconds
        self.allowance = allowance
        self.open: dict[tuple[Address, Address], GuardedConnection] = {}
        self.in_flight = 0  # requests the app is answering
        self.stopping = False
        self._all_done: asyncio.Event | None = None

    async def close_all(self, timeout: float | None) -> None:
        """The server's stop: each idle connection closed now, each busy one after its answer (a
        connection opened meanwhile at once); after `timeout`, those left are cut."""
        self.stopping, self._all_done = True, asyncio.Event()
        for connection in list(self.open.values()):
            connection.close_when_idle()
        self.changed()
        try:
            await asyncio.wait_for(self._all_done.wait(), timeout)
        except TimeoutError:
            for connection in list(self.open.values()):
                connection.cut()

    def changed(self) -> None:
        if self._all_done is not None and not self.open and not self.in_flight:
            self._all_done.set()

    def full(self) -> bool:
        if self.max_connections is None:
            return False
        return len(self.open) >= self.max_connections + self.allowance()

    def of(self, scope: Scope) -> GuardedConnection | None:
        client, server = scope.get("client"), scope.get("server")
        if not client or not server:
            return None
        return self.open.get(((str(client[0]), int(client[1])), (str(server[0]), int(server[1]))))


def _address(info: Any) -> Address | None:
    return (str(info[0]), int(info[1])) if isinstance(info, (tuple, list)) and len(info) >= 2 else None


class GuardedConnection(asyncio.Protocol):
    """One connection: uvicorn's HTTP/1.1 protocol does the HTTP; this keeps the deadlines uvicorn
    lacks and can close the connection. uvicorn times out only idle keep-alive connections, and any
    byte received resets that: a client that connects and sends nothing, or sends a head a byte at a
    time, would hold a connection forever; one that never reads a large answer would hold it too.

    A subclass per server names its `Connections` (`protocol_for`): uvicorn builds the protocol with
    its own arguments only, which are passed on as they come."""

    connections: ClassVar[Connections]

    def __init__(self, **uvicorn_arguments: Any) -> None:
        self.http = H11Protocol(**uvicorn_arguments)
        self.loop = asyncio.get_running_loop()
        self.transport: asyncio.Transport | None = None
        self.key: tuple[Address, Address] | None = None
        self._head_timer: asyncio.TimerHandle | None = None
        self._stall_timer: asyncio.TimerHandle | None = None
        self._answering = False  # between a request's head and the end of its answer
        self._received_meanwhile = False  # bytes of a next (pipelined) request came while answering

    # asyncio's protocol interface: each call passed on to uvicorn's protocol

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self.transport = transport
        client = _address(transport.get_extra_info("peername"))
        server = _address(transport.get_extra_info("sockname"))
        if client and server:
            self.key = (client, server)
            self.connections.open[self.key] = self
        self._start_head_timer()
        self.http.connection_made(transport)
        if self.connections.stopping:
            self.close()

    def data_received(self, data: bytes) -> None:
        if self._answering:
            self._received_meanwhile = True
        elif self._head_timer is None:
            self._start_head_timer()  # the first bytes of a new request on a kept-alive connection
        self.http.data_received(data)

    def eof_received(self) -> None:
        self.http.eof_received()  # None: the transport closes itself

    def connection_lost(self, exc: Exception | None) -> None:
        self._stop_head_timer()
        self._stop_stall_timer()
        if self.key is not None and self.connections.open.get(self.key) is self:
            del self.connections.open[self.key]
        self.http.connection_lost(exc)
        self.connections.changed()

    def pause_writing(self) -> None:
        self.http.pause_writing()
        if self._stall_timer is None:
            self._watch_drain(None)

    def resume_writing(self) -> None:
        self._stop_stall_timer()
        self.http.resume_writing()

    # what the edge middleware calls

    def request_started(self) -> None:
        """A request's head has arrived in full (the app is called): its deadline is met."""
        self._stop_head_timer()
        self._answering, self._received_meanwhile = True, False

    def request_done(self) -> None:
        """The app has returned. Bytes that came meanwhile begin a next request: its head has a deadline."""
        self._answering = False
        if self.connections.stopping:
            self.close()
        elif self._received_meanwhile:
            self._received_meanwhile = False
            self._start_head_timer()

    def close(self) -> None:
        """Close the connection without an answer (the drop fault), or once its answer is sent."""
        if self.transport is not None:
            self.transport.close()

    def close_when_idle(self) -> None:
        if not self._answering:
            self.close()  # else request_done closes it

    def cut(self) -> None:
        if self.transport is not None:
            self.transport.abort()

    # the deadlines

    def _start_head_timer(self) -> None:
        self._stop_head_timer()
        self._head_timer = self.loop.call_later(self.connections.header_seconds, self._head_too_slow)

    def _stop_head_timer(self) -> None:
        if self._head_timer is not None:
            self._head_timer.cancel()
            self._head_timer = None

    def _head_too_slow(self) -> None:
        self._head_timer = None
        if self.transport is not None and not self.transport.is_closing():
            self.transport.close()

    def _watch_drain(self, size_before: int | None) -> None:
        """While the answer waits for the client, check it keeps draining; if nothing left the buffer
        in `write_stall_seconds`, the client stopped reading: drop the connection. (A slow reader that
        keeps reading is never cut, however long its answer takes.)"""
        assert self.transport is not None
        size = self.transport.get_write_buffer_size()
        if size_before is not None and size >= size_before:
            self._stall_timer = None
            self._reset()
            return
        self._stall_timer = self.loop.call_later(
            self.connections.write_stall_seconds, self._watch_drain, size
        )

    def _stop_stall_timer(self) -> None:
        if self._stall_timer is not None:
            self._stall_timer.cancel()
            self._stall_timer = None

    def _reset(self) -> None:
        """Drop the connection at once, what the kernel still holds for it included (a reset, not a
        close: close() waits for the buffer to drain, and the kernel would go on holding the rest)."""
        assert self.transport is not None
        sock = self.transport.get_extra_info("socket")
        if sock is not None:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        self.transport.abort()


def protocol_for(connections: Connections) -> type[GuardedConnection]:
    """The protocol class of one server (uvicorn makes one instance per connection)."""
    return type("GuardedConnection", (GuardedConnection,), {"connections": connections})


SERVICE_UNAVAILABLE = b"Service Unavailable"


def edge(app: ASGIApp, connections: Connections) -> ASGIApp:
    """`app` behind the server's edge: each request's connection found, its head deadline met, its
    close offered to the app, the connection bound kept, and a `Date` on every answer."""

    async def at_the_edge(scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            return await app(scope, receive, send)
        connection = connections.of(scope)
        if connection is None:  # not served by a GuardedConnection (another server's app)
            return await app(scope, receive, with_date(send))
        connection.request_started()
        connections.in_flight += 1
        try:
            if connections.full():
                return await service_unavailable(with_date(send))
            scope = {
                **scope,
                "extensions": {**(scope.get("extensions") or {}), CLOSE_CONNECTION: connection.close},
            }
            await app(scope, receive, with_date(send))
        finally:
            connections.in_flight -= 1
            connection.request_done()
            connections.changed()

    return at_the_edge


def with_date(send: Send) -> Send:
    """`send`, adding the `Date` header (RFC 9110 section 6.6.1) to an answer that has none."""

    async def dated(message: Message) -> None:
        if message["type"] == "http.response.start":
            headers = list(message.get("headers", ()))
            if not any(name.lower() == b"date" for name, _ in headers):
                headers.insert(0, (b"Date", http_date()))
            message = {**message, "headers": headers}
        await send(message)

    return dated


_date: tuple[int, bytes] = (0, b"")


def http_date() -> bytes:
    """The time now as an HTTP date, formatted once a second (as uvicorn's own Date header is)."""
    global _date
    second = int(time.time())
    if _date[0] != second:
        _date = (second, formatdate(second, usegmt=True).encode())
    return _date[1]


async def service_unavailable(send: Send) -> None:
    """uvicorn's own answer beyond its `limit_concurrency`, which this bound replaces."""
    headers = [
        (b"Content-Type", b"text/plain; charset=utf-8"),
        (b"Content-Length", str(len(SERVICE_UNAVAILABLE)).encode()),
        (b"Connection", b"close"),
    ]
    await send({"type": "http.response.start", "status": 503, "headers": headers})
    await send({"type": "http.response.body", "body": SERVICE_UNAVAILABLE})


def config_for(app: ASGIApp, connections: Connections, **options: Any) -> uvicorn.Config:
    """uvicorn's `Config` for `app` behind the edge, served by `GuardedConnection`s.

    - `server_header`, `date_header`: off (their names would be in lower case; `edge` adds a `Date`);
    - `proxy_headers`: off, so that the scope's `client` is the connection's own address (the edge
      finds the connection by it); the sandbox reads no forwarded address;
    - `ws`: none (the sandbox serves no WebSocket; an upgrade would leave the guarded protocol);
    - `limit_concurrency`: none, `Connections` bounds the connections instead (with its allowance)."""
    return uvicorn.Config(
        edge(refuse_ambiguous_framing(app), connections),
        http=protocol_for(connections),
        ws="none",
        server_header=False,
        date_header=False,
        proxy_headers=False,
        limit_concurrency=None,
        **options,
    )


class BackgroundServer:
    """A uvicorn `Server`, run by `run()` (a thread's target, or the foreground of `gwkit sandbox`)
    and stopped by `request_exit()` from any thread: no new connection is served, what is under way
    is answered (within `timeout_graceful_shutdown`), every connection is closed, and `run` returns.

    `stopping()` is called as the stop begins (at once when asked by `request_exit`; within a tick of
    uvicorn's when a signal asked), `stopped()` once the server is done.

    A stop asked by `request_exit` is prompt (a notebook kernel's exit and every test's sandbox wait
    for it): the server's `Connections` close themselves, and once the last is closed the task
    serving uvicorn is cancelled, where uvicorn's own stop (its `should_exit`, which a signal sets)
    is seen within 0.1 s and pauses 0.1 s more. Before uvicorn has started, or where the app has a
    lifespan (whose shutdown uvicorn runs), its own stop is used."""

    TICK_SECONDS = 0.1  # how often a stop asked by a signal is looked for (uvicorn's own tick)

    def __init__(
        self,
        config: uvicorn.Config,
        *,
        stopping: Callable[[], None] = lambda: None,
        stopped: Callable[[], None] = lambda: None,
    ) -> None:
        self.server = uvicorn.Server(config)
        protocol = config.http
        self.connections = (
            protocol.connections
            if isinstance(protocol, type) and issubclass(protocol, GuardedConnection)
            else None
        )
        self.stopping = stopping
        self.stopped = stopped
        self._stop_begun = False
        self._loop: asyncio.AbstractEventLoop | None = None
        self._serving: asyncio.Task[None] | None = None
        self._closing: asyncio.Task[None] | None = None

    def run(self, sockets: list[socket.socket] | None = None) -> None:
        try:
            asyncio.run(self._serve(sockets))
        finally:
            self._begin_stop()
            self.stopped()

    def request_exit(self) -> None:
        """Ask the server to stop (any thread)."""
        self._begin_stop()
        loop = self._loop
        if loop is None:
            self.server.should_exit = True  # not serving yet: uvicorn stops right after its start
            return
        try:
            loop.call_soon_threadsafe(self._stop_promptly)
        except RuntimeError:  # its loop has closed: the server has stopped
            pass

    async def _serve(self, sockets: list[socket.socket] | None) -> None:
        self._loop = asyncio.get_running_loop()
        self._serving = asyncio.create_task(self.server.serve(sockets=sockets))
        watcher = asyncio.create_task(self._stop_begins_on_exit())
        try:
            await self._serving
        except asyncio.CancelledError:
            if self._closing is None:
                raise  # not cancelled by a prompt stop
        finally:
            watcher.cancel()

    def _stop_promptly(self) -> None:
        if self._closing is not None:
            return
        connections, server = self.connections, self.server
        if connections is None or server.config.lifespan != "off" or not server.started or server.should_exit:
            server.should_exit = True  # uvicorn's own stop (it runs the app's lifespan shutdown)
            return
        self._closing = asyncio.create_task(self._close_then_end(connections))

    async def _close_then_end(self, connections: Connections) -> None:
        await connections.close_all(self.server.config.timeout_graceful_shutdown)
        if self._serving is not None:
            self._serving.cancel()

    async def _stop_begins_on_exit(self) -> None:
        """A signal (Ctrl-C, SIGTERM) sets uvicorn's `should_exit`: the stop begins then too."""
        while not self.server.should_exit:
            await asyncio.sleep(self.TICK_SECONDS)
        self._begin_stop()

    def _begin_stop(self) -> None:
        if not self._stop_begun:
            self._stop_begun = True
            self.stopping()
