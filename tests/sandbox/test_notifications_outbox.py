"""URL notifications go out after the commit (the outbox), and an online one is waited for on a
worker of its own: never before its payment is visible, never on the event loop or the payments
thread, and a crash between the commit and the send loses none.

Nothing waits on time: listeners block on events the tests release, and the crash is a hook that
makes the server kill itself right after the commit (delivery.KILL_AFTER_COMMIT).
"""

from __future__ import annotations

import os
import subprocess
import sys
import threading

import httpx
import pytest

import gwkit.sandbox
from gwkit.notifications import Notification, NotificationListener
from gwkit.sandbox.gateway.accounts import DEFAULT_PASSWORD, DEFAULT_USERNAME
from gwkit.sandbox.gateway.delivery import KILL_AFTER_COMMIT
from support.sandbox import CLOCK, Gateway, card_auth

pytestmark = pytest.mark.both_stores

RULES, DELIVERIES = "/_sandbox/notifications/rules", "/_sandbox/notifications/deliveries"
PAYMENTS = 8
ACCOUNTS = """
[[account]]
username = "alice@example.test"
password = "alice-secret"
sitereferences = ["test_alice12345"]

[[account]]
username = "bob@example.test"
password = "bob-secret"
sitereferences = ["test_bob12345"]
"""


def add_rule(gateway: Gateway, url: str, **rule) -> dict:
    response = gateway.http.post(RULES, json={"url": url, "password": "pw", **rule})
    assert response.status_code == 200, response.text
    return response.json()


class QueryingBack:
    """A listener's handler that asks TRANSACTIONQUERY for each notification's payment before it
    answers, as notebook 09 teaches: what it found, per transactionreference."""

    def __init__(self, base_url: str, username: str = DEFAULT_USERNAME, password: str = DEFAULT_PASSWORD):
        self.base_url, self.username, self.password = base_url, username, password
        self.found: dict[str, int] = {}
        self.errors: list[BaseException] = []
        self._lock = threading.Lock()

    def __call__(self, notification: Notification) -> None:
        client = Gateway(self.base_url, self.username, self.password)
        try:
            reference = notification.transactionreference
            found = len(client.query(transactionreference=reference))
            with self._lock:
                self.found[reference] = found
        except BaseException as exc:  # kept for the test: a handler's failure must fail it
            with self._lock:
                self.errors.append(exc)
        finally:
            client.close()


def test_a_notification_never_reaches_its_listener_before_its_payment_is_visible(sandbox, gateway):
    with NotificationListener(password="pw") as listener:
        handler = listener.on_notification(QueryingBack(sandbox.base_url))
        add_rule(gateway, listener.url, flow="online")
        start = threading.Barrier(PAYMENTS)
        answers: list[dict] = []

        def pay() -> None:
            client = Gateway(sandbox.base_url)
            try:
                start.wait()
                answers.append(client.one(card_auth()))
            finally:
                client.close()

        payers = [threading.Thread(target=pay) for _ in range(PAYMENTS)]
        for payer in payers:
            payer.start()
        for payer in payers:
            payer.join()

        references = {answer["transactionreference"] for answer in answers}
        assert len(references) == PAYMENTS and all(a["errorcode"] == "0" for a in answers)
        # online: each arrived before its answer went out, and found its payment already there
        assert handler.errors == []
        assert handler.found == dict.fromkeys(references, 1)
        assert {n.transactionreference for n in listener.notifications()} == references
        states = [d["state"] for d in gateway.http.get(DELIVERIES).json()["deliveries"]]
        assert states == ["delivered"] * PAYMENTS


def test_a_listener_that_queries_back_within_its_handler_is_answered(sandbox, gateway):
    with NotificationListener(password="pw") as listener:
        handler = listener.on_notification(QueryingBack(sandbox.base_url))
        add_rule(gateway, listener.url, flow="online")
        reference = gateway.one(card_auth())["transactionreference"]
        assert handler.errors == [] and handler.found == {reference: 1}
        (delivery,) = gateway.http.get(DELIVERIES).json()["deliveries"]
        assert delivery["state"] == "delivered"
        assert [a["status"] for a in delivery["attempts"]] == [200]


