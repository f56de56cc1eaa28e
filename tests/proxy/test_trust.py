"""The proxy an application can trust: one reading of each body (bounded, duplicate keys refused,
forwarded as validated), card data masked in every spelling, --strict answering per object as the
sandbox does, the problems in a header, faults replayed from cassettes, drift kept, the shadow's
files removed, and the sandbox's control API through the proxy."""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path

import httpx
import pytest

import gwkit.sandbox
from gwkit.cassette import Cassette
from gwkit.journal import Journal
from gwkit.proxy import (
    CassetteUpstream,
    GatewayUpstream,
    SandboxOverHttp,
    SandboxUpstream,
    Shadow,
    is_sandbox,
)
from gwkit.proxy.answers import PROBLEMS_HEADER, PROBLEMS_HEADER_BYTES
from support.sandbox import CLOCK, card_auth, monthly_subscription
from support.upstream import RecordingGateway

APP = ("shop@merchant.example", "pw-trust-Zq8x")
APP_SITE = "merchant_site_1"
DUPLICATE = "the key is named more than once in its object"


def auth(**fields) -> dict:
    return card_auth(sitereference=APP_SITE, **fields)


def envelope(*objects: dict) -> dict:
    return {"alias": APP[0], "version": "1.00", "request": list(objects)}


def post(handle, body: bytes | dict, **options) -> httpx.Response:
    content = body if isinstance(body, bytes) else json.dumps(body).encode()
    return httpx.post(
        handle.base_url + "/json/",
        content=content,
        headers={"content-type": "application/json"},
        auth=APP,
        timeout=30,
        **options,
    )


def records(response: httpx.Response) -> list[tuple]:
    return [
        (r["requesttypedescription"], r["errorcode"], r.get("errordata")) for r in response.json()["response"]
    ]


@pytest.fixture
def gateway():
    stand_in = RecordingGateway()
    yield stand_in
    stand_in.stop()


def with_duplicate_amount(first: str, last: str) -> bytes:
    text = json.dumps(envelope(auth(baseamount="@")))
    return text.replace('"baseamount": "@"', f'"baseamount": "{first}", "baseamount": "{last}"').encode()


# -- one reading ----------------------------------------------------------------------------------


def test_strict_refuses_a_duplicate_key_naming_its_path_and_forwards_nothing(gateway, run_proxy):
    handle, _ = run_proxy(GatewayUpstream(gateway.base_url), strict=True)
    # An upstream keeping the first copy would read "x"; the validation would have seen the last.
    answer = post(handle, with_duplicate_amount("x", "1050"))
    assert records(answer) == [("ERROR", "30000", ["request.0.baseamount", DUPLICATE])]
    assert gateway.received == []
    assert json.loads(answer.headers[PROBLEMS_HEADER])[0]["field"] == "request.0.baseamount"


def test_without_strict_a_body_that_cannot_be_read_is_forwarded_as_it_came_and_flagged(
    gateway, run_proxy, tmp_path
):
    handle, _ = run_proxy(GatewayUpstream(gateway.base_url))
    body = with_duplicate_amount("x", "1050")
    assert post(handle, body).status_code == 200
    assert [r.body for r in gateway.received] == [body]
    handle.flush()
    (entry,) = Journal(tmp_path / "journal.db").entries()
    assert entry.request == {"body": f"not read (request.0.baseamount: {DUPLICATE}): forwarded as it came"}


def test_what_was_validated_is_what_is_forwarded_re_encoded(gateway, run_proxy):
    handle, _ = run_proxy(GatewayUpstream(gateway.base_url))
    sent = b'{"alias":"shop","version":"1.00","request":[{"requesttypedescriptions":["AUTH"],' + (
        b'"orderreference":"caf\\u00e9",\n  "baseamount":"1050"}]}'
    )
    post(handle, sent)
    (received,) = gateway.received
    assert received.body == json.dumps(json.loads(sent)).encode()


