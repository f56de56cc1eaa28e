"""One way in: each request to the sandbox is size-checked, routed, read, authenticated and secured
once, with or without a fault armed (web/sandbox.py `Sandbox.answer`)."""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator
from typing import Any

import httpx
import pytest

from gwkit.sandbox import Sandbox, SandboxTransport, start
from gwkit.sandbox.http import read_json
from gwkit.sandbox.web.control import ids_in
from gwkit.sandbox.web.credentials import authenticate
from gwkit.sandbox.web.pages import secured
from gwkit.sandbox.web.routes import find_route
from support.sandbox import card_auth


@pytest.fixture
def sandbox(tmp_path) -> Iterator[Sandbox]:
    sandbox = Sandbox(tmp_path / "one-way.db")
    yield sandbox
    sandbox.close()


@pytest.fixture
def http(sandbox) -> Iterator[httpx.Client]:
    account = sandbox.default_account
    with httpx.Client(
        transport=SandboxTransport(sandbox, sleep=lambda seconds: None),
        base_url="http://sandbox.test",
        auth=(account.username, account.password),
    ) as client:
        yield client


def calls_of(monkeypatch: pytest.MonkeyPatch, function: Callable[..., Any]) -> list[tuple]:
    """Every call of `function` made through any gwkit module that imported it, recorded."""
    calls: list[tuple] = []

    def counted(*args: Any, **kwargs: Any) -> Any:
        calls.append(args)
        return function(*args, **kwargs)

    for name, module in list(sys.modules.items()):
        if name.startswith("gwkit") and getattr(module, function.__name__, None) is function:
            monkeypatch.setattr(module, function.__name__, counted)
    return calls


ARMED = {
    "none": None,
    "met": {"kind": "gateway_error", "code": 60010, "made": True},
    "not met": {"kind": "gateway_error", "code": 60010, "requesttypes": ["REFUND"]},
    "latency": {"kind": "latency", "seconds": 0.5},
}


@pytest.mark.parametrize("fault", ARMED, ids=list(ARMED))
def test_a_gateway_request_is_read_authenticated_and_secured_once(sandbox, http, monkeypatch, fault):
    if ARMED[fault] is not None:
        sandbox.faults.add(**ARMED[fault])
    authenticated = calls_of(monkeypatch, authenticate)
    parsed = calls_of(monkeypatch, read_json)
    secured_answers = calls_of(monkeypatch, secured)

    response = http.post("/json/", json={"request": [card_auth(orderreference=f"once-{fault}")]})

    assert response.status_code == 200
    (record,) = response.json()["response"]
    assert record["errorcode"] == ("60010" if fault == "met" else "0")
    assert response.headers.get("x-gwkit-fault") == {"met": "gateway_error", "latency": "latency"}.get(fault)
    assert response.headers["x-content-type-options"] == "nosniff"
    assert (len(authenticated), len(parsed), len(secured_answers)) == (1, 1, 1)


def test_a_control_request_is_authenticated_and_secured_once(sandbox, http, monkeypatch):
    sandbox.faults.add(kind="gateway_error", code=60010)
    authenticated = calls_of(monkeypatch, authenticate)
    secured_answers = calls_of(monkeypatch, secured)

    assert http.post("/_sandbox/settle", json={}).status_code == 200
    assert (len(authenticated), len(secured_answers)) == (1, 1)


def test_a_body_over_the_limit_is_refused_once_and_never_meets_a_fault(tmp_path, monkeypatch):
    sandbox = Sandbox(tmp_path / "small.db", max_body_bytes=200)
    try:
        sandbox.faults.add(kind="gateway_error", code=60010, made=True)
        asked: list[int] = []
        rule = sandbox.oversized
        monkeypatch.setattr(sandbox, "oversized", lambda size: asked.append(size) or rule(size))
        account = sandbox.default_account
        with httpx.Client(
            transport=SandboxTransport(sandbox),
            base_url="http://sandbox.test",
            auth=(account.username, account.password),
        ) as http:
            response = http.post("/json/", json={"request": [card_auth(orderreference="x" * 300)]})
            assert response.status_code == 413
            assert response.json() == {"error": "request body too large", "limit_bytes": 200}
            assert "x-gwkit-fault" not in response.headers
            assert len(asked) == 1 and asked[0] > 200
            assert sandbox.faults.log() == []  # the fault is still armed, for the next request
            assert sandbox.faults.active()[0]["kind"] == "gateway_error"
    finally:
        sandbox.close()


def test_clock_settle_and_reset_over_http_send_the_change_signal(tmp_path):
    handle = start(tmp_path / "signal.db")
    heard: list[str] = []
    handle.on_change(heard.append)
    try:
        with httpx.Client(base_url=handle.base_url, auth=(handle.username, handle.password)) as http:
            before = handle.now()
            assert http.post("/_sandbox/clock/advance", json={"by": "P1D"}).status_code == 200
            assert handle.now() > before
            assert http.post("/_sandbox/settle", json={"all": True}).status_code == 200
            assert (
                http.post("/_sandbox/reset", json={"sitereference": handle.sitereference}).status_code == 200
            )
            assert heard == ["clock", "settle", "reset"]

            refused = http.post("/_sandbox/clock/advance", json={"by": "P1D", "sitereference": "another"})
            assert refused.status_code == 403 and refused.json()["field"] == "sitereference"
            assert http.post("/_sandbox/clock/advance", json={"by": 1}).status_code == 400
            assert http.post("/_sandbox/settle", json={"everything": True}).status_code == 400
            assert heard == ["clock", "settle", "reset"]  # nothing changed, nothing signalled
    finally:
        handle.stop()


@pytest.mark.parametrize(
    ("method", "path", "page"),
    [
        ("GET", "/_sandbox/clock", "control_page(clock)"),
        ("GET", "/_sandbox/clock/", "control_page(clock)"),
        ("DELETE", "/_sandbox/notifications/rules/r-1", "control_page(delete_rule)"),
        ("POST", "/_sandbox/notifications/deliveries/d-1/resend", "control_page(resend)"),
        ("POST", "/_sandbox/notifications/deliveries/d-1", "no_such_control_endpoint"),
        ("DELETE", "/_sandbox/notifications/rules/r-1/more", "no_such_control_endpoint"),
        ("GET", "/_sandbox/notifications/rules/r-1", "no_such_control_endpoint"),
        ("GET", "/_sandbox/health", "health_page"),
        ("POST", "/json/", "gateway_endpoint"),
    ],
)
def test_every_request_finds_its_page_in_the_one_routes_table(method, path, page):
    found = find_route(method, path)
    assert found is not None and found.page.__name__ == page


def test_a_control_page_is_given_the_ids_its_path_carries():
    template = "/_sandbox/notifications/deliveries/{id}/resend"
    assert ids_in(template, "/_sandbox/notifications/deliveries/d-1/resend/") == ["d-1"]
    assert ids_in("/_sandbox/clock", "/_sandbox/clock") == []