@pytest.fixture
def tenants(tmp_path, db_path):
    path = tmp_path / "accounts.toml"
    path.write_text(ACCOUNTS, encoding="utf-8")
    handle = gwkit.sandbox.start(db_path, accounts=gwkit.sandbox.load_accounts(path), clock_start=CLOCK)
    clients = {
        name: Gateway(handle.base_url, f"{name}@example.test", f"{name}-secret") for name in ("alice", "bob")
    }
    yield handle, clients
    for client in clients.values():
        client.close()
    handle.stop()


def test_a_slow_listener_never_delays_another_tenants_auth_or_a_health_check(tenants):
    handle, clients = tenants
    with NotificationListener(password="pw") as alices:
        add_rule(clients["alice"], alices.url, flow="online", timeout=8)
        alices.hold_next(1)  # alice's listener blocks until the test releases it
        alice_answered = threading.Event()

        def alice_pays() -> None:
            clients["alice"].one(card_auth(sitereference="test_alice12345"))
            alice_answered.set()

        alice = threading.Thread(target=alice_pays)
        alice.start()
        try:
            alices.wait_holding(1)  # alice's answer now waits for her listener
            bobs = clients["bob"].one(card_auth(sitereference="test_bob12345"))
            health = httpx.get(handle.base_url + "/_sandbox/health", timeout=30)
            # both answered while alice's listener still holds her notification, her answer not sent
            assert bobs["errorcode"] == "0" and health.status_code == 200
            assert alices.holding == 1 and not alice_answered.is_set()
        finally:
            alices.release()
            alice.join()
        assert alice_answered.is_set()


def _serve(db_path, *, kill_after_commit: bool) -> tuple[subprocess.Popen, str]:
    """`gwkit sandbox` on a free loopback port (its default account: loopback listeners allowed)."""
    env = dict(os.environ)
    env.pop(KILL_AFTER_COMMIT, None)
    if kill_after_commit:
        env[KILL_AFTER_COMMIT] = "1"
    server = subprocess.Popen(
        [sys.executable, "-m", "gwkit.cli", "sandbox", "--db", str(db_path), "--port", "0"],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
        env=env,
    )
    assert server.stdout is not None
    first = server.stdout.readline()
    assert first.startswith("gwkit sandbox listening on "), first
    return server, first.split(" on ")[1].strip()


def test_a_kill_between_the_commit_and_the_send_loses_no_notification(db_path):
    with NotificationListener(password="pw") as listener:
        server, base_url = _serve(db_path, kill_after_commit=True)
        client = Gateway(base_url)
        try:
            add_rule(client, listener.url, flow="online")
            with pytest.raises(httpx.TransportError):  # the server killed itself after the commit
                client.one(card_auth())
            assert server.wait(timeout=60) == -9
        finally:
            client.close()
            if server.poll() is None:
                server.kill()
            server.communicate()
        assert listener.notifications() == []  # nothing was sent before the kill

        server, base_url = _serve(db_path, kill_after_commit=False)
        client = Gateway(base_url)
        try:
            (payment,) = client.query(requesttypedescription="AUTH")  # the payment was committed
            reference = payment["transactionreference"]
            arrived = listener.assert_notified_once(reference)  # sent at the restart
            (delivery,) = client.http.get(DELIVERIES).json()["deliveries"]
            for _ in range(10_000):  # the attempt's answer is recorded just after the listener gave it
                if delivery["state"] != "pending":
                    break
                (delivery,) = client.http.get(DELIVERIES).json()["deliveries"]
            assert delivery["notificationreference"] == arrived.notificationreference
            assert delivery["state"] == "delivered" and delivery["late"] is True
            assert [a["status"] for a in delivery["attempts"]] == [200]
            assert len(listener.notifications()) == 1
        finally:
            client.close()
            server.terminate()
            server.communicate(timeout=60)
