"""gwkit proxy over real HTTP on loopback, driven by "another application": the official
`securetrading` client (not gwkit), pointed at the proxy's base URL.

The upstream is the embedded sandbox (credentials and site mapped), the sandbox served over HTTP,
a recording stand-in gateway (to prove what was forwarded, and what was not), the same over TLS
with a self-signed certificate, or a cassette.
"""

from __future__ import annotations

import asyncio
import json
import random
import sqlite3
from concurrent.futures import ThreadPoolExecutor
from datetime import datetime

import httpx
import pytest
import securetrading  # a dev dependency: the official client, standing for any application

import gwkit.sandbox
from gwkit.cassette import Cassette
from gwkit.proxy import (
    PROXY,
    UPSTREAM,
    CassetteUpstream,
    FaultsError,
    GatewayUpstream,
    ProxyFaults,
    SandboxUpstream,
)
from support.upstream import RecordingGateway, self_signed, tls_context

CLOCK = datetime(2026, 1, 15, 10, 0, 0)
APP_USER, APP_PASSWORD, APP_SITE = "shop@merchant.example", "pw-Zq8x-never-logged", "merchant_site_1"
VISA, MASTERCARD, SECURITY_CODE = "4111111111111111", "5100000000000008", "739"


def card(**fields) -> dict:
    return {
        "sitereference": APP_SITE,
        "accounttypedescription": "ECOM",
        "currencyiso3a": "GBP",
        "baseamount": "1050",
        "pan": VISA,
        "expirydate": "12/2030",
        "securitycode": SECURITY_CODE,
        **fields,
    }


def official(base_url: str, username: str = APP_USER, password: str = APP_PASSWORD) -> securetrading.Api:
    config = securetrading.Config()
    config.username, config.password = username, password
    config.datacenterurl = base_url
    config.http_retry_sleep = 0  # its retry loop sleeps between attempts
    return securetrading.Api(config)


def ok(response) -> dict:
    (record,) = response["responses"]
    assert record["errorcode"] == "0", record
    return record


class Delays:
    """The proxy's sleep: keeps each delay asked for instead of waiting."""

    def __init__(self) -> None:
        self.asked: list[float] = []

    async def __call__(self, seconds: float) -> None:
        self.asked.append(seconds)


def test_the_official_client_makes_every_request_type_through_the_proxy_to_the_sandbox(box, run_proxy):
    handle, lines = run_proxy(SandboxUpstream(box))
    api = official(handle.base_url)  # its own credentials and site: nothing of the sandbox's

    request = securetrading.Request()
    request.update({"requesttypedescriptions": ["AUTH"], "orderreference": "proxied-1", **card()})
    response = api.process(request)
    assert response["requestreference"] == request["requestreference"]  # echoed through the proxy
    auth = ok(response)
    assert (auth["maskedpan"], auth["acquirerresponsecode"]) == ("411111######1111", "00")
    assert "sitereference" not in auth  # no record names its site (as the real gateway's)
    threedquery = ok(
        api.process(
            {"requesttypedescriptions": ["THREEDQUERY"], "termurl": "https://shop.example/3ds", **card()}
        )
    )
    assert threedquery["requesttypedescription"] == "THREEDQUERY"
    stored = ok(
        api.process(
            {
                "requesttypedescriptions": ["STORE"],
                "sitereference": APP_SITE,
                "accounttypedescription": "CARDSTORE",
                "pan": MASTERCARD,
                "expirydate": "12/2030",
                "orderreference": "proxied-store",
            }
        )
    )
    assert stored["transactionactive"] == "1" and "sitereference" not in stored
    check = ok(api.process({"requesttypedescriptions": ["ACCOUNTCHECK"], **card()}))
    assert check["requesttypedescription"] == "ACCOUNTCHECK"

    box.gateway.advance(by="P1D", sites=box.default_account.sitereferences)  # the AUTH settles
    refund = ok(
        api.process(
            {
                "requesttypedescriptions": ["REFUND"],
                "sitereference": APP_SITE,
                "parenttransactionreference": auth["transactionreference"],
                "baseamount": "50",
            }
        )
    )
    assert (refund["baseamount"], refund["parenttransactionreference"]) == (
        "50",
        auth["transactionreference"],
    )
    pending = ok(api.process({"requesttypedescriptions": ["AUTH"], "orderreference": "proxied-2", **card()}))
    update = ok(
        api.process(
            {
                "requesttypedescriptions": ["TRANSACTIONUPDATE"],
                "filter": {
                    "sitereference": [{"value": APP_SITE}],
                    "transactionreference": [{"value": pending["transactionreference"]}],
                },
                "updates": {"settlestatus": "2"},
            }
        )
    )
    assert update["requesttypedescription"] == "TRANSACTIONUPDATE"
    query = ok(
        api.process(
            {
                "requesttypedescriptions": ["TRANSACTIONQUERY"],
                "filter": {
                    "sitereference": [{"value": APP_SITE}],
                    "orderreference": [{"value": "proxied-2"}],
                },
            }
        )
    )
    (found,) = query["records"]
    assert (found["transactionreference"], found["settlestatus"]) == (pending["transactionreference"], "2")

    # The sandbox kept them on its own site, the application's requests unchanged but for the mapping.
    kept = _sandbox_query(box, "proxied-1")
    assert sorted((r["transactionreference"], r["baseamount"]) for r in kept) == sorted(
        [
            (auth["transactionreference"], "1050"),
            (refund["transactionreference"], "50"),
        ]  # the refund inherits it
    )
    assert all("sitereference" not in r for r in kept)  # the sandbox's account found them: on its site
    handle.flush()  # the summary lines come from the proxy's writer thread
    assert [e.request_types for e in handle.exchanges] == [
        ("AUTH",),
        ("THREEDQUERY",),
        ("STORE",),
        ("ACCOUNTCHECK",),
        ("REFUND",),
        ("AUTH",),
        ("TRANSACTIONUPDATE",),
        ("TRANSACTIONQUERY",),
    ]
    assert all(e.problems == () and e.answered_by == UPSTREAM for e in handle.exchanges)
    assert len(lines) == 8 and lines[0].endswith("#1 AUTH -> 200 0 in " + lines[0].split(" in ")[1])


