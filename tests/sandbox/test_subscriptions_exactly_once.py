"""Every subscription payment is made exactly once: two engine runs at the same time (threads,
processes) on one database, and a run killed with SIGKILL halfway, then started again.

Nothing here waits on time: runs start together through a barrier (threads) or a line on stdin
(processes), and the killed run kills itself after a set number of payments.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import threading
from contextlib import contextmanager
from datetime import date
from itertools import pairwise
from pathlib import Path

import pytest

from gwkit.sandbox import Sandbox
from gwkit.sandbox.gateway import engine, jobwrites
from gwkit.sandbox.gateway.store import PostgresStore, SqliteStore
from support.engine_runs import (
    assert_each_payment_made_once,
    assert_whole_days_committed,
    committed_payments,
    populated,
)

pytestmark = pytest.mark.both_stores  # each test on SQLite and on PostgreSQL

TARGET = "2026-07-01T08:00:00"
ROOT = Path(__file__).resolve().parents[2]


def run_script(tmp_path: Path, body: str, *args: str, stdin=None) -> subprocess.Popen:
    script = tmp_path / "engine_run.py"
    script.write_text(textwrap.dedent(body))
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.Popen(
        [sys.executable, str(script), *args],
        stdin=stdin,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )


# -- two runs at once ----------------------------------------------------------------------------


@contextmanager
def _no_turn(sites, wait=True):
    yield True


def overlapping(sandboxes: list[Sandbox]) -> list[Sandbox]:
    """Clock moves of a site take turns (`store.hold`: docs/team-sandbox.md); these runs are made to
    overlap anyway, as a move and a start's catch-up (which takes no turn) may: the engine's own
    re-reads under the write locks keep each payment once."""
    for sandbox in sandboxes:
        sandbox.store.hold = _no_turn
    return sandboxes


def advance_both(sandboxes: list[Sandbox], before=lambda: None) -> list[dict]:
    """Advance every sandbox to TARGET, each in its own thread; their reports, once all are done
    and closed. Any exception in a thread fails the test."""
    reports: list[dict] = [{} for _ in sandboxes]
    errors: list[BaseException] = []

    def run(me: int) -> None:
        try:
            before()
            reports[me] = sandboxes[me].advance(to=TARGET)
        except BaseException as error:
            errors.append(error)

    threads = [threading.Thread(target=run, args=(me,)) for me in range(len(sandboxes))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    for sandbox in sandboxes:
        sandbox.close()
    assert errors == []
    return reports


def test_two_threads_running_freely_on_the_same_database(db_path, tmp_path, monkeypatch):
    """Both runs start together and race: many small batches, each re-read under the write lock."""
    db = db_path
    subscriptions = populated(db, 120)
    monkeypatch.setattr(engine, "BATCH_SIZE", 3)
    sandboxes = overlapping([Sandbox(db), Sandbox(db)])
    start = threading.Barrier(2)
    reports = advance_both(sandboxes, before=start.wait)
    total = assert_each_payment_made_once(db, subscriptions, date(2026, 7, 1))
    assert total == 120 * 6
    assert sum(r.get("subscriptions", {}).get("made", 0) for r in reports) == total


def test_two_threads_reaching_the_same_due_batch_at_once(db_path, tmp_path, monkeypatch):
    """Deterministic overlap: each run's first engine transaction waits at a barrier until the other
    run is at the same point, so both ask for the same due batch at the same moment. Each day and
    each batch commits on its own here, so the engine, not an earlier day, opens that transaction."""
    db = db_path
    subscriptions = populated(db, 120, settled=True)  # so the first engine write of each run pays
    monkeypatch.setattr(engine, "BATCH_SIZE", 3)
    for kind in (SqliteStore, PostgresStore):
        monkeypatch.setattr(kind, "rows_per_commit", 1)
    monkeypatch.setattr(jobwrites, "DAYS_PER_COMMIT", 1)
    sandboxes = overlapping([Sandbox(db), Sandbox(db)])
    rendezvous = threading.Barrier(2, timeout=60)
    met: list[bool] = []
    for sandbox in sandboxes:
        real_write = sandbox.store.write
        waited = threading.Event()

        def write(sites=None, real_write=real_write, waited=waited):
            if not waited.is_set() and called_from("run_subscriptions"):  # through the shared write
                waited.set()
                rendezvous.wait()  # both runs are about to read the same first due batch
                met.append(True)
            return real_write(sites)

        sandbox.store.write = write

    reports = advance_both(sandboxes)
    assert len(met) == 2  # both runs met there
    total = assert_each_payment_made_once(db, subscriptions, date(2026, 7, 1))
    made = [r.get("subscriptions", {}).get("made", 0) for r in reports]
    # Which run pays what after the rendezvous is up to SQLite's lock: the split is not asserted.
    assert total == 120 * 6 and sum(made) == total


def called_from(function: str) -> bool:
    frame = sys._getframe(2)
    while frame is not None and frame.f_code.co_name != function:
        frame = frame.f_back
    return frame is not None


PROCESS_RUN = """
    import json, sys
    from gwkit.sandbox import Sandbox
    from gwkit.sandbox.gateway import engine
    engine.BATCH_SIZE = int(sys.argv[3])
    sandbox = Sandbox(sys.argv[1])
    print("ready", flush=True)
    sys.stdin.readline()  # both processes start together
    report = sandbox.advance(to=sys.argv[2])
    print(json.dumps({"made": report.get("subscriptions", {}).get("made", 0)}), flush=True)
