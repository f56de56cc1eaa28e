"""Sending URL notifications: the Notifier the Gateway calls after a request and after a clock move.

- A request keeps its deliveries in its own transaction (the outbox: `notification_deliveries`).
  Nothing is sent before that transaction commits. Whoever answers the request collects what it
  kept (`collecting`, an `Outbox`), and once the commit is done hands it to `send_kept`: the online
  (and failover) deliveries are attempted on the tenant's online workers, and the answer waits for
  them (each at most its rule's timeout, 8 s at most, wall clock) without holding a thread of the
  server's or a write; offline ones are handed to the tenant's sender. A caller that collects
  nothing (the in-process transport, a direct `Gateway.process`) has committed when `send` is called,
  and waits for the online ones there.
- An online delivery is kept claimed for the answer that waits for it, so no sender takes it first.
  If that process dies before sending it, a sender sends it after the claim ran out, or at once when
  a process of the same host starts again (`wake`), and it is marked late.
- After a clock move (the engine's payments, settlement), every delivery is handed to the sender,
  the offline way (retried on failure): a move never waits for a listener.
- Each account (tenant) has a sender thread and online workers of its own, so one tenant's slow
  listener never delays another's notifications. A sender sends what is due on its sites' sandbox
  clocks and looks again when woken (a new delivery, a clock move) or every `POLL_SECONDS` (another
  worker's deliveries).

Every attempt is claimed and recorded in the database before it is sent (notifications.claim), so
with several workers each attempt is made by one of them, and a crash can only repeat one.
"""

from __future__ import annotations

import http.client
import logging
import os
import signal
import socket
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from concurrent.futures import wait as wait_all
from contextlib import contextmanager
from contextvars import ContextVar
from datetime import datetime
from typing import Any
from urllib.parse import urlencode, urlsplit

from ...interface.notification import CONTENT_TYPE
from . import notifications as n
from .accounts import Account, account_for_site
from .query import filter_values, public_record

POLL_SECONDS = 1.0
LEASE_SECONDS = 30.0  # an attempt's claim: longer than any attempt (8 s); then another worker may retry it
ONLINE_WORKERS = 8  # per tenant: online deliveries its answers wait for at once
SOCKET_GRACE = 1.0  # the socket's own timeout is this much past an attempt's deadline: the deadline ends it
# A test hook (tests/sandbox/test_notifications_outbox.py): the process kills itself (SIGKILL) after a
# request's commit, before its online notifications are sent.
KILL_AFTER_COMMIT = "GWKIT_SANDBOX_TEST_KILL_AFTER_COMMIT"

USER_AGENT = "gwkit-sandbox-notifications"
log = logging.getLogger("gwkit.sandbox")

Clocks = Callable[[Sequence[str]], Mapping[str, datetime]]
Made = tuple[list[tuple[str, str]], list[tuple[str, str]]]  # (online, offline) (reference, site) kept
Views = Mapping[str, Callable[..., None]]  # request type -> what sets its fields kept outside the record


class Outbox:
    """The deliveries the requests answered in one go kept: sent by `Notifier.send_kept` once their
    transaction committed. A reference whose transaction was rolled back after all (a batch that
    failed) is found by no claim, so sending it does nothing."""

    def __init__(self) -> None:
        self.online: list[tuple[str, str]] = []  # (reference, site): the answer waits for these
        self.offline_sites: set[str] = set()  # whose senders to wake

    def __bool__(self) -> bool:
        return bool(self.online or self.offline_sites)

    def add(self, made: Made) -> None:
        online, offline = made
        self.online += online
        self.offline_sites.update(site for _, site in offline)


_collecting: ContextVar[Outbox | None] = ContextVar("gwkit_notification_outbox", default=None)