def _sandbox_query(box, orderreference: str) -> list[dict]:
    account = box.default_account
    with httpx.Client(
        transport=gwkit.sandbox.SandboxTransport(box), auth=(account.username, account.password)
    ) as http:
        answer = http.post(
            "http://sandbox/json/",
            json={
                "alias": account.username,
                "version": "1.00",
                "request": [
                    {
                        "requesttypedescriptions": ["TRANSACTIONQUERY"],
                        "filter": {"orderreference": [{"value": orderreference}]},
                    }
                ],
            },
        ).json()
    return answer["response"][0].get("records", [])


def test_an_invalid_request_is_reported_naming_the_field_and_the_rule_and_forwarded(box, run_proxy):
    handle, lines = run_proxy(SandboxUpstream(box))
    response = official(handle.base_url).process(
        {"requesttypedescriptions": ["AUTH"], **card(baseamount="10.50", pan="4111111111111112")}
    )
    (record,) = response["responses"]
    assert (record["errorcode"], record["errordata"]) == ("30000", ["baseamount", "pan"])  # the sandbox's
    handle.flush()
    (exchange,) = handle.exchanges
    assert exchange.answered_by == UPSTREAM
    assert [(p.field, p.rule) for p in exchange.problems] == [
        ("baseamount", "Numeric: digits 0-9 only"),
        ("pan", "must pass the Luhn check"),
    ]
    assert lines[:2] == [
        "#1 request.0 AUTH problem: baseamount: Numeric: digits 0-9 only (sent 10.50)",
        "#1 request.0 AUTH problem: pan: must pass the Luhn check (sent 411111######1112)",
    ]
    assert lines[2].endswith("[2 problems]")


def test_strict_answers_an_invalid_request_itself_and_never_forwards_it(run_proxy):
    gateway = RecordingGateway()
    try:
        handle, lines = run_proxy(GatewayUpstream(gateway.base_url), strict=True)
        api = official(handle.base_url)
        request = securetrading.Request()
        request.update(
            {"requesttypedescriptions": ["AUTH"], **card(currencyiso3a="gbp", expirydate="13/2030")}
        )
        response = api.process(request)
        assert gateway.received == []  # the upstream saw nothing
        assert response["requestreference"] == request["requestreference"]
        (record,) = response["responses"]
        assert (record["requesttypedescription"], record["errorcode"], record["errormessage"]) == (
            "ERROR",  # one record for the refused object, as the gateway answers a field error
            "30000",
            "Invalid field",
        )
        assert record["errordata"] == ["currencyiso3a", "expirydate"]
        handle.flush()
        assert handle.exchanges[0].answered_by == PROXY and "[answered by the proxy]" in lines[-1]

        ok(api.process({"requesttypedescriptions": ["AUTH"], **card()}))  # a valid one goes through
        (forwarded,) = gateway.received
        assert forwarded.path == "/json/"
        assert forwarded.headers["authorization"].startswith("Basic ")  # the application's, passed through
        assert httpx.BasicAuth(APP_USER, APP_PASSWORD)._auth_header == forwarded.headers["authorization"]
        assert (
            json.loads(forwarded.body)["request"][0]["pan"] == VISA
        )  # unchanged: it is the gateway's to see
    finally:
        gateway.stop()


