"""URL notifications over real HTTP on loopback: rules, signed form POSTs, the flows, retries on the
virtual clock, tenancy, a restart in the middle of retries, a clock move that never waits.

Nothing waits on time: the listener says when a notification arrived (or is held), and the
sandbox's own `wait_for` when a delivery's attempt was recorded.
"""

from __future__ import annotations

import http.client
import socket
import threading
from datetime import datetime, timedelta

import httpx
import nbformat
import pytest

import gwkit.sandbox
from gwkit.devtools import output_scan
from gwkit.interface.notification import DEFAULT_FIELDS, signature
from gwkit.notifications import NotificationListener
from gwkit.sandbox.gateway import notifications
from support.sandbox import CLOCK, Gateway, card_auth, monthly_subscription, update_request

pytestmark = pytest.mark.both_stores  # each test on SQLite and on PostgreSQL

RULES, DELIVERIES = "/_sandbox/notifications/rules", "/_sandbox/notifications/deliveries"
ISO = "%Y-%m-%dT%H:%M:%S"
ACCOUNTS = """
[[account]]
username = "alice@example.test"
password = "alice-secret"
sitereferences = ["test_alice12345"]

[[account]]
username = "bob@example.test"
password = "bob-secret"
sitereferences = ["test_bob12345"]

[[account]]
username = "ops@example.test"
password = "ops-secret"
sitereferences = ["test_ops12345"]
admin = true
"""


@pytest.fixture
def listener():
    with NotificationListener(password="notify-pw") as running:
        yield running


def add_rule(gateway: Gateway, url: str, **rule) -> dict:
    response = gateway.http.post(RULES, json={"url": url, "password": "notify-pw", **rule})
    assert response.status_code == 200, response.text
    return response.json()


def deliveries(gateway: Gateway, **params) -> list[dict]:
    response = gateway.http.get(DELIVERIES, params=params)
    assert response.status_code == 200, response.text
    return response.json()["deliveries"]


def advance_to(gateway: Gateway, moment: str) -> None:
    response = gateway.http.post("/_sandbox/clock/advance", json={"to": moment})
    assert response.status_code == 200, response.text


def test_a_rule_and_an_auth_deliver_one_signed_form_post_with_the_fields(sandbox, gateway, listener):
    rule = add_rule(gateway, listener.url, flow="online")
    assert (
        rule["fields"] == list(DEFAULT_FIELDS) and rule["password"] is True and "notify-pw" not in str(rule)
    )
    record = gateway.one(card_auth(orderreference="order-1"))

    # online: delivered before the answer went out
    (arrived,) = listener.notifications(transactionreference=record["transactionreference"])
    assert listener.assert_notified_once(record["transactionreference"]) == arrived
    assert arrived.content_type == "application/x-www-form-urlencoded; charset=UTF-8"
    assert list(arrived.fields) == [*DEFAULT_FIELDS, "responsesitesecurity"]
    assert arrived["maskedpan"] == "411111######1111" and "4111111111111111" not in str(arrived.fields)
    assert arrived["parenttransactionreference"] == ""  # chosen, no value: sent empty, signed as such
    for name in (
        "transactionreference",
        "errorcode",
        "settlestatus",
        "baseamount",
        "authcode",
        "orderreference",
    ):
        assert arrived[name] == record[name]
    assert arrived["responsesitesecurity"] == signature(arrived.fields, "notify-pw")
    (delivery,) = deliveries(gateway)
    assert delivery["state"] == "delivered" and delivery["rule"] == rule["id"]
    assert delivery["notificationreference"] == arrived.notificationreference
    assert delivery["fields"] == arrived.fields
    (attempt,) = delivery["attempts"]
    assert attempt["status"] == 200 and attempt["at"] == CLOCK.strftime(ISO) and attempt["latency_ms"] >= 0


