"""Persistence across restarts, card data at rest, and logs free of card data."""

from __future__ import annotations

import logging
import sqlite3
import stat
from datetime import datetime, timedelta

import httpx
import pytest

import gwkit.sandbox
from support.databases import Database
from support.sandbox import CLOCK, Gateway, card_auth, monthly_subscription, parent_auth, store_request

pytestmark = pytest.mark.both_stores  # each test on SQLite and on PostgreSQL

AMEX, AMEX_CODE = "340000000000017", "8642"  # a code that appears nowhere else in the data
CARDS = ("4111111111111111", "5100000000000008", AMEX)


def files_beside(db_path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in db_path.parent.iterdir() if p.is_file()}


def stored(db_path) -> dict[str, bytes]:
    """Everything the store keeps, by name: the SQLite files beside the database (its WAL too), or
    every row of every PostgreSQL table (bytea as its bytes, other values as text)."""
    database = Database(db_path)
    if not database.postgres:
        return files_beside(db_path)
    return {
        table: b"\n".join(
            value if isinstance(value, bytes) else str(value).encode()
            for row in database.rows(f'SELECT * FROM "{table}"')
            for value in row
        )
        for table in database.tables()
    }


def key_file(db_path, tmp_path):
    """The card key: beside a SQLite file; for PostgreSQL the file GWKIT_SANDBOX_KEY_FILE names (conftest)."""
    return (
        db_path.with_name(db_path.name + ".key")
        if not Database(db_path).postgres
        else tmp_path / "sandbox.key"
    )


def make_payments(gateway) -> dict[str, str]:
    refs = {
        "auth": gateway.one(card_auth(orderreference="before-restart"))["transactionreference"],
        "amex": gateway.one(card_auth(pan=AMEX, securitycode=AMEX_CODE, billingfirstname="Zed"))[
            "transactionreference"
        ],
        "stored": gateway.one(store_request(billingfirstname="Ada"))["transactionreference"],
    }
    refs["child"] = gateway.one(parent_auth(refs["stored"], securitycode="123"))["transactionreference"]
    return refs


def test_restart_keeps_transactions_stored_cards_and_the_clock(db_path):
    first = gwkit.sandbox.start(db_path, clock_start=CLOCK)
    gateway = Gateway(first.base_url)
    refs = make_payments(gateway)
    first.advance(by="P3D")
    gateway.close()
    first.stop()

    second = gwkit.sandbox.start(db_path, clock_start=datetime(2030, 1, 1))  # an existing clock wins
    gateway = Gateway(second.base_url)
    try:
        assert second.now() == CLOCK + timedelta(days=3)
        assert gateway.http.get("/_sandbox/clock").json()["now"] == "2026-01-18T10:00:00"
        (auth,) = gateway.query(orderreference="before-restart")
        assert (auth["transactionreference"], auth["settlestatus"]) == (refs["auth"], "100")
        again = gateway.one(parent_auth(refs["stored"]))  # the PAN is decrypted with the same key
        assert again["errorcode"] == "0" and again["maskedpan"] == "510000######0008"
        assert again["transactionstartedtimestamp"] == "2026-01-18 10:00:00"
        assert again["transactionreference"] not in refs.values()
        assert again["transactionreference"].split("-")[0] == refs["auth"].split("-")[0]
        (child,) = gateway.query(transactionreference=refs["child"])
        assert child["billingfirstname"] == "Ada"
    finally:
        gateway.close()
        second.stop()


def test_pan_encrypted_at_rest_and_security_code_never_stored(db_path, tmp_path):
    key_path = key_file(db_path, tmp_path)
    assert not key_path.exists()
    handle = gwkit.sandbox.start(db_path, clock_start=CLOCK)
    gateway = Gateway(handle.base_url)
    try:
        assert stat.S_IMODE(key_path.stat().st_mode) == 0o600  # created on first start, owner only
        key = key_path.read_bytes()
        make_payments(gateway)
        while_running = stored(db_path)
        if not Database(db_path).postgres:
            assert any(name.endswith("-wal") and data for name, data in while_running.items())
    finally:
        gateway.close()
        handle.stop()
    for snapshot in (while_running, stored(db_path)):
        everything = b"".join(data for name, data in snapshot.items() if not name.endswith(".key"))
        for pan in CARDS:
            assert pan.encode() not in everything
        assert b"411111######1111" in everything and b"340000######0017" in everything
        # quoted, as a stored value would be: the bare digits can turn up by chance in ciphertext or hex
        assert f'"{AMEX_CODE}"'.encode() not in everything and f"'{AMEX_CODE}'".encode() not in everything
        assert b'"securitycode"' not in everything
    gwkit.sandbox.start(db_path).stop()
    assert key_path.read_bytes() == key  # kept, not replaced, on restart


