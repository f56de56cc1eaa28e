"""Stores made by the gwkit before issue 31 (SQL translated for PostgreSQL, a PL/pgSQL json_set) open
with this one and carry on: their records answer queries, their subscriptions go on paying, their
snapshots restore. The stores were made by that gwkit: data/make_earlier_stores.py says how."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

import gwkit.sandbox
from support.databases import JSON_SET_FUNCTIONS, Database, drop_schema, new_schema
from support.sandbox import SITE, Gateway

pytestmark = pytest.mark.both_stores

DATA = Path(__file__).resolve().parent / "data"


@pytest.fixture
def earlier_store(store_kind, tmp_path, request, monkeypatch):
    """A copy of the earlier gwkit's store of `store_kind`, for this test alone."""
    if store_kind == "sqlite":
        db = tmp_path / "earlier.db"
        shutil.copy(DATA / "earlier.db", db)
        shutil.copy(DATA / "earlier.db.key", tmp_path / "earlier.db.key")
        yield db
        return
    server = request.getfixturevalue("postgres_url")
    key = tmp_path / "earlier-postgresql.key"
    shutil.copy(DATA / "earlier-postgresql.key", key)
    monkeypatch.setenv("GWKIT_SANDBOX_KEY_FILE", str(key))
    name, url = new_schema(server)
    dump = (DATA / "earlier-postgresql.sql").read_text().replace("{schema}", name)
    subprocess.run(
        ["psql", server, "-q", "-v", "ON_ERROR_STOP=1"],
        input=dump,
        text=True,
        check=True,
        capture_output=True,
    )
    yield url
    drop_schema(server, name)


def _place_earlier_snapshot(sandbox: gwkit.sandbox.Sandbox, store_kind: str) -> None:
    """The SQLite snapshot the earlier gwkit saved, where this sandbox keeps its snapshots (PostgreSQL's
    came with the dump)."""
    if store_kind == "sqlite":
        directory = sandbox.snapshots.directory
        directory.mkdir(parents=True, exist_ok=True)
        shutil.copy(DATA / "earlier-snapshot-before.db", directory / "before.db")


def test_an_earlier_store_answers_pays_and_restores_as_before(earlier_store, store_kind):
    handle = gwkit.sandbox.start(earlier_store)
    gateway = Gateway(handle.base_url)
    try:
        _place_earlier_snapshot(handle.sandbox, store_kind)
        records = gateway.query(sitereference=SITE)
        kept = next(r for r in records if r.get("orderreference") == "kept")
        assert (kept["errorcode"], kept["settlestatus"], kept["maskedpan"]) == (
            "0",
            "100",
            "411111######1111",
        )
        subscription = next(r for r in records if r["requesttypedescription"] == "SUBSCRIPTION")
        made = gateway.query(parenttransactionreference=subscription["transactionreference"])
        assert [(r["subscriptionnumber"], r["errorcode"]) for r in made] == [("2", "0")]

        handle.advance(to="2026-03-02T10:00:00")  # the earlier store's subscription goes on: payment 3
        made = gateway.query(parenttransactionreference=subscription["transactionreference"])
        assert sorted(r["subscriptionnumber"] for r in made) == ["2", "3"]
        assert gateway.one({**_refund(kept)})["errorcode"] == "0"  # a record of the earlier store refunds

        assert [s["name"] for s in handle.sandbox.snapshots.list()] == ["before"]
        handle.sandbox.snapshots.restore("before")
        made = gateway.query(parenttransactionreference=subscription["transactionreference"])
        assert [r["subscriptionnumber"] for r in made] == ["2"]  # as saved, before payment 3
        fresh = gateway.one(
            {
                "requesttypedescriptions": ["AUTH"],
                "sitereference": SITE,
                "accounttypedescription": "ECOM",
                "currencyiso3a": "GBP",
                "baseamount": "100",
                "pan": "4111111111111111",
                "expirydate": "12/2030",
                "securitycode": "123",
            }
        )
        assert fresh["errorcode"] == "0"
        assert fresh["transactionreference"] not in {r["transactionreference"] for r in records}
    finally:
        gateway.close()
        handle.stop()
    if store_kind == "postgresql":
        database = Database(earlier_store)
        assert database.value(JSON_SET_FUNCTIONS) == 0


def _refund(record: dict) -> dict:
    return {
        "requesttypedescriptions": ["REFUND"],
        "sitereference": SITE,
        "parenttransactionreference": record["transactionreference"],
        "baseamount": "50",
    }


def test_an_earlier_store_gets_the_emv_3ds_sessions_table_and_runs_v2(earlier_store):
    """Issue 41: v2 sessions are kept on both stores; a store made before them gets their table when
    it opens (no migration: the table is new), and the flow runs on it: a look-up, then its
    cachetoken's THREEDQUERY and the frictionless AUTH in the same answer (V3 card.py, 4900490000000006)."""
    handle = gwkit.sandbox.start(earlier_store)
    gateway = Gateway(handle.base_url)
    try:
        found = gateway.one(
            {
                "requesttypedescriptions": ["THREEDLOOKUP"],
                "sitereference": SITE,
                "pan": "4900490000000006",
                "expirydate": "12/2030",
            }
        )
        assert (found["errorcode"], found["threedversion"]) == ("0", "2.1.0")
        query, auth = gateway.records(
            {
                "requesttypedescriptions": ["THREEDQUERY", "AUTH"],
                "sitereference": SITE,
                "accounttypedescription": "ECOM",
                "currencyiso3a": "GBP",
                "baseamount": "1050",
                "cachetoken": found["cachetoken"],
                "termurl": "https://merchant.example/term",
            }
        )
        assert (query["enrolled"], auth["errorcode"], auth["status"], auth["eci"]) == ("Y", "0", "Y", "05")
    finally:
        gateway.close()
        handle.stop()
