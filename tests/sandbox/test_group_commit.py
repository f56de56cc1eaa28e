"""Group commit: gateway requests waiting at the same time are answered in one write transaction
(`Store.batch`, `WorkerThread`), each one kept or rolled back on its own, none answered before
the batch has committed."""

from __future__ import annotations

import asyncio
import threading

import httpx
import pytest

import gwkit.sandbox
from gwkit.sandbox import Sandbox
from gwkit.sandbox.gateway import auth
from gwkit.sandbox.http import SandboxRequest
from gwkit.sandbox.web.workers import Workers, WorkerThread
from support.databases import Database
from support.sandbox import CLOCK, DEFAULT_PASSWORD, DEFAULT_USERNAME, card_auth

pytestmark = pytest.mark.both_stores  # each test on SQLite and on PostgreSQL


@pytest.fixture
def store(db_path):
    sandbox = Sandbox(db_path, clock_start=CLOCK)
    yield sandbox.store
    sandbox.store.close()


def _add(conn, name: str) -> None:
    conn.execute("INSERT INTO meta (key, value) VALUES (?, ?)", (name, "1"))


def _keys(db_path) -> set[str]:
    return {
        row[0] for row in Database(db_path).rows("SELECT key FROM meta WHERE substr(key, 1, 6) = 'batch-'")
    }


def test_a_failing_write_in_a_batch_is_rolled_back_alone(store, db_path):
    with store.batch():
        with store.write() as conn:
            _add(conn, "batch-kept-1")
        with pytest.raises(RuntimeError), store.write() as conn:
            _add(conn, "batch-lost")
            raise RuntimeError("this request failed")
        with store.write() as conn:
            _add(conn, "batch-kept-2")
        with store.read() as conn:  # a read in the batch sees what the batch wrote before it
            assert (
                conn.execute("SELECT COUNT(*) FROM meta WHERE substr(key, 1, 6) = 'batch-'").fetchone()[0]
                == 2
            )
        assert _keys(db_path) == set()  # nothing is seen outside before the batch commits
    assert _keys(db_path) == {"batch-kept-1", "batch-kept-2"}


def test_a_batch_that_fails_keeps_nothing(store, db_path):
    with pytest.raises(KeyError), store.batch():
        with store.write() as conn:
            _add(conn, "batch-1")
        raise KeyError("the batch itself failed")
    assert _keys(db_path) == set()
    with store.write() as conn:  # and the store writes on afterwards
        _add(conn, "batch-after")
    assert _keys(db_path) == {"batch-after"}


def test_a_failing_statement_in_a_batch_is_rolled_back_alone(store, db_path):
    with store.batch():
        with store.write() as conn:
            _add(conn, "batch-first")
        # sqlite3's IntegrityError or psycopg's UniqueViolation: no common class, the same words
        with pytest.raises(Exception, match=r"(?i)unique"), store.write() as conn:
            _add(conn, "batch-first")  # a duplicate key: the database refuses it
            conn.execute("SELECT 1").fetchone()
        with store.write() as conn:
            _add(conn, "batch-second")
    assert _keys(db_path) == {"batch-first", "batch-second"}


class Held:
    """A WorkerThread whose first job waits until `release()`: the jobs submitted meanwhile queue up,
    and are answered as one round (no timing involved)."""

    def __init__(self, most_together: int = 32):
        self.thread = WorkerThread("test-group-commit", most_together=most_together)
        self.started, self.go = threading.Event(), threading.Event()
        self.rounds: list[int] = []

    def hold(self, _: object) -> str:
        self.started.set()
        self.go.wait()
        return "held"


async def _answered_together(held: Held, store, jobs: list, together=True, sites=None) -> list:
    first = held.thread.submit(held.hold, None)
    await asyncio.get_running_loop().run_in_executor(None, held.started.wait)
    futures = [
        held.thread.submit(
            work, argument, together=store if together else None, sites=sites[at] if sites else ()
        )
        for at, (work, argument) in enumerate(jobs)
    ]
    held.go.set()
    await first
    return await asyncio.gather(*futures, return_exceptions=True)


def test_jobs_waiting_together_share_one_transaction_and_keep_their_own_outcome(store, db_path):
    held = Held()
    batches: list[int] = []
    real_batch = store.batch_of

    def counting_batch(groups):
        batches.append(1)
        return real_batch(groups)

    store.batch_of = counting_batch

    def write(name: str) -> str:
        with store.write() as conn:
            _add(conn, name)
            if name == "batch-3":
                raise ValueError("request 3 failed")
        return name

    answers = asyncio.run(_answered_together(held, store, [(write, f"batch-{i}") for i in range(6)]))
    held.thread.shutdown()
    assert batches == [1]  # six writes, one transaction
    assert answers[:3] == ["batch-0", "batch-1", "batch-2"] and answers[4:] == ["batch-4", "batch-5"]
    assert isinstance(answers[3], ValueError)
    assert _keys(db_path) == {f"batch-{i}" for i in (0, 1, 2, 4, 5)}


