"""A team sandbox served by several hosts: independent `gwkit sandbox` processes over one PostgreSQL
database, with no supervisor in common (as on two machines).

- Clock moves of a site take turns across every process (each holds its sites' turn, an advisory
  lock per site): two one-month moves asked of two hosts at once move the clock two months, the
  second from where the first ended.
- A move whose host died is taken over by another through the lease on its row: the sweeper of the
  surviving host finishes it, and its progress names the host it was taken over from.
- A snapshot restore holds only the restoring tenant's sites: another tenant's payment on the other
  host does not wait for it.

Nothing waits on time: who waits for a lock is read from PostgreSQL itself (`pg_stat_activity`), a
finished move is heard as a notification (LISTEN), the host that dies kills itself at a known day
of its move (GWKIT_SANDBOX_TEST_KILL_AFTER_DAYS), and the in-process sweeps are given the moment
their leases are judged at.
"""

from __future__ import annotations

import json
import os
import queue
import re
import secrets
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from datetime import date
from pathlib import Path
from typing import Any
from urllib.parse import quote

import httpx
import pytest

from gwkit.sandbox import Sandbox
from gwkit.sandbox.gateway.store import PostgresStore
from support.databases import Database
from support.engine_runs import SITE as ENGINE_SITE
from support.engine_runs import assert_each_payment_made_once, populated
from support.sandbox import CLOCK, card_auth

GWKIT = Path(sys.executable).with_name("gwkit")
STARTUP_TIMEOUT = 60  # seconds: an upper bound for a slow machine, not a wait
LEASE = "0.5"  # seconds: the hosts' leases, short so a dead host's move is taken over soon
ALICE, BOB = "test_alice1", "test_bob1"
ACCOUNTS = (
    '[[account]]\nusername = "alice"\npassword = "a-pass"\nsitereferences = ["test_alice1"]\n'
    '[[account]]\nusername = "bob"\npassword = "b-pass"\nsitereferences = ["test_bob1"]\n'
)


@pytest.fixture
def store_kind() -> str:
    return "postgresql"  # several processes over one database: only PostgreSQL serves them


@pytest.fixture
def url(db_path) -> str:
    """The schema's URL, its sessions named (to find them in pg_stat_activity) and bounded in waiting
    (a lock wrongly shared fails the test instead of hanging it)."""
    name = f"gwkit-hosts-{secrets.token_hex(4)}"
    return f"{db_path}{quote(' -c lock_timeout=60000')}&application_name={name}"


class Host:
    """One `gwkit sandbox` process (one host of the team sandbox); its output read into a queue."""

    def __init__(self, url: str, directory: Path, *args: str, env: dict[str, str] | None = None):
        self.process = subprocess.Popen(
            [str(GWKIT), "sandbox", "--db", url, "--port", "0", "--move-lease", LEASE, *args],
            cwd=directory,
            text=True,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            env={**os.environ, **(env or {})},
        )
        self.lines: queue.Queue[str | None] = queue.Queue()
        self.output: list[str] = []
        threading.Thread(target=self._read, daemon=True).start()
        self.url = self.until(r"listening on (http://\S+)").group(1)
        self.until("Press Ctrl-C to stop")
        self.worker = f"{socket.gethostname()}:{self.process.pid}"

    def _read(self) -> None:
        for line in self.process.stdout:
            self.lines.put(line.rstrip("\n"))
        self.lines.put(None)

    def until(self, pattern: str) -> re.Match:
        while True:
            try:
                line = self.lines.get(timeout=STARTUP_TIMEOUT)
            except queue.Empty:
                pytest.fail(f"no line matching {pattern!r} within {STARTUP_TIMEOUT}s: {self.output}")
            if line is None:
                pytest.fail(f"gwkit sandbox ended before printing {pattern!r}: {self.output}")
            self.output.append(line)
            if match := re.search(pattern, line):
                return match

    def client(self, user: str = "gwkit_sandbox", password: str = "gwkit-sandbox-password") -> httpx.Client:
        return httpx.Client(base_url=self.url, auth=(user, password), timeout=STARTUP_TIMEOUT * 4)

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout=STARTUP_TIMEOUT)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()


