"""The team sandbox served by `gwkit sandbox --workers 2` on PostgreSQL: two clock moves at once, one
on each worker, over 2,000 subscriptions for 12 months, one worker SIGKILLed in the middle: every
payment exactly once, none missing.

Nothing waits on time: the test reads the server's own lines, pins a keep-alive connection to each
worker by the process its health answer names, and kills a worker once the database shows the runs
under way (a bounded loop of reads).
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
from datetime import date

import httpx
import pytest

from support.engine_runs import assert_each_payment_made_once, populated
from support.workers import pinned_clients

SUBSCRIPTIONS = 2000
TARGET, UNTIL = "2027-01-01T08:00:00", date(2027, 1, 1)


@pytest.fixture
def store_kind() -> str:
    return "postgresql"


@pytest.fixture
def populated_two_workers(db_path):
    """2,000 subscriptions made (their references and begin dates), then `gwkit sandbox --workers 2`
    on that database: (the subscriptions, the server process, its base URL)."""
    subscriptions = populated(db_path, SUBSCRIPTIONS)
    server = subprocess.Popen(
        [sys.executable, "-m", "gwkit.cli", "sandbox", "--db", db_path, "--port", "0", "--workers", "2"],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    lines = []
    for line in server.stdout:  # until the workers serve (or the server ends)
        lines.append(line)
        if line.startswith("  worker processes:"):
            break
    assert lines and lines[-1].rstrip().endswith("(2 serving)"), lines
    base_url = lines[0].split(" on ")[1].strip()
    yield subscriptions, server, base_url
    server.send_signal(signal.SIGTERM)
    server.communicate(timeout=60)


def test_two_workers_two_clock_moves_one_killed_every_payment_exactly_once(populated_two_workers, db_path):
    import psycopg  # a PostgreSQL server was found, so its driver is installed

    subscriptions, server, base_url = populated_two_workers
    (victim, victim_client), (survivor, survivor_client) = pinned_clients(base_url, 2).items()
    answers: dict[int, object] = {}

    def move(worker: int, client: httpx.Client) -> None:
        try:
            answers[worker] = client.post("/_sandbox/clock/advance", json={"to": TARGET})
        except httpx.HTTPError as error:  # the killed worker's connection drops
            answers[worker] = error

    moves = [
        threading.Thread(target=move, args=(w, c))
        for w, c in ((victim, victim_client), (survivor, survivor_client))
    ]
    for thread in moves:
        thread.start()
    with psycopg.connect(
        db_path, autocommit=True
    ) as conn:  # both runs are under way: a third of the payments made
        for _ in range(1_000_000):
            (made,) = conn.execute("SELECT COUNT(*) FROM subscription_payments").fetchone()
            if made >= SUBSCRIPTIONS * 12 // 3 or not all(t.is_alive() for t in moves):
                break
    assert all(t.is_alive() for t in moves), "a clock move ended before the kill"
    os.kill(victim, signal.SIGKILL)
    for thread in moves:
        thread.join()

    assert isinstance(answers[victim], httpx.HTTPError)
    answer = answers[survivor]
    assert answer.status_code == 200, answer.text
    assert answer.json()["to"] == TARGET
    total = assert_each_payment_made_once(db_path, subscriptions, UNTIL)
    assert total == SUBSCRIPTIONS * 12  # one a month, from the begin date in January to December
    # The server replaced the killed worker and still answers.
    assert survivor_client.get("/_sandbox/clock").json()["now"] == TARGET
    assert server.poll() is None
