"""Sandbox-vs-real diff: two cassettes that differ in known ways give exactly those differences."""

from __future__ import annotations

import json

import pytest

import gwkit
from gwkit.cassette import Cassette
from gwkit.report.diff import (
    ERRORCODE,
    MISSING_EXCHANGE,
    MISSING_RECORD,
    ONLY_LEFT,
    ONLY_RIGHT,
    VALUE,
    compare_cassettes,
    compare_targets,
)
from gwkit.sandbox import Sandbox, SandboxTransport

USER, PASSWORD, SITE = "gwkit_sandbox", "gwkit-sandbox-password", "test_gwkit12345"
CARD = {
    "accounttypedescription": "ECOM",
    "currencyiso3a": "GBP",
    "pan": "4111111111111111",
    "expirydate": "12/2030",
    "securitycode": "123",
}


def client(sandbox: Sandbox, **kwargs) -> gwkit.Client:
    return gwkit.Client(
        "http://sandbox.test",
        USER,
        PASSWORD,
        sitereference=SITE,
        transport=SandboxTransport(sandbox),
        **kwargs,
    )


def record_run(path, db) -> Cassette:
    sandbox = Sandbox(db)
    cassette = Cassette(path)
    with client(sandbox, on_exchange=cassette.recorder()) as gw:
        paid = gw.auth(baseamount=1050, orderreference="d-1", **CARD)
        gw.auth(baseamount=70000, orderreference="d-2", **CARD)
        gw.transaction_query(transactionreference=paid.record["transactionreference"])
    sandbox.close()
    return cassette


def edit(cassette: Cassette, path, change) -> Cassette:
    lines = [json.loads(line) for line in cassette.path.read_text().splitlines()]
    change(lines)
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    return Cassette(path)


def test_two_runs_of_the_same_requests_agree_references_and_timestamps_aside(tmp_path):
    one = record_run(tmp_path / "one.jsonl", tmp_path / "one.db")
    two = record_run(tmp_path / "two.jsonl", tmp_path / "two.db")  # other references, other secrand
    diff = compare_cassettes(one, two)
    assert not diff and diff.exchanges == 3
    assert "the answers agree" in diff.report()


def test_known_differences_are_listed_exactly(tmp_path):
    sandbox_run = record_run(tmp_path / "sandbox.jsonl", tmp_path / "sandbox.db")

    def real_site(lines):
        first = lines[0]["response"]["response"][0]
        del first["issuer"]  # a field only the sandbox sends
        first["acquirerresponsecode"] = "01"  # a different value
        first["transactionreference"] = "99-9-99999"  # always differs: normalised away
        first["realonly"] = "x"  # a field only the real site sends
        second = lines[1]["response"]["response"][0]
        second["errorcode"] = "60010"  # a different error code
        lines[2]["response"]["response"].append({"errorcode": "0"})  # an extra record
        lines.append(dict(lines[0]))  # an extra exchange

    real = edit(sandbox_run, tmp_path / "real.jsonl", real_site)
    diff = compare_cassettes(sandbox_run, real)
    found = {(d.exchange, d.record, d.field, d.kind, d.left, d.right) for d in diff.differences}
    issuer = json.loads(sandbox_run.path.read_text().splitlines()[0])["response"]["response"][0]["issuer"]
    assert found == {
        (0, 0, "issuer", ONLY_LEFT, issuer, None),
        (0, 0, "acquirerresponsecode", VALUE, "00", "01"),
        (0, 0, "realonly", ONLY_RIGHT, None, "x"),
        (1, 0, "errorcode", ERRORCODE, "70000", "60010"),
        (2, 1, None, MISSING_RECORD, None, "present"),
        (3, None, None, MISSING_EXCHANGE, None, "present"),
    }
    frame = diff.frame
    assert list(frame.columns) == ["exchange", "request_types", "record", "field", "kind", "sandbox", "real"]
    assert len(frame) == 6 and frame["record"].isna().sum() == 1  # only the missing exchange has no record
    text = diff.report()
    assert text.startswith("sandbox vs real: 4 exchange(s), 6 difference(s)")
    assert "- #1 AUTH record 0: errorcode: different errorcode (sandbox '70000', real '60010')" in text


def test_compare_targets_sends_the_same_requests_to_both(tmp_path):
    left, right = Sandbox(tmp_path / "l.db"), Sandbox(tmp_path / "r.db")
    request = {
        "requesttypedescriptions": ["AUTH"],
        "sitereference": SITE,
        "baseamount": "1050",
        "orderreference": "t-1",
        **CARD,
    }
    with client(left) as a, client(right) as b:
        diff = compare_targets([request, {**request, "baseamount": "70000"}], a, b)
        assert not diff and diff.exchanges == 2
        for gw in (a, b):
            assert len(gw.transaction_query(orderreference="t-1").record.query_records) == 2
    left.close()
    right.close()


@pytest.mark.parametrize("side", ["left", "right"])
def test_an_empty_side_lists_every_exchange(tmp_path, side):
    run = record_run(tmp_path / "run.jsonl", tmp_path / "run.db")
    empty = Cassette(tmp_path / "empty.jsonl")
    pair = (run, empty) if side == "left" else (empty, run)
    diff = compare_cassettes(*pair)
    assert [d.kind for d in diff.differences] == [MISSING_EXCHANGE] * 3


def test_query_records_are_compared_one_by_one(tmp_path):
    run = record_run(tmp_path / "run.jsonl", tmp_path / "run.db")

    def other(lines):
        inner = lines[2]["response"]["response"][0]["records"][0]
        inner["settlestatus"] = "100"
        inner["transactionreference"] = "1-1-1"  # normalised

    diff = compare_cassettes(run, edit(run, tmp_path / "other.jsonl", other))
    assert [(d.field, d.kind, d.left, d.right) for d in diff.differences] == [
        ("records[0].settlestatus", VALUE, "0", "100")
    ]