def test_the_cassette_replays_the_session_with_the_upstream_stopped(tmp_path, run_proxy):
    upstream = gwkit.sandbox.start(tmp_path / "served.db", clock_start=CLOCK)
    site = upstream.sitereference
    cassette_path = tmp_path / "session.jsonl"
    recording, _ = run_proxy(GatewayUpstream(upstream.base_url), cassette=Cassette(cassette_path))
    session = [
        {"requesttypedescriptions": ["AUTH"], "orderreference": "taped", **card(sitereference=site)},
        {"requesttypedescriptions": ["AUTH"], **card(sitereference=site, pan="4000000000000812")},  # declined
        {
            "requesttypedescriptions": ["TRANSACTIONQUERY"],
            "filter": {"sitereference": [{"value": site}], "orderreference": [{"value": "taped"}]},
        },
    ]
    api = official(recording.base_url, upstream.username, upstream.password)
    first = [api.process(dict(request))["responses"] for request in session]
    recording.stop()
    upstream.stop()  # from here, nothing answers but the cassette

    replaying, _ = run_proxy(CassetteUpstream(cassette_path))
    replayed = [
        official(replaying.base_url, upstream.username, upstream.password).process(dict(r))["responses"]
        for r in session
    ]
    assert replayed == first
    assert [r[0]["errorcode"] for r in replayed] == ["0", "70000", "0"]
    missing = official(replaying.base_url, upstream.username, upstream.password).process(dict(session[0]))
    assert missing["responses"][0]["errorcode"] != "0"  # each recording answers once: no recording left
    assert "CassetteMiss" in replaying.exchanges[-1].exchange.error

    # gwkit.cassette replays the same file: each recorded request answered as recorded.
    transport = Cassette(cassette_path).transport()
    with httpx.Client(transport=transport) as http:
        for recording_line, answer in zip(Cassette(cassette_path), first, strict=True):
            assert http.post("http://gateway/json/", json=recording_line.request).json()["response"] == answer
    assert transport.unplayed == []


def test_a_seeded_fault_is_injected_exactly_as_specified(box, run_proxy):
    delays = Delays()
    latency = {
        "kind": "latency",
        "min_seconds": 1,
        "max_seconds": 4,
        "fraction": 0.5,
        "seed": 20,
        "requesttypes": ["AUTH"],
    }
    handle, lines = run_proxy(SandboxUpstream(box), faults=ProxyFaults([latency]), sleep=delays)
    api = official(handle.base_url)
    answers = []
    for number in range(10):
        answers.append(
            api.process({"requesttypedescriptions": ["AUTH"], **card(orderreference=f"f-{number}")})
        )
        api.process({"requesttypedescriptions": ["ACCOUNTCHECK"], **card()})  # not an AUTH: never faulted

    handle.flush()
    draws = random.Random(20)  # the fault's own random source: a draw per AUTH, then its delay
    expected = [(number, draws.uniform(1, 4)) for number in range(10) if draws.random() < 0.5]
    faulted = [e for e in handle.exchanges if e.fault]
    assert [(int(e.request["request"][0]["orderreference"][2:]), e.fault) for e in faulted] == [
        (number, "latency") for number, _ in expected
    ]
    assert delays.asked == [delay for _, delay in expected]
    assert 0 < len(expected) < 10
    assert all(ok(answer) for answer in answers)  # latency delays the answer, never changes it
    assert all("[fault: latency]" in line for line in lines if "fault" in line)