@pytest.mark.parametrize("strict", [False, True])
def test_a_body_nested_100000_deep_is_answered_30000_naming_the_limit_not_a_500(box, run_proxy, strict):
    handle, _ = run_proxy(SandboxUpstream(box), strict=strict)
    for body in (b"[" * 100_000, b'{"request": [' + b'{"a": ' * 100_000):
        answer = post(handle, body)
        assert answer.status_code == 200
        ((kind, code, data),) = records(answer)
        assert (kind, code) == ("ERROR", "30000")
        assert data[1] == "arrays and objects nested deeper than 32"


def test_a_body_nested_100000_deep_replayed_from_a_cassette_is_a_502_naming_it(run_proxy, tmp_path):
    (tmp_path / "empty.jsonl").write_text("")
    handle, _ = run_proxy(CassetteUpstream(tmp_path / "empty.jsonl"))
    answer = post(handle, b"[" * 100_000)
    assert answer.status_code == 502
    assert "nested deeper than 32" in answer.json()["detail"]


def test_a_duplicate_key_through_the_sandbox_upstream_is_the_sandboxs_30000(box, run_proxy):
    handle, _ = run_proxy(SandboxUpstream(box))
    assert records(post(handle, with_duplicate_amount("1050", "1050"))) == [
        ("ERROR", "30000", ["request.0.baseamount", DUPLICATE])
    ]


# -- card data ------------------------------------------------------------------------------------

SPACED, DASHED = "5100 0000 0000 0008", "4000-0000-0000-0812"
CODE = "9173"


def test_card_numbers_in_every_spelling_and_security_codes_under_any_name_are_never_kept(
    box, run_proxy, tmp_path
):
    cassette = Cassette(tmp_path / "session.jsonl")
    handle, lines = run_proxy(SandboxUpstream(box), cassette=cassette)
    sent = auth(pan=SPACED, orderreference=DASHED, securitycode=None)
    sent.update({"SecurityCode": CODE, "cvv2": CODE, "security_code": CODE, "CVV-2": CODE})
    answer = post(handle, envelope(sent))
    handle.flush()
    written = "\n".join(lines) + answer.headers.get(PROBLEMS_HEADER, "")
    written += (tmp_path / "session.jsonl").read_text()
    for name in ("journal.db", "journal.db-wal"):
        written += (tmp_path / name).read_bytes().decode("latin-1")
    for clear in (SPACED, DASHED, SPACED.replace(" ", ""), DASHED.replace("-", ""), f'"{CODE}"'):
        assert clear not in written
    assert "510000######0008" in written and "400000######0812" in written  # masked, not dropped


def test_the_files_the_proxy_writes_are_its_owners_only(box, run_proxy, tmp_path):
    handle, _ = run_proxy(SandboxUpstream(box), cassette=Cassette(tmp_path / "session.jsonl"))
    post(handle, envelope(auth()))
    handle.flush()
    for name in ("journal.db", "journal.db-wal", "journal.db-shm", "session.jsonl"):
        assert stat.S_IMODE(os.stat(tmp_path / name).st_mode) == 0o600, name


# -- --strict per object ----------------------------------------------------------------------------


def subscription_chained() -> dict:
    """A SUBSCRIPTION object that takes the AUTH before it as its parent (no card, no parent named)."""
    sub = {
        k: v
        for k, v in monthly_subscription("2026-02-15").items()
        if k not in ("pan", "expirydate", "securitycode")
    }
    return {**sub, "requesttypedescriptions": ["SUBSCRIPTION"], "sitereference": APP_SITE}


