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
from datetime import date
from pathlib import Path

import pytest

from gwkit.sandbox import Sandbox
from gwkit.sandbox.gateway import engine
from support.engine_runs import assert_each_payment_made_once, committed_payments, populated

pytestmark = pytest.mark.both_stores  # each test on SQLite and on PostgreSQL

TARGET = "2026-07-01T08:00:00"
ROOT = Path(__file__).resolve().parents[2]


def run_script(tmp_path: Path, body: str, *args: str, stdin=None) -> subprocess.Popen:
    script = tmp_path / "engine_run.py"
    script.write_text(textwrap.dedent(body))
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.Popen([sys.executable, str(script), *args], stdin=stdin, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env=env)


# -- two runs at once ----------------------------------------------------------------------------

def advance_both(sandboxes: list[Sandbox], before=lambda: None) -> list[dict]:
    """Advance every sandbox to TARGET, each in its own thread; their reports, once all are done
    and closed. Any exception in a thread fails the test."""
    reports: list[dict] = [{} for _ in sandboxes]
    errors: list[BaseException] = []

    def run(me: int) -> None:
        try:
            before()
            reports[me] = sandboxes[me].advance(to=TARGET)
        except BaseException as error:  # noqa: BLE001 - reported below
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
    sandboxes = [Sandbox(db), Sandbox(db)]
    start = threading.Barrier(2)
    reports = advance_both(sandboxes, before=start.wait)
    total = assert_each_payment_made_once(db, subscriptions, date(2026, 7, 1))
    assert total == 120 * 6
    assert sum(r.get("subscriptions", {}).get("made", 0) for r in reports) == total


def test_two_threads_reaching_the_same_due_batch_at_once(db_path, tmp_path, monkeypatch):
    """Deterministic overlap: each run's first engine transaction waits at a barrier until the other
    run is at the same point, so both ask for the same due batch at the same moment."""
    db = db_path
    subscriptions = populated(db, 120, settled=True)  # so the first engine write of each run pays
    monkeypatch.setattr(engine, "BATCH_SIZE", 3)
    sandboxes = [Sandbox(db), Sandbox(db)]
    rendezvous = threading.Barrier(2, timeout=60)
    for sandbox in sandboxes:
        real_write = sandbox.store.write
        waited = threading.Event()

        def write(real_write=real_write, waited=waited):
            if not waited.is_set() and sys._getframe(1).f_code.co_name == "run_subscriptions":
                waited.set()
                rendezvous.wait()  # both runs are about to read the same first due batch
            return real_write()

        sandbox.store.write = write

    reports = advance_both(sandboxes)
    total = assert_each_payment_made_once(db, subscriptions, date(2026, 7, 1))
    made = [r.get("subscriptions", {}).get("made", 0) for r in reports]
    # Which run pays what after the rendezvous is up to SQLite's lock: the split is not asserted.
    assert total == 120 * 6 and sum(made) == total


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
    from gwkit.sandbox.gateway import engine
    db, target, batch, kill_after, mode, marker = sys.argv[1:7]
    engine.BATCH_SIZE = int(batch)
    kill_after = int(kill_after)
    sandbox = Sandbox(db)
    made = 0

    def die(count):
        Path(marker).write_text(str(count))  # closed, so on disk before the kill
        os.kill(os.getpid(), signal.SIGKILL)

    if mode == "inside-a-batch":  # killed between two payments of one write transaction
        real_authorise = engine.authorise

        def authorise_then_maybe_die(*args, **kwargs):
            global made
            record = real_authorise(*args, **kwargs)
            made += 1
            if made == kill_after:
                die(made)
            return record

        engine.authorise = authorise_then_maybe_die
        sandbox.advance(to=target)
    else:  # killed right after a batch committed, from the progress hook
        def progress(label, done, total):
            global made
            made += 1
            if made == kill_after:
                die(done)

        sandbox.advance(to=target, progress=progress)
    print("finished without being killed", flush=True)
"""


@pytest.mark.parametrize("mode, kill_after", [("inside-a-batch", 100), ("after-a-batch", 15)])
def test_a_run_killed_halfway_is_finished_by_the_next_start(db_path, tmp_path, mode, kill_after):
    db = db_path
    marker = tmp_path / "killed"
    subscriptions = populated(db, 60)
    run = run_script(tmp_path, KILLED_RUN, str(db), TARGET, "7", str(kill_after), mode, str(marker))
    out, err = run.communicate(timeout=240)
    assert run.returncode == -signal.SIGKILL, (out, err)
    assert marker.exists()
    before_restart = committed_payments(db)
    assert 0 < before_restart < 60 * 6  # really halfway
    if mode == "inside-a-batch":
        assert before_restart < kill_after  # the batch in flight was rolled back whole
    # Starting the sandbox again runs the unfinished days (Gateway.run_due_jobs at start).
    assert assert_each_payment_made_once(db, subscriptions, date(2026, 7, 1)) == 60 * 6
