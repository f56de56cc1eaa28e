"""Scenario snapshots: round trip, atomic restores, other users' sites untouched, the subscription
engine after a restore, one transaction per restore, bad names and missing snapshots."""

from __future__ import annotations

from datetime import datetime
from typing import Any

import httpx
import pytest

from gwkit.sandbox import DEFAULT_ACCOUNT, Sandbox, SandboxTransport, load_accounts, start
from gwkit.sandbox.gateway.sitedata import SiteTables
from gwkit.sandbox.gateway.store import postgres_snapshots, snapshots
from support.databases import Database

pytestmark = pytest.mark.both_stores  # each test on SQLite and on PostgreSQL

SITE = DEFAULT_ACCOUNT.sitereferences[0]


def auth(order: str, site: str = SITE, amount: str = "1050") -> dict[str, Any]:
    return {
        "requesttypedescriptions": ["AUTH"],
        "sitereference": site,
        "accounttypedescription": "ECOM",
        "currencyiso3a": "GBP",
        "baseamount": amount,
        "pan": "4111111111111111",
        "expirydate": "12/2099",
        "securitycode": "123",
        "orderreference": order,
    }


def subscription(order: str, amount: str) -> dict[str, Any]:
    return {
        **auth(order, amount=amount),
        "requesttypedescriptions": ["AUTH", "SUBSCRIPTION"],
        "subscriptiontype": "RECURRING",
        "subscriptionunit": "MONTH",
        "subscriptionfrequency": "1",
        "subscriptionnumber": "1",
        "subscriptionfinalnumber": "0",
        "subscriptionbegindate": "2026-02-15",
        "credentialsonfile": "1",
    }


def client(sandbox: Sandbox, account=DEFAULT_ACCOUNT) -> httpx.Client:
    return httpx.Client(
        transport=SandboxTransport(sandbox),
        base_url="http://sandbox.test",
        auth=(account.username, account.password),
    )


def pay(http: httpx.Client, *objects: dict[str, Any]) -> list[dict[str, Any]]:
    records = http.post("/json/", json={"request": list(objects)}).json()["response"]
    assert all(r["errorcode"] == "0" for r in records), records
    return records


def site_rows(sandbox: Sandbox, site: str) -> dict[str, list[tuple]]:
    """What a site holds, without the ids a restore moves."""
    conn = sandbox.store.connection()
    return {
        "transactions": conn.execute(
            "SELECT transactionreference, record, c.maskedpan FROM transactions t "
            "JOIN cards c ON c.id = t.card_id WHERE sitereference = ? "
            "ORDER BY t.id",
            (site,),
        ).fetchall(),
        "subscriptions": conn.execute(
            "SELECT transactionreference, nextnumber, next_due_date, parent "
            "FROM subscriptions WHERE sitereference = ? ORDER BY id",
            (site,),
        ).fetchall(),
        "payments": conn.execute(
            "SELECT p.number, p.duedate, p.baseamount, p.transactionreference "
            "FROM subscription_payments p JOIN subscriptions s ON s.id = p.subscription_id "
            "WHERE s.sitereference = ? ORDER BY 2, 1",
            (site,),
        ).fetchall(),
        "fault_log": conn.execute(
            "SELECT kind, orderreference FROM fault_log WHERE sitereference = ? ORDER BY id", (site,)
        ).fetchall(),
    }


def every_row(db) -> dict[str, list[tuple]]:
    database = Database(db)
    return {t: sorted(map(tuple, database.rows(f'SELECT * FROM "{t}"')), key=repr) for t in database.tables()}


@pytest.fixture
def db(db_path):
    return db_path


@pytest.fixture
def sandbox(db):
    sandbox = Sandbox(db, clock_start=datetime(2026, 1, 10, 9, 0))
    yield sandbox
    sandbox.close()