def test_gateway_error_after_processing_and_a_drop_before_forwarding(box, run_proxy):
    faults = ProxyFaults(
        [
            {"kind": "gateway_error", "code": 60010, "made": True, "requesttypes": ["AUTH"]},
            {"kind": "drop", "process": False, "requesttypes": ["ACCOUNTCHECK"]},
        ]
    )
    handle, _ = run_proxy(SandboxUpstream(box), faults=faults)
    api = official(handle.base_url)
    (record,) = api.process({"requesttypedescriptions": ["AUTH"], **card(orderreference="unknown")})[
        "responses"
    ]
    assert record["errorcode"] == "60010"
    (made,) = _sandbox_query(box, "unknown")  # the upstream processed it: the payment exists
    assert record["transactionreference"] == made["transactionreference"]

    # The official client re-sends after a lost answer: the drop (never forwarded) costs nothing.
    ok(api.process({"requesttypedescriptions": ["ACCOUNTCHECK"], **card(orderreference="dropped")}))
    assert [e.fault for e in handle.exchanges] == ["gateway_error", "drop", None]
    assert (
        handle.exchanges[1].response is None and handle.exchanges[1].exchange.error == "injected fault: drop"
    )
    assert len(_sandbox_query(box, "dropped")) == 1
    assert handle.faults.active() == []  # each fault was for the next one request (count 1)


def test_the_faults_file_takes_the_sandbox_control_json_and_names_what_is_wrong(tmp_path):
    path = tmp_path / "faults.json"
    path.write_text(
        json.dumps({"kind": "http_status", "status": 503, "count": 2, "requesttypes": ["REFUND"]})
    )
    (fault,) = ProxyFaults.from_file(path).active()
    assert (fault["kind"], fault["status"], fault["count"], fault["requesttypes"]) == (
        "http_status",
        503,
        2,
        ["REFUND"],
    )
    path.write_text(json.dumps([{"kind": "latency", "seconds": 1}, {"kind": "http_status", "status": 418}]))
    with pytest.raises(FaultsError, match="fault 2: status must be one of 500, 502, 503, 504"):
        ProxyFaults.from_file(path)
    path.write_text("[{")
    with pytest.raises(FaultsError, match="is not JSON"):
        ProxyFaults.from_file(path)


def test_nothing_holds_a_password_a_full_pan_or_a_security_code(box, run_proxy, tmp_path, caplog):
    caplog.set_level("DEBUG")
    cassette_path = tmp_path / "secrets.jsonl"
    handle, lines = run_proxy(SandboxUpstream(box), cassette=Cassette(cassette_path))
    api = official(handle.base_url)
    ok(api.process({"requesttypedescriptions": ["AUTH"], **card()}))
    api.process({"requesttypedescriptions": ["AUTH"], **card(pan=MASTERCARD, baseamount="x")})  # invalid
    handle.flush()  # journalled and recorded; the journal's WAL file is read with it below

    kept = {
        "journal": b"".join(p.read_bytes() for p in tmp_path.glob("journal.db*")),
        "cassette": cassette_path.read_bytes(),
        "terminal": "\n".join(lines).encode(),
        "log": caplog.text.encode(),
        "exchanges": repr([e.exchange for e in handle.exchanges]).encode(),
    }
    for where, data in kept.items():
        for secret in (APP_PASSWORD, VISA, MASTERCARD, box.default_account.password):
            assert secret.encode() not in data, (where, secret)
    for recording in Cassette(cassette_path):
        assert recording.request["request"][0]["securitycode"] == "[redacted]"
    entries = (
        sqlite3.connect(tmp_path / "journal.db").execute("SELECT request_json FROM exchanges").fetchall()
    )
    assert [json.loads(r[0])["request"][0]["securitycode"] for r in entries] == ["[redacted]", "[redacted]"]


def test_an_https_upstream_is_trusted_through_ca(tmp_path, run_proxy):
    cert, key = self_signed(tmp_path)
    gateway = RecordingGateway(tls=tls_context(cert, key))
    try:
        assert gateway.base_url.startswith("https://")
        trusted, _ = run_proxy(GatewayUpstream(gateway.base_url, ca=cert))
        ok(official(trusted.base_url).process({"requesttypedescriptions": ["AUTH"], **card()}))
        assert len(gateway.received) == 1

        untrusted, _ = run_proxy(GatewayUpstream(gateway.base_url))  # the system's CAs do not know it
        answer = httpx.post(untrusted.base_url + "/json/", json={"request": [{}]})
        assert answer.status_code == 502
        assert "CERTIFICATE_VERIFY_FAILED" in answer.json()["detail"]
        assert len(gateway.received) == 1
    finally:
        gateway.stop()


