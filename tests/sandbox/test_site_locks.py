"""PostgreSQL's writers side by side: a write takes a lock per site it writes to (and the schema's,
shared), so writers of different sites never wait for each other; writers of one site take turns; a
write of the whole sandbox (a reset, a restore) waits for every writer and every writer for it.

Who waits is read from PostgreSQL itself (`pg_stat_activity`: a session waiting for a lock), never
from a clock; every connection has a `lock_timeout`, so a lock wrongly shared fails the test instead
of hanging it."""

from __future__ import annotations

import secrets
import threading
from collections.abc import Callable, Iterable
from urllib.parse import quote

import pytest

import gwkit.sandbox
from gwkit.sandbox.gateway.accounts import Account
from gwkit.sandbox.gateway.store import PostgresStore
from support.databases import Database
from support.sandbox import CLOCK, Gateway, card_auth

ALICE, BOB = ("test_alice12345", "test_alice67890"), ("test_bob12345",)
ACCOUNTS = [
    Account("alice@example.test", "alice-secret", ALICE),
    Account("bob@example.test", "bob-secret", BOB),
]


@pytest.fixture
def store_kind() -> str:
    return "postgresql"


@pytest.fixture
def url(db_path) -> str:
    """The schema's URL, its sessions named (to find them in pg_stat_activity) and bounded in waiting."""
    name = f"gwkit-locks-{secrets.token_hex(4)}"
    return f"{db_path}{quote(' -c lock_timeout=30000')}&application_name={name}"


@pytest.fixture
def store(url):
    opened = PostgresStore(url)
    yield opened
    opened.close()


def waiting_for_locks(url: str) -> int:
    """How many of this test's sessions wait for a lock now."""
    name = url.rpartition("application_name=")[2]
    [(count,)] = Database(url).rows(
        "SELECT count(*) FROM pg_stat_activity WHERE application_name = ? AND wait_event_type = 'Lock'",
        (name,),
    )
    return count


def until(condition: Callable[[], bool], what: str) -> None:
    """Ask PostgreSQL again and again (each asking is a round trip) until `condition` holds."""
    for _ in range(20_000):
        if condition():
            return
    raise AssertionError(f"never came: {what}")


OPEN: list[Held] = []  # released at the end of each test, whatever happened in it


@pytest.fixture(autouse=True)
def release_every_write(db_path):  # before the schema is dropped: its open transactions would hold that up
    yield
    while OPEN:
        OPEN.pop().go.set()


class Held:
    """A write transaction of `sites` opened in a thread and held until `release()`."""

    def __init__(self, store: PostgresStore, sites: Iterable[str] | None, key: str):
        self.opened, self.go = threading.Event(), threading.Event()
        OPEN.append(self)
        self.errors: list[BaseException] = []
        self.thread = threading.Thread(target=self._hold, args=(store, sites, key))
        self.thread.start()

    def _hold(self, store: PostgresStore, sites: Iterable[str] | None, key: str) -> None:
        try:
            with store.write(sites) as conn:
                conn.execute("INSERT INTO meta (key, value) VALUES (?, '1')", (key,))
                self.opened.set()
                self.go.wait()
        except BaseException as error:
            self.errors.append(error)
            self.opened.set()

    def release(self) -> None:
        self.go.set()
        self.thread.join()
        assert self.errors == []


def held(store: PostgresStore, sites: Iterable[str] | None, key: str) -> Held:
    holding = Held(store, sites, key)
    holding.opened.wait()
    assert holding.errors == []
    return holding


def write_in_thread(store: PostgresStore, sites: Iterable[str] | None, key: str) -> Held:
    """A write that commits as soon as it has its locks."""
    writing = Held(store, sites, key)
    writing.go.set()
    return writing


def keys(url: str) -> set[str]:
    return {row[0] for row in Database(url).rows("SELECT key FROM meta WHERE substr(key, 1, 2) = 'w-'")}


def test_writers_of_different_sites_do_not_wait_for_each_other(store, url):
    alice = held(store, ALICE, "w-alice")
    with store.write(BOB) as conn:  # commits while alice's write is open
        conn.execute("INSERT INTO meta (key, value) VALUES ('w-bob', '1')")
    assert keys(url) == {"w-bob"}
    alice.release()
    assert keys(url) == {"w-alice", "w-bob"}


def test_a_writer_of_the_same_site_waits_its_turn(store, url):
    first = held(store, ["site_a"], "w-first")
    second = write_in_thread(store, ["site_c", "site_a"], "w-second")
    until(lambda: waiting_for_locks(url) == 1, "the second writer waiting")
    assert keys(url) == set() and second.thread.is_alive()
    first.release()
    second.release()
    assert keys(url) == {"w-first", "w-second"}
    turns = store.write_turns()
    assert turns["transactions"] >= 2 and turns["longest"] > 0 and turns["seconds"] >= turns["longest"]


