"""Many clients at once over real HTTP: nothing lost, no reference twice, queries see everything."""

from __future__ import annotations

import threading

import pytest

from support.sandbox import Gateway, card_auth, parent_auth, query_request, rows, store_request

pytestmark = pytest.mark.both_stores  # each test on SQLite and on PostgreSQL

THREADS = 20
ROUNDS = 5


def test_mixed_requests_from_many_threads(sandbox, db_path):
    barrier = threading.Barrier(THREADS + 1)
    made: dict[int, list[str]] = {}
    failures: list[BaseException] = []

    def client(number: int) -> None:
        order = f"thread-{number}"
        gateway = Gateway(sandbox.base_url)
        mine: list[str] = []
        try:
            barrier.wait()
            for round_ in range(ROUNDS):
                auth = gateway.one(card_auth(orderreference=order, baseamount=str(1000 + round_)))
                stored = gateway.one(store_request(orderreference=order))
                child = gateway.one(parent_auth(stored["transactionreference"], orderreference=order))
                assert auth["errorcode"] == stored["errorcode"] == child["errorcode"] == "0"
                mine += [r["transactionreference"] for r in (auth, stored, child)]
                seen = {r["transactionreference"] for r in gateway.query(orderreference=order)}
                assert seen == set(mine)  # each client reads its own writes, and nobody else's
            made[number] = mine
        except BaseException as exc:  # reported by the main thread
            failures.append(exc)
        finally:
            gateway.close()

    def clock() -> None:  # the daily jobs write too, from another connection
        try:
            barrier.wait()
            for _ in range(12):
                sandbox.advance(by="PT2H")
        except BaseException as exc:
            failures.append(exc)

    threads = [threading.Thread(target=client, args=(n,)) for n in range(THREADS)]
    threads.append(threading.Thread(target=clock))
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=300)
    assert not any(t.is_alive() for t in threads), "a client thread hung"
    assert not failures, failures

    sent = [reference for references in made.values() for reference in references]
    assert len(sent) == THREADS * ROUNDS * 3
    assert len(set(sent)) == len(sent), "a transaction reference was given twice"
    assert rows(db_path) == len(sent), "a record was lost or an extra one kept"

    gateway = Gateway(sandbox.base_url)
    try:
        (answer,) = gateway.records(query_request(orderreference=[f"thread-{n}" for n in range(THREADS)]))
        assert sorted(r["transactionreference"] for r in answer["records"]) == sorted(sent)
        assert sandbox.now().isoformat() == "2026-01-16T10:00:00"
        auths = [r for r in answer["records"] if r["requesttypedescription"] == "AUTH"]
        assert {r["settlestatus"] for r in auths} <= {"0", "100"}
    finally:
        gateway.close()