def test_offline_retries_follow_the_virtual_clock_with_backoff_and_stop_after_48_hours(
    sandbox, gateway, listener
):
    listener.fail_next(1000)
    add_rule(gateway, listener.url, flow="offline", requesttypes=["AUTH"])
    reference = gateway.one(card_auth())["transactionreference"]
    handle = sandbox.notifications
    (delivery,) = handle.wait_for(reference, state="retrying", attempts=1)
    created = datetime.strptime(delivery["created"], ISO)
    waits = []
    while delivery["state"] == "retrying":
        due = datetime.strptime(delivery["next_at"], ISO)
        waits.append(due - datetime.strptime(delivery["attempts"][-1]["at"], ISO))
        # just before it is due, the retry is not made; when the clock reaches it, it is
        advance_to(gateway, (due - timedelta(seconds=1)).strftime(ISO))
        assert len(handle.deliveries(reference)[0]["attempts"]) == len(delivery["attempts"])
        advance_to(gateway, due.strftime(ISO))
        (delivery,) = handle.wait_for(reference, state=("retrying", "failed"), attempts=len(waits) + 1)
    assert delivery["state"] == "failed" and delivery["next_at"] is None
    assert waits[:4] == [timedelta(minutes=m) for m in (5, 10, 20, 40)]
    assert max(waits) == timedelta(hours=8) and waits == sorted(waits)
    last = datetime.strptime(delivery["attempts"][-1]["at"], ISO)
    assert last <= created + timedelta(hours=48) < last + timedelta(hours=8)
    assert all(a["status"] == 500 for a in delivery["attempts"])
    arrived = listener.notifications(transactionreference=reference)
    assert len(arrived) == len(delivery["attempts"])
    assert {n.notificationreference for n in arrived} == {delivery["notificationreference"]}  # one reference
    assert [n.duplicate for n in arrived] == [False] + [True] * (len(arrived) - 1)


def test_a_retry_is_due_five_minutes_after_its_attempt_even_when_the_clock_moved_while_it_was_sent(
    sandbox, gateway, listener
):
    # The attempt is made at CLOCK; the clock moves 10 minutes while the listener still holds it, so
    # its failure is recorded after the move: the retry is due at CLOCK + 5 minutes (already passed),
    # not 5 minutes after the moved clock (a retry no further move would have made due).
    listener.hold_next(1)
    add_rule(gateway, listener.url, flow="offline", requesttypes=["AUTH"])
    reference = gateway.one(card_auth())["transactionreference"]
    listener.wait_holding(1)
    advance_to(gateway, (CLOCK + timedelta(minutes=10)).strftime(ISO))
    listener.release()  # answered 503 after the move
    (delivery,) = sandbox.notifications.wait_for(reference, state="delivered", attempts=2)
    first, retry = delivery["attempts"]
    assert (first["status"], first["at"]) == (503, CLOCK.strftime(ISO))
    assert (retry["status"], retry["at"]) == (200, (CLOCK + timedelta(minutes=10)).strftime(ISO))
    assert [n.answered for n in listener.notifications(transactionreference=reference)] == [503, 200]


def test_failover_sends_online_then_retries_offline(sandbox, gateway, listener):
    listener.fail_next(1)
    add_rule(gateway, listener.url, flow="failover")
    reference = gateway.one(card_auth())["transactionreference"]
    (delivery,) = deliveries(gateway)  # the online attempt was made before the answer
    assert delivery["state"] == "retrying" and [a["status"] for a in delivery["attempts"]] == [500]
    advance_to(gateway, delivery["next_at"])
    (delivery,) = sandbox.notifications.wait_for(reference, state="delivered")
    assert [a["status"] for a in delivery["attempts"]] == [500, 200]


def test_an_online_rule_that_fails_is_not_retried(sandbox, gateway, listener):
    listener.fail_next(1)
    add_rule(gateway, listener.url, flow="online")
    gateway.one(card_auth())
    (delivery,) = deliveries(gateway)
    assert delivery["state"] == "failed" and delivery["next_at"] is None


