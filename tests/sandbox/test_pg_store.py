"""The PostgreSQL store: its versioned schema and its migrations, writers taking turns, and two sandboxes
(as two workers would) sharing one database: references, clocks, cachetokens, 3-D Secure sessions
and the control API alike from either."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import threading

import httpx
import pytest

import gwkit
import gwkit.sandbox
from gwkit.sandbox.gateway.accounts import DEFAULT_PASSWORD, DEFAULT_USERNAME
from gwkit.sandbox.gateway.moves import Move
from gwkit.sandbox.gateway.store import SchemaTooNew
from gwkit.sandbox.gateway.store.postgres import SCHEMA_VERSION, StoredMoves
from gwkit.sandbox.gateway.store.postgres import PostgresStore as PgStore
from gwkit.sandbox.web.faults import FaultBook
from gwkit.threeds import TermUrlReceiver, ThreeDSecureFlow
from support.databases import JSON_SET_FUNCTIONS, Database
from support.sandbox import CLOCK, SITE, Gateway, card_auth

VISA = "4111111111111111"

# -- on a server -------------------------------------------------------------------------------


@pytest.fixture
def pg_url(db_path):
    return db_path


@pytest.fixture
def store_kind() -> str:
    return "postgresql"


def test_the_schema_version_is_recorded_once_and_a_newer_one_is_refused(pg_url):
    PgStore(pg_url).close()
    PgStore(pg_url).close()  # started again: nothing applied twice
    database = Database(pg_url)
    assert database.rows("SELECT version FROM gwkit_schema_version ORDER BY version") == [
        (version,) for version in range(1, SCHEMA_VERSION + 1)
    ]
    database.rows(
        "INSERT INTO gwkit_schema_version (version, description, applied) "
        "VALUES (?, 'from a later gwkit', '2031-01-01') RETURNING version",
        (SCHEMA_VERSION + 1,),
    )
    with pytest.raises(SchemaTooNew, match=f"schema version {SCHEMA_VERSION + 1}, newer than this gwkit's"):
        PgStore(pg_url)


def test_a_postgresql_store_has_the_indexes_of_a_sqlite_one(pg_url):
    gwkit.sandbox.Sandbox(pg_url).close()
    names = {
        r[0]
        for r in Database(pg_url).rows("SELECT indexname FROM pg_indexes WHERE schemaname = current_schema()")
    }
    assert {
        "transactions_site_started",
        "transactions_of_parent",
        "transactions_order",
        "transactions_settle",
        "cards_index",
        "subscriptions_due",
        "cachetokens_unpurged",
    } <= names


def test_a_database_of_the_previous_schema_is_migrated_at_start(pg_url):
    """Version 1 (before snapshots, faults and clock moves lived in the database) gets their tables, once each."""
    PgStore(pg_url).close()
    database = Database(pg_url)
    database.execute("DROP TABLE gwkit_snapshot_rows, gwkit_snapshots, gwkit_faults, gwkit_clock_moves")
    database.execute("DELETE FROM gwkit_schema_version WHERE version > 1")
    PgStore(pg_url).close()
    assert database.rows("SELECT version FROM gwkit_schema_version ORDER BY version") == [
        (version,) for version in range(1, SCHEMA_VERSION + 1)
    ]
    assert {"gwkit_snapshots", "gwkit_snapshot_rows", "gwkit_faults", "gwkit_clock_moves"} <= set(
        database.tables()
    )


def test_a_record_is_updated_in_place_keeping_the_order_of_its_fields(pg_url):
    """No function of the database's own edits the JSON (a gwkit before issue 31 made a PL/pgSQL
    json_set: test_earlier_stores.py migrates one); the record's keys keep their order, a new one last."""
    store = PgStore(pg_url)
    database = Database(pg_url)
    try:
        with store.write() as conn:
            store.add_transaction(conn, {**_record("1-9-1"), "z": "1"})
        assert database.value(JSON_SET_FUNCTIONS) == 0
        assert database.value("SELECT max(version) FROM gwkit_schema_version") == SCHEMA_VERSION
        with store.write() as conn:
            store.update_transaction(conn, "1-9-1", {"settlestatus": "100", "new": "last"})
            row = store.transaction(conn, "1-9-1")
    finally:
        store.close()
    record = json.loads(row["record"])
    assert row["settlestatus"] == "100"
    assert list(record)[-3:] == ["settlestatus", "z", "new"] and record["settlestatus"] == "100"