@pytest.fixture
def hosts(url, tmp_path) -> Iterator[Callable[..., Host]]:
    started: list[Host] = []

    def start(*args: str, env: dict[str, str] | None = None) -> Host:
        started.append(Host(url, tmp_path, *args, env=env))
        return started[-1]

    yield start
    for host in started:
        host.stop()


def waiting_for_locks(url: str) -> list[str]:
    """What this test's sessions (the hosts' and the test's own) wait for now (`wait_event` of each)."""
    name = url.rpartition("application_name=")[2]
    return [
        event
        for (event,) in Database(url).rows(
            "SELECT wait_event FROM pg_stat_activity WHERE application_name = ? AND wait_event_type = 'Lock'",
            (name,),
        )
    ]


def until(condition: Callable[[], bool], what: str) -> None:
    """Ask PostgreSQL again and again (each asking is a round trip) until `condition` holds."""
    for _ in range(20_000):
        if condition():
            return
    raise AssertionError(f"never came: {what}")


def in_thread(work: Callable[[], Any]) -> tuple[threading.Thread, list[Any]]:
    """`work` run in a thread; its answer (or exception) in the list once it ends."""
    answer: list[Any] = []

    def run() -> None:
        try:
            answer.append(work())
        except BaseException as error:  # the test reads it
            answer.append(error)

    thread = threading.Thread(target=run)
    thread.start()
    return thread, answer


@pytest.fixture
def held_turn(url) -> Iterator[Callable[[list[str]], Callable[[], None]]]:
    """Hold sites' turn (the lock clock moves take) from the test's own session until released (the
    function returned: it returns once the turn is free)."""
    store = PostgresStore(url)
    releases: list[tuple[threading.Event, threading.Thread]] = []

    def hold(sites: list[str]) -> Callable[[], None]:
        taken, release = threading.Event(), threading.Event()

        failed: list[BaseException] = []

        def holding() -> None:
            try:
                with store.hold(sites):
                    taken.set()
                    release.wait()
            except BaseException as error:
                failed.append(error)
                taken.set()

        thread = threading.Thread(target=holding)
        thread.start()
        taken.wait()
        assert failed == []
        releases.append((release, thread))

        def released() -> None:
            release.set()
            thread.join()

        return released

    yield hold
    for release, thread in releases:
        release.set()
        thread.join()
    store.close()


# two hosts, two clock moves at once


def test_two_moves_asked_of_two_hosts_at_once_both_move_the_clock(url, hosts, held_turn):
    """Both wait for the site's turn (held by the test, so both ask before either runs), then run one
    after the other: the clock moves two months, and each answer says what that move did."""
    Sandbox(url, clock_start=CLOCK).close()  # the database's clock starts at CLOCK
    first, second = hosts(), hosts()
    release = held_turn(["test_gwkit12345"])
    moves = [
        in_thread(lambda h=h: h.client().post("/_sandbox/clock/advance", json={"by": "P1M"}))
        for h in (first, second)
    ]
    until(lambda: len(waiting_for_locks(url)) == 2, "both moves waiting for the site's turn")
    release()
    for thread, _ in moves:
        thread.join()
    answers = sorted((answer.json() for (_, (answer,)) in moves), key=lambda a: a["from"])
    assert [(a["from"], a["to"]) for a in answers] == [
        ("2026-01-15T10:00:00", "2026-02-15T10:00:00"),
        ("2026-02-15T10:00:00", "2026-03-15T10:00:00"),
    ]
    assert first.client().get("/_sandbox/clock").json()["now"] == "2026-03-15T10:00:00"
    assert second.client().get("/_sandbox/clock").json()["now"] == "2026-03-15T10:00:00"


# a host killed in the middle of a move