def test_round_trip_over_the_control_api(sandbox):
    with client(sandbox) as http:
        pay(http, auth("kept-1"), subscription("kept-sub", "500"))
        saved = http.post("/_sandbox/snapshots", json={"name": "before_refund-1"}).json()
        assert saved["name"] == "before_refund-1" and saved["sites"] == [SITE] and saved["transactions"] == 3
        before = site_rows(sandbox, SITE)
        sandbox.faults.add("gateway_error", code=60010, made=True)
        http.post("/json/", json={"request": [auth("later")]})
        pay(http, auth("later-2"))
        assert site_rows(sandbox, SITE) != before
        restored = http.post("/_sandbox/snapshots/restore", json={"name": "before_refund-1"}).json()
        assert restored["restored"] == "before_refund-1" and restored["clock_restored"] is True
        assert site_rows(sandbox, SITE) == before  # transactions, cards, subscriptions, the fault log
        (fresh,) = pay(http, auth("after"))
        references = [r[0] for r in site_rows(sandbox, SITE)["transactions"]]
        assert len(set(references)) == len(references) and fresh["transactionreference"] in references
        assert http.get("/_sandbox/snapshots").json()["snapshots"] == [saved]
        assert http.post("/_sandbox/snapshots/delete", json={"name": "before_refund-1"}).json() == {
            "deleted": "before_refund-1"
        }
        assert http.get("/_sandbox/snapshots").json()["snapshots"] == []


def test_tokens_and_cards_come_back_and_work(sandbox):
    with client(sandbox) as http:
        tokenise = {
            "requesttypedescriptions": ["CACHETOKENISE"],
            "sitereference": SITE,
            "pan": "4111111111111111",
            "expirymonth": "11",
            "expiryyear": "2031",
            "securitycode": "123",
        }
        kept = http.post("/json/", json={"request": [tokenise]}).json()["response"][0]["cachetoken"]
        sandbox.snapshots.save("token")
        with_token = {
            k: v for k, v in auth("with-token").items() if k not in ("pan", "expirydate", "securitycode")
        }
        (first,) = pay(http, {**with_token, "cachetoken": kept})
        assert (
            http.post("/json/", json={"request": [{**with_token, "cachetoken": kept}]}).json()["response"][0][
                "errorcode"
            ]
            != "0"
        )  # a token is used once
        sandbox.snapshots.restore("token")  # the token is unused again, its card back
        (again,) = pay(http, {**with_token, "cachetoken": kept})
        assert again["maskedpan"] == first["maskedpan"] == "411111######1111"
        assert again["transactionreference"] != first["transactionreference"]


def test_round_trip_over_a_loopback_server_through_the_handle(db):
    with start(db) as handle:
        with httpx.Client(base_url=handle.base_url, auth=(handle.username, handle.password)) as http:
            pay(http, auth("one"))
            handle.snapshots.save("one")
            pay(http, auth("two"))
            assert [s["name"] for s in handle.snapshots.list()] == ["one"]
            handle.snapshots.restore("one")
            found = http.post(
                "/json/",
                json={
                    "request": [
                        {
                            "requesttypedescriptions": ["TRANSACTIONQUERY"],
                            "filter": {"sitereference": [{"value": SITE}]},
                        }
                    ]
                },
            )
            assert [r["orderreference"] for r in found.json()["response"][0]["records"]] == ["one"]
            assert handle.snapshots.delete("one") == {"deleted": "one"}


def test_a_failed_restore_leaves_everything_as_it_was(sandbox, db, store_kind, monkeypatch):
    """PostgreSQL restores in one transaction: a failure in it leaves everything as it was. SQLite
    restores in steps (test_restore_steps.py): there a failed restore is done again at once, or at the
    next start, never left half done."""
    with client(sandbox) as http:
        pay(http, auth("a"), subscription("s", "700"))
        sandbox.snapshots.save("base")
        saved = orders_of(db)
        pay(http, auth("b"), subscription("t", "800"))
    sandbox.advance(by="P2M")
    before = every_row(db)
    copied = []
    module, copier = (
        (postgres_snapshots, "_copy_back") if store_kind == "postgresql" else (snapshots, "copy_rows")
    )
    real_copy = getattr(module, copier)

    def failing_copy(*args, **kwargs):
        copied.append(args)
        if len(copied) == 2:
            raise RuntimeError("disk gone midway")
        real_copy(*args, **kwargs)

    monkeypatch.setattr(module, copier, failing_copy)
    if store_kind == "sqlite":  # a step fails, then the restore at once (copy_rows) too

        def failing_step():
            raise RuntimeError("disk gone at a step")

        monkeypatch.setattr(snapshots, "_after_step", failing_step)
    with pytest.raises(RuntimeError, match="disk gone midway"):
        sandbox.snapshots.restore("base")
    assert len(copied) == 2
    if store_kind == "postgresql":
        assert every_row(db) == before
        return
    monkeypatch.undo()
    assert Database(db).value("SELECT count(*) FROM meta WHERE key LIKE 'restore under way: %'") == 1
    sandbox.close()
    Sandbox(db).close()  # the next start does it again
    assert orders_of(db) == saved  # as saved: neither what came after nor half of it
    assert Database(db).value("SELECT count(*) FROM meta WHERE key LIKE 'restore under way: %'") == 0


