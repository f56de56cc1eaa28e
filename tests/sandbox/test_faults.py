"""Payment-aware fault injection: every kind over a loopback server and in-process, selection,
tenancy, the fault log and the x-gwkit-fault header."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import httpx
import pytest

import gwkit
from gwkit.sandbox import (
    DEFAULT_ACCOUNT,
    AsyncSandboxTransport,
    Sandbox,
    SandboxTransport,
    load_accounts,
    start,
)

pytestmark = pytest.mark.both_stores  # each test on SQLite and on PostgreSQL

VISA, EXPIRY = "4111111111111111", "12/2030"
DEFAULT_SITEREFERENCE = DEFAULT_ACCOUNT.sitereferences[0]
TIMEOUT = httpx.Timeout(10.0, read=0.5)


def auth(
    order: str, amount: str = "1050", site: str = DEFAULT_SITEREFERENCE, **fields: Any
) -> dict[str, Any]:
    return {
        "requesttypedescriptions": ["AUTH"],
        "sitereference": site,
        "accounttypedescription": "ECOM",
        "currencyiso3a": "GBP",
        "baseamount": amount,
        "pan": VISA,
        "expirydate": EXPIRY,
        "securitycode": "123",
        "orderreference": order,
        **fields,
    }


@dataclass
class Gateway:
    """A sandbox and an httpx client to it, over loopback or in-process."""

    sandbox: Sandbox
    http: httpx.Client
    sleeps: list[float] | None = None  # in-process: the latencies the transport was asked to sleep

    def post(self, *objects: dict[str, Any]) -> httpx.Response:
        return self.http.post("/json/", json={"request": list(objects)})

    def one(self, obj: dict[str, Any]) -> dict[str, Any]:
        (record,) = self.post(obj).json()["response"]
        return record

    def query(self, order: str) -> list[dict[str, Any]]:
        found = self.one(
            {
                "requesttypedescriptions": ["TRANSACTIONQUERY"],
                "filter": {"orderreference": [{"value": order}]},
            }
        )
        return found.get("records", [])

    def add(self, **fault: Any) -> dict[str, Any]:
        response = self.http.post("/_sandbox/faults", json=fault)
        assert response.status_code == 200, response.text
        return response.json()


@pytest.fixture(params=["loopback", "in-process"])
def gw(request, db_path) -> Iterator[Gateway]:
    if request.param == "loopback":
        handle = start(db_path)
        with httpx.Client(
            base_url=handle.base_url, auth=(handle.username, handle.password), timeout=TIMEOUT
        ) as http:
            yield Gateway(handle.sandbox, http)
        handle.stop()
    else:
        sandbox = Sandbox(db_path)
        sleeps: list[float] = []
        account = sandbox.default_account
        with httpx.Client(
            transport=SandboxTransport(sandbox, sleep=sleeps.append),
            base_url="http://sandbox.test",
            auth=(account.username, account.password),
        ) as http:
            yield Gateway(sandbox, http, sleeps)
        sandbox.close()


@pytest.mark.parametrize("process", [True, False])
def test_drop_closes_the_connection_before_or_after_the_payment(gw, process):
    gw.add(kind="drop", process=process)
    with pytest.raises(httpx.RemoteProtocolError):
        gw.post(auth("dropped"))
    assert len(gw.query("dropped")) == (1 if process else 0)
    (entry,) = gw.http.get("/_sandbox/faults/log").json()["log"]
    assert entry["kind"] == "drop" and entry["made"] is process and entry["orderreference"] == "dropped"
    assert (entry["transactionreference"] is not None) is process
    assert gw.one(auth("answered"))["errorcode"] == "0"  # count 1: used up


@pytest.mark.parametrize("process", [True, False])
def test_timeout_gives_no_answer_until_the_client_gives_up(gw, process):
    gw.add(kind="timeout", process=process)
    with pytest.raises(httpx.ReadTimeout):
        gw.post(auth("silent"))
    assert len(gw.query("silent")) == (1 if process else 0)


def test_latency_delays_the_answer(gw):
    gw.add(kind="latency", seconds=2.5)
    if gw.sleeps is not None:
        response = gw.post(auth("slow"))
        assert gw.sleeps == [2.5] and response.headers["x-gwkit-fault"] == "latency"
    else:  # a client that waits less than the latency gives up; the payment is made all the same
        with pytest.raises(httpx.ReadTimeout):
            gw.post(auth("slow"))
    assert len(gw.query("slow")) == 1


def test_a_latency_range_is_drawn_from_the_seeded_fault(db_path):
    sandbox = Sandbox(db_path)
    sleeps: list[float] = []
    account = sandbox.default_account
    sandbox.faults.add("latency", min_seconds=1, max_seconds=3, count=3, seed=7)
    with httpx.Client(
        transport=SandboxTransport(sandbox, sleep=sleeps.append),
        base_url="http://sandbox.test",
        auth=(account.username, account.password),
    ) as http:
        for n in range(3):
            http.post("/json/", json={"request": [auth(f"r{n}")]})
    assert len(sleeps) == 3 and all(1 <= s <= 3 for s in sleeps) and len(set(sleeps)) == 3
    sandbox.close()


@pytest.mark.parametrize("code", [60010, 60034, 99999])
@pytest.mark.parametrize("made", [True, False])
def test_gateway_error_with_an_unknown_outcome_made_or_not(gw, code, made):
    gw.add(kind="gateway_error", code=code, made=made)
    response = gw.post(auth("did-it-pay"))
    assert response.headers["x-gwkit-fault"] == "gateway_error"
    (record,) = response.json()["response"]
    assert record["errorcode"] == str(code) and record["requesttypedescription"] == "AUTH"
    assert record["errormessage"]
    found = gw.query("did-it-pay")
    if made:  # stored as the bank answered it: an authorised AUTH, pending settlement
        (stored,) = found
        assert stored["transactionreference"] == record["transactionreference"]
        assert stored["errorcode"] == "0" and stored["settlestatus"] == "0"
    else:
        assert found == [] and "transactionreference" not in record


def test_soft_decline_is_never_made(gw):
    gw.add(kind="gateway_error", code=71000)
    (record,) = gw.post(auth("soft")).json()["response"]
    assert record["errorcode"] == "71000" and record["errormessage"] == "Soft decline"
    assert gw.query("soft") == []
    bad = gw.http.post("/_sandbox/faults", json={"kind": "gateway_error", "code": 71000, "made": True})
    assert bad.status_code == 400 and "71000" in bad.json()["detail"]


@pytest.mark.parametrize("status", [500, 502, 503, 504])
def test_http_status_answers_as_a_proxy(gw, status):
    gw.add(kind="http_status", status=status, process=status != 503)
    response = gw.post(auth(f"proxy{status}"))
    assert response.status_code == status and response.headers["x-gwkit-fault"] == "http_status"
    assert str(status) in response.text and response.headers["content-type"].startswith("text/html")
    assert len(gw.query(f"proxy{status}")) == (0 if status == 503 else 1)


@pytest.mark.parametrize("body", ["truncated", "garbage"])
@pytest.mark.parametrize("process", [True, False])
def test_malformed_answers_are_not_json(gw, body, process):
    gw.add(kind="malformed", body=body, process=process)
    response = gw.post(auth("mangled"))
    assert response.status_code == 200 and response.headers["x-gwkit-fault"] == "malformed"
    with pytest.raises((json.JSONDecodeError, UnicodeDecodeError)):
        json.loads(response.content)
    if body == "truncated":
        assert response.content.startswith(b'{"requestreference"')
    assert len(gw.query("mangled")) == (1 if process else 0)


def test_answers_without_a_fault_carry_no_header(gw):
    assert "x-gwkit-fault" not in gw.post(auth("plain")).headers


def test_wrong_credentials_get_their_401_not_a_fault(gw):
    gw.add(kind="http_status", status=502)
    response = gw.http.post("/json/", json={"request": [auth("x")]}, auth=("gwkit_sandbox", "wrong"))
    assert response.status_code == 401 and "x-gwkit-fault" not in response.headers
    assert gw.post(auth("y")).status_code == 502  # still waiting for a request of the site


def test_the_older_drop_next_form_still_works(gw):
    assert gw.add(drop_next=2, process=False) == {"drop_next": 2, "process": False}
    assert gw.http.get("/_sandbox/faults").json()["drop_next"] == 2
    with pytest.raises(httpx.RemoteProtocolError):
        gw.post(auth("old"))
    assert gw.add(drop_next=0) == {"drop_next": 0, "process": True}
    assert gw.http.get("/_sandbox/faults").json()["faults"] == []


def test_the_async_transport_sleeps_through_its_own_function_and_times_out(db_path):
    sandbox = Sandbox(db_path)
    sandbox.faults.add("latency", seconds=4)
    sandbox.faults.add("timeout", process=False)
    slept: list[float] = []

    async def fake_sleep(seconds: float) -> None:
        slept.append(seconds)

    async def run() -> None:
        account = sandbox.default_account
        async with httpx.AsyncClient(
            transport=AsyncSandboxTransport(sandbox, sleep=fake_sleep),
            base_url="http://sandbox.test",
            auth=(account.username, account.password),
        ) as http:
            slow = await http.post("/json/", json={"request": [auth("async-slow")]})
            assert (
                slow.headers["x-gwkit-fault"] == "latency" and slow.json()["response"][0]["errorcode"] == "0"
            )
            with pytest.raises(httpx.ReadTimeout):
                await http.post("/json/", json={"request": [auth("async-silent")]})

    asyncio.run(run())
    assert slept == [4.0] and [e["kind"] for e in sandbox.faults.log()] == ["latency", "timeout"]
    sandbox.close()


def test_count_selects_the_next_n_matching_requests(db_path):
    sandbox = Sandbox(db_path)
    added = sandbox.faults.add("gateway_error", code=60010, count=2, requesttypes=["AUTH"])
    assert added["id"] and added["count"] == 2 and sandbox.faults.active() == [added]
    gw = _in_process(sandbox)
    assert (
        "x-gwkit-fault"
        not in gw.post(
            {"requesttypedescriptions": ["TRANSACTIONQUERY"], "filter": {"orderreference": [{"value": "x"}]}}
        ).headers
    )
    codes = [gw.one(auth(f"c{n}"))["errorcode"] for n in range(3)]
    assert codes == ["60010", "60010", "0"] and sandbox.faults.active() == []


def test_a_requesttypes_selector_matches_the_singular_requesttypedescription(db_path):
    sandbox = Sandbox(db_path)
    sandbox.faults.add("gateway_error", code=60034, count=1, requesttypes=["AUTH"])
    gw = _in_process(sandbox)
    singular = auth("s1")
    singular["requesttypedescription"] = singular.pop("requesttypedescriptions")[0]
    assert gw.one(singular)["errorcode"] == "60034"
    sandbox.close()


def test_fraction_with_a_seed_is_deterministic(db_path):
    def run(db) -> list[str]:
        sandbox = Sandbox(db)
        sandbox.faults.add("gateway_error", code=99999, fraction=0.5, seed=42)
        gw = _in_process(sandbox)
        codes = [gw.one(auth(f"f{n}"))["errorcode"] for n in range(20)]
        assert len(sandbox.faults.active()) == 1  # a fraction stays until cleared
        assert sandbox.faults.clear() == 1 and sandbox.faults.active() == []
        sandbox.close()
        return codes

    # A second sandbox on the same database, the first one's payments kept: the draws follow the seed only.
    first, second = run(db_path), run(db_path)
    assert first == second and 0 < first.count("99999") < 20


@pytest.mark.parametrize("amounts", [[2000, 3000], {"min": 1500, "max": 3000}])
def test_amount_filters(db_path, amounts):
    sandbox = Sandbox(db_path)
    sandbox.faults.add("gateway_error", code=60034, count=5, amounts=amounts)
    gw = _in_process(sandbox)
    assert gw.one(auth("a", "1050"))["errorcode"] == "0"
    assert gw.one(auth("b", "2000"))["errorcode"] == "60034"
    assert gw.one(auth("c", "3000"))["errorcode"] == "60034"
    assert gw.one(auth("d", "4000"))["errorcode"] == "0"


def test_the_log_records_site_clock_kind_and_parameters(db_path):
    sandbox = Sandbox(db_path)
    sandbox.faults.add("gateway_error", code=60010, made=True)
    gw = _in_process(sandbox)
    record = gw.one(auth("logged"))
    (entry,) = sandbox.faults.log()
    assert entry == {
        "sitereference": sandbox.default_account.sitereferences[0],
        "injected": sandbox.clock.now().strftime("%Y-%m-%dT%H:%M:%S"),
        "fault_id": entry["fault_id"],
        "kind": "gateway_error",
        "params": {"code": 60010, "made": True},
        "requesttypes": ["AUTH"],
        "orderreference": "logged",
        "transactionreference": record["transactionreference"],
        "made": True,
    }


def _in_process(sandbox: Sandbox, account=None) -> Gateway:
    account = account or sandbox.default_account
    http = httpx.Client(
        transport=SandboxTransport(sandbox),
        base_url="http://sandbox.test",
        auth=(account.username, account.password),
    )
    return Gateway(sandbox, http)


ACCOUNTS = """
[[account]]
username = "alice"
password = "alice-password"
sitereferences = ["test_alice12345", "test_alice67890"]