def test_only_the_first_matching_online_rule_fires_and_every_offline_one(sandbox, gateway):
    with (
        NotificationListener() as first,
        NotificationListener() as second,
        NotificationListener() as third,
        NotificationListener() as declined_only,
    ):
        online = add_rule(gateway, first.url, flow="online")
        add_rule(gateway, second.url, flow="failover")  # counts as online: not fired
        offline = [add_rule(gateway, third.url), add_rule(gateway, third.url + "?rule=2")]
        add_rule(gateway, declined_only.url, errorcodes=["70000"])
        reference = gateway.one(card_auth())["transactionreference"]
        made = sandbox.notifications.wait_for(reference, state="delivered", count=3)
        assert sorted(d["rule"] for d in made) == sorted([online["id"], *(r["id"] for r in offline)])
        assert len(deliveries(gateway, transactionreference=reference)) == 3
        assert len(first.notifications()) == 1 and len(third.notifications()) == 2
        assert second.notifications() == [] and declined_only.notifications() == []
        declined = gateway.one(card_auth(baseamount="70000"))  # the test amount that declines
        assert declined["errorcode"] == "70000"
        (to_declined,) = [
            d
            for d in deliveries(gateway, transactionreference=declined["transactionreference"])
            if d["url"] == declined_only.url
        ]
        assert to_declined["rule"] != online["id"]


def test_a_settlement_made_by_a_clock_move_notifies_offline(sandbox, gateway, listener):
    add_rule(gateway, listener.url, flow="online", settlestatuses=["100"])
    reference = gateway.one(card_auth())["transactionreference"]
    assert deliveries(gateway) == []  # made, not settled: the rule waits for settlestatus 100
    advance_to(gateway, (CLOCK + timedelta(days=2)).strftime(ISO))
    arrived = listener.assert_notified_once(reference)
    assert arrived["settlestatus"] == "100"
    (delivery,) = deliveries(gateway)
    assert delivery["event"] == "settlestatus:100"


def test_a_cancellation_by_transactionupdate_notifies_the_settlestatus_change(sandbox, gateway, listener):
    add_rule(gateway, listener.url, flow="online", settlestatuses=["3"])
    reference = gateway.one(card_auth())["transactionreference"]
    updated = gateway.one(update_request(reference, settlestatus="3"))
    assert updated["errorcode"] == "0"
    arrived = listener.assert_notified_once(reference)
    assert arrived["settlestatus"] == "3" and arrived["requesttypedescription"] == "AUTH"
    (delivery,) = deliveries(gateway)
    assert delivery["event"] == "settlestatus:3"
    advance_to(gateway, (CLOCK + timedelta(days=2)).strftime(ISO))  # a cancelled AUTH never settles
    assert len(deliveries(gateway)) == 1


def test_a_clock_move_is_not_held_by_a_listener_that_never_answers(sandbox, gateway, listener):
    add_rule(gateway, listener.url, flow="online", settlestatuses=["100"])
    reference = gateway.one(card_auth())["transactionreference"]
    listener.hold_next(1)
    advance_to(gateway, (CLOCK + timedelta(days=2)).strftime(ISO))  # returns while nothing was answered
    listener.wait_holding(1)
    (delivery,) = deliveries(gateway, transactionreference=reference)
    assert [a["status"] for a in delivery["attempts"]] == [None]  # sent, unanswered, the move done
    listener.release()


class Trickler:
    """A listener on loopback that answers an HTTP status line and then one byte of a header at a
    time, a pause between bytes, until told to stop (or, at most, for ~10 s): each read a sender
    makes gets a byte well within any socket timeout, so only a total deadline ends the exchange."""

    PAUSE, MOST_BYTES = 0.02, 500

    def __init__(self):
        self.server = socket.create_server(("127.0.0.1", 0))
        self.url = f"http://127.0.0.1:{self.server.getsockname()[1]}/hook"
        self.stop = threading.Event()
        self.trickling = threading.Event()  # set once the first byte went out
        self.finished = threading.Event()  # the whole (never-ending) answer was sent or cut off
        self.sent = 0
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _serve(self) -> None:
        connection, _ = self.server.accept()
        with connection:
            connection.recv(65536)
            try:
                connection.sendall(b"HTTP/1.1 200 OK\r\nX-Trickle: ")
                self.trickling.set()
                for _ in range(self.MOST_BYTES):
                    if self.stop.wait(self.PAUSE):
                        break
                    connection.sendall(b"a")
                    self.sent += 1
            except OSError:  # the sender cut the connection
                pass
        self.finished.set()

    def close(self) -> None:
        self.stop.set()
        self.thread.join()
        self.server.close()