def test_only_the_json_endpoint_is_proxied_and_bodies_are_bounded(box, run_proxy):
    handle, _ = run_proxy(SandboxUpstream(box))
    elsewhere = httpx.get(handle.base_url + "/js/v3/st.js")
    assert elsewhere.status_code == 404
    assert "forwards the gateway's JSON endpoint only: POST /json/" in elsewhere.json()["detail"]
    assert httpx.get(handle.base_url + "/json/").status_code == 405
    huge = httpx.post(handle.base_url + "/json/", content=b"{" + b" " * 1_100_000 + b"}")
    assert huge.status_code == 413 and "at most 1048576 bytes" in huge.json()["detail"]
    assert handle.exchanges == []


def test_an_unreachable_upstream_is_a_502_naming_it(run_proxy):
    gateway = RecordingGateway()
    gateway.stop()  # its port is closed now
    handle, lines = run_proxy(GatewayUpstream(gateway.base_url))
    answer = httpx.post(handle.base_url + "/json/", json={"request": [{}]})
    assert answer.status_code == 502 and answer.json()["error"] == "upstream failed"
    handle.flush()
    assert "ConnectError" in lines[-1]


def test_the_cli_refuses_a_bad_faults_file_naming_the_rule(tmp_path, capsys):
    from gwkit.cli import main

    faults = tmp_path / "faults.json"
    faults.write_text(json.dumps({"kind": "latency"}))
    assert main(["proxy", "--faults", str(faults), "--upstream", "https://gateway.example"]) == 2
    assert "latency takes either seconds, or min_seconds and max_seconds" in capsys.readouterr().err
    assert main(["proxy", "--upstream", f"cassette:{tmp_path / 'none.jsonl'}"]) == 2
    assert "no cassette at" in capsys.readouterr().err
    assert main(["proxy", "--upstream", "ftp://gateway.example"]) == 2


@pytest.mark.parametrize(
    ("fault", "processed"),
    [
        ({"kind": "http_status", "status": 503}, True),
        ({"kind": "http_status", "status": 502, "process": False}, False),
        ({"kind": "malformed", "body": "garbage"}, True),
        ({"kind": "malformed", "body": "truncated"}, True),
        ({"kind": "drop"}, True),
        ({"kind": "timeout", "process": False}, False),
    ],
)
def test_each_fault_kind_answers_as_specified_and_forwards_only_when_it_says(
    box, run_proxy, fault, processed
):
    handle, _ = run_proxy(SandboxUpstream(box), faults=ProxyFaults([fault]))
    envelope = {
        "alias": APP_USER,
        "version": "1.00",
        "request": [{"requesttypedescriptions": ["AUTH"], **card(orderreference="k")}],
    }
    try:
        answer = httpx.post(
            handle.base_url + "/json/", json=envelope, auth=(APP_USER, APP_PASSWORD), timeout=2
        )
    except (
        httpx.RemoteProtocolError,
        httpx.ReadTimeout,
    ) as exc:  # drop: closed; timeout: the client gives up
        assert fault["kind"] in ("drop", "timeout"), exc
    else:
        assert answer.headers["x-gwkit-fault"] == fault["kind"]
        if fault["kind"] == "http_status":
            assert answer.status_code == fault["status"] and f"{fault['status']} " in answer.text
        elif fault["body"] == "garbage":
            assert answer.status_code == 200 and answer.content.startswith(b"\x00\xff")
        else:
            with pytest.raises(ValueError):
                answer.json()
    handle.flush()
    (exchange,) = handle.exchanges
    assert exchange.fault == fault["kind"]
    assert len(_sandbox_query(box, "k")) == (1 if processed else 0)


BAD_BODIES = [
    b"",
    b"\xff\xfe",
    b"[]",
    b"null",
    b'{"request": "x"}',
    b'{"request": [1]}',
    b'{"request": [{}]}',
    b'{"request": [{"requesttypedescriptions": 5}]}',
    b'{"request": [{"requesttypedescriptions": ["NOPE"]}]}',
    b'{"request": [{"requesttypedescriptions": ["TRANSACTIONUPDATE", "AUTH"]}]}',
    b'{"request": [{"requesttypedescription": "AUTH", "expirymonth": "x"}]}',
    b"[" * 40 + b"]" * 40,
    b'{"request": [{"requesttypedescriptions": ["AUTH"], "baseamount": 1' + b"0" * 200 + b"}]}",
    json.dumps(
        {
            "request": [
                {"requesttypedescriptions": ["AUTH"], **card(currencyiso3a="gbp", pan="4111111111111112")}
            ]
        }
    ).encode(),
    json.dumps(
        {
            "request": [
                {"requesttypedescriptions": ["TRANSACTIONQUERY"], "filter": {"transactionreference": [5]}}
            ]
        }
    ).encode(),
]


