"""Two workers' claims on one delivery, interleaved by hand: each worker a store of its own on the same
database (a SQLite file, or a PostgreSQL schema), as `gwkit sandbox --workers 2` has.

The race these pin: worker A's attempt fails, but its answer is recorded only after worker B moved
the clock past the retry; the retry must be due at B's clock (5 minutes after A's attempt), and then
sent by one worker only.
"""

from __future__ import annotations

from datetime import datetime, timedelta

import pytest

from gwkit.sandbox.gateway import notifications as n
from gwkit.sandbox.gateway import store

pytestmark = pytest.mark.both_stores

SITE = "test_site12345"
MADE = datetime(2026, 1, 15, 10, 0, 0)
MOVED = MADE + timedelta(minutes=10)
LEASE = 30.0


@pytest.fixture
def workers(db_path):
    a = store.open_store(db_path, schemas=(n.SCHEMA,))
    b = store.open_store(db_path, schemas=(n.SCHEMA,))
    yield a, b
    a.close()
    b.close()


def keep_delivery(worker) -> str:
    rule = n.rule_from({"url": "http://127.0.0.1:9/hook", "flow": "offline"}, SITE, MADE, None)
    record = {"transactionreference": "75-9-1", "sitereference": SITE, "baseamount": "1050"}
    with worker.write() as conn:
        n.add_rule(conn, rule)
        reference = n.add_delivery(conn, rule, record, "made", MADE)
    assert reference is not None
    return reference


def claim(worker, reference: str, name: str, wall: float, now: datetime) -> n.Claimed | None:
    with worker.write() as conn:
        return n.claim(conn, reference, name, wall, LEASE, now)


def test_a_failure_recorded_after_another_workers_clock_move_leaves_the_retry_due_for_one_worker(workers):
    a, b = workers
    reference = keep_delivery(a)
    first = claim(a, reference, "worker-a", 1000.0, MADE)  # A sends the first attempt at MADE
    assert first is not None and first.number == 1
    # B moves the clock while A waits for the listener: the delivery is A's, not B's to send
    assert claim(b, reference, "worker-b", 1001.0, MOVED) is None
    assert n.due(b.connection(), {SITE: MOVED}, 1001.0) == []
    with a.write() as conn:  # the listener answered 500: recorded after the move
        assert n.finish(conn, first, 500, 12.0, None, "worker-a") == "retrying"

    (delivery,) = n.deliveries_of(b.connection(), [SITE])
    assert delivery["next_at"] == (MADE + n.FIRST_RETRY).strftime(n.ISO)  # from the attempt, not the move
    assert n.due(b.connection(), {SITE: MOVED}, 1002.0) == [(reference, SITE)]  # B's sender sees it due
    assert n.due(a.connection(), {SITE: MOVED}, 1002.0) == [(reference, SITE)]  # and so does A's
    retry = claim(b, reference, "worker-b", 1002.0, MOVED)
    assert retry is not None and retry.number == 2
    assert claim(a, reference, "worker-a", 1002.0, MOVED) is None  # one of them sends it
    with b.write() as conn:
        assert n.finish(conn, retry, 200, 9.0, None, "worker-b") == "delivered"

    (delivery,) = n.deliveries_of(a.connection(), [SITE])
    assert [(x["number"], x["at"], x["status"]) for x in delivery["attempts"]] == [
        (1, MADE.strftime(n.ISO), 500),
        (2, MOVED.strftime(n.ISO), 200),
    ]
    assert n.due(a.connection(), {SITE: MOVED + timedelta(days=3)}, 1003.0) == []


def test_a_claim_held_past_its_lease_is_taken_over_and_the_late_answer_does_not_undo_it(workers):
    a, b = workers
    reference = keep_delivery(a)
    stuck = claim(a, reference, "worker-a", 1000.0, MADE)
    assert stuck is not None
    assert claim(b, reference, "worker-b", 1000.0 + LEASE - 1, MADE) is None  # A's lease still runs
    taken = claim(b, reference, "worker-b", 1000.0 + LEASE + 1, MADE)  # A crashed or hung: B repeats it
    assert taken is not None and taken.number == 2
    with b.write() as conn:
        assert n.finish(conn, taken, 200, 5.0, None, "worker-b") == "delivered"
    with a.write() as conn:  # A's answer comes at last: recorded on its own attempt only
        assert (
            n.finish(conn, stuck, 500, 40_000.0, None, "worker-a") == "delivered"
        )  # B's, not A's "retrying"

    (delivery,) = n.deliveries_of(b.connection(), [SITE])
    assert delivery["state"] == "delivered" and delivery["next_at"] is None
    assert [x["status"] for x in delivery["attempts"]] == [500, 200]
    assert n.due(b.connection(), {SITE: MOVED}, 2000.0) == []
