"""URL notifications a user can trust: a resend is never lost, the fields are the stored
transaction's, rule URLs in any script, one text for a timeout, where a sandbox may deliver, and the
points the docs used to leave to guessing (a clock move's failed online deliveries, a deleted rule's
deliveries, pages of the deliveries list, what is signed).

Nothing waits on time: listeners hold notifications until released, and what must not be sent is
checked after the sender ran once on the test's own thread (`Notifier.send_due`).
"""

from __future__ import annotations

import hashlib
import socket
import subprocess
import sys
import threading
from datetime import timedelta
from urllib.parse import quote

import pytest

import gwkit.sandbox
from gwkit.interface.notification import signature
from gwkit.notifications import NotificationListener
from gwkit.sandbox.gateway import delivery
from gwkit.sandbox.gateway.notifications import notification_hosts
from support.sandbox import CLOCK, SITE, Gateway, card_auth

pytestmark = pytest.mark.both_stores  # the tests that open a store run on SQLite and on PostgreSQL

RULES, DELIVERIES = "/_sandbox/notifications/rules", "/_sandbox/notifications/deliveries"
ISO = "%Y-%m-%dT%H:%M:%S"
ACCOUNTS = """
[[account]]
username = "alice@example.test"
password = "alice-secret"
sitereferences = ["test_alice12345"]
"""


@pytest.fixture
def listener():
    with NotificationListener(password="pw") as running:
        yield running


def add_rule(gateway: Gateway, url: str, **rule) -> dict:
    response = gateway.http.post(RULES, json={"url": url, "password": "pw", **rule})
    assert response.status_code == 200, response.text
    return response.json()


def deliveries(gateway: Gateway, **params) -> list[dict]:
    response = gateway.http.get(DELIVERIES, params=params)
    assert response.status_code == 200, response.text
    return response.json()["deliveries"]


def advance_to(gateway: Gateway, moment: str) -> None:
    response = gateway.http.post("/_sandbox/clock/advance", json={"to": moment})
    assert response.status_code == 200, response.text


def test_a_resend_asked_while_an_attempt_waits_on_the_listener_is_sent_after_it(sandbox, gateway, listener):
    listener.hold_next(1)
    add_rule(gateway, listener.url, flow="offline")
    reference = gateway.one(card_auth())["transactionreference"]
    listener.wait_holding(1)  # the first attempt waits on the listener
    (delivery,) = deliveries(gateway)
    resent = gateway.http.post(f"{DELIVERIES}/{delivery['id']}/resend", json={})
    assert resent.status_code == 200, resent.text
    listener.release()  # the held attempt is answered 503
    first, second = listener.wait_for(2, transactionreference=reference)
    assert (first.answered, second.answered) == (503, 200)
    assert second.notificationreference == first.notificationreference
    (delivery,) = sandbox.notifications.wait_for(reference, state="delivered", attempts=2)
    assert [a["status"] for a in delivery["attempts"]] == [503, 200]


def test_the_fields_are_the_stored_transactions_for_every_event(sandbox, gateway, listener):
    fields = ["transactionreference", "billingfirstname", "billingemail", "billingtown", "settlestatus"]
    add_rule(gateway, listener.url, flow="online", fields=fields)
    add_rule(gateway, listener.url + "?settled", settlestatuses=["100"], fields=fields)
    billing = {"billingfirstname": "Ada", "billingemail": "ada@example.test", "billingtown": "Bath"}
    reference = gateway.one(card_auth(**billing))["transactionreference"]
    (queried,) = gateway.query(transactionreference=reference)
    made = listener.assert_notified_once(reference)
    for name in billing:
        assert made[name] == queried[name] == billing[name]
    advance_to(gateway, (CLOCK + timedelta(days=2)).strftime(ISO))  # settled: the second rule fires
    _, settled = listener.wait_for(2, transactionreference=reference)
    assert settled["settlestatus"] == "100"
    assert {name: settled[name] for name in billing} == billing


def test_a_rule_url_in_any_script_is_encoded_as_sent(sandbox, gateway):
    with NotificationListener(password="pw", path="/hook/été") as listener:
        port = listener.url.split(":")[2].split("/")[0]
        rule = add_rule(gateway, f"http://127.0.0.1:{port}/hook/été?q=ü", flow="online")
        assert rule["url"] == f"http://127.0.0.1:{port}/hook/{quote('été')}?q={quote('ü')}"
        reference = gateway.one(card_auth())["transactionreference"]
        listener.assert_notified_once(reference)
        (delivery,) = deliveries(gateway)
        assert delivery["state"] == "delivered" and delivery["attempts"][0]["error"] is None