def test_an_online_delivery_to_a_trickling_listener_ends_at_its_timeout_in_total(sandbox, gateway):
    trickler = Trickler()
    try:
        add_rule(gateway, trickler.url, flow="online", timeout=0.2)
        record = gateway.one(card_auth())
        assert record["errorcode"] == "0"
        # the answer came while the listener was still trickling: the deadline, not the listener, ended it
        assert trickler.trickling.is_set() and not trickler.finished.is_set()
        (delivery,) = deliveries(gateway, transactionreference=record["transactionreference"])
        (attempt,) = delivery["attempts"]
        assert delivery["state"] == "failed" and delivery["next_at"] is None
        assert attempt["status"] is None and attempt["error"] == "no answer within 0.2 s"
        trickler.finished.wait()  # the sender shut the connection: the trickle ends without being told
        assert not trickler.stop.is_set() and trickler.sent < Trickler.MOST_BYTES
    finally:
        trickler.close()


def test_bad_rules_are_refused_naming_the_field(gateway, listener):
    cases = [
        ({"url": "ftp://example.test/"}, "url"),
        ({"url": listener.url, "flow": "sometimes"}, "flow"),
        ({"url": listener.url, "timeout": 9}, "timeout"),
        ({"url": listener.url, "fields": ["pan"]}, "fields"),
        ({"url": listener.url, "fields": ["securitycode"]}, "fields"),
        ({"url": listener.url, "fields": ["nosuchfield"]}, "fields"),
        ({"url": listener.url, "colour": "red"}, "colour"),
        ({"url": "http://user:pw@127.0.0.1/"}, "url"),
        ({"url": "http://127.0.0.1/a\r\nX-Injected: 1"}, "url"),
        ({"url": "http://127.0.0.1:notaport/"}, "url"),
        ({"url": "http://127.0.0.1/" + "a" * 2100}, "url"),
        ({"url": listener.url, "requesttypes": "AUTH"}, "requesttypes"),
        ({"url": listener.url, "password": ""}, "password"),
    ]
    for body, field in cases:
        response = gateway.http.post(RULES, json=body)
        assert response.status_code == 400, body
        assert field in response.json()["detail"], response.json()
    assert (
        gateway.http.post(RULES, content=b"url=x", headers={"content-type": "text/plain"}).status_code == 415
    )
    assert gateway.http.get(RULES).json() == {"rules": []}


def test_rules_are_listed_and_deleted(gateway, listener):
    rule = add_rule(gateway, listener.url)
    assert [r["id"] for r in gateway.http.get(RULES).json()["rules"]] == [rule["id"]]
    deleted = gateway.http.request(
        "DELETE", f"{RULES}/{rule['id']}", headers={"content-type": "application/json"}
    )
    assert deleted.json() == {"deleted": rule["id"], "cancelled": 0}
    assert gateway.http.get(RULES).json() == {"rules": []}
    again = gateway.http.request(
        "DELETE", f"{RULES}/{rule['id']}", headers={"content-type": "application/json"}
    )
    assert again.status_code == 404


def test_a_resend_keeps_the_notificationreference(sandbox, gateway, listener):
    add_rule(gateway, listener.url, flow="online")
    reference = gateway.one(card_auth())["transactionreference"]
    (delivery,) = deliveries(gateway)
    resent = gateway.http.post(f"{DELIVERIES}/{delivery['id']}/resend", json={})
    assert resent.status_code == 200, resent.text
    first, second = listener.wait_for(2, transactionreference=reference)
    assert first.notificationreference == second.notificationreference and second.duplicate
    assert second.verified
    (delivery,) = sandbox.notifications.wait_for(reference, state="delivered", attempts=2)
    assert gateway.http.post(f"{DELIVERIES}/nt-nope/resend", json={}).status_code == 404


@pytest.fixture
def tenants(tmp_path, db_path):
    path = tmp_path / "accounts.toml"
    path.write_text(ACCOUNTS, encoding="utf-8")
    handle = gwkit.sandbox.start(db_path, accounts=gwkit.sandbox.load_accounts(path), clock_start=CLOCK)
    clients = {
        name: Gateway(handle.base_url, f"{name}@example.test", f"{name}-secret")
        for name in ("alice", "bob", "ops")
    }
    yield handle, clients
    for client in clients.values():
        client.close()
    handle.stop()


