"""Record and replay: a cassette recorded against the sandbox answers a replayed run byte-for-byte."""

from __future__ import annotations

import asyncio
import json

import httpx
import pytest

import gwkit
from gwkit.cassette import Cassette, CassetteMiss, CassetteTransport, Recording
from gwkit.journal import Journal
from gwkit.sandbox import Sandbox, SandboxTransport

USER, PASSWORD, SITE = "gwkit_sandbox", "gwkit-sandbox-password", "test_gwkit12345"
PAN, CVV = "4111111111111111", "123"
CARD = {
    "accounttypedescription": "ECOM",
    "currencyiso3a": "GBP",
    "pan": PAN,
    "expirydate": "12/2030",
    "securitycode": CVV,
}


class Capturing(httpx.BaseTransport):
    """Keeps the raw bytes of every answer that passes through."""

    def __init__(self, inner: httpx.BaseTransport):
        self.inner, self.bodies = inner, []

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        response = self.inner.handle_request(request)
        body = response.read()
        self.bodies.append(body)
        return httpx.Response(response.status_code, headers=response.headers, content=body, request=request)


def client(transport, **kwargs) -> gwkit.Client:
    return gwkit.Client(
        "http://sandbox.test", USER, PASSWORD, sitereference=SITE, transport=transport, **kwargs
    )


def story(gw: gwkit.Client) -> list[gwkit.Response]:
    """A short session as a notebook runs it: pay, decline, query, store, pay with the stored card, update."""
    paid = gw.auth(baseamount=1050, orderreference="story-1", **CARD)
    declined = gw.auth(baseamount=70000, orderreference="story-2", **CARD)
    queried = gw.transaction_query(transactionreference=paid.record["transactionreference"])
    stored = gw.store(
        accounttypedescription="CARDSTORE",
        pan="5100000000000008",
        expirydate="12/2030",
        orderreference="story-3",
    )
    child = gw.auth(
        accounttypedescription="ECOM",
        currencyiso3a="GBP",
        baseamount=2000,
        orderreference="story-4",
        parenttransactionreference=stored.record["transactionreference"],
    )
    updated = gw.transaction_update(
        filter={"transactionreference": [{"value": paid.record["transactionreference"]}]},
        updates={"settlestatus": "2"},
    )
    return [paid, declined, queried, stored, child, updated]


@pytest.fixture
def recorded(tmp_path):
    sandbox = Sandbox(tmp_path / "sandbox.db")
    capturing = Capturing(SandboxTransport(sandbox))
    cassette = Cassette(tmp_path / "story.jsonl")
    with client(capturing, on_exchange=cassette.recorder()) as gw:
        responses = story(gw)
    sandbox.close()
    return cassette, capturing.bodies, responses


def test_replay_answers_byte_for_byte_as_recorded(recorded):
    cassette, recorded_bodies, recorded_responses = recorded
    replay = Capturing(cassette.transport())
    with client(replay) as gw:
        replayed = story(gw)
    assert len(replay.bodies) == len(recorded_bodies) == 6
    for before, after, old, new in zip(
        recorded_bodies, replay.bodies, recorded_responses, replayed, strict=True
    ):
        # the one difference: the gateway echoes each run's own request reference
        assert after.replace(new.requestreference.encode(), old.requestreference.encode()) == before
        assert [dict(r) for r in new] == [dict(r) for r in old]
    assert replayed[1].record.errorcode == 70000 and replayed[4].record["maskedpan"] == "510000######0008"


def test_the_cassette_is_json_lines_with_no_card_data(recorded):
    cassette, _, _ = recorded
    text = cassette.path.read_text(encoding="utf-8")
    lines = text.splitlines()
    assert len(lines) == 6 and all(json.loads(line)["request_types"] for line in lines)
    assert PAN not in text and "5100000000000008" not in text and f'"{CVV}"' not in text
    assert "411111######1111" in text and "[redacted]" in text


def test_a_request_with_no_recording_is_a_clear_error(recorded):
    cassette, _, _ = recorded
    with client(cassette.transport()) as gw:
        with pytest.raises(CassetteMiss, match="no recording left for AUTH orderreference='never-recorded'"):
            gw.auth(baseamount=1050, orderreference="never-recorded", **CARD)


def test_each_recording_answers_once_in_order(tmp_path):
    sandbox = Sandbox(tmp_path / "sandbox.db")
    cassette = Cassette(tmp_path / "twice.jsonl")
    with client(SandboxTransport(sandbox), on_exchange=cassette.recorder()) as gw:
        first = gw.auth(baseamount=1050, orderreference="same", **CARD).record["transactionreference"]
        second = gw.auth(baseamount=1050, orderreference="same", **CARD).record["transactionreference"]
    sandbox.close()
    transport = cassette.transport()
    with client(transport) as gw:
        again = [
            gw.auth(baseamount=1050, orderreference="same", **CARD).record["transactionreference"]
            for _ in range(2)
        ]
        assert again == [first, second] and transport.unplayed == []
        with pytest.raises(CassetteMiss):
            gw.auth(baseamount=1050, orderreference="same", **CARD)


def test_async_client_replays(recorded):
    cassette, _, recorded_responses = recorded

    async def pay() -> gwkit.Response:
        async with gwkit.AsyncClient(
            "http://sandbox.test", USER, PASSWORD, sitereference=SITE, transport=cassette.transport()
        ) as gw:
            return await gw.auth(baseamount=1050, orderreference="story-1", **CARD)

    assert (
        asyncio.run(pay()).record["transactionreference"]
        == recorded_responses[0].record["transactionreference"]
    )


def test_a_journal_becomes_a_cassette(tmp_path):
    sandbox = Sandbox(tmp_path / "sandbox.db")
    with Journal(tmp_path / "journal.db") as journal:
        with client(SandboxTransport(sandbox), on_exchange=journal.hook()) as gw:
            story(gw)
        cassette = Cassette.from_exchanges(
            tmp_path / "from-journal.jsonl", journal.entries(oldest_first=True)
        )
    sandbox.close()
    assert len(cassette) == 6
    with client(cassette.transport()) as gw:
        assert [r.record.errorcode for r in story(gw)] == [0, 70000, 0, 0, 0, 0]


def test_a_recorded_lost_answer_replays_as_a_lost_connection(tmp_path):
    cassette = Cassette(tmp_path / "lost.jsonl")
    envelope = {
        "alias": USER,
        "version": "1.00",
        "request": [{"requesttypedescriptions": ["AUTH"], "orderreference": "lost"}],
    }
    cassette.append(Recording(envelope, None, None, ("AUTH",), "RemoteProtocolError: Server disconnected"))
    transport = CassetteTransport(cassette.recordings())
    with httpx.Client(transport=transport) as http:
        with pytest.raises(httpx.RemoteProtocolError, match="Server disconnected"):
            http.post("http://sandbox.test/json/", json=envelope)