def test_the_move_of_a_host_killed_midway_is_taken_over_by_another(db_path, url, hosts):
    import psycopg  # a PostgreSQL server was found, so its driver is installed

    subscriptions = populated(url, 40)
    dying = hosts(env={"GWKIT_SANDBOX_TEST_KILL_AFTER_DAYS": "60"})  # SIGKILLs itself past day 60 of a move
    survivor = hosts()
    with psycopg.connect(db_path, autocommit=True) as listener:
        listener.execute("LISTEN gwkit_clock_moves")  # a move's row deleted: finished
        with dying.client() as client, pytest.raises(httpx.TransportError):
            client.post("/_sandbox/clock/advance", json={"to": "2028-01-01T08:00:00"})
        assert dying.process.wait(timeout=STARTUP_TIMEOUT) == -signal.SIGKILL
        finished = next(
            (
                n.payload
                for n in listener.notifies(timeout=STARTUP_TIMEOUT * 4)
                if n.payload.startswith(dying.worker + ":")
            ),
            None,
        )
    assert finished is not None, survivor.output
    survivor.until(
        rf"taking over the clock move of {re.escape(dying.worker)} \(2026-01-01T08:00:00 to 2028-01-01T08:00:00"
    )
    assert Database(url).value("SELECT count(*) FROM gwkit_clock_moves") == 0
    # Every payment of the 24 months exactly once, none missing, though the first host died midway.
    assert assert_each_payment_made_once(url, subscriptions, date(2028, 1, 1)) == 40 * 24
    with survivor.client() as client:
        assert client.get("/_sandbox/clock").json()["now"] == "2028-01-01T08:00:00"
        assert client.get("/_sandbox/clock/progress").json()["advances"] == []


# a restore on one host, another tenant's payment on the other


def test_a_restore_on_one_host_holds_no_other_tenants_payment_on_the_other(url, hosts, tmp_path):
    import psycopg

    accounts = tmp_path / "accounts.toml"
    accounts.write_text(ACCOUNTS)
    Sandbox(url, clock_start=CLOCK).close()
    one, other = hosts("--accounts", str(accounts)), hosts("--accounts", str(accounts))
    alice, bob = one.client("alice", "a-pass"), other.client("bob", "b-pass")
    assert _auth(alice, "alice", ALICE)["errorcode"] == "0"
    assert alice.post("/_sandbox/snapshots", json={"name": "one-payment"}).status_code == 200
    assert _auth(alice, "alice", ALICE)["errorcode"] == "0"
    # The test's session locks alice's payments' rows: the restore, deleting them, waits there while
    # holding whatever it holds.
    with psycopg.connect(url, autocommit=False) as blocker:
        blocker.execute("SELECT 1 FROM transactions WHERE sitereference = %s FOR UPDATE", (ALICE,))
        restoring, restored = in_thread(
            lambda: alice.post("/_sandbox/snapshots/restore", json={"name": "one-payment"})
        )
        until(lambda: len(waiting_for_locks(url)) == 1, "the restore under way, waiting for alice's rows")
        paying, paid = in_thread(lambda: _auth(bob, "bob", BOB))
        until(lambda: not paying.is_alive() or len(waiting_for_locks(url)) > 1, "bob's payment answered")
        assert len(waiting_for_locks(url)) == 1  # only the restore waits: bob's payment did not
        blocker.rollback()
        paying.join()
        restoring.join()
    assert paid[0]["errorcode"] == "0"
    assert restored[0].status_code == 200, restored[0].text
    counts = dict(
        Database(url).rows("SELECT sitereference, count(*) FROM transactions GROUP BY sitereference")
    )
    assert counts == {ALICE: 1, BOB: 1}
    alice.close()
    bob.close()


def _auth(client: httpx.Client, alias: str, site: str) -> dict[str, Any]:
    answer = client.post(
        "/json/", json={"alias": alias, "version": "1.00", "request": [card_auth(sitereference=site)]}
    )
    assert answer.status_code == 200, answer.text
    return answer.json()["response"][0]


# the sweeper, driven directly


def _dead_move(url: str, worker: str, *, lease_until: float, start: str, target: str, days: int) -> str:
    """A move's row as a killed host leaves it: its sites' clock at the target, its days not run."""
    key = f"{worker}:0123456789abcdef"
    state = {
        "sites": [ENGINE_SITE],
        "from": start,
        "to": target,
        "day": 1,
        "days": days,
        "step": None,
        "done": 0,
        "total": 0,
    }
    database = Database(url)
    database.execute(
        "INSERT INTO site_clocks (sitereference, now) VALUES "
        f"('{ENGINE_SITE}', '{target.replace('T', ' ')}') ON CONFLICT (sitereference) DO UPDATE SET now = excluded.now"
    )
    database.execute(
        "INSERT INTO gwkit_clock_moves (key, worker, sites, state, changed, lease_until) VALUES "
        f"('{key}', '{worker}', '{json.dumps([ENGINE_SITE])}', '{json.dumps(state)}', 0, {lease_until})"
    )
    return key