def test_a_write_of_the_whole_sandbox_waits_for_every_writer_and_every_writer_for_it(store, url):
    site_writer = held(store, ["site_a"], "w-site-a")
    whole = write_in_thread(store, None, "w-whole")
    until(lambda: waiting_for_locks(url) == 1, "the whole sandbox's write waiting for site_a's")
    later = write_in_thread(store, ["site_b"], "w-site-b")  # another site, but after the whole sandbox's
    until(lambda: waiting_for_locks(url) == 2, "site_b's writer waiting behind the whole sandbox's")
    assert keys(url) == set()
    site_writer.release()
    whole.release()
    later.release()
    assert keys(url) == {"w-site-a", "w-whole", "w-site-b"}


def test_writers_naming_the_same_sites_in_any_order_never_deadlock(store, url):
    """The locks are taken in one order (by number), whatever order a writer names its sites in."""
    errors: list[BaseException] = []

    def write_many(sites: list[str], prefix: str) -> None:
        try:
            for number in range(150):
                with store.write(sites) as conn:
                    conn.execute("INSERT INTO meta (key, value) VALUES (?, '1')", (f"w-{prefix}-{number}",))
        except BaseException as error:
            errors.append(error)

    threads = [
        threading.Thread(target=write_many, args=(["site_a", "site_b", "site_c"], "forwards")),
        threading.Thread(target=write_many, args=(["site_c", "site_b", "site_a"], "backwards")),
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    assert len(keys(url)) == 300


def test_a_write_in_a_batch_takes_the_locks_of_sites_the_batch_did_not_name(store, url):
    with store.batch(["site_a"]):
        with store.write(["site_a", "site_b"]) as conn:
            conn.execute("INSERT INTO meta (key, value) VALUES ('w-batch', '1')")
        other = write_in_thread(store, ["site_b"], "w-other")
        until(lambda: waiting_for_locks(url) == 1, "site_b's writer waiting for the batch")
    other.release()
    assert keys(url) == {"w-batch", "w-other"}


def test_one_tenants_payments_are_answered_while_anothers_writes_are_held(url):
    """Over HTTP, as a team sandbox serves it: while a write of alice's sites is open (her clock
    move's transaction), bob's AUTH is answered; alice's own waits for it, then is answered."""
    handle = gwkit.sandbox.start(url, accounts=ACCOUNTS, clock_start=CLOCK)
    alice = Gateway(handle.base_url, "alice@example.test", "alice-secret")
    bob = Gateway(handle.base_url, "bob@example.test", "bob-secret")
    try:
        move = held(handle.sandbox.store, ALICE, "w-alice-move")
        assert bob.one(card_auth(sitereference=BOB[0]))["errorcode"] == "0"
        answers: list[dict] = []
        paying = threading.Thread(target=lambda: answers.append(alice.one(card_auth(sitereference=ALICE[1]))))
        paying.start()
        until(lambda: waiting_for_locks(url) == 1, "alice's AUTH waiting for her move")
        assert answers == []
        move.release()
        paying.join()
        assert answers[0]["errorcode"] == "0"
    finally:
        alice.close()
        bob.close()
        handle.stop()


def test_a_batch_takes_in_the_groups_no_writer_holds_and_leaves_the_others(store, url):
    """A worker's batch of several accounts' requests: the first account's locks waited for, each
    other account's taken only if free (another worker's batch has them: a later batch answers them)."""
    other_worker = held(store, ["site_b"], "w-other-worker")
    with store.batch_of([["site_a"], ["site_b"], ["site_d", "site_c"]]) as taken:
        assert taken == [0, 2]
        with store.write(["site_c", "site_d"]) as conn:
            conn.execute("INSERT INTO meta (key, value) VALUES ('w-batch', '1')")
        assert waiting_for_locks(url) == 0  # it took nothing more: the batch holds them
    other_worker.release()
    assert keys(url) == {"w-other-worker", "w-batch"}


def test_a_batch_waits_for_its_first_groups_locks(store, url):
    first = held(store, ["site_a"], "w-first")
    results: list[list[int]] = []

    def batch() -> None:
        with store.batch_of([["site_a"], ["site_b"]]) as taken:
            results.append(taken)

    batching = threading.Thread(target=batch)
    batching.start()
    until(lambda: waiting_for_locks(url) == 1, "the batch waiting for site_a")
    assert results == []
    first.release()
    batching.join()
    assert results == [[0, 1]]