def test_a_rule_url_idna_cannot_encode_is_refused_naming_the_rule(gateway):
    refused = gateway.http.post(RULES, json={"url": "http://é..example/hook"})
    assert refused.status_code == 400
    assert "url" in refused.json()["detail"] and "IDNA" in refused.json()["detail"]
    assert gateway.http.get(RULES).json() == {"rules": []}


class Silent:
    """A listener on loopback that takes the connection and the request, and never answers."""

    def __init__(self):
        self.server = socket.create_server(("127.0.0.1", 0))
        self.url = f"http://127.0.0.1:{self.server.getsockname()[1]}/hook"
        self.done = threading.Event()
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _serve(self) -> None:
        connection, _ = self.server.accept()
        with connection:
            connection.recv(65536)
            self.done.wait()

    def close(self) -> None:
        self.done.set()
        self.thread.join()
        self.server.close()


def test_an_attempt_without_an_answer_fails_with_the_documented_words():
    silent = Silent()
    try:
        status, _, error = delivery.post(silent.url, [("notificationreference", "nt1")], 0.2, None)
    finally:
        silent.close()
    assert (status, error) == (None, "no answer within 0.2 s")


def test_the_socket_timeout_is_past_the_deadline_so_the_two_never_race():
    exchange = delivery._Exchange("http://127.0.0.1:9/hook", b"", 0.2 + delivery.SOCKET_GRACE)
    assert exchange.connection.timeout > 0.2  # the deadline (0.2 s) always ends the attempt first