@pytest.mark.parametrize(
    "objects",
    [
        [auth(), auth(baseamount="10.50")],
        [auth(baseamount="10.50"), auth()],
        [auth(credentialsonfile="1"), subscription_chained(), auth(baseamount="10.50"), auth()],
        [auth(baseamount="10.50"), subscription_chained(), auth()],
    ],
    ids=["valid-invalid", "invalid-valid", "chained-then-invalid", "invalid-then-chained"],
)
def test_strict_answers_a_mixed_envelope_per_object_as_the_sandbox_does(box, run_proxy, tmp_path, objects):
    handle, _ = run_proxy(SandboxUpstream(box), strict=True)
    through_proxy = records(post(handle, envelope(*objects)))

    itself = gwkit.sandbox.Sandbox(tmp_path / "itself.db", clock_start=CLOCK)
    account = itself.default_account
    mapped = [{**o, "sitereference": account.sitereferences[0]} for o in objects]
    with httpx.Client(
        transport=gwkit.sandbox.SandboxTransport(itself), auth=(account.username, account.password)
    ) as http:
        answered = http.post("http://sandbox/json/", json={**envelope(*mapped), "alias": account.username})
    itself.close()
    assert through_proxy == records(answered)
    assert ("ERROR", "30000", ["baseamount"]) in through_proxy
    assert any(code == "0" for _, code, _ in through_proxy)  # the valid ones made, none dropped


# -- problems -------------------------------------------------------------------------------------


@pytest.mark.parametrize("strict", [False, True])
def test_problems_are_in_a_header_naming_the_object_field_and_rule_never_a_value(box, run_proxy, strict):
    handle, lines = run_proxy(SandboxUpstream(box), strict=strict)
    answer = post(handle, envelope(auth(), auth(pan="4111111111111112")))
    header = answer.headers[PROBLEMS_HEADER]
    assert header.isascii()
    assert json.loads(header) == [{"object": 1, "field": "pan", "rule": "must pass the Luhn check"}]
    assert "411111" not in header
    handle.flush()
    assert lines[0].startswith("#1 request.1 AUTH problem: pan: must pass the Luhn check")


def test_the_problems_header_is_capped_and_counts_what_it_leaves_out(box, run_proxy):
    handle, _ = run_proxy(SandboxUpstream(box), strict=True)
    many = [auth(baseamount="1.5", currencyiso3a="pounds", expirydate="13/99") for _ in range(100)]
    answer = post(handle, envelope(*many))
    header = answer.headers[PROBLEMS_HEADER]
    assert len(header) <= PROBLEMS_HEADER_BYTES
    shown = json.loads(header)
    (exchange,) = handle.exchanges
    assert shown[-1]["more"] + len(shown) - 1 == len(exchange.problems) > len(shown)


# -- cassettes replay faults -------------------------------------------------------------------------


def test_a_cassette_replays_each_fault_as_the_application_saw_it(box, run_proxy, tmp_path):
    recording, _ = run_proxy(SandboxUpstream(box), cassette=Cassette(tmp_path / "faults.jsonl"))
    seen = []
    for number, (kind, params) in enumerate(
        [
            ("http_status", {"status": 503}),
            ("malformed", {"body": "garbage"}),
            ("gateway_error", {"code": 60010}),
            ("drop", {"process": False}),
        ]
    ):
        recording.faults.add(kind, **params)
        seen.append(_answer(recording, envelope(auth(orderreference=f"fault-{number}"))))
    recording.flush()
    assert seen[0][0] == 503 and seen[3] == "dropped"

    replaying, _ = run_proxy(CassetteUpstream(tmp_path / "faults.jsonl"))
    replayed = [_answer(replaying, envelope(auth(orderreference=f"fault-{n}"))) for n in range(4)]
    assert replayed[:2] == seen[:2]  # the page and the garbage, byte for byte, with the fault header
    (status, headers, body), (was_status, was_headers, was_body) = replayed[2], seen[2]
    assert (status, headers, json.loads(body)["response"]) == (
        was_status,
        was_headers,
        json.loads(was_body)["response"],
    )
    assert replayed[3] == "dropped"


def _answer(handle, body: dict):
    try:
        answer = post(handle, body)
    except httpx.RemoteProtocolError:
        return "dropped"
    kept = {k: v for k, v in answer.headers.items() if k in ("content-type", "x-gwkit-fault")}
    return answer.status_code, kept, answer.content


# -- the sandbox's control API through the proxy ---------------------------------------------------------