class Notifier:
    """Makes and sends the URL notifications of one gateway (see the module's docstring).

    `allowed_hosts`: None on the embedded sandbox (any host, loopback too); on a team sandbox the
    hosts and networks its operator allows (empty: none)."""

    def __init__(
        self,
        store: Any,
        clocks: Clocks,
        accounts: Mapping[str, Account],
        allowed_hosts: Iterable[str] | None = None,
        record_views: Views | None = None,
    ):
        self.store = store
        self._clocks = clocks
        self._accounts = accounts
        self._views = dict(record_views or {})
        self.allowed_hosts = None if allowed_hosts is None else frozenset(h.lower() for h in allowed_hosts)
        self.host = socket.gethostname()
        self.worker = f"{self.host}:{os.getpid()}:{id(self):x}"
        self.changed = threading.Condition()  # notified after every attempt this process makes
        self._kill_after_commit = os.environ.get(KILL_AFTER_COMMIT) == "1"
        self._online: dict[str | None, ThreadPoolExecutor] = {}
        self._senders: dict[str, _Sender] = {}
        self._watchers: list[Callable[[str], Any]] = []
        self._lock = threading.Lock()
        self._stopping = threading.Event()

    # rules

    def add_rule(self, payload: Mapping[str, Any], sitereference: str) -> dict[str, Any]:
        rule = n.rule_from(payload, sitereference, self._now(sitereference), self.allowed_hosts)
        with self.store.write([sitereference]) as conn:
            n.add_rule(conn, rule)
        return rule.shown()

    def rules(self, sites: Sequence[str]) -> list[dict[str, Any]]:
        return [rule.shown() for rule in n.rules_of(self.store.connection(), sites)]

    def delete_rule(self, sites: Sequence[str], rule_id: str) -> int:
        """Delete a rule; how many of its deliveries not made yet were cancelled."""
        with self.store.write(sites) as conn:
            return n.delete_rule(conn, sites, rule_id)

    def _rules(self, sites: Sequence[str]) -> list[n.Rule]:
        # Read for each request, not cached: another worker, a reset or a snapshot restore changes them.
        return n.rules_of(self.store.connection(), sites)

    # deliveries

    def deliveries(
        self,
        sites: Sequence[str],
        transactionreference: str | None = None,
        *,
        limit: int | None = None,
        offset: int = 0,
    ) -> list[dict[str, Any]]:
        """Newest first: `limit` of them (None: every one) from `offset` on."""
        with self.store.read() as conn:  # deliveries and their attempts from one consistent view
            return n.deliveries_of(
                conn, sites, transactionreference=transactionreference, limit=limit, offset=offset
            )

    def page(
        self, sites: Sequence[str], transactionreference: str | None, limit: int, offset: int
    ) -> dict[str, Any]:
        """One page of the deliveries, with how many there are and where the next page starts."""
        with self.store.read() as conn:
            total = n.count_of(conn, sites, transactionreference)
            shown = n.deliveries_of(
                conn, sites, transactionreference=transactionreference, limit=limit, offset=offset
            )
        following = offset + len(shown)
        return {
            "deliveries": shown,
            "total": total,
            "offset": offset,
            "next_offset": following if following < total else None,
        }

    def resend(self, sites: Sequence[str], reference: str) -> dict[str, Any]:
        """Send a delivery again now (same notificationreference), from its tenant's sender; after the
        attempt under way, if there is one."""
        site = n.site_of(self.store.connection(), sites, reference)
        with self.store.write([site]) as conn:
            n.reopen(conn, [site], reference, self._now(site))
        self._wake([site])
        return self.delivery(reference, site)

    def delivery(self, reference: str, site: str) -> dict[str, Any]:
        with self.store.read() as conn:
            return n.delivery_of(conn, site, reference)

    # what the gateway calls

    def rules_in(self, conn: Any, site: str) -> list[n.Rule]:
        """The rules of `site`, read in the caller's transaction (the request's own)."""
        return n.rules_of(conn, [site])

    def keep(
        self,
        conn: Any,
        records: Sequence[Mapping[str, Any]],
        site: str,
        rules: list[n.Rule],
        request: Mapping[str, Any],
        now: datetime,
    ) -> Made:
        """The deliveries of the transactions a request object made on `site`, and of those whose
        `settlestatus` it changed (TRANSACTIONUPDATE), kept in the request's own transaction: they
        commit with the payment or not at all (at least once). `send` them after the commit.

        Each is made of the transaction as it is kept (as TRANSACTIONQUERY shows it, billing details
        included), not of the answer."""
        made = [str(r["transactionreference"]) for r in records if r.get("transactionreference")]
        events = [(record, "made") for record in self._stored(conn, made, site)]
        if any(rule.settlestatuses for rule in rules):
            events += self._updated(conn, request, records)
        return self._keep(conn, rules, events, lambda _site: now, answer_of=self.worker)

    @contextmanager
    def collecting(self, outbox: Outbox | None = None) -> Iterator[Outbox]:
        """Keep what the requests answered inside (on this thread) make to send in `outbox`, for the
        caller to hand to `send_kept` once their transaction committed."""
        outbox = Outbox() if outbox is None else outbox
        token = _collecting.set(outbox)
        try:
            yield outbox
        finally:
            _collecting.reset(token)

    def send(self, made: Made) -> None:
        """After a request's write: in the outbox being collected, if any (its collector sends it
        after the commit); otherwise the write has committed, so it is sent now, this thread waiting
        for the online deliveries (at most their timeouts)."""
        outbox = _collecting.get()
        if outbox is not None:
            outbox.add(made)
            return
        alone = Outbox()
        alone.add(made)
        wait_all(self.send_kept(alone))

    def send_kept(self, outbox: Outbox) -> list[Future]:
        """After the commit of the requests that kept `outbox`: their offline deliveries handed to the
        senders, their online ones to the tenants' online workers; the attempts to wait for."""
        if self._kill_after_commit and outbox.online:
            os.kill(os.getpid(), signal.SIGKILL)  # the test hook: the crash between commit and send
        self._wake(outbox.offline_sites)
        return [
            self._online_workers(site).submit(self._answers_attempt, reference, site)
            for reference, site in outbox.online
        ]

    def _answers_attempt(self, reference: str, site: str) -> str | None:
        try:
            return self.attempt(reference, site, for_answer=True)
        except Exception:  # a notification never changes an answer: logged, the answer goes out
            log.exception("an online URL notification could not be sent")
            return None

    def _online_workers(self, site: str) -> ThreadPoolExecutor:
        owner = self._owner(site)
        with self._lock:
            workers = self._online.get(owner)
            if workers is None:
                workers = self._online[owner] = ThreadPoolExecutor(
                    ONLINE_WORKERS, thread_name_prefix="gwkit-notifications-online"
                )
            return workers

    def _stored(self, conn: Any, references: Sequence[str], site: str | None = None) -> list[dict[str, Any]]:
        """The transactions `references` as they are kept (TRANSACTIONQUERY's view), each with its site;
        in the order they were made."""
        if not references:
            return []
        where = f"transactionreference IN ({_marks(references)})"
        params: list[Any] = list(references)
        if site is not None:
            where, params = where + " AND sitereference = ?", [*params, site]
        rows = conn.execute(
            f"SELECT sitereference, record, details FROM transactions WHERE {where} ORDER BY id", params
        ).fetchall()
        return self._as_queried(conn, rows)

    def _as_queried(self, conn: Any, rows: Sequence[Any]) -> list[dict[str, Any]]:
        records = [{**public_record(row), "sitereference": row["sitereference"]} for row in rows]
        by_type: dict[str, list[dict[str, Any]]] = {}
        for record in records:
            by_type.setdefault(str(record.get("requesttypedescription")), []).append(record)
        for kind, view in self._views.items():
            if kind in by_type:
                view(conn, by_type[kind])
        return records

    def _updated(
        self, conn: Any, request: Mapping[str, Any], records: Sequence[Mapping[str, Any]]
    ) -> list[tuple[dict[str, Any], str]]:
        """The transactions a successful TRANSACTIONUPDATE set a `settlestatus` on, as they are now."""
        updates = request.get("updates")
        if not isinstance(updates, Mapping) or not updates.get("settlestatus"):
            return []
        if not any(
            r.get("requesttypedescription") == "TRANSACTIONUPDATE" and r.get("errorcode") == "0"
            for r in records
        ):
            return []
        references = filter_values(request.get("filter")).get("transactionreference") or []
        return [
            (record, f"settlestatus:{record.get('settlestatus')}")
            for record in self._stored(conn, references)
        ]

    def mark(self) -> int:
        """Where the transactions stand before a clock move (after_move notifies what came after)."""
        (mark,) = self.store.connection().execute("SELECT COALESCE(MAX(id), 0) FROM transactions").fetchone()
        return int(mark)

    def after_move(self, sites: Sequence[str], mark: int, settled: Sequence[str]) -> None:
        """The deliveries of what a clock move (or a settlement) made and settled, every one handed
        to the senders: the move never waits for a listener."""
        rules = self._rules(list(sites))
        if not rules:
            self._wake(sites, start=False)  # retries of a deleted rule's deliveries may be due
            return
        conn = self.store.connection()
        events: list[tuple[dict[str, Any], str]] = []
        if any(not rule.settlestatuses for rule in rules):
            rows = conn.execute(
                "SELECT sitereference, record, details FROM transactions "
                f"WHERE id > ? AND sitereference IN ({_marks(sites)}) ORDER BY id",
                (mark, *sites),
            ).fetchall()
            events += [(record, "made") for record in self._as_queried(conn, rows)]
        if settled and any(rule.settlestatuses for rule in rules):
            for start in range(0, len(settled), 500):
                for record in self._stored(conn, list(settled[start : start + 500])):
                    events.append((record, f"settlestatus:{record.get('settlestatus')}"))
        self._make(rules, events)
        self._wake(sites)  # the new deliveries, and retries the move made due

    def _make(self, rules: list[n.Rule], events: Sequence[tuple[Mapping[str, Any], str]]) -> Made:
        if not events:
            return [], []
        sites = list(dict.fromkeys(str(record["sitereference"]) for record, _ in events))
        clocks = self._clocks(sites)
        with self.store.write(sites) as conn:
            return self._keep(conn, rules, events, clocks.__getitem__)

    def _keep(
        self,
        conn: Any,
        rules: list[n.Rule],
        events: Sequence[tuple[Mapping[str, Any], str]],
        now_of: Callable[[str], datetime],
        answer_of: str | None = None,
    ) -> Made:
        """The deliveries the rules fire for `events`. With `answer_of` (a request's), an online one is
        kept claimed for the answer; without (a clock move's), every one is sent the offline way."""
        online: list[tuple[str, str]] = []
        offline: list[tuple[str, str]] = []
        for record, event in events:
            site = str(record["sitereference"])
            for rule in n.firing(rules, record, event):
                answered = answer_of is not None and rule.flow in n.ONLINE_FLOWS
                reference = n.add_delivery(
                    conn,
                    rule,
                    record,
                    event,
                    now_of(site),
                    flow=None if answer_of is not None else "offline",
                    answer_of=answer_of if answered else None,
                    lease=LEASE_SECONDS,
                )
                if reference is not None:
                    (online if answered else offline).append((reference, site))
        return online, offline

    def attempt(self, reference: str, site: str, *, for_answer: bool = False) -> str | None:
        """One attempt at a delivery, claimed and recorded before it is sent; its new state, or None
        when it was not ours to send (another worker has it, or it is no longer open). `for_answer`:
        the attempt an answer waits for (`send_kept`)."""
        now = self._now(site)
        with self.store.write([site]) as conn:
            claimed = n.claim(
                conn, reference, self.worker, time.time(), LEASE_SECONDS, now, for_answer=for_answer
            )
        if claimed is None:
            return None
        status, latency_ms, error = post(claimed.url, claimed.form, claimed.timeout, self.allowed_hosts)
        with self.store.write([site]) as conn:
            state = n.finish(conn, claimed, status, latency_ms, error, self.worker)
        if state == "pending":  # a resend asked during the attempt: the sender makes it now
            self._wake([site])
        with self.changed:
            self.changed.notify_all()
        for watcher in tuple(self._watchers):
            try:
                watcher(reference)
            except Exception:  # a watcher (a panel) never stops a delivery: logged
                log.exception("a URL notification watcher failed")
        return state

    def on_attempt(self, watcher: Callable[[str], Any]) -> Callable[[str], Any]:
        """Call `watcher(notificationreference)` after each attempt this process made was recorded."""
        self._watchers.append(watcher)
        return watcher

    def wait_for(self, predicate: Callable[[], Any], timeout: float) -> Any:
        """Wait until `predicate()` is true, looking again after each attempt this process makes (and
        every POLL_SECONDS, for other workers'); its value, or a falsy one at the timeout."""
        deadline = time.monotonic() + timeout
        with self.changed:
            while not (value := predicate()):
                left = deadline - time.monotonic()
                if left <= 0:
                    return value
                self.changed.wait(min(left, POLL_SECONDS))
        return value

    def wake(self, sites: Iterable[str] | None = None) -> None:
        """Have the senders look for due deliveries (after a clock move). At start (no `sites`): any
        left open, those a dead process of this host had claimed included (`notifications.release_dead`)."""
        if sites is None:
            with self.store.write() as conn:
                n.release_dead(conn, self.host, _alive)
        self._wake(n.open_sites(self.store.connection()) if sites is None else sites)

    def _wake(self, sites: Iterable[str], start: bool = True) -> None:
        """Wake the senders of these sites' tenants (`start`: starting those not running yet)."""
        owners = {self._owner(site) for site in sites}
        for username in (owner for owner in owners if owner is not None):
            sender = self._sender(username) if start else self._senders.get(username)
            if sender is not None:
                sender.event.set()

    def _owner(self, site: str) -> str | None:
        account = account_for_site(self._accounts.values(), site)
        return None if account is None else account.username

    def _sender(self, username: str) -> _Sender:
        with self._lock:
            sender = self._senders.get(username)
            if sender is None and not self._stopping.is_set():
                sender = self._senders[username] = _Sender(self, self._accounts[username].sitereferences)
                sender.thread.start()
            return sender or _Sender(self, ())

    def _now(self, site: str) -> datetime:
        return self._clocks([site])[site]

    def send_due(self, sites: Sequence[str]) -> None:
        for reference, site in n.due(self.store.connection(), self._clocks(sites), time.time()):
            if self._stopping.is_set():
                return
            self.attempt(reference, site)

    def close(self) -> None:
        self._stopping.set()
        with self._lock:
            senders = list(self._senders.values())
        for sender in senders:
            sender.event.set()
        for sender in senders:
            sender.thread.join(timeout=n.MAX_TIMEOUT + 2)
        with self._lock:
            online = list(self._online.values())
        for workers in online:
            workers.shutdown(wait=True, cancel_futures=True)