def test_another_tenant_sees_nothing_of_your_rules_or_deliveries(tenants, listener):
    handle, clients = tenants
    alice, bob, ops = clients["alice"], clients["bob"], clients["ops"]
    rule = add_rule(alice, listener.url, flow="online")
    reference = alice.one(card_auth(sitereference="test_alice12345"))["transactionreference"]
    listener.assert_notified_once(reference)
    (delivery,) = deliveries(alice)
    assert bob.http.get(RULES).json() == {"rules": []}
    assert deliveries(bob) == []
    assert bob.http.get(RULES, params={"sitereference": "test_alice12345"}).status_code == 403
    assert bob.http.get(DELIVERIES, params={"sitereference": "test_alice12345"}).status_code == 403
    refused = bob.http.post(RULES, json={"url": listener.url, "sitereference": "test_alice12345"})
    assert refused.status_code == 403 and refused.json()["field"] == "sitereference"
    json_header = {"content-type": "application/json"}
    assert bob.http.request("DELETE", f"{RULES}/{rule['id']}", headers=json_header).status_code == 404
    assert bob.http.post(f"{DELIVERIES}/{delivery['id']}/resend", json={}).status_code == 404
    assert [r["id"] for r in alice.http.get(RULES).json()["rules"]] == [rule["id"]]  # still there
    assert len(listener.notifications()) == 1  # bob's resend sent nothing
    # bob's payment notifies no rule of alice's
    bob.one(card_auth(sitereference="test_bob12345"))
    assert len(deliveries(alice)) == 1
    # the operator sees every site
    assert [r["id"] for r in ops.http.get(RULES).json()["rules"]] == [rule["id"]]
    assert [d["id"] for d in deliveries(ops)] == [delivery["id"]]
    anonymous = httpx.get(handle.base_url + RULES)
    assert anonymous.status_code == 401


def test_one_tenants_listener_that_never_answers_does_not_delay_another(tenants):
    _, clients = tenants
    with NotificationListener() as alices, NotificationListener() as bobs:
        add_rule(clients["alice"], alices.url)
        add_rule(clients["bob"], bobs.url)
        alices.hold_next(1)
        clients["alice"].one(card_auth(sitereference="test_alice12345"))
        alices.wait_holding(1)  # alice's sender waits on her listener
        reference = clients["bob"].one(card_auth(sitereference="test_bob12345"))["transactionreference"]
        bobs.wait_for(1, transactionreference=reference)  # arrived while alice's is still held
        assert alices.holding == 1
        alices.release()


def test_a_restart_in_the_middle_of_retries_loses_none(db_path, listener):
    listener.fail_next(2)
    handle = gwkit.sandbox.start(db_path, clock_start=CLOCK)
    client = Gateway(handle.base_url)
    add_rule(client, listener.url, flow="offline")
    reference = client.one(card_auth())["transactionreference"]
    (first,) = handle.notifications.wait_for(reference, state="retrying", attempts=1)
    client.close()
    handle.stop()

    handle = gwkit.sandbox.start(db_path)
    client = Gateway(handle.base_url)
    try:
        (delivery,) = deliveries(client)
        assert delivery["state"] == "retrying" and delivery["next_at"] == first["next_at"]
        advance_to(client, delivery["next_at"])
        handle.notifications.wait_for(reference, state="retrying", attempts=2)
        (delivery,) = deliveries(client)
        advance_to(client, delivery["next_at"])
        (delivery,) = handle.notifications.wait_for(reference, state="delivered")
        assert [a["status"] for a in delivery["attempts"]] == [500, 500, 200]
        arrived = listener.notifications(transactionreference=reference)
        assert {n.notificationreference for n in arrived} == {first["notificationreference"]}
        assert [n.answered for n in arrived] == [500, 500, 200]
    finally:
        client.close()
        handle.stop()


