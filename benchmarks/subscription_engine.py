"""The subscription engine against SQLite's own floor.

10,000 monthly subscriptions are created through the sandbox's real AUTH SUBSCRIPTION handler
(in-process, no HTTP), then the clock is advanced twelve months: 120,000 payments. The floor is
the time SQLite takes to insert the same 120,000 payment rows (the records the engine made) into
an empty `transactions` table of the same schema, in one transaction, measured in the same run.

    .venv/bin/python benchmarks/subscription_engine.py [--subscriptions 10000] [--months 12] [--rounds 3]

Prints both times and the ratio; the target is the engine within 2.5x of the floor. Each round
starts from a fresh sandbox; the ratio reported is the median of the rounds' own ratios (each
engine run against the floor measured right after it), so one slow moment of a shared machine
does not decide it. The advance also runs settlement (and the other daily jobs); the engine's own
time is measured apart, inside the advance, with the commits of the days' shared transaction made
between days (jobwrites.py), and both wall-clock and CPU times are shown (a shared machine
inflates wall time).
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import replace
from datetime import date, datetime
from pathlib import Path
from typing import Any

from gwkit.sandbox import Sandbox
from gwkit.sandbox.gateway import jobwrites
from gwkit.sandbox.gateway.engine import JOB_NAME
from gwkit.sandbox.gateway.store import SqliteStore as Store

ENVELOPE_SIZE = 100  # request objects per envelope while creating the subscriptions


def subscription_request(index: int) -> dict[str, str]:
    return {
        "requesttypedescriptions": ["AUTH", "SUBSCRIPTION"],
        "sitereference": "test_gwkit12345",
        "accounttypedescription": "ECOM",
        "currencyiso3a": "GBP",
        "baseamount": str(500 + index % 5000),
        "orderreference": f"bench-{index}",
        "pan": "4111111111111111",
        "expirydate": "12/2035",
        "securitycode": "123",
        "subscriptiontype": "RECURRING",
        "subscriptionunit": "MONTH",
        "subscriptionfrequency": "1",
        "subscriptionnumber": "1",
        "subscriptionfinalnumber": "0",
        # begin dates spread over the month, all after the day the clock starts
        "subscriptionbegindate": date(2026, 1, 2 + index % 27).isoformat(),
        "credentialsonfile": "1",
    }


def create_subscriptions(sandbox: Sandbox, count: int) -> None:
    account = sandbox.default_account
    for start in range(0, count, ENVELOPE_SIZE):
        requests = [subscription_request(i) for i in range(start, min(count, start + ENVELOPE_SIZE))]
        answer = sandbox.gateway.process({"alias": account.username, "request": requests}, account)
        failed = [r for r in answer["response"] if r["errorcode"] != "0"]
        if failed:
            raise SystemExit(f"creating subscriptions failed: {failed[0]}")


COMMITS = "commits between days"


def timed_jobs(sandbox: Sandbox) -> dict[str, list[float]]:
    """Wrap each daily job to add up its wall-clock and CPU seconds, and the shared write's commits made
    outside any job (between days, with the marks) under COMMITS: their [wall, CPU, count]."""
    spent: dict[str, list[float]] = {COMMITS: [0.0, 0.0, 0]}
    jobs = sandbox.gateway.daily_jobs
    running: list[str] = []
    for index, job in enumerate(jobs):
        spent[job.name] = [0.0, 0.0]

        def run(context, day, _run=job.run, _spent=spent[job.name], _name=job.name):
            wall, cpu = time.perf_counter(), time.process_time()
            running.append(_name)
            try:
                return _run(context, day)
            finally:
                running.pop()
                _spent[0] += time.perf_counter() - wall
                _spent[1] += time.process_time() - cpu

        jobs[index] = replace(
            job, run=run
        )  # its next_day kept: the move skips idle days as without the timing
    commit = jobwrites.SharedWrite.commit

    def timed_commit(self, _spent=spent[COMMITS]):
        wall, cpu = time.perf_counter(), time.process_time()
        commit(self)
        if not running:  # a job's own commits are in its time already
            _spent[0] += time.perf_counter() - wall
            _spent[1] += time.process_time() - cpu
            _spent[2] += 1

    jobwrites.SharedWrite.commit = timed_commit
    return spent


@contextmanager
def commits_restored() -> Iterator[None]:
    """Put back `SharedWrite.commit` after a round (`timed_jobs` wraps it)."""
    commit = jobwrites.SharedWrite.commit
    try:
        yield
    finally:
        jobwrites.SharedWrite.commit = commit


def timed_writes(sandbox: Sandbox) -> list[float]:
    """Wrap the store's write transactions to keep how long each held the write lock (seconds)."""
    held: list[float] = []
    write = sandbox.store.write

    @contextmanager
    def timed_write(*args: Any, **kwargs: Any):
        with ExitStack() as stack:
            locked: list[float] = []
            stack.callback(lambda: held.extend(time.perf_counter() - at for at in locked))  # after the commit
            conn = stack.enter_context(write(*args, **kwargs))  # the sites whose locks it takes
            locked.append(time.perf_counter())
            yield conn

    sandbox.store.write = timed_write
    return held