class _Sender:
    """One tenant's sender thread."""

    def __init__(self, notifier: Notifier, sites: Sequence[str]):
        self.notifier, self.sites = notifier, tuple(sites)
        self.event = threading.Event()
        self.thread = threading.Thread(target=self._run, name="gwkit-notifications", daemon=True)

    def _run(self) -> None:
        while not self.notifier._stopping.is_set():
            self.event.clear()
            try:
                self.notifier.send_due(self.sites)
            except Exception:  # a sandbox bug or a closed store: logged, the sender goes on
                if self.notifier._stopping.is_set():
                    return
                log.exception("sending URL notifications failed; trying again shortly")
            self.event.wait(POLL_SECONDS)


def post(
    url: str, form: Sequence[tuple[str, str]], timeout: float, allowed_hosts: frozenset[str] | None
) -> tuple[int | None, float, str | None]:
    """POST the form as the real service does; (HTTP status or None, latency in ms, error or None).

    The whole exchange is bounded by `timeout` seconds of wall clock in total: a socket timeout alone
    bounds each read, and a listener that trickles a byte at a time would hold the caller (an answer
    waiting on an online delivery) for as long as it liked. So the exchange runs on a thread of its
    own and this waits for it until the deadline; past it the connection is shut, which ends the
    exchange, and the attempt is a failure."""
    started = time.monotonic()
    try:
        # the operator may have narrowed the hosts since the rule; a rule an earlier gwkit kept may be unencoded
        url = n.checked_url(url, allowed_hosts)
    except ValueError as exc:
        return None, _ms(started), f"the URL is not allowed: {exc}"[:200]
    no_answer = f"no answer within {timeout:g} s"
    # The socket's own timeout is past the deadline, so the deadline (this join) is what ends a slow
    # listener's attempt, always with the same words.
    exchange = _Exchange(url, urlencode(list(form)).encode("utf-8"), timeout + SOCKET_GRACE)
    exchange.thread.start()
    exchange.thread.join(timeout)
    if exchange.thread.is_alive():
        exchange.abort()
        return None, _ms(started), no_answer
    if exchange.timed_out:
        return None, _ms(started), no_answer
    status, error = exchange.status, exchange.error
    if error is not None or status is None:
        return None, _ms(started), error
    return status, _ms(started), None if 200 <= status < 300 else f"HTTP {status}"