def test_the_sandboxs_control_api_is_reachable_with_the_applications_credentials_and_site(box, run_proxy):
    handle, _ = run_proxy(SandboxUpstream(box))
    with httpx.Client(base_url=handle.base_url, auth=APP, timeout=30) as http:
        clock = http.get("/_sandbox/clock", params={"sitereference": APP_SITE})
        assert clock.status_code == 200 and clock.json()["sites"][APP_SITE] == "2026-01-15T10:00:00"
        moved = http.post("/_sandbox/clock/advance", json={"by": "P1D", "sitereference": APP_SITE})
        assert moved.status_code == 200, moved.text
        assert box.gateway.clock.now(box.default_account.sitereferences[0]).day == 16
        assert http.post("/_sandbox/settle", json={"sitereference": APP_SITE}).status_code == 200
        added = http.post(
            "/_sandbox/faults",
            json={
                "kind": "gateway_error",
                "code": 60010,
                "requesttypes": ["AUTH"],
                "sitereference": APP_SITE,
            },
        )
        assert added.status_code == 200, added.text
        faulted = post(handle, envelope(auth()))
        assert faulted.headers["x-gwkit-fault"] == "gateway_error"
        assert records(faulted)[0][1] == "60010"
        http.post("/_sandbox/faults", json={"kind": "drop", "sitereference": APP_SITE})
        with pytest.raises(httpx.RemoteProtocolError):
            post(handle, envelope(auth()))


def test_a_sandbox_served_over_http_has_its_control_api_reachable_with_its_own_credentials(
    tmp_path, run_proxy, gateway
):
    served = gwkit.sandbox.start(tmp_path / "served.db", clock_start=CLOCK)
    try:
        assert is_sandbox(served.base_url) and not is_sandbox(gateway.base_url)
        handle, _ = run_proxy(SandboxOverHttp(served.base_url))
        with httpx.Client(base_url=handle.base_url, auth=(served.username, served.password)) as http:
            moved = http.post("/_sandbox/clock/advance", json={"by": "P2D"})
            assert moved.status_code == 200, moved.text
            clock = http.get("/_sandbox/clock", params={"sitereference": served.sitereference})
            assert clock.json()["sites"][served.sitereference] == "2026-01-17T10:00:00"
            assert http.get("/_sandbox/clock", auth=APP).status_code == 401  # its credentials, not any
    finally:
        served.stop()


def test_with_a_real_upstream_the_control_api_is_404(gateway, run_proxy):
    handle, _ = run_proxy(GatewayUpstream(gateway.base_url))
    answer = httpx.post(handle.base_url + "/_sandbox/clock/advance", json={"by": "P1D"}, auth=APP)
    assert answer.status_code == 404 and "not proxied" in answer.json()["error"]
    assert gateway.received == []


# -- the shadow ---------------------------------------------------------------------------------------


def test_the_temporary_shadow_keeps_no_key_on_disk_and_leaves_nothing_behind(tmp_path, monkeypatch):
    monkeypatch.setenv("TMPDIR", str(tmp_path))
    import tempfile

    monkeypatch.setattr(tempfile, "tempdir", None)  # TMPDIR read again
    shadow = Shadow.temporary(clock_start=CLOCK)
    try:
        assert shadow.folder is not None and (shadow.folder / "shadow.db").exists()
        on_disk = [p.name for p in Path(tmp_path).rglob("*")]
        assert not [name for name in on_disk if name.endswith(".key") or "key" in name], on_disk
        account = shadow.sandbox.account
        with httpx.Client(
            transport=gwkit.sandbox.SandboxTransport(shadow.sandbox.sandbox),
            auth=(account.username, account.password),
        ) as http:
            made = http.post(
                "http://sandbox/json/", json={"request": [card_auth(sitereference=account.sitereferences[0])]}
            )
        assert made.json()["response"][0]["errorcode"] == "0"  # its vault works from memory
    finally:
        shadow.close()
    assert list(Path(tmp_path).iterdir()) == []
