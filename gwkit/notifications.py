"""A URL notification listener in your own process: the merchant's notification handler, for tests
and notebooks.

    >>> listener = NotificationListener(password="s3cret")     # a free loopback port
    >>> gw.sandbox.notifications.add_rule(listener.url, password="s3cret")
    >>> gw.auth(...)
    >>> listener.wait_for(transactionreference=ref)[0].verified
    True

It takes the gateway's form POSTs, checks each `responsesitesecurity` against the password (as a
merchant's handler must), keeps what arrived, and answers 200, or what a fault says:
`fail_next(n)` answers the next `n` with HTTP 500 (watch the offline retries as the clock moves),
`hold_next(n)` keeps the next `n` without an answer until `release()` (a listener that never answers).
"""

from __future__ import annotations

import html
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Self
from urllib.parse import parse_qsl, unquote

from .errors import GwkitError
from .interface.notification import REFERENCE_FIELD, SIGNATURE_FIELD, signature_ok

__all__ = ["Notification", "NotificationListener", "NotificationMismatch"]

MAX_BODY_BYTES = 65536


class NotificationMismatch(GwkitError, AssertionError):
    """What a test expected of the notifications received is not what arrived."""


@dataclass(frozen=True)
class Notification:
    """One notification as it arrived. `verified`: the signature checked out (None: no password set,
    so nothing to check); `duplicate`: its notificationreference came before (a resend or a retry
    after a lost answer: a handler drops it); `answered`: the HTTP status the listener gave."""

    fields: dict[str, str]
    verified: bool | None
    duplicate: bool
    answered: int
    content_type: str
    received: datetime = field(default_factory=lambda: datetime.now(UTC))

    @property
    def notificationreference(self) -> str:
        return self.fields.get(REFERENCE_FIELD, "")

    @property
    def transactionreference(self) -> str:
        return self.fields.get("transactionreference", "")

    def __getitem__(self, name: str) -> str:
        return self.fields[name]