def floor_seconds(sandbox: Sandbox, directory: Path) -> tuple[float, float, int]:
    """SQLite inserting the engine's payment rows into an empty table, one transaction: (wall, CPU, rows)."""
    conn = sandbox.store.connection()
    columns = [r[1] for r in conn.execute("PRAGMA table_info(transactions)") if r[1] != "id"]
    rows = conn.execute(
        f"SELECT {', '.join(columns)} FROM transactions WHERE accounttypedescription = 'RECUR' "
        "AND requesttypedescription = 'AUTH'"
    ).fetchall()
    rows = [tuple(r) for r in rows]
    floor_store = Store(directory / "floor.db")
    floor_store.connection().execute("PRAGMA foreign_keys=OFF")  # the cards are not copied
    sql = f"INSERT INTO transactions ({', '.join(columns)}) VALUES ({', '.join('?' * len(columns))})"
    wall, cpu = time.perf_counter(), time.process_time()
    with floor_store.write() as floor:
        floor.executemany(sql, rows)
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    floor_store.close()
    return wall, cpu, len(rows)


def one_round(args: argparse.Namespace, directory: Path) -> float:
    """Create the subscriptions, advance the clock, measure the floor: print the figures, return engine / floor."""
    sandbox = Sandbox(directory / "sandbox.db", clock_start=datetime(2026, 1, 1, 9, 0))
    started = time.perf_counter()
    create_subscriptions(sandbox, args.subscriptions)
    print(
        f"created {args.subscriptions:,} subscriptions through the handler in "
        f"{time.perf_counter() - started:.2f} s"
    )

    spent = timed_jobs(sandbox)
    write = sandbox.store.write
    held = timed_writes(sandbox)
    started = time.perf_counter()
    report = sandbox.advance(by=f"P{args.months}M")
    advance = time.perf_counter() - started
    made = report["subscriptions"]["made"]
    commit_wall, commit_cpu, commits = spent.pop(COMMITS)
    # The commits between days hold mostly the engine's payments: counted as the engine's time.
    engine_wall, engine_cpu = spent[JOB_NAME][0] + commit_wall, spent[JOB_NAME][1] + commit_cpu
    others = ", ".join(f"{name} {wall:.2f} s" for name, (wall, _) in spent.items() if name != JOB_NAME)
    print(
        f"advance: {args.months} months, {report['days']} daily runs, {made:,} payments in {advance:.2f} s "
        f"(other daily jobs: {others})"
    )
    print(
        f"engine: {engine_wall:.2f} s wall, {engine_cpu:.2f} s CPU "
        f"({engine_wall / max(made, 1) * 1e6:.0f} us per payment), of which {commits} commits between "
        f"days {commit_wall:.2f} s wall"
    )

    print(
        f"write lock: {len(held)} write transactions, the longest held {max(held, default=0) * 1e3:.0f} ms "
        f"(with its commit)"
    )
    sandbox.store.write = write
    floor_wall, floor_cpu, inserted = floor_seconds(sandbox, directory)
    print(
        f"floor:  SQLite inserted the same {inserted:,} payment rows in one transaction in "
        f"{floor_wall:.2f} s wall, {floor_cpu:.2f} s CPU"
    )
    print(
        f"engine / floor = {engine_wall / floor_wall:.1f}x wall, {engine_cpu / floor_cpu:.1f}x CPU "
        f"(target: within 2.5x); whole advance / floor = {advance / floor_wall:.1f}x"
    )
    sandbox.close()
    return engine_wall / floor_wall


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--subscriptions", type=int, default=10_000)
    parser.add_argument("--months", type=int, default=12)
    parser.add_argument(
        "--rounds", type=int, default=3, help="fresh sandboxes, each engine run against its floor"
    )
    args = parser.parse_args()
    ratios = []
    for round_ in range(args.rounds):
        print(f"-- round {round_ + 1} of {args.rounds}")
        with tempfile.TemporaryDirectory(prefix="gwkit-bench-") as tmp, commits_restored():
            ratios.append(one_round(args, Path(tmp)))
    print(
        f"engine / floor by round: {', '.join(f'{r:.2f}' for r in ratios)} (median {statistics.median(ratios):.2f})"
    )
    print(f"ratio engine_vs_insert_floor {statistics.median(ratios):.2f}")


if __name__ == "__main__":
    main()