def orders_of(db) -> list[tuple]:
    return Database(db).rows(
        "SELECT orderreference, requesttypedescription FROM transactions ORDER BY orderreference, requesttypedescription"
    )


ACCOUNTS = """
[[account]]
username = "alice"
password = "alice-password"
sitereferences = ["test_alice12345"]

[[account]]
username = "bob"
password = "bob-password"
sitereferences = ["test_bob12345"]
"""


def test_a_restore_leaves_other_users_sites_untouched(tmp_path, db):
    (tmp_path / "accounts.toml").write_text(ACCOUNTS)
    sandbox = Sandbox(db, accounts=load_accounts(tmp_path / "accounts.toml"))
    alice, bob = sandbox.accounts["alice"], sandbox.accounts["bob"]
    with client(sandbox, alice) as as_alice, client(sandbox, bob) as as_bob:
        pay(as_alice, auth("alice-1", "test_alice12345"))
        pay(as_bob, auth("bob-1", "test_bob12345"))
        saved = as_alice.post("/_sandbox/snapshots", json={"name": "mine"}).json()
        assert saved["sites"] == ["test_alice12345"] and saved["transactions"] == 1  # bob's rows not saved
        saved_clock = sandbox.clock.now("test_alice12345")
        pay(as_bob, auth("bob-2", "test_bob12345"))
        pay(as_alice, auth("alice-2", "test_alice12345"))
        assert as_alice.post("/_sandbox/clock/advance", json={"by": "P2D"}).status_code == 200
        assert as_bob.post("/_sandbox/clock/advance", json={"by": "P5D"}).status_code == 200
        bobs = site_rows(sandbox, "test_bob12345")
        bobs_clock = sandbox.clock.now("test_bob12345")
        assert as_bob.get("/_sandbox/snapshots").json()["snapshots"] == []  # a snapshot belongs to its saver
        assert as_bob.post("/_sandbox/snapshots/restore", json={"name": "mine"}).status_code == 404
        restored = as_alice.post("/_sandbox/snapshots/restore", json={"name": "mine"}).json()
        assert (
            restored["clock_restored"] is True
        )  # each site has its own clock: the snapshot's sites' come back
        assert sandbox.clock.now("test_alice12345") == saved_clock
        assert sandbox.clock.now("test_bob12345") == bobs_clock  # bob's clock and rows are untouched
        assert site_rows(sandbox, "test_bob12345") == bobs
        orders = [
            r[1]
            for r in sandbox.store.connection().execute(
                "SELECT sitereference, orderreference FROM transactions ORDER BY id"
            )
        ]
        assert sorted(orders) == ["alice-1", "bob-1", "bob-2"]
    sandbox.close()


def payments(sandbox: Sandbox) -> list[tuple[str, int, str, str]]:
    return [
        tuple(r)
        for r in sandbox.store.connection().execute(
            "SELECT s.orderreference, p.number, p.baseamount, p.duedate FROM subscription_payments p "
            "JOIN subscriptions s ON s.id = p.subscription_id ORDER BY p.duedate, s.orderreference, p.number"
        )
    ]


def test_subscriptions_in_flight_pay_the_same_after_a_restore(sandbox):
    with client(sandbox) as http:
        pay(http, subscription("monthly-a", "1200"), subscription("monthly-b", "3400"))
    sandbox.advance(by="P1D")  # the first payments settle: the subscriptions start
    sandbox.snapshots.save("in-flight")
    first = sandbox.advance(by="P3M")
    first_payments = payments(sandbox)
    assert first["subscriptions"]["made"] == len(first_payments) == 4  # 15 Feb and 15 Mar, each
    sandbox.snapshots.restore("in-flight")
    assert payments(sandbox) == [] and sandbox.clock.now() == datetime(2026, 1, 11, 9, 0)
    second = sandbox.advance(by="P3M")
    assert payments(sandbox) == first_payments  # numbers, amounts, due dates
    assert second["subscriptions"]["made"] == 4
    assert not set(first["subscriptions"]["payments"]) & set(second["subscriptions"]["payments"])
    assert sandbox.advance(by="P1D").get("subscriptions", {}).get("made", 0) == 0  # nothing paid twice


