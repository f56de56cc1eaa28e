"""The control API under /_sandbox/: credentials, health, reset, errors."""

from __future__ import annotations

import re

import httpx
import pytest

from support.sandbox import all_rows, card_auth, parent_auth, store_request

pytestmark = pytest.mark.both_stores  # each test on SQLite and on PostgreSQL

PROTECTED = [
    ("GET", "/_sandbox/clock"),
    ("POST", "/_sandbox/clock/advance"),
    ("POST", "/_sandbox/settle"),
    ("POST", "/_sandbox/reset"),
    ("GET", "/_sandbox/faults"),
    ("POST", "/_sandbox/faults"),
]


def test_clock_answers_now_in_iso_format(gateway):
    answer = gateway.http.get("/_sandbox/clock").json()
    assert list(answer) == ["now", "sites"] and re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d", answer["now"])


def test_health_needs_no_credentials_and_says_more_with_them(sandbox, gateway):
    gateway.one(card_auth())
    assert httpx.get(f"{sandbox.base_url}/_sandbox/health").json() == {"status": "ok"}
    health = gateway.http.get("/_sandbox/health").json()
    assert (health["status"], health["now"], health["transactions"]) == ("ok", "2026-01-15T10:00:00", 1)
    assert health == {**sandbox.health(), "transactions": 1}


@pytest.mark.parametrize("method, path", PROTECTED)
def test_control_endpoints_need_the_gateway_credentials(sandbox, db_path, method, path):
    before = all_rows(db_path)
    response = httpx.request(method, f"{sandbox.base_url}{path}", json={"by": "P1D"})
    assert response.status_code == 401 and response.json()["error"] == "unauthorised"
    wrong = httpx.request(
        method, f"{sandbox.base_url}{path}", json={"by": "P1D"}, auth=(sandbox.username, "x")
    )
    assert wrong.status_code == 401
    assert all_rows(db_path) == before and sandbox.now().isoformat() == "2026-01-15T10:00:00"


def test_reset_deletes_data_keeps_the_clock_and_never_reuses_references(sandbox, gateway, db_path):
    first = gateway.one(card_auth())["transactionreference"]
    stored = gateway.one(store_request())["transactionreference"]
    sandbox.advance(by="P2D")
    answer = gateway.http.post("/_sandbox/reset", headers={"content-type": "application/json"}).json()
    assert answer == {"reset": True, "now": "2026-01-17T10:00:00"}
    counts = all_rows(db_path)
    assert counts["transactions"] == counts["cards"] == 0
    assert gateway.query(transactionreference=[first, stored]) == []
    refused = gateway.one(parent_auth(stored))
    assert refused["errordata"] == ["parenttransactionreference"]
    after = gateway.one(card_auth())["transactionreference"]
    assert after not in (first, stored)
    assert int(after.rsplit("-", 1)[1]) > int(stored.rsplit("-", 1)[1])
    sandbox.reset()  # the handle mirrors it
    assert all_rows(db_path)["transactions"] == 0


def test_a_reset_with_the_clock_starts_the_sites_afresh(sandbox, gateway, db_path):
    gateway.one(card_auth())
    sandbox.advance(by="P1M")
    answer = gateway.http.post("/_sandbox/reset", json={"clock": True}).json()
    assert answer == {"reset": True, "now": "2026-01-15T10:00:00"}
    assert all_rows(db_path)["transactions"] == 0
    again = gateway.one(card_auth())
    assert (again["errorcode"], again["settleduedate"]) == ("0", "2026-01-15")
    sandbox.advance(by="P1D")
    [settled] = gateway.query(transactionreference=[again["transactionreference"]])
    assert settled["settlestatus"] == "100"


@pytest.mark.parametrize("clock", ["yes", 1, None])
def test_a_reset_s_clock_must_be_true_or_false_and_a_refused_reset_changes_nothing(
    sandbox, gateway, db_path, clock
):
    gateway.one(card_auth())
    before = all_rows(db_path)
    response = gateway.http.post("/_sandbox/reset", json={"clock": clock})
    assert response.status_code == 400 and "clock must be true or false" in response.json()["detail"]
    assert all_rows(db_path) == before


def test_unknown_control_endpoints_are_404_listing_the_endpoints(gateway):
    response = gateway.http.post("/_sandbox/teleport", json={})
    assert response.status_code == 404
    assert "POST /_sandbox/clock/advance" in response.json()["endpoints"]


@pytest.mark.parametrize("body", [b"{nope", b"[1]", b'"P1D"'])
def test_control_bodies_must_be_json_objects(gateway, body):
    response = gateway.http.post(
        "/_sandbox/clock/advance", content=body, headers={"content-type": "application/json"}
    )
    assert response.status_code == 400 and "JSON object" in response.json()["detail"]


def test_the_handle_and_the_sandbox_are_one_control_api_sending_one_change_signal(sandbox):
    """Clock, settle and reset through the handle or through its Sandbox: the same calls, and the
    handle's listeners hear both."""
    heard: list[str] = []
    sandbox.on_change(heard.append)
    sandbox.advance(by="P1D")
    sandbox.sandbox.advance(by="P1D", account=sandbox.account)
    sandbox.settle()
    sandbox.sandbox.settle(all_pending=True)
    sandbox.sandbox.reset(account=sandbox.account)
    sandbox.reset()
    assert heard == ["clock", "clock", "settle", "settle", "reset", "reset"]
    assert sandbox.now().isoformat() == "2026-01-17T10:00:00"
