"""Injected latency is a property of the caller's own requests: a per-site cap on delayed requests
(429 beyond it, nothing processed), delays that end when the client leaves, and delays that never
take the server-wide connection limit from anybody else (health, control routes, other tenants).

Delayed requests are held on raw sockets on loopback; the test knows they are in place, or gone,
from the sandbox's own count (`LatencyBudget.wait_until`), never from a pause.
"""

from __future__ import annotations

import asyncio
import base64
import json
import socket

import httpx
import pytest

import gwkit.sandbox
from gwkit.sandbox.web.server import ServerLimits
from support.sandbox import CLOCK, Gateway, card_auth

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
ALICE, BOB = "test_alice12345", "test_bob12345"
IN_PLACE = 30.0  # seconds: an upper bound for the count to reach its value, not a wait


def start(tmp_path, limits: ServerLimits):
    path = tmp_path / "accounts.toml"
    path.write_text(ACCOUNTS, encoding="utf-8")
    accounts = gwkit.sandbox.load_accounts(path)
    return gwkit.sandbox.start(tmp_path / "s.db", accounts=accounts, clock_start=CLOCK, limits=limits)


def held_auths(handle, count: int) -> list[socket.socket]:
    """`count` AUTHs of alice's, each in place (waiting out its delay) before the next is sent."""
    held = []
    for number in range(count):
        held.append(held_auth(handle, f"held-{number}"))
        assert handle.sandbox.latency.wait_until(ALICE, number + 1, IN_PLACE)
    return held


def held_auth(handle, order: str) -> socket.socket:
    """An AUTH of alice's sent on a raw socket and left waiting for its (delayed) answer."""
    body = json.dumps(
        {
            "alias": "alice@example.test",
            "version": "1.00",
            "request": [card_auth(sitereference=ALICE, orderreference=order)],
        }
    ).encode()
    credentials = base64.b64encode(b"alice@example.test:alice-secret").decode()
    head = (
        f"POST /json/ HTTP/1.1\r\nHost: x\r\nAuthorization: Basic {credentials}\r\n"
        f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\n\r\n"
    ).encode()
    host, port = handle.base_url.removeprefix("http://").split(":")
    sock = socket.create_connection((host, int(port)), timeout=IN_PLACE)
    sock.sendall(head + body)
    return sock


@pytest.fixture
def tenants(tmp_path):
    handle = start(tmp_path, ServerLimits(max_connections=5, delayed_per_site=8))
    alice = Gateway(handle.base_url, "alice@example.test", "alice-secret")
    bob = Gateway(handle.base_url, "bob@example.test", "bob-secret")
    assert (
        alice.http.post(
            "/_sandbox/faults",
            json={"kind": "latency", "seconds": 3600, "count": 1000, "requesttypes": ["AUTH"]},
        ).status_code
        == 200
    )
    yield handle, alice, bob
    alice.close(), bob.close()
    handle.stop()


def test_a_site_at_its_cap_gets_429_naming_it_and_nothing_is_processed(tenants):
    handle, alice, _ = tenants
    budget = handle.sandbox.latency
    held = held_auths(handle, 8)
    refused = alice.http.post(
        "/json/",
        json={
            "alias": alice.username,
            "version": "1.00",
            "request": [card_auth(sitereference=ALICE, orderreference="ninth")],
        },
    )
    assert refused.status_code == 429 and refused.headers["x-gwkit-fault"] == "latency"
    assert refused.json()["limit"] == "delayed_per_site" and refused.json()["limit_requests"] == 8
    assert ALICE in refused.json()["detail"] and "at most 8 per site" in refused.json()["detail"]
    # The clients leave: their delays end, and their slots come back at once.
    for sock in held:
        sock.close()
    assert budget.wait_until(ALICE, 0, IN_PLACE)
    orders = {r.get("orderreference") for r in alice.query(sitereference=ALICE)}
    assert "ninth" not in orders and {f"held-{i}" for i in range(8)} <= orders  # processed, then delayed
    again = held_auth(handle, "again")  # the fault is still armed: delayed, not refused
    assert budget.wait_until(ALICE, 1, IN_PLACE)
    again.close()
    assert budget.wait_until(ALICE, 0, IN_PLACE)


def test_delayed_requests_never_take_the_connection_limit_from_anybody(tenants):
    handle, alice, bob = tenants  # max_connections=5: alice holds 8 delayed requests
    held = held_auths(handle, 8)  # 8 open connections, each delayed
    assert bob.one(card_auth(sitereference=BOB))["errorcode"] == "0"  # another tenant: served
    assert httpx.get(f"{handle.base_url}/_sandbox/health", timeout=IN_PLACE).status_code == 200
    assert alice.http.get("/_sandbox/health").status_code == 200
    assert alice.http.post("/_sandbox/faults/clear", json={}).json() == {"cleared": 1}  # her own clear
    assert alice.one(card_auth(sitereference=ALICE))["errorcode"] == "0"  # no fault: answered now
    for sock in held:
        sock.close()
    assert handle.sandbox.latency.wait_until(ALICE, 0, IN_PLACE)


def test_timeouts_hold_the_same_budget_and_give_it_back_when_the_client_leaves(tenants):
    handle, alice, bob = tenants
    alice.http.post("/_sandbox/faults/clear", json={})
    timeout = {"kind": "timeout", "count": 1000, "requesttypes": ["AUTH"]}
    assert alice.http.post("/_sandbox/faults", json=timeout).status_code == 200
    held = held_auths(handle, 8)  # each held until its client gives up
    refused = alice.http.post(
        "/json/",
        json={"alias": alice.username, "version": "1.00", "request": [card_auth(sitereference=ALICE)]},
    )
    assert refused.status_code == 429 and refused.json()["limit_requests"] == 8
    assert bob.one(card_auth(sitereference=BOB))["errorcode"] == "0"
    for sock in held:
        sock.close()
    assert handle.sandbox.latency.wait_until(ALICE, 0, IN_PLACE)


@pytest.mark.parametrize("kind", ["latency", "timeout"])
def test_requests_waiting_out_a_delay_never_keep_others_off_the_quick_path(tenants, kind):
    """A delayed request does no work while it waits: with alice's 8 held, bob's AUTH is answered
    as on an idle server (on the event loop, inline), not handed to a worker thread and back."""
    handle, alice, bob = tenants
    alice.http.post("/_sandbox/faults/clear", json={})
    fault = {
        "kind": kind,
        "count": 1000,
        "requesttypes": ["AUTH"],
        **({"seconds": 3600} if kind == "latency" else {}),
    }
    assert alice.http.post("/_sandbox/faults", json=fault).status_code == 200
    held = held_auths(handle, 8)
    # Counted in the budget, the last may still be processed: bob's first AUTH, queued behind it in
    # the one quick thread (or answered inline once it is done), is answered after it is waiting.
    assert bob.one(card_auth(sitereference=BOB))["errorcode"] == "0"
    on_event_loop: list[bool] = []
    answer = handle.sandbox.answer

    def recording(request):
        on_event_loop.append(_running_loop() is not None)
        return answer(request)

    handle.sandbox.answer = recording
    try:
        assert bob.one(card_auth(sitereference=BOB))["errorcode"] == "0"
    finally:
        handle.sandbox.answer = answer
    for sock in held:
        sock.close()
    assert handle.sandbox.latency.wait_until(ALICE, 0, IN_PLACE)
    assert on_event_loop == [True]


def _running_loop() -> asyncio.AbstractEventLoop | None:
    try:
        return asyncio.get_running_loop()
    except RuntimeError:  # a worker thread
        return None