def test_a_restore_of_many_rows_is_one_transaction_on_postgresql_and_short_ones_on_sqlite(
    sandbox, store_kind, monkeypatch
):
    """PostgreSQL holds only the restoring tenant's sites, so a restore is one transaction; SQLite has
    one writer, so it is cut into steps of `RESTORE_STEP_ROWS` rows, another tenant's payment waiting
    for one at most (test_restore_steps.py)."""
    with client(sandbox) as http:
        for batch in range(3):  # an envelope holds at most 100 request objects
            pay(
                http,
                *[auth(f"bulk-{n}", amount=str(1000 + n)) for n in range(batch * 100, batch * 100 + 100)],
            )
    sandbox.snapshots.save("bulk")
    sandbox.reset()
    if store_kind == "postgresql":  # no statement trace there: the write transactions opened are counted
        opened: list[int] = []
        real_write = sandbox.store.write
        monkeypatch.setattr(sandbox.store, "write", lambda sites=None: opened.append(1) or real_write(sites))
        sandbox.snapshots.restore("bulk")
        assert opened == [1]
    else:
        monkeypatch.setattr(snapshots, "RESTORE_STEP_ROWS", 100)
        statements: list[str] = []
        conn = sandbox.store.connection()
        conn.set_trace_callback(statements.append)
        try:
            sandbox.snapshots.restore("bulk")
        finally:
            conn.set_trace_callback(None)
        transaction_control = [
            s.split()[0].upper()
            for s in statements
            if s.split()[0].upper() in ("BEGIN", "COMMIT", "ROLLBACK", "END")
        ]
        # the mark and the deletion, the card, the 300 payments in 3 steps, the mark removed
        assert transaction_control == ["BEGIN", "COMMIT"] * 6
    (count,) = sandbox.store.connection().execute("SELECT COUNT(*) FROM transactions").fetchone()
    assert count == 300


def test_snapshots_cover_every_per_site_table_of_the_store(db_path):  # a reset's tables, on either store
    sandbox = Sandbox(db_path)
    try:
        tables = SiteTables.of(
            sandbox.store.catalog(sandbox.store.connection()),
            site_expressions=sandbox.snapshots.site_expressions,
        )
        assert set(tables.roots) == {
            "transactions",
            "subscriptions",
            "threeds_sessions",
            "threeds_v2_sessions",
            "cachetokens",
            "demo_merchant_receipts",
            "fault_log",
            "site_clocks",
            "site_jobs",
            "notification_rules",
            "notification_deliveries",
            "notification_attempts",
        }
        assert tables.children == {"subscription_payments": ("subscription_id", "subscriptions", "id")}
        assert {table for table, _ in tables.card_columns} == {
            "transactions",
            "subscriptions",
            "threeds_sessions",
            "threeds_v2_sessions",
            "cachetokens",
        }
    finally:
        sandbox.close()


@pytest.mark.parametrize(
    "payload",
    [
        {"name": ""},
        {"name": "x" * 65},
        {"name": "a/b"},
        {"name": "../up"},
        {"name": "with space"},
        {"name": 5},
        {},
        {"name": "ok", "more": 1},
    ],
)
@pytest.mark.parametrize(
    "path", ["/_sandbox/snapshots", "/_sandbox/snapshots/restore", "/_sandbox/snapshots/delete"]
)
def test_bad_names_are_400(sandbox, path, payload):
    with client(sandbox) as http:
        response = http.post(path, json=payload)
    assert response.status_code == 400 and response.json()["error"] == "bad request"
    assert "name" in response.json()["detail"]


def test_a_name_of_64_characters_is_fine(sandbox):
    name = "A-z_9" * 12 + "abcd"
    assert sandbox.snapshots.save(name)["name"] == name


@pytest.mark.parametrize("path", ["/_sandbox/snapshots/restore", "/_sandbox/snapshots/delete"])
def test_a_missing_snapshot_is_a_404(sandbox, path):
    with client(sandbox) as http:
        response = http.post(path, json={"name": "never-saved"})
    assert response.status_code == 404
    assert response.json() == {
        "error": "not found",
        "detail": "no snapshot named 'never-saved': see GET /_sandbox/snapshots",
    }
    with pytest.raises(LookupError):
        sandbox.snapshots.restore("never-saved")
