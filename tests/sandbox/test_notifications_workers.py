"""URL notifications on the team sandbox: `gwkit sandbox --workers 2` on PostgreSQL, both workers
live and both sending, each delivery attempt made by one of them only.

Payments go through both workers (a keep-alive connection pinned to each); the listener fails every
first attempt, so all the retries fall due at one clock move, made on one worker, while the other
worker's sender finds them due too: the claims in the database decide who sends each.
"""

from __future__ import annotations

import signal
import subprocess
import sys
from collections import Counter

import pytest

from gwkit.notifications import NotificationListener
from gwkit.sandbox.gateway.accounts import DEFAULT_USERNAME
from support.databases import POSTGRES_HOWTO
from support.sandbox import card_auth
from support.workers import pinned_clients

psycopg = pytest.importorskip("psycopg", reason=POSTGRES_HOWTO)
PAYMENTS = 24


@pytest.fixture
def store_kind() -> str:
    return "postgresql"


@pytest.fixture
def two_workers(db_path):
    server = subprocess.Popen(
        [sys.executable, "-m", "gwkit.cli", "sandbox", "--db", db_path, "--port", "0", "--workers", "2"]
        + ["--notify-host", "127.0.0.1"],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    lines = []
    for line in server.stdout:
        lines.append(line)
        if line.startswith("  worker processes:"):
            break
    assert lines and lines[-1].rstrip().endswith("(2 serving)"), lines
    clients = pinned_clients(lines[0].split(" on ")[1].strip(), 2)
    yield server, clients
    for client in clients.values():
        client.close()
    server.send_signal(signal.SIGTERM)
    server.communicate(timeout=60)


def test_two_workers_deliver_each_notification_once_while_both_live(two_workers):
    server, clients = two_workers
    (first, one), (second, other) = clients.items()
    with NotificationListener(password="pw") as listener:
        listener.fail_next(PAYMENTS)
        rule = one.post(
            "/_sandbox/notifications/rules", json={"url": listener.url, "password": "pw", "flow": "offline"}
        )
        assert rule.status_code == 200, rule.text
        references = []
        for number in range(PAYMENTS):
            client = (one, other)[number % 2]
            answer = client.post(
                "/json/", json={"alias": DEFAULT_USERNAME, "version": "1.00", "request": [card_auth()]}
            )
            references.append(answer.json()["response"][0]["transactionreference"])
        listener.wait_for(PAYMENTS, timeout=60)  # every first attempt, each answered 500
        moved = other.post("/_sandbox/clock/advance", json={"by": "PT10M"})  # every retry now due
        assert moved.status_code == 200, moved.text
        arrived = listener.wait_for(2 * PAYMENTS, timeout=60)
        for _ in range(10_000):  # a worker records an attempt's answer just after the listener gave it
            deliveries = one.get("/_sandbox/notifications/deliveries").json()["deliveries"]
            if all(d["state"] == "delivered" for d in deliveries):
                break
        assert server.poll() is None and {
            c.get("/_sandbox/health").json()["process"] for c in (one, other)
        } == {
            first,
            second,
        }  # both workers lived throughout

    by_transaction = Counter(n.transactionreference for n in arrived)
    assert by_transaction == Counter(dict.fromkeys(references, 2))
    assert [n.answered for n in arrived].count(200) == PAYMENTS
    assert all(n.verified for n in arrived)
    assert len(deliveries) == PAYMENTS
    assert {d["state"] for d in deliveries} == {"delivered"}
    assert all([a["status"] for a in d["attempts"]] == [500, 200] for d in deliveries)
    per_reference = Counter(n.notificationreference for n in arrived)
    assert set(per_reference.values()) == {2}  # the retry kept its notificationreference