def _record(reference: str) -> dict[str, str]:
    return {
        "transactionreference": reference,
        "sitereference": SITE,
        "requesttypedescription": "AUTH",
        "errorcode": "0",
        "transactionstartedtimestamp": "2026-01-15 10:00:00",
        "settlestatus": "0",
    }


@pytest.fixture
def two_workers(pg_url):
    """Two sandboxes serving one database, as two worker processes do."""
    handles = [gwkit.sandbox.start(pg_url, clock_start=CLOCK) for _ in range(2)]
    clients = [Gateway(handle.base_url) for handle in handles]
    yield clients
    for client, handle in zip(clients, handles, strict=True):
        client.close()
        handle.stop()


def test_references_stay_unique_across_workers_writing_at_once(two_workers):
    references: list[str] = []
    start = threading.Barrier(len(two_workers) * 2)

    def pay(client: Gateway) -> None:
        with httpx.Client(base_url=str(client.http.base_url), auth=client.http.auth, timeout=60) as http:
            start.wait()
            for _ in range(15):
                answer = http.post("/json/", json={"request": [card_auth()]}).json()
                references.append(answer["response"][0]["transactionreference"])

    threads = [threading.Thread(target=pay, args=(client,)) for client in two_workers for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(references) == 60 == len(set(references))
    assert (
        len(two_workers[0].query(sitereference=SITE)) == 60 == len(two_workers[1].query(sitereference=SITE))
    )


def test_clocks_cachetokens_and_the_control_api_are_shared(two_workers):
    first, second = two_workers
    assert first.http.post("/_sandbox/clock/advance", json={"by": "P3D"}).status_code == 200
    assert second.http.get("/_sandbox/clock").json()["now"] == "2026-01-18T10:00:00"
    tokenise = {
        "requesttypedescriptions": ["CACHETOKENISE"],
        "sitereference": SITE,
        "pan": VISA,
        "expirymonth": "11",
        "expiryyear": "2031",
        "securitycode": "123",
    }
    token = first.one(tokenise)["cachetoken"]
    paid = second.one(
        {
            "requesttypedescriptions": ["AUTH"],
            "sitereference": SITE,
            "cachetoken": token,
            "accounttypedescription": "ECOM",
            "currencyiso3a": "GBP",
            "baseamount": "100",
        }
    )
    assert paid["errorcode"] == "0" and paid["maskedpan"] == "411111######1111"
    assert paid["transactionstartedtimestamp"] == "2026-01-18 10:00:00"
    again = first.one(
        {
            "requesttypedescriptions": ["AUTH"],
            "sitereference": SITE,
            "cachetoken": token,
            "accounttypedescription": "ECOM",
            "currencyiso3a": "GBP",
            "baseamount": "100",
        }
    )
    assert again["errorcode"] != "0"  # used once, on the other worker
    assert second.http.post("/_sandbox/reset", json={}).status_code == 200
    assert first.query(sitereference=SITE) == []


def test_a_snapshot_saved_on_one_worker_is_listed_and_restored_on_the_other(two_workers):
    first, second = two_workers
    kept = first.one(
        {
            "requesttypedescriptions": ["AUTH"],
            "sitereference": SITE,
            "accounttypedescription": "ECOM",
            "currencyiso3a": "GBP",
            "baseamount": "1050",
            "pan": "4111111111111111",
            "expirydate": "12/2030",
            "securitycode": "123",
            "orderreference": "kept",
        }
    )
    saved = first.http.post("/_sandbox/snapshots", json={"name": "before"})
    assert saved.status_code == 200 and saved.json()["transactions"] == 1
    assert [s["name"] for s in second.http.get("/_sandbox/snapshots").json()["snapshots"]] == ["before"]
    assert second.http.post("/_sandbox/reset", json={}).status_code == 200  # a reset keeps the snapshots
    assert first.query(sitereference=SITE) == []
    restored = second.http.post("/_sandbox/snapshots/restore", json={"name": "before"})
    assert restored.status_code == 200
    (back,) = first.query(sitereference=SITE)
    assert (
        back["transactionreference"] == kept["transactionreference"]
        and back["maskedpan"] == "411111######1111"
    )
    again = second.one(
        {
            "requesttypedescriptions": ["AUTH"],
            "sitereference": SITE,
            "accounttypedescription": "ECOM",
            "currencyiso3a": "GBP",
            "baseamount": "1050",
            "pan": "4111111111111111",
            "expirydate": "12/2030",
            "securitycode": "123",
        }
    )
    assert again["errorcode"] == "0"  # ids after a restore are past the restored ones (the identity moved)
    assert second.http.post("/_sandbox/snapshots/delete", json={"name": "before"}).status_code == 200
    assert first.http.post("/_sandbox/snapshots/restore", json={"name": "before"}).status_code == 404


def test_a_fault_armed_on_one_worker_is_injected_by_either_exactly_as_often_as_asked(two_workers):
    first, second = two_workers
    armed = first.http.post("/_sandbox/faults", json={"kind": "gateway_error", "code": 60010, "count": 2})
    assert armed.status_code == 200
    assert [f["kind"] for f in second.http.get("/_sandbox/faults").json()["faults"]] == ["gateway_error"]
    codes = [
        worker.one(card_auth(orderreference=f"fault-{i}"))["errorcode"]
        for i, worker in enumerate([second, first, second, first])
    ]
    assert codes == [
        "60010",
        "60010",
        "0",
        "0",
    ]  # the count is shared: used up after two, wherever they landed
    assert second.http.get("/_sandbox/faults").json()["faults"] == []
    logged = first.http.get("/_sandbox/faults/log").json()["log"]
    assert [entry["orderreference"] for entry in logged] == ["fault-0", "fault-1"]


def test_a_seeded_fraction_draws_one_sequence_across_workers(two_workers):
    """The same seed picks the same requests as a one-process sandbox does, whichever worker each reaches."""
    first, second = two_workers
    first.http.post(
        "/_sandbox/faults", json={"kind": "gateway_error", "code": 99999, "fraction": 0.5, "seed": 42}
    )
    codes = [worker.one(card_auth())["errorcode"] for worker in [first, second] * 6]
    in_memory = FaultBook()
    in_memory.add({"kind": "gateway_error", "code": 99999, "fraction": 0.5, "seed": 42}, SITE)
    expected = ["99999" if in_memory.pick(SITE, ["AUTH"], [1050]) else "0" for _ in range(12)]
    assert codes == expected and "0" in codes and "99999" in codes
    assert second.http.post("/_sandbox/faults/clear", json={}).json() == {"cleared": 1}
    assert first.http.get("/_sandbox/faults").json()["faults"] == []


def test_a_clock_move_under_way_is_shown_by_every_worker_and_gone_when_it_ends(pg_url):
    first, second = (gwkit.sandbox.start(pg_url, clock_start=CLOCK) for _ in range(2))
    try:
        move = Move(
            first.sandbox.gateway.moves,
            {
                "sites": [SITE],
                "from": "2026-01-15T10:00:00",
                "to": "2027-01-15T10:00:00",
                "day": 0,
                "days": 365,
                "step": None,
                "done": 0,
                "total": 0,
            },
        )
        with httpx.Client(base_url=second.base_url, auth=(DEFAULT_USERNAME, DEFAULT_PASSWORD)) as http:
            assert http.get("/_sandbox/clock/progress").json()["advances"][0]["days"] == 365
            move.update(day=40, step="subscriptions 2026-02-24", done=500, total=2000)
            (shown,) = http.get("/_sandbox/clock/progress").json()["advances"]
            assert (shown["day"], shown["step"], shown["done"]) == (40, "subscriptions 2026-02-24", 500)
            move.finish()
            assert http.get("/_sandbox/clock/progress").json()["advances"] == []
    finally:
        first.stop()
        second.stop()


def test_the_move_of_a_worker_that_died_is_not_shown(pg_url):
    store = PgStore(pg_url)
    try:
        gone = _a_finished_pid()
        store.autocommit().execute(
            "INSERT INTO gwkit_clock_moves (key, worker, sites, state, changed) VALUES (?, ?, ?::jsonb, ?::jsonb, ?)",
            (
                "dead:1",
                f"{socket.gethostname()}:{gone}",
                json.dumps([SITE]),
                json.dumps({"sites": [SITE]}),
                0.0,
            ),
        )
        assert StoredMoves(store).of([SITE]) == []
        # Its row waits for a host to take the move over (test_multi_host.py).
        assert Database(pg_url).value("SELECT count(*) FROM gwkit_clock_moves") == 1
    finally:
        store.close()


def _a_finished_pid() -> int:
    process = subprocess.Popen(["true"])
    process.wait()
    return process.pid


def test_writes_of_two_workers_take_turns_and_reads_go_on_beside_them(pg_url):
    import psycopg  # there is a server, so there is its driver

    name = f"gwkit-turns-{os.getpid()}"  # this test's sessions: other tests' may wait at the same time
    named = f"{pg_url}&application_name={name}"
    first, second = PgStore(named), PgStore(named)
    order: list[str] = []
    try:
        with first.write() as conn:
            conn.execute("INSERT INTO meta (key, value) VALUES ('turns', 'first')")
            waiting = threading.Thread(target=lambda: _write_after(second, order))
            waiting.start()
            with psycopg.connect(
                pg_url, autocommit=True
            ) as watcher:  # until the second writer waits for the lock
                for _ in range(100_000):
                    (waiters,) = watcher.execute(
                        "SELECT COUNT(*) FROM pg_locks JOIN pg_stat_activity USING (pid) "
                        "WHERE locktype = 'advisory' AND NOT granted AND application_name = %s",
                        (name,),
                    ).fetchone()
                    if waiters:
                        break
            assert waiters == 1 and order == []
            with second.read() as reading:  # a read does not wait
                assert reading.execute("SELECT value FROM meta WHERE key = 'turns'").fetchone() is None
            order.append("first committed")
        waiting.join()
    finally:
        first.close()
        second.close()
    assert order == ["first committed", "second wrote after: first"]


def _write_after(store: PgStore, order: list[str]) -> None:
    with store.write() as conn:
        (value,) = conn.execute("SELECT value FROM meta WHERE key = 'turns'").fetchone()
        order.append(f"second wrote after: {value}")


def test_a_3d_secure_session_begun_on_one_worker_is_completed_on_the_other(two_workers):
    clients = [
        gwkit.Client(
            str(w.http.base_url), DEFAULT_USERNAME, DEFAULT_PASSWORD, sitereference=SITE, currencyiso3a="GBP"
        )
        for w in two_workers
    ]
    with TermUrlReceiver() as receiver:
        flow = ThreeDSecureFlow(clients[0], receiver=receiver)
        try:
            flow.query(pan="4111110000000211", expirydate="12/2030", securitycode="123", baseamount="1050")
            flow.complete_acs("Y")  # the ACS of the first worker signs the PaRes with the shared key
            flow.client = clients[1]
            record = flow.auth()
        finally:
            flow.close()
            for client in clients:
                client.close()
    assert (record["errorcode"], record["status"], record["eci"]) == ("0", "Y", "05")
    assert record["parenttransactionreference"] == flow.query_record["transactionreference"]
