"""Transaction reference numbers taken a block ahead (references.py): never given twice, whatever
commits, rolls back or forks; and the counter is written once per block, not once per record."""

from __future__ import annotations

import multiprocessing
import sqlite3
from pathlib import Path

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from gwkit.sandbox.gateway.references import BLOCK
from gwkit.sandbox.gateway.store import SqliteStore as Store
from gwkit.sandbox.gateway.store import savepoint

USED = "CREATE TABLE IF NOT EXISTS used (number INTEGER PRIMARY KEY, store INTEGER NOT NULL)"


def numbers_of(references: list[str]) -> list[int]:
    return [int(reference.rsplit("-", 1)[1]) for reference in references]


def use(store: Store, conn: sqlite3.Connection, index: int, count: int) -> list[int]:
    """Take `count` numbers and keep them as a record would: a number given twice fails the INSERT."""
    numbers = numbers_of(store.reserve_references(conn, count))
    conn.executemany("INSERT INTO used (number, store) VALUES (?, ?)", [(n, index) for n in numbers])
    return numbers


def counter(path: Path) -> int:
    with sqlite3.connect(path) as conn:
        return int(conn.execute("SELECT value FROM meta WHERE key = 'reference_counter'").fetchone()[0])


class Abandoned(Exception):
    pass


# A write transaction of one of two stores on one file (two processes, as far as the numbers go):
# each step takes some numbers, directly or inside a savepoint kept or rolled back; then it commits
# or rolls back.
step = st.tuples(st.sampled_from(["take", "savepoint kept", "savepoint rolled back"]), st.integers(1, 80))
transaction = st.tuples(st.integers(0, 1), st.lists(step, min_size=1, max_size=4), st.booleans())


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(transactions=st.lists(transaction, min_size=1, max_size=12))
@example(
    transactions=[
        (0, [("take", 1)], False),
        (1, [("take", 1)], True),
        (0, [("take", 1)], True),
        (1, [("take", 1)], True),
    ]
)  # test_a_rolled_back_block_is_not_given_out's case
def test_no_number_is_given_twice(tmp_path_factory, transactions):
    path = tmp_path_factory.mktemp("references") / "sandbox.db"
    stores = [Store(path, schemas=(USED,)), Store(path, schemas=(USED,))]
    kept: list[list[int]] = [[], []]  # each store's numbers that survived, in the order given
    try:
        for index, steps, commits in transactions:
            store, survived = stores[index], []
            try:
                with store.write() as conn:
                    for kind, count in steps:
                        if kind == "take":
                            survived += use(store, conn, index, count)
                            continue
                        try:
                            with savepoint(conn, "step"):
                                numbers = use(store, conn, index, count)
                                if kind == "savepoint rolled back":
                                    raise Abandoned
                            survived += numbers
                        except Abandoned:
                            pass
                    if not commits:
                        raise Abandoned
            except Abandoned:
                survived = []
            kept[index] += survived
        every = kept[0] + kept[1]
        assert len(set(every)) == len(every)
        assert max(every, default=0) <= counter(path) if every else True
        assert all(numbers == sorted(numbers) for numbers in kept)  # one process's references grow
    finally:
        for store in stores:
            store.close()


def test_the_counter_is_written_once_per_block(tmp_path):
    store = Store(tmp_path / "sandbox.db", schemas=(USED,))
    statements: list[str] = []
    store.connection().set_trace_callback(statements.append)
    given = []
    for _ in range(3 * BLOCK):
        with store.write() as conn:
            given += use(store, conn, 0, 1)
    moves = [s for s in statements if s.startswith("UPDATE meta")]
    assert given == list(range(given[0], given[0] + 3 * BLOCK))  # no gap while nothing fails
    assert len(moves) == -(-3 * BLOCK // (BLOCK + 1))  # each move: the record's number and a block behind it
    assert counter(tmp_path / "sandbox.db") >= given[-1]
    store.close()


def test_a_rolled_back_block_is_not_given_out(tmp_path):
    path = tmp_path / "sandbox.db"
    mine, theirs = Store(path, schemas=(USED,)), Store(path, schemas=(USED,))
    with pytest.raises(Abandoned), mine.write() as conn:
        use(mine, conn, 0, 1)  # takes a block ahead, then all of it is rolled back
        raise Abandoned
    # The counter is where it was: theirs takes the same numbers, and leaves the counter where my
    # rolled-back block ended (the one case a look at the counter alone would not catch).
    with theirs.write() as conn:
        their_numbers = use(theirs, conn, 1, 1)
    with mine.write() as conn:
        my_numbers = use(mine, conn, 0, 5)
    with theirs.write() as conn:
        their_numbers += use(theirs, conn, 1, 5)  # from the block theirs took ahead
    assert not set(my_numbers) & set(their_numbers)
    mine.close()
    theirs.close()


def _take_in_fork(store: Store, queue: multiprocessing.Queue) -> None:
    with store.write() as conn:
        queue.put(use(store, conn, 1, 3))


def test_a_forked_child_does_not_use_its_parents_numbers(tmp_path):
    path = tmp_path / "sandbox.db"
    store = Store(path, schemas=(USED,))
    with store.write() as conn:
        use(store, conn, 0, 1)  # this process now holds the rest of a block
    store.close()  # connections are not carried over a fork; the numbers in memory would be
    context = multiprocessing.get_context("fork")
    queue = context.Queue()
    child = context.Process(target=_take_in_fork, args=(store, queue))
    child.start()
    childs = queue.get(timeout=60)
    child.join(timeout=60)
    assert child.exitcode == 0
    with store.write() as conn:
        mine = use(store, conn, 0, 3)  # an INSERT of a number the child kept would fail
    assert not set(mine) & set(childs)
    store.close()


def test_numbers_taken_outside_a_transaction_are_kept_at_once(tmp_path):
    path = tmp_path / "sandbox.db"
    mine, theirs = Store(path, schemas=(USED,)), Store(path, schemas=(USED,))
    conn = mine.connection()  # autocommit: the counter's UPDATE commits by itself
    my_numbers = numbers_of(mine.reserve_references(conn, 2))
    with theirs.write() as their_conn:
        their_numbers = use(theirs, their_conn, 1, 3)
    my_numbers += numbers_of(mine.reserve_references(conn, 2))  # from the block mine took ahead
    assert my_numbers == list(range(my_numbers[0], my_numbers[0] + 4))
    assert not set(my_numbers) & set(their_numbers)
    mine.close()
    theirs.close()