[[account]]
username = "bob"
password = "bob-password"
sitereferences = ["test_bob12345"]
"""


@pytest.fixture
def two_users(tmp_path, db_path):
    path = tmp_path / "accounts.toml"
    path.write_text(ACCOUNTS)
    handle = start(db_path, accounts=load_accounts(path))
    alice, bob = handle.sandbox.accounts["alice"], handle.sandbox.accounts["bob"]
    clients = [
        httpx.Client(base_url=handle.base_url, auth=(a.username, a.password), timeout=TIMEOUT)
        for a in (alice, bob)
    ]
    yield handle, *(Gateway(handle.sandbox, c) for c in clients)
    for client in clients:
        client.close()
    handle.stop()


def test_one_users_faults_never_touch_another_users_sites(two_users):
    _, alice, bob = two_users
    alice.add(kind="gateway_error", code=60010, count=3)
    assert bob.one(auth("bob-1", site="test_bob12345"))["errorcode"] == "0"
    assert bob.http.get("/_sandbox/faults").json()["faults"] == []
    assert (
        alice.one(auth("alice-1", site="test_alice12345"))["errorcode"] == "60010"
    )  # her first site by default
    # a fault for her second site is picked only by requests naming it
    alice.add(kind="http_status", status=502, sitereference="test_alice67890")
    assert alice.post(auth("alice-2", site="test_alice67890")).status_code == 502
    assert bob.http.get("/_sandbox/faults/log").json()["log"] == []
    assert {e["sitereference"] for e in alice.http.get("/_sandbox/faults/log").json()["log"]} == {
        "test_alice12345",
        "test_alice67890",
    }
    assert bob.http.post("/_sandbox/faults/clear", json={}).json() == {"cleared": 0}
    assert len(alice.http.get("/_sandbox/faults").json()["faults"]) == 1


def test_naming_another_users_site_is_a_403_as_on_every_control_endpoint(two_users):
    _, _alice, bob = two_users
    for path, payload in [
        ("/_sandbox/faults", {"kind": "drop", "sitereference": "test_alice12345"}),
        ("/_sandbox/faults/clear", {"sitereference": "test_alice12345"}),
    ]:
        response = bob.http.post(path, json=payload)
        assert response.status_code == 403 and response.json()["field"] == "sitereference"
    assert bob.http.get("/_sandbox/faults").json()["faults"] == []


@pytest.mark.parametrize(
    "payload, named",
    [
        ({"kind": "meteor"}, "kind"),
        ({"kind": ["drop"]}, "kind"),
        ({}, "kind"),
        ({"kind": "latency"}, "seconds"),
        ({"kind": "latency", "seconds": -1}, "seconds"),
        ({"kind": "latency", "seconds": 1, "min_seconds": 0, "max_seconds": 2}, "seconds"),
        ({"kind": "latency", "min_seconds": 3, "max_seconds": 2}, "min_seconds"),
        ({"kind": "timeout", "process": "yes"}, "process"),
        ({"kind": "gateway_error", "code": 30000}, "code"),
        ({"kind": "gateway_error", "code": 70000, "made": True}, "made"),
        ({"kind": "gateway_error", "code": 60010, "made": 1}, "made"),
        ({"kind": "http_status", "status": 404}, "status"),
        ({"kind": "malformed", "body": "empty"}, "body"),
        ({"kind": "drop", "count": 0}, "count"),
        ({"kind": "drop", "count": 1, "fraction": 0.5}, "fraction"),
        ({"kind": "drop", "fraction": 0}, "fraction"),
        ({"kind": "drop", "fraction": 1.5}, "fraction"),
        ({"kind": "drop", "fraction": 0.5, "seed": "x"}, "seed"),
        ({"kind": "drop", "seed": True}, "seed"),
        ({"kind": "drop", "requesttypes": "AUTH"}, "requesttypes"),
        ({"kind": "drop", "amounts": {"min": 5, "max": 1}}, "amounts"),
        ({"kind": "drop", "amounts": [1.5]}, "amounts"),
        ({"kind": "drop", "colour": "red"}, "colour"),
        ({"kind": "drop", "sitereference": 5}, "sitereference"),
        ({"drop_next": -1}, "drop_next"),
        ({"drop_next": 1, "process": "yes"}, "process"),
    ],
)
def test_bad_faults_are_400_naming_the_field(gw, payload, named):
    response = gw.http.post("/_sandbox/faults", json=payload)
    assert response.status_code == 400, response.text
    assert response.json()["error"] == "bad request" and named in response.json()["detail"]
    assert gw.http.get("/_sandbox/faults").json()["faults"] == []


@pytest.mark.parametrize("body", [b"[1]", b"not json", b'{"sitereference": "x", "more": 1}'])
def test_bad_clear_requests_are_400(gw, body):
    response = gw.http.post(
        "/_sandbox/faults/clear", content=body, headers={"content-type": "application/json"}
    )
    assert response.status_code == 400 and response.json()["error"] == "bad request"


@pytest.mark.parametrize("made", [True, False])
def test_a_gateway_error_answer_echoes_the_request_reference_so_clients_read_it(db_path, made):
    sandbox = Sandbox(db_path)
    sandbox.faults.add("gateway_error", code=60010, made=made)
    with gwkit.Client(
        "http://sandbox.test",
        DEFAULT_ACCOUNT.username,
        DEFAULT_ACCOUNT.password,
        sitereference=DEFAULT_SITEREFERENCE,
        transport=SandboxTransport(sandbox),
    ) as client:
        response = client.auth(
            accounttypedescription="ECOM",
            currencyiso3a="GBP",
            baseamount=1050,
            orderreference="echo",
            pan="4111111111111111",
            expirydate="12/2030",
            securitycode="123",
        )
        assert response.record.errorcode == 60010  # read, not refused as another request's answer
        assert response.requestreference == response.request["request"][0]["requestreference"]
        found = client.transaction_query(orderreference="echo").record.query_records
        assert len(found) == (1 if made else 0)
    sandbox.close()


def test_the_older_drop_next_calls_still_work_and_warn_that_they_are_deprecated(tmp_path):
    handle = gwkit.sandbox.start(tmp_path / "sandbox.db")
    try:
        with pytest.warns(DeprecationWarning, match=r'faults.add\("drop"'):
            assert handle.drop_next(2, process=False) == {"drop_next": 2, "process": False}
        with pytest.warns(DeprecationWarning, match=r'faults.add\("drop"'):
            assert handle.faults.set(1) == {"drop_next": 1, "process": True}
        [drop] = handle.faults.active()
        assert (drop["kind"], drop["count"], drop["process"]) == ("drop", 1, True)
    finally:
        handle.stop()


def test_one_fault_vocabulary_for_the_control_api_the_injection_and_the_panel():
    from gwkit.interface import faults as vocabulary
    from gwkit.sandbox.web import faults, injection
    from gwkit.widgets import faults_panel

    assert faults.KINDS is vocabulary.KINDS
    assert set(injection._APPLY) == set(vocabulary.KINDS)
    assert tuple(vocabulary.KINDS) == faults_panel.KINDS
    assert faults_panel.GATEWAY_ERROR_CODES == vocabulary.GATEWAY_ERROR_CODES
    assert faults_panel.HTTP_STATUSES == vocabulary.PROXY_STATUSES
    assert faults_panel.MALFORMED_BODIES == vocabulary.MALFORMED_BODIES