class NotificationListener:
    """A merchant's notification URL on a loopback port, in a background thread (see the module)."""

    def __init__(
        self, password: str | None = None, *, host: str = "127.0.0.1", port: int = 0, path: str = "/"
    ):
        self.password = password
        self.path = path if path.startswith("/") else "/" + path
        self.received: list[Notification] = []
        self._seen: set[str] = set()
        self._faults: list[int | None] = []  # per next arrival: a status to answer, or None: hold it
        self._release = threading.Event()
        self.holding = 0  # notifications held without an answer now (hold_next)
        self._callbacks: list[Callable[[Notification], Any]] = []
        self._changed = threading.Condition()
        self._server = ThreadingHTTPServer((host, port), _handler_for(self))
        self._server.daemon_threads = True
        bound_host, bound_port = self._server.server_address[:2]
        shown = bound_host.decode() if isinstance(bound_host, bytes) else bound_host
        self.url = f"http://{shown}:{bound_port}{self.path}"
        self._thread = threading.Thread(target=self._server.serve_forever, name="gwkit-notify", daemon=True)
        self._thread.start()

    def __repr__(self) -> str:
        return f"NotificationListener({self.url!r}, received={len(self.received)})"

    def _repr_html_(self) -> str:
        """A sentence in a notebook: where it listens, what arrived, whether signatures are checked."""
        with self._changed:
            count, duplicates = len(self.received), sum(n.duplicate for n in self.received)
            unverified = sum(n.verified is False for n in self.received)
        arrived = "nothing has arrived yet" if not count else f"{count} notification(s) arrived"
        if duplicates:
            arrived += f" ({duplicates} repeat(s) of one already received)"
        if self.password is None:
            checked = "No password: signatures are not checked."
        elif unverified:
            checked = f"Signatures are checked with your password: {unverified} did not match."
        else:
            checked = "Signatures are checked with your password."
        return f"<p>A notification listener at <code>{html.escape(self.url)}</code>: {arrived}. {checked}</p>"

    # faults

    def fail_next(self, count: int = 1, status: int = 500) -> None:
        """Answer the next `count` notifications with `status` (not 2xx: the gateway retries offline ones)."""
        _count(count)
        if not 300 <= status <= 599:
            raise ValueError("status must be an HTTP status of 300 to 599 (2xx is success)")
        with self._changed:
            self._faults.extend([status] * count)

    def hold_next(self, count: int = 1) -> None:
        """Keep the next `count` notifications without an answer until `release()` (or `stop()`)."""
        _count(count)
        self._release.clear()
        with self._changed:
            self._faults.extend([None] * count)

    def release(self) -> None:
        """Answer the held notifications (503: too late for the gateway, which stopped waiting)."""
        self._release.set()

    def wait_holding(self, count: int = 1, *, timeout: float = 10.0) -> None:
        """Wait until `count` notifications are held without an answer (NotificationMismatch at timeout)."""
        with self._changed:
            if not self._changed.wait_for(lambda: self.holding >= count, timeout):
                raise NotificationMismatch(
                    f"{self.holding} notification(s) held within {timeout:g} s, expected {count}"
                )

    # what arrived

    def on_notification(self, callback: Callable[[Notification], Any]) -> Callable[[Notification], Any]:
        """Call `callback(notification)` as each one arrives (from the listener's thread)."""
        self._callbacks.append(callback)
        return callback

    def notifications(self, **match: str) -> list[Notification]:
        """What arrived whose fields equal `match` (say transactionreference=...), in order."""
        with self._changed:
            return [n for n in self.received if all(n.fields.get(k) == v for k, v in match.items())]

    def wait_for(self, count: int = 1, *, timeout: float = 10.0, **match: str) -> list[Notification]:
        """Wait until `count` notifications matching `match` arrived; them (NotificationMismatch at
        the timeout)."""
        deadline = time.monotonic() + timeout
        with self._changed:
            while len(found := self.notifications(**match)) < count:
                left = deadline - time.monotonic()
                if left <= 0:
                    raise NotificationMismatch(
                        f"{len(found)} notification(s) matching {match} arrived within {timeout:g} s, "
                        f"expected {count}"
                    )
                self._changed.wait(left)
        return found

    def assert_notified_once(self, transactionreference: str, *, timeout: float = 10.0) -> Notification:
        """The one notification of this transaction, signed and verified; NotificationMismatch if
        none arrived, several did (other than retries of the same notificationreference), or its
        signature is missing or wrong."""
        found = self.wait_for(1, timeout=timeout, transactionreference=transactionreference)
        references = {n.notificationreference for n in found}
        if len(references) != 1:
            raise NotificationMismatch(
                f"transaction {transactionreference} was notified {len(references)} times: "
                f"{sorted(references)}"
            )
        last = found[-1]
        if self.password is None:
            raise NotificationMismatch(
                "the listener has no password: give NotificationListener(password=...)"
            )
        if SIGNATURE_FIELD not in last.fields:
            raise NotificationMismatch(f"the notification of {transactionreference} is not signed")
        if not last.verified:
            raise NotificationMismatch(
                f"the signature of the notification of {transactionreference} is wrong"
            )
        return last

    def clear(self) -> None:
        with self._changed:
            self.received.clear()
            self._seen.clear()

    def stop(self) -> None:
        self._release.set()
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=10)

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # serving

    def _arrived(self, fields: dict[str, str], content_type: str) -> int:
        with self._changed:
            fault = self._faults.pop(0) if self._faults else 200
        if fault is None:
            with self._changed:
                self.holding += 1
                self._changed.notify_all()
            self._release.wait()
            with self._changed:
                self.holding -= 1
            fault = 503
        verified = None if self.password is None else signature_ok(fields, self.password)
        with self._changed:
            reference = fields.get(REFERENCE_FIELD, "")
            notification = Notification(fields, verified, reference in self._seen, fault, content_type)
            self._seen.add(reference)
            self.received.append(notification)
            self._changed.notify_all()
        for callback in tuple(self._callbacks):
            callback(notification)
        return fault


def _count(count: int) -> None:
    if not isinstance(count, int) or isinstance(count, bool) or count < 1:
        raise ValueError("count must be a whole number, 1 or more")


def _handler_for(listener: NotificationListener) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            if unquote(self.path.split("?")[0]) != unquote(listener.path):  # /hook/été arrives escaped
                return self._answer(404)
            length = int(self.headers.get("Content-Length") or 0)
            if length > MAX_BODY_BYTES:
                return self._answer(413)
            body = self.rfile.read(length).decode("utf-8", "replace")
            content_type = self.headers.get("Content-Type", "")
            fields = dict(parse_qsl(body, keep_blank_values=True))
            self._answer(listener._arrived(fields, content_type))

        def _answer(self, status: int) -> None:
            self.send_response(status)
            self.send_header("Content-Length", "0")
            self.end_headers()

        def log_message(self, format: str, *args: Any) -> None:  # quiet: the listener keeps what arrived
            return

    return Handler