class _Exchange:
    """One POST and its answer, on a thread of its own; `abort` shuts its connection from another."""

    def __init__(self, url: str, body: bytes, timeout: float):
        parts = urlsplit(url)
        connection_class = (
            http.client.HTTPSConnection if parts.scheme == "https" else http.client.HTTPConnection
        )
        self.connection = connection_class(parts.hostname or "", parts.port, timeout=timeout)
        self.path = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
        self.body = body
        self.status: int | None = None
        self.error: str | None = None
        self.timed_out = False
        self._aborted = False
        self._lock = threading.Lock()  # abort either shuts the connected socket or is seen after connect
        self.thread = threading.Thread(target=self._run, name="gwkit-notification-post", daemon=True)

    def _run(self) -> None:
        try:
            self.connection.connect()
            with self._lock:
                if self._aborted:
                    return
            self.connection.request(
                "POST",
                self.path,
                body=self.body,
                headers={"Content-Type": CONTENT_TYPE, "User-Agent": USER_AGENT, "Connection": "close"},
            )
            response = self.connection.getresponse()
            response.read(65536)
            self.status = response.status
        except TimeoutError:
            self.timed_out = True
        except (OSError, http.client.HTTPException, ValueError) as exc:
            self.error = failure_words(exc)[:200]
        finally:
            self.connection.close()

    def abort(self) -> None:
        """End the exchange now: a blocked send or read on the shut socket returns at once (one still
        connecting stops as soon as it is connected)."""
        with self._lock:
            self._aborted = True
            sock = self.connection.sock
        if sock is not None:
            try:
                sock.shutdown(socket.SHUT_RDWR)
            except OSError:  # already closed by the exchange itself
                pass


def failure_words(exc: BaseException) -> str:
    """Why a delivery attempt got no answer, in words (a person reads the attempts, not a class name)."""
    if isinstance(exc, ConnectionRefusedError):
        return "the listener refused the connection: nothing listens at that address"
    if isinstance(exc, (http.client.RemoteDisconnected, ConnectionResetError)):
        return "the listener closed the connection without answering"
    if isinstance(exc, http.client.HTTPException):
        return f"the listener's answer could not be read ({exc or 'not HTTP'})"
    if isinstance(exc, OSError):
        return f"the connection failed: {exc.strerror or exc}"
    return f"the notification could not be sent: {exc}"


def _ms(started: float) -> float:
    return (time.monotonic() - started) * 1000


def _marks(values: Sequence[Any]) -> str:
    return ", ".join("?" for _ in values)


def _alive(pid: int) -> bool:
    """Whether a process of this host is running (one of another user's counts as running)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True
