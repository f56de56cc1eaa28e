"""The WAL is copied into the database by the store's checkpoint thread, not by a payment's commit."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import gwkit.sandbox
from gwkit.sandbox.gateway.store import sqlite as store
from support.sandbox import CLOCK, Gateway, card_auth


def rows_in_database_file(path: Path) -> int:
    """Transactions in the database file itself, without what is still only in the WAL."""
    conn = sqlite3.connect(f"{path.as_uri()}?immutable=1", uri=True)
    try:
        return conn.execute("SELECT COUNT(*) FROM transactions").fetchone()[0]
    finally:
        conn.close()


def test_payments_reach_the_database_file_through_the_checkpoint_thread(tmp_path, monkeypatch):
    monkeypatch.setattr(store, "CHECKPOINT_EVERY", 1)  # each commit asks for a pass
    path = tmp_path / "sandbox.db"
    handle = gwkit.sandbox.start(path, clock_start=CLOCK)
    gateway = Gateway(handle.base_url)
    try:
        checkpointer = handle.sandbox.store.checkpointer
        references = [
            gateway.one(card_auth(orderreference=f"ckpt-{n}"))["transactionreference"] for n in range(4)
        ]
        assert len(set(references)) == 4
        # SQLite's own checkpoint (at 16384 pages) never runs here: only the thread's passes copy the WAL.
        assert checkpointer.wait(timeout=30)
        assert rows_in_database_file(path) == 4
        found = gateway.query(orderreference=[f"ckpt-{n}" for n in range(4)])
        assert sorted(r["transactionreference"] for r in found) == sorted(references)
    finally:
        gateway.close()
        handle.stop()
    assert rows_in_database_file(path) == 4


def test_a_store_that_never_reaches_the_count_starts_no_thread_and_closes(tmp_path):
    kept = store.SqliteStore(tmp_path / "quiet.db")
    with kept.write() as conn:
        kept.meta_set(conn, "quiet", "1")
    assert kept.checkpointer.wait(timeout=0)  # nothing asked for
    kept.close()
    assert rows_in_meta(tmp_path / "quiet.db", "quiet") == 1


def rows_in_meta(path: Path, key: str) -> int:
    conn = sqlite3.connect(path)
    try:
        return conn.execute("SELECT COUNT(*) FROM meta WHERE key = ?", (key,)).fetchone()[0]
    finally:
        conn.close()


def subscribe(sandbox: gwkit.sandbox.Sandbox, index: int) -> None:
    account = sandbox.default_account
    request = card_auth(
        requesttypedescriptions=["AUTH", "SUBSCRIPTION"],
        orderreference=f"ckpt-sub-{index}",
        subscriptiontype="RECURRING",
        subscriptionunit="MONTH",
        subscriptionfrequency="1",
        subscriptionnumber="1",
        subscriptionfinalnumber="0",
        subscriptionbegindate="2026-02-01",
        transactionactive="1",
        credentialsonfile="1",
    )
    answer = sandbox.gateway.process({"alias": account.username, "request": [request]}, account)
    assert [r["errorcode"] for r in answer["response"]] == ["0", "0"], answer


def test_a_clock_move_copies_what_it_wrote_into_the_database_file_and_puts_the_settings_back(tmp_path):
    # The daily jobs' shared write checkpoints itself (jobwrites.py), after its commits: a clock move
    # leaves no WAL for the next payment's commit to copy, however far below SQLite's own 16384 pages.
    path = tmp_path / "sandbox.db"
    sandbox = gwkit.sandbox.Sandbox(path, clock_start=CLOCK)
    try:
        for index in range(3):
            subscribe(sandbox, index)
        conn = sandbox.store.connection()
        settings = [
            conn.execute(f"PRAGMA {name}").fetchone()[0] for name in ("wal_autocheckpoint", "cache_size")
        ]
        report = sandbox.advance(to="2026-05-02T12:00:00")  # payments 2 to 5 of each
        assert report["subscriptions"]["made"] == 12
        kept = conn.execute("SELECT COUNT(*) FROM transactions").fetchone()[0]
        assert kept == 3 * 2 + 12  # AUTH and SUBSCRIPTION records, and the payments
        assert rows_in_database_file(path) == kept
        assert (
            [conn.execute(f"PRAGMA {name}").fetchone()[0] for name in ("wal_autocheckpoint", "cache_size")]
            == settings
            == [16384, -2000]
        )
    finally:
        sandbox.close()