def test_requests_waiting_together_are_grouped_by_their_accounts_sites(store, db_path):
    """One batch for all (no other writer holds any of their sites). On a store with a lock per site
    (PostgreSQL) the batch names each account's sites as a group, and answers the requests group by
    group, each group in the order its requests came; on SQLite, one writer whatever the sites, in
    the order they came."""
    held = Held()
    batches: list[list[list[str]]] = []
    real_batch = store.batch_of

    def recording_batch(groups):
        batches.append([list(group) for group in groups])
        return real_batch(groups)

    store.batch_of = recording_batch
    order: list[str] = []

    def write(name: str) -> str:
        with store.write() as conn:
            _add(conn, name)
        order.append(name)
        return name

    sites = [("site_b",), ("site_a",), ("site_b",), ("site_a", "site_c"), ("site_b",)]
    jobs = [(write, f"batch-{i}") for i in range(5)]
    answers = asyncio.run(_answered_together(held, store, jobs, sites=sites))
    held.thread.shutdown()
    assert answers == [f"batch-{i}" for i in range(5)]
    if store.writes_side_by_side:
        assert batches == [[["site_b"], ["site_a"], ["site_a", "site_c"]]]
        assert order == ["batch-0", "batch-2", "batch-4", "batch-1", "batch-3"]
    else:
        assert batches == [[["site_a", "site_b", "site_c"]]]
        assert order == [f"batch-{i}" for i in range(5)]
    assert _keys(db_path) == {f"batch-{i}" for i in range(5)}


def test_a_round_is_bounded_and_jobs_without_a_store_run_alone(store, db_path):
    held = Held(most_together=4)
    batches: list[int] = []
    real_batch = store.batch
    store.batch_of = lambda groups: batches.append(1) or real_batch(groups)

    def write(name: str) -> str:
        with store.write() as conn:
            _add(conn, name)
        return name

    answers = asyncio.run(_answered_together(held, store, [(write, f"batch-{i}") for i in range(10)]))
    assert answers == [f"batch-{i}" for i in range(10)]
    assert len(batches) == 3  # 4 + 4 + 2
    held.go.clear(), held.started.clear()
    alone = asyncio.run(
        _answered_together(held, store, [(write, f"batch-alone-{i}") for i in range(3)], together=False)
    )
    held.thread.shutdown()
    assert alone == [f"batch-alone-{i}" for i in range(3)] and len(batches) == 3


def test_when_the_batchs_commit_fails_each_request_is_answered_on_its_own_once(store, db_path):
    """Nothing of a failed batch was kept: each job runs again alone, and is kept once (a full disk
    that stays full fails each alone too: the gateway answers 99999, tests/sandbox/test_full_disk.py)."""
    held = Held()
    real_batch = store.batch_of
    batches: list[str] = []

    class FailingCommit:
        def __init__(self, groups):
            self.groups = groups

        def __enter__(self):
            batches.append("failed")
            self.inner = real_batch(self.groups)
            return self.inner.__enter__()

        def __exit__(self, *exc_info):
            self.inner.__exit__(RuntimeError, RuntimeError("disk I/O error"), None)  # rolled back
            raise RuntimeError("disk I/O error")

    store.batch_of = FailingCommit

    def write(name: str) -> str:
        with store.write() as conn:
            _add(conn, name)
        return name

    answers = asyncio.run(_answered_together(held, store, [(write, f"batch-{i}") for i in range(3)]))
    held.thread.shutdown()
    assert batches == ["failed"] and answers == [f"batch-{i}" for i in range(3)]
    assert _keys(db_path) == {f"batch-{i}" for i in range(3)}  # each kept once (a set of unique keys)


def test_concurrent_auths_over_http_are_each_answered_and_kept_once(db_path):
    """32 clients at once, one of whose AUTHs meets a sandbox bug: that one gets 99999 and leaves
    nothing; every other is answered 0 and kept exactly once."""
    real_auth = auth.handle_auth

    def sometimes_broken(ctx, request):
        if request.get("orderreference") == "broken":
            real_auth(ctx, request)  # writes its record, then fails: the savepoint must take it back
            raise ZeroDivisionError("a sandbox bug")
        return real_auth(ctx, request)

    sandbox = gwkit.sandbox.start(db_path, clock_start=CLOCK)
    sandbox.sandbox.gateway.tables.request_handlers["AUTH"] = sometimes_broken
    try:
        orders = [f"order-{i}" for i in range(63)] + ["broken"]

        async def post_all() -> list[dict]:
            async with httpx.AsyncClient(
                base_url=sandbox.base_url,
                auth=(DEFAULT_USERNAME, DEFAULT_PASSWORD),
                limits=httpx.Limits(max_connections=32),
            ) as client:
                responses = await asyncio.gather(
                    *(
                        client.post(
                            "/json/",
                            json={
                                "alias": DEFAULT_USERNAME,
                                "version": "1.00",
                                "request": [card_auth(orderreference=order)],
                            },
                        )
                        for order in orders
                    )
                )
            return [response.json()["response"][0] for response in responses]

        records = asyncio.run(post_all())
    finally:
        sandbox.stop()
    by_order = dict(zip(orders, records, strict=True))
    assert by_order.pop("broken")["errorcode"] == "99999"
    assert {record["errorcode"] for record in by_order.values()} == {"0"}
    kept = Database(db_path).rows("SELECT orderreference FROM transactions ORDER BY orderreference")
    assert sorted(order for (order,) in kept) == sorted(by_order)


def test_the_event_loop_baseline_answers_on_the_event_loop_and_the_default_in_a_thread(db_path):
    """Workers(on_event_loop=True) is the benchmark's baseline of the sandbox before its threads."""
    sandbox = Sandbox(db_path, clock_start=CLOCK)
    seen: list[str] = []
    real_answer = sandbox.answer

    def answering(request):
        seen.append(threading.current_thread().name)
        return real_answer(request)

    sandbox.answer = answering
    request = SandboxRequest(
        method="POST", path="/json/", headers={"content-type": "application/json"}, body=b'{"request": []}'
    )

    async def main() -> None:
        await Workers(on_event_loop=True).answer(sandbox, request)
        busy = Workers(inline=False)  # never inline: the quick thread answers
        await busy.answer(sandbox, request)
        busy.shutdown()

    try:
        asyncio.run(main())
    finally:
        sandbox.store.close()
    assert seen == ["MainThread", "gwkit-sandbox"]