"""


def test_two_processes_advancing_the_same_database(db_path, tmp_path):
    db = db_path
    subscriptions = populated(db, 150)
    runs = [run_script(tmp_path, PROCESS_RUN, str(db), TARGET, "5", stdin=subprocess.PIPE) for _ in range(2)]
    for run in runs:
        assert run.stdout.readline().strip() == "ready"
    for run in runs:
        run.stdin.write("go\n")
        run.stdin.flush()
    outputs = [run.communicate(timeout=240) for run in runs]
    assert [run.returncode for run in runs] == [0, 0], [err for _, err in outputs]
    made = [json.loads(out.strip().splitlines()[-1])["made"] for out, _ in outputs]
    total = assert_each_payment_made_once(db, subscriptions, date(2026, 7, 1))
    assert total == 150 * 6 and sum(made) == total


# -- a run killed halfway ----------------------------------------------------------------------

KILLED_RUN = """
    import os, signal, sys
    from pathlib import Path
    from gwkit.sandbox import Sandbox
    from gwkit.sandbox.gateway import engine, jobwrites
    from gwkit.sandbox.gateway.store import PostgresStore, SqliteStore
    db, target, batch, rows_per_commit, kill_after, mode, marker = sys.argv[1:8]
    engine.BATCH_SIZE = int(batch)
    SqliteStore.rows_per_commit = PostgresStore.rows_per_commit = int(rows_per_commit)
    kill_after = int(kill_after)
    sandbox = Sandbox(db)
    made = 0

    def die(count):
        Path(marker).write_text(str(count))  # closed, so on disk before the kill
        os.kill(os.getpid(), signal.SIGKILL)

    if mode == "inside-a-transaction":  # killed between two payments of one write transaction
        real_pay = engine.Payer.pay

        def pay_then_maybe_die(*args, **kwargs):
            global made
            paid = real_pay(*args, **kwargs)
            made += 1
            if made == kill_after:
                die(made)
            return paid

        engine.Payer.pay = pay_then_maybe_die
    else:  # killed right after a commit (between batches of a day, or between days)
        real_commit = jobwrites.SharedWrite.commit

        def commit_then_maybe_die(self):
            global made
            was_open = self.is_open
            real_commit(self)
            made += was_open
            if made == kill_after:
                die(made)

        jobwrites.SharedWrite.commit = commit_then_maybe_die
    sandbox.advance(to=target)
    print("finished without being killed", flush=True)
"""


@pytest.mark.parametrize(
    "mode, rows_per_commit, kill_after",
    [
        ("inside-a-transaction", 2000, 100),  # several days in the transaction rolled back
        ("inside-a-transaction", 20, 100),
        ("after-a-commit", 20, 6),
        ("after-a-commit", 2000, 3),  # days share commits: killed between days
    ],
)
def test_a_run_killed_halfway_is_finished_by_the_next_start(
    db_path, tmp_path, mode, rows_per_commit, kill_after
):
    db = db_path
    marker = tmp_path / "killed"
    subscriptions = populated(db, 60)
    run = run_script(
        tmp_path, KILLED_RUN, str(db), TARGET, "7", str(rows_per_commit), str(kill_after), mode, str(marker)
    )
    out, err = run.communicate(timeout=240)
    assert run.returncode == -signal.SIGKILL, (out, err)
    assert marker.exists()
    before_restart = committed_payments(db)
    assert 0 < before_restart < 60 * 6  # really halfway
    if mode == "inside-a-transaction":
        assert before_restart < kill_after  # the transaction in flight was rolled back whole
    # What committed is whole: every payment due by the days marked done, each once with its claim.
    assert_whole_days_committed(db, subscriptions)
    # Starting the sandbox again runs the unfinished days (Gateway.run_due_jobs at start).
    assert assert_each_payment_made_once(db, subscriptions, date(2026, 7, 1)) == 60 * 6


# -- days share a write transaction, of a bounded size -------------------------------------------


def test_a_clock_move_commits_days_together_and_never_more_than_its_bound_at_once(db_path, monkeypatch):
    """Each commit is watched from outside the sandbox: how many payments it put on disk."""
    subscriptions = populated(db_path, 60)
    monkeypatch.setattr(engine, "BATCH_SIZE", 7)
    for kind in (SqliteStore, PostgresStore):
        monkeypatch.setattr(kind, "rows_per_commit", 50)
    on_disk: list[int] = []
    real_commit = jobwrites.SharedWrite.commit

    def watched_commit(self):
        was_open = self.is_open
        real_commit(self)
        if was_open:
            on_disk.append(committed_payments(db_path))

    monkeypatch.setattr(jobwrites.SharedWrite, "commit", watched_commit)
    sandbox = Sandbox(db_path)
    report = sandbox.advance(to=TARGET)
    sandbox.close()

    assert assert_each_payment_made_once(db_path, subscriptions, date(2026, 7, 1)) == 60 * 6
    committed_at_once = [after - before for before, after in pairwise([0, *on_disk])]
    assert sum(committed_at_once) == 60 * 6
    assert max(committed_at_once) <= 50 + 7 - 1  # the bound, passed by at most one batch of the engine
    assert len(on_disk) < report["days"] / 2  # days shared their commits