def test_payments_of_the_daily_jobs_caught_up_at_start_are_notified(db_path, listener):
    """A stop in the middle of a clock move leaves days to run; the next start runs them, and what
    they pay is notified like the payments of any clock move (offline, whatever the rule's flow)."""
    handle = gwkit.sandbox.start(db_path, clock_start=CLOCK)
    client = Gateway(handle.base_url)
    try:
        add_rule(client, listener.url, flow="online", requesttypes=["AUTH"])
        _, subscription = client.records(monthly_subscription("2026-02-01"))
        assert subscription["errorcode"] == "0"
        handle.sandbox.gateway.stop_work()  # the server is stopping: the move ends before its first day
        moved = client.http.post("/_sandbox/clock/advance", json={"to": "2026-02-02T10:00:00"})
        assert moved.status_code == 200 and "stopped_before" in moved.json(), moved.text
        assert client.query(parenttransactionreference=subscription["transactionreference"]) == []
    finally:
        client.close()
        handle.stop()

    handle = gwkit.sandbox.start(db_path)  # catches up the days the move left undone
    client = Gateway(handle.base_url)
    try:
        (payment,) = client.query(parenttransactionreference=subscription["transactionreference"])
        arrived = listener.assert_notified_once(payment["transactionreference"])
        assert arrived["requesttypedescription"] == "AUTH" and arrived["errorcode"] == "0"
        (delivery,) = deliveries(client, transactionreference=payment["transactionreference"])
        assert delivery["event"] == "made"
        handle.notifications.wait_for(payment["transactionreference"], state="delivered")
    finally:
        client.close()
        handle.stop()


def test_a_team_sandbox_delivers_only_to_hosts_its_operator_allows(db_path):
    sandbox = gwkit.sandbox.Sandbox(db_path, clock_start=CLOCK, notification_hosts=["hooks.example.test"])
    handle = gwkit.sandbox.start(sandbox=sandbox)
    client = Gateway(handle.base_url)
    try:
        refused = client.http.post(RULES, json={"url": "http://127.0.0.1:9/"})
        assert refused.status_code == 400 and "operator allows" in refused.json()["detail"]
        assert client.http.post(RULES, json={"url": "https://hooks.example.test/n"}).status_code == 200
    finally:
        client.close()
        handle.stop()


def test_a_delivery_is_kept_with_its_payment_and_a_failure_to_keep_it_never_costs_the_payment(
    sandbox, gateway, listener, monkeypatch
):
    add_rule(gateway, listener.url, flow="offline", requesttypes=["AUTH"], errorcodes=["0"])

    def broken(*args, **kwargs):
        raise RuntimeError("the notification store is broken")

    monkeypatch.setattr(notifications, "add_delivery", broken)
    record = gateway.one(card_auth())
    assert record["errorcode"] == "0"
    assert gateway.query(transactionreference=record["transactionreference"])  # the payment was kept
    assert deliveries(gateway) == []
    monkeypatch.undo()
    reference = gateway.one(card_auth())["transactionreference"]
    listener.assert_notified_once(reference)


def test_a_listener_shows_itself_in_a_notebook_as_a_sentence(sandbox, gateway):
    with NotificationListener(password="notify-pw", path="/<hook>") as listener:
        shown = listener._repr_html_()
        assert shown.startswith("<p>") and "nothing has arrived yet" in shown
        assert "/&lt;hook&gt;" in shown and "<hook>" not in shown  # escaped
        assert "checked with your password" in shown and "notify-pw" not in shown
        add_rule(gateway, listener.url, flow="online", password="another-pw")
        gateway.one(card_auth())
        shown = listener._repr_html_()
        assert "1 notification(s) arrived" in shown and "1 did not match" in shown
        notebook = nbformat.v4.new_notebook()
        cell = nbformat.v4.new_code_cell("listener")
        cell.outputs = [
            nbformat.v4.new_output("execute_result", {"text/html": shown, "text/plain": repr(listener)})
        ]
        notebook.cells = [cell]
        assert output_scan.scan(notebook) == []
    with NotificationListener() as unsigned:
        assert "not checked" in unsigned._repr_html_()


@pytest.mark.parametrize(
    "error, words",
    [
        (ConnectionRefusedError(111, "Connection refused"), "the listener refused the connection"),
        (http.client.RemoteDisconnected("closed"), "closed the connection without answering"),
        (OSError(101, "Network is unreachable"), "the connection failed: Network is unreachable"),
    ],
)
def test_a_failed_attempt_is_said_in_words_never_by_the_error_s_class(error, words):
    from gwkit.sandbox.gateway.delivery import failure_words

    said = failure_words(error)
    assert words in said and type(error).__name__ not in said