def test_strict_answers_exactly_as_the_sandbox_answers_the_same_invalid_request(box, run_proxy):
    forwarding, _ = run_proxy(SandboxUpstream(box))
    strict, _ = run_proxy(SandboxUpstream(box), strict=True)
    for body in BAD_BODIES:
        answers = [
            httpx.post(handle.base_url + "/json/", content=body, headers={"content-type": "application/json"})
            for handle in (forwarding, strict)
        ]
        records = [
            [(r["requesttypedescription"], r["errorcode"], r["errordata"]) for r in a.json()["response"]]
            for a in answers
        ]
        assert records[0] == records[1], body
        assert records[0][0][1] != "0"
    assert all(e.answered_by == PROXY for e in strict.exchanges) and len(strict.exchanges) == len(BAD_BODIES)


def test_a_fault_for_one_site_picks_only_that_sites_requests_and_a_broken_listener_stops_nothing(
    box, run_proxy, caplog
):
    faults = ProxyFaults(
        [{"kind": "gateway_error", "code": 99999, "sitereference": "other_site", "count": 1}]
    )
    handle, _ = run_proxy(SandboxUpstream(box), faults=faults)
    handle.proxy.on_exchange(lambda exchange: 1 / 0)
    api = official(handle.base_url)
    ok(api.process({"requesttypedescriptions": ["AUTH"], **card()}))  # merchant_site_1: not faulted
    (record,) = api.process({"requesttypedescriptions": ["AUTH"], **card(sitereference="other_site")})[
        "responses"
    ]
    assert record["errorcode"] == "99999"
    handle.flush()
    assert [e.fault for e in handle.exchanges] == [None, "gateway_error"]
    assert "exchange #1 could not be recorded: ZeroDivisionError" in caplog.text


def test_concurrent_applications_each_get_their_own_answer_and_every_exchange_is_kept(tmp_path, run_proxy):
    upstream = gwkit.sandbox.start(tmp_path / "served.db", clock_start=CLOCK)
    try:
        handle, _ = run_proxy(GatewayUpstream(upstream.base_url), cassette=Cassette(tmp_path / "many.jsonl"))
        site = upstream.sitereference

        def pay(number: int) -> tuple[str, str]:
            api = official(handle.base_url, upstream.username, upstream.password)
            request = {
                "requesttypedescriptions": ["AUTH"],
                **card(sitereference=site, orderreference=f"c-{number}"),
            }
            return f"c-{number}", ok(api.process(request))["orderreference"]

        with ThreadPoolExecutor(16) as pool:
            answers = list(pool.map(pay, range(48)))
        assert all(sent == answered for sent, answered in answers)  # nobody got another's answer
        handle.flush()
        assert sorted(e.request["request"][0]["orderreference"] for e in handle.exchanges) == sorted(
            order for order, _ in answers
        )
        assert len(Cassette(tmp_path / "many.jsonl")) == 48
    finally:
        upstream.stop()


def test_the_sandbox_upstream_gives_back_each_delayed_requests_place(box):
    """The sandbox's own latency fault, met through the proxy's upstream: each delayed request's place
    in the site's budget (at most 20 at once) comes back when its answer is sent, so the 21st is
    delayed and answered too, never refused 429."""
    upstream = SandboxUpstream(box)
    box.faults.add("latency", seconds=0.001, count=25, requesttypes=["AUTH"])
    auth = {
        "requesttypedescriptions": ["AUTH"],
        "sitereference": upstream.sitereference,
        "accounttypedescription": "ECOM",
        "currencyiso3a": "GBP",
        "baseamount": "100",
        "pan": VISA,
        "expirydate": "12/2030",
    }
    body = json.dumps({"alias": box.default_account.username, "version": "1.00", "request": [auth]}).encode()

    async def send_all() -> list[int]:
        try:
            return [
                (await upstream.send({"content-type": "application/json"}, body)).status for _ in range(25)
            ]
        finally:
            await upstream.aclose()

    assert asyncio.run(send_all()) == [200] * 25
    assert box.latency.delayed == 0