def test_a_sweep_takes_over_a_move_once_its_lease_has_run_out_and_says_so(url):
    subscriptions = populated(url, 10)
    sandbox = Sandbox(url, move_lease=30)  # the surviving host, serving before the other one died
    in_a_minute = time.time() + 60
    key = _dead_move(
        url,
        "gone.example:4242",
        lease_until=in_a_minute,
        start="2026-01-01T08:00:00",
        target="2026-07-01T08:00:00",
        days=181,
    )
    shown: list[dict[str, Any]] = []
    changed = sandbox.gateway.moves.changed
    sandbox.gateway.moves.changed = lambda move: (shown.append(dict(move)), changed(move))  # type: ignore[method-assign]
    try:
        assert sandbox.gateway.sweep_moves() == []  # its lease runs a minute more: its host may be alive
        assert sandbox.gateway.advances_of([ENGINE_SITE])[0]["from"] == "2026-01-01T08:00:00"
        assert sandbox.gateway.sweep_moves(at=in_a_minute + 1) == [key]
    finally:
        sandbox.close()
    assert shown and all(state["taken_over_from"] == "gone.example:4242" for state in shown)
    assert Database(url).value("SELECT count(*) FROM gwkit_clock_moves") == 0
    assert assert_each_payment_made_once(url, subscriptions, date(2026, 7, 1)) == 10 * 6


def test_a_sweep_leaves_the_move_of_a_host_that_still_holds_its_sites(url, held_turn):
    """A lease that ran out while its host lives (a stalled renewal): the host still holds the sites'
    turn, so no other takes the move over."""
    populated(url, 1)
    sandbox = Sandbox(url)
    key = _dead_move(
        url,
        "slow.example:7",
        lease_until=0,
        start="2026-01-01T08:00:00",
        target="2026-02-01T08:00:00",
        days=31,
    )
    release = held_turn([ENGINE_SITE])
    try:
        assert sandbox.gateway.sweep_moves(at=time.time() + 3600) == []
        assert Database(url).value("SELECT key FROM gwkit_clock_moves") == key
        release()
        assert sandbox.gateway.sweep_moves() == [key]  # once it is gone
    finally:
        sandbox.close()


def test_the_lease_length_is_a_positive_number_of_seconds(url, tmp_path):
    refused = subprocess.run(
        [str(GWKIT), "sandbox", "--db", url, "--port", "0", "--move-lease", "0"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=STARTUP_TIMEOUT,
    )
    assert refused.returncode == 2
    assert "--move-lease: '0' is not a positive number of seconds" in refused.stderr


def test_a_host_stopping_mid_move_gives_it_up_at_once_and_another_finishes_it(url):
    subscriptions = populated(url, 10)
    stopping, other = Sandbox(url), Sandbox(url)
    try:

        def stop_at_the_third_day(day: date) -> None:
            days.append(day)
            if len(days) == 3:
                stopping.gateway.stop_work()  # SIGTERM: the run ends before its next day

        days: list[date] = []
        daily_run = stopping.gateway.daily.run
        stopping.gateway.daily.run = lambda *args, **kwargs: daily_run(  # type: ignore[method-assign]
            *args, **{**kwargs, "on_day": lambda day: (kwargs["on_day"](day), stop_at_the_third_day(day))}
        )
        answer = stopping.gateway.advance(to="2026-07-01T08:00:00")
        assert "stopped_before" in answer
        [(key, lease_until)] = Database(url).rows("SELECT key, lease_until FROM gwkit_clock_moves")
        assert lease_until == 0  # given up: no lease to wait for
        assert other.gateway.sweep_moves() == [key]
    finally:
        stopping.close()
        other.close()
    assert Database(url).value("SELECT count(*) FROM gwkit_clock_moves") == 0
    assert assert_each_payment_made_once(url, subscriptions, date(2026, 7, 1)) == 10 * 6