@pytest.fixture
def captured_logs():
    """Every record of the sandbox's, uvicorn's and httpx's loggers, at the most verbose level."""
    records: list[str] = []

    class Capture(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            records.append(self.format(record))

    handler = Capture(level=1)
    handler.setFormatter(logging.Formatter("%(name)s %(levelname)s %(message)s"))
    names = ["", "uvicorn", "uvicorn.error", "uvicorn.access", "gwkit", "gwkit.sandbox", "httpx", "httpcore"]
    loggers = [logging.getLogger(n) for n in names]
    levels = [logger.level for logger in loggers]

    def attach() -> None:  # after uvicorn configured its loggers
        for logger in loggers:
            logger.addHandler(handler)
            logger.setLevel(1)

    yield records, attach
    for logger, level in zip(loggers, levels, strict=True):
        logger.removeHandler(handler)
        logger.setLevel(level)


def test_no_card_data_in_any_log(db_path, captured_logs):
    records, attach = captured_logs
    handle = gwkit.sandbox.start(db_path, clock_start=CLOCK, log_level="trace")
    attach()
    gateway = Gateway(handle.base_url)
    try:
        make_payments(gateway)
        gateway.one(card_auth(pan=AMEX, securitycode=AMEX_CODE, expirydate="01/2020"))  # refused: expired
        gateway.one(card_auth(pan="4111111111111112", securitycode=AMEX_CODE))  # refused: Luhn
        gateway.http.post(
            "/json/",
            content=b'{"request": [{"pan": "4111111111111111", "securitycode": "8642"',
            headers={"content-type": "application/json"},
        )
        gateway.http.post("/json/", json={"request": [{"requesttypedescriptions": ["BAD"], "pan": AMEX}]})
        handle.faults.add("drop", count=1)
        with pytest.raises(httpx.RemoteProtocolError):
            gateway.one(card_auth(pan=AMEX, securitycode=AMEX_CODE))
    finally:
        gateway.close()
        handle.stop()
    text = "\n".join(records)
    assert any(r.startswith("uvicorn") for r in records) and any(r.startswith("httpx") for r in records)
    for secret in (*CARDS, "4111111111111112", AMEX_CODE):
        assert secret not in text


def test_a_card_paid_again_is_found_again_not_stored_twice(db_path):
    handle = gwkit.sandbox.start(db_path, clock_start=CLOCK)
    gateway = Gateway(handle.base_url)
    try:
        first = gateway.one(card_auth(orderreference="again"))
        second = gateway.one(card_auth(orderreference="again", securitycode="321"))
        other_expiry = gateway.one(card_auth(orderreference="again", expirydate="11/2031"))
        gateway.one(store_request(pan="4111111111111111"))  # a stored card is a row of its own
        assert len({first["transactionreference"], second["transactionreference"]}) == 2
    finally:
        gateway.close()
        handle.stop()
    database = Database(db_path)
    card_ids = [r[0] for r in database.rows("SELECT card_id FROM transactions ORDER BY id")]
    cards = database.count("cards")
    assert card_ids[0] == card_ids[1] != card_ids[2] and cards == 3
    assert other_expiry["errorcode"] == "0"


def test_a_database_of_an_earlier_schema_is_upgraded(db_path, store_kind):
    if store_kind == "postgresql":
        pytest.skip("SQLite's upgrade in place; PostgreSQL's versioned migrations: test_pg_store.py")
    with sqlite3.connect(db_path) as conn:  # the cards table before card_index existed
        conn.execute(
            "CREATE TABLE cards (id INTEGER PRIMARY KEY, pan_encrypted BLOB NOT NULL, "
            "maskedpan TEXT NOT NULL, expirydate TEXT NOT NULL, paymenttypedescription TEXT)"
        )
    handle = gwkit.sandbox.start(db_path, clock_start=CLOCK)
    gateway = Gateway(handle.base_url)
    try:
        assert gateway.one(card_auth())["errorcode"] == "0"
    finally:
        gateway.close()
        handle.stop()


def test_subscriptions_of_a_database_made_before_units_are_monthly(db_path):
    handle = gwkit.sandbox.start(db_path, clock_start=CLOCK)
    handle.stop()
    Database(db_path).execute("ALTER TABLE subscriptions DROP COLUMN unit")  # the table before `unit` existed
    handle = gwkit.sandbox.start(db_path, clock_start=CLOCK)
    gateway = Gateway(handle.base_url)
    try:
        _, subscription = gateway.records(monthly_subscription("2026-02-01", orderreference="old-db"))
        assert subscription["errorcode"] == "0"
        handle.advance(to="2026-02-02T10:00:00")
        assert len(gateway.query(parenttransactionreference=subscription["transactionreference"])) == 1
    finally:
        gateway.close()
        handle.stop()
    assert Database(db_path).rows("SELECT unit FROM subscriptions") == [("MONTH",)]