def _cli_sandbox(tmp_path, *options: str) -> tuple[subprocess.Popen, str]:
    server = subprocess.Popen(
        [sys.executable, "-m", "gwkit.cli", "sandbox", "--db", str(tmp_path / "cli.db"), "--port", "0"]
        + list(options),
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    assert server.stdout is not None
    first = server.stdout.readline()
    assert first.startswith("gwkit sandbox listening on "), first
    return server, first.split(" on ")[1].strip()


def test_a_sandbox_on_loopback_with_its_default_account_takes_loopback_listeners_only(tmp_path, listener):
    server, base_url = _cli_sandbox(tmp_path)
    client = Gateway(base_url)
    try:
        add_rule(client, listener.url)  # no --notify-host needed
        add_rule(client, "http://[::1]:9/hook")
        refused = client.http.post(RULES, json={"url": "http://hooks.example.test/n"})
        assert refused.status_code == 400 and "--notify-host" in refused.json()["detail"]
    finally:
        client.close()
        server.terminate()
        server.communicate(timeout=60)


def test_a_team_sandbox_takes_no_listener_until_its_operator_allows_one(tmp_path, listener):
    accounts = tmp_path / "accounts.toml"
    accounts.write_text(ACCOUNTS, encoding="utf-8")
    server, base_url = _cli_sandbox(tmp_path, "--accounts", str(accounts))
    client = Gateway(base_url, "alice@example.test", "alice-secret")
    try:
        refused = client.http.post(RULES, json={"url": listener.url})
        assert refused.status_code == 400
        assert "--notify-host" in refused.json()["detail"] and "none" in refused.json()["detail"]
    finally:
        client.close()
        server.terminate()
        server.communicate(timeout=60)


def test_a_sandbox_bound_off_loopback_never_delivers_to_loopback_unless_allowed():
    # Where a sandbox bound to every address may deliver (the tests bind loopback only): nowhere.
    for bound in ("0.0.0.0", "::", "10.1.2.3", "hooks.example.test"):
        assert notification_hosts(bound, team=False, allowed=()) == ()
        assert notification_hosts(bound, team=False, allowed=["10.1.0.0/16"]) == ("10.1.0.0/16",)
    for bound in ("127.0.0.1", "::1", "localhost"):
        assert notification_hosts(bound, team=True, allowed=()) == ()  # an accounts file: a team's
        assert "127.0.0.0/8" in notification_hosts(bound, team=False, allowed=())


def test_an_off_loopback_sandbox_refuses_a_loopback_listener_naming_the_option(tmp_path, listener):
    hosts = notification_hosts("0.0.0.0", team=False, allowed=())
    sandbox = gwkit.sandbox.Sandbox(tmp_path / "team.db", clock_start=CLOCK, notification_hosts=hosts)
    handle = gwkit.sandbox.start(sandbox=sandbox)  # served on loopback; configured as if on 0.0.0.0
    client = Gateway(handle.base_url)
    try:
        for url in (listener.url, "http://localhost:9/", "http://[::1]:9/"):
            refused = client.http.post(RULES, json={"url": url})
            assert refused.status_code == 400 and "--notify-host" in refused.json()["detail"], url
    finally:
        client.close()
        handle.stop()


def test_a_clock_moves_failed_online_delivery_is_retried_the_offline_way(sandbox, gateway, listener):
    add_rule(gateway, listener.url, flow="online", settlestatuses=["100"])
    reference = gateway.one(card_auth())["transactionreference"]
    listener.fail_next(1)
    advance_to(gateway, (CLOCK + timedelta(days=2)).strftime(ISO))  # settles it: notified by the move
    (delivery_,) = sandbox.notifications.wait_for(reference, state="retrying", attempts=1)
    assert delivery_["flow"] == "offline" and [a["status"] for a in delivery_["attempts"]] == [500]
    advance_to(gateway, delivery_["next_at"])
    (delivery_,) = sandbox.notifications.wait_for(reference, state="delivered")
    assert [a["status"] for a in delivery_["attempts"]] == [500, 200]


def test_a_deleted_rules_deliveries_not_made_yet_are_cancelled(sandbox, gateway, listener):
    listener.fail_next(1)
    rule = add_rule(gateway, listener.url, flow="offline")
    kept = add_rule(gateway, listener.url + "?kept", flow="offline")
    reference = gateway.one(card_auth())["transactionreference"]
    sandbox.notifications.wait_for(reference, state="delivered")  # the kept rule's
    sandbox.notifications.wait_for(reference, state="retrying", attempts=1)  # the deleted one's
    deleted = gateway.http.request(
        "DELETE", f"{RULES}/{rule['id']}", headers={"content-type": "application/json"}
    )
    assert deleted.json() == {"deleted": rule["id"], "cancelled": 1}
    by_rule = {d["rule"]: d for d in deliveries(gateway)}
    assert by_rule[rule["id"]]["state"] == "cancelled" and by_rule[rule["id"]]["next_at"] is None
    assert by_rule[kept["id"]]["state"] == "delivered"  # history stays
    advance_to(gateway, (CLOCK + timedelta(hours=1)).strftime(ISO))  # its retry would be due
    sandbox.sandbox.gateway.notifier.send_due([SITE])  # the sender's round, on this thread
    assert len(listener.notifications(transactionreference=reference)) == 2  # no retry was sent
    assert {d["state"] for d in deliveries(gateway)} == {"cancelled", "delivered"}


def test_the_deliveries_list_pages_with_its_total(sandbox, gateway, listener):
    add_rule(gateway, listener.url, flow="online")
    references = [gateway.one(card_auth())["transactionreference"] for _ in range(3)]
    first = gateway.http.get(DELIVERIES, params={"limit": 2}).json()
    assert (len(first["deliveries"]), first["total"], first["next_offset"]) == (2, 3, 2)
    rest = gateway.http.get(DELIVERIES, params={"limit": 2, "offset": 2}).json()
    assert (len(rest["deliveries"]), rest["total"], rest["next_offset"]) == (1, 3, None)
    seen = [d["transactionreference"] for d in first["deliveries"] + rest["deliveries"]]
    assert seen == references[::-1]  # newest first, each once
    for bad in ({"limit": 0}, {"limit": 501}, {"limit": "ten"}, {"offset": -1}):
        response = gateway.http.get(DELIVERIES, params=bad)
        assert response.status_code == 400 and next(iter(bad)) in response.json()["detail"], bad


def test_the_signature_is_over_the_values_as_decoded(sandbox, gateway, listener):
    add_rule(gateway, listener.url, flow="online", fields=["orderreference", "baseamount"])
    reference = gateway.one(card_auth(orderreference="a&b c+é"))["transactionreference"]
    (arrived,) = listener.wait_for(1)
    assert arrived.verified and arrived["orderreference"] == "a&b c+é"
    # the doc's worked example: values in the order of their names, decoded, then the password
    expected = hashlib.sha256("1050a&b c+épw".encode()).hexdigest()
    assert arrived["responsesitesecurity"] == expected == signature(arrived.fields, "pw")
    assert reference


def test_a_database_made_before_the_new_delivery_columns_opens_and_goes_on(db_path, listener):
    handle = gwkit.sandbox.start(db_path, clock_start=CLOCK)
    client = Gateway(handle.base_url)
    try:
        add_rule(client, listener.url, flow="online")
        reference = client.one(card_auth())["transactionreference"]
        with handle.sandbox.gateway.store.write() as conn:  # as the gwkit before `late` and `resend` made it
            for column in ("late", "resend"):
                conn.execute(f"ALTER TABLE notification_deliveries DROP COLUMN {column}")
    finally:
        client.close()
        handle.stop()

    handle = gwkit.sandbox.start(db_path)  # adds the columns
    client = Gateway(handle.base_url)
    try:
        (delivery,) = deliveries(client)
        assert (delivery["state"], delivery["late"]) == ("delivered", False)
        resent = client.http.post(f"{DELIVERIES}/{delivery['id']}/resend", json={})
        assert resent.status_code == 200, resent.text
        assert len(listener.wait_for(2, transactionreference=reference)) == 2
    finally:
        client.close()
        handle.stop()
