"""A snapshot restore on SQLite, one writer for every tenant: cut into short write transactions
(`RESTORE_STEP_ROWS` rows each), so another tenant's payment goes in between its steps; the restoring
tenant's own writes wait for the whole restore; a restore cut short is done again at the next start,
never left half done (a mark in `meta`).

Nothing waits on time: the restore's hook after each step (`snapshots._after_step`) is where the
test pays, looks, or cuts the restore short."""

from __future__ import annotations

import threading
from datetime import datetime
from typing import Any

import pytest

from gwkit.sandbox import Sandbox, load_accounts
from gwkit.sandbox.gateway.store import snapshots
from support.databases import Database
from support.sandbox import card_auth

ALICE, BOB = "test_alice12345", "test_bob12345"
ACCOUNTS = (
    '[[account]]\nusername = "alice"\npassword = "alice-password"\nsitereferences = ["test_alice12345"]\n'
    '[[account]]\nusername = "bob"\npassword = "bob-password"\nsitereferences = ["test_bob12345"]\n'
)
MARKS = "SELECT count(*) FROM meta WHERE key LIKE 'restore under way: %'"


@pytest.fixture
def store_kind() -> str:
    return "sqlite"  # PostgreSQL restores in one transaction of the tenant's sites: test_multi_host.py


@pytest.fixture
def opened(db_path, tmp_path, monkeypatch):
    (tmp_path / "accounts.toml").write_text(ACCOUNTS)
    accounts = load_accounts(tmp_path / "accounts.toml")
    monkeypatch.setattr(snapshots, "RESTORE_STEP_ROWS", 10)

    def open_() -> Sandbox:
        return Sandbox(db_path, accounts=accounts, clock_start=datetime(2026, 1, 10, 9, 0))

    return open_


def pay(sandbox: Sandbox, username: str, site: str, order: str) -> dict[str, Any]:
    account = sandbox.accounts[username]
    (record,) = sandbox.gateway.process(
        {"alias": username, "request": [card_auth(sitereference=site, orderreference=order)]}, account
    )["response"]
    return record


def orders(db, site: str) -> list[str]:
    return [
        order
        for (order,) in Database(db).rows(
            "SELECT orderreference FROM transactions WHERE sitereference = ? ORDER BY orderreference", (site,)
        )
    ]


def saved_with_30_payments_then_30_more(sandbox: Sandbox) -> list[str]:
    for number in range(30):
        pay(sandbox, "alice", ALICE, f"saved-{number:02d}")
    sandbox.snapshots_of(sandbox.accounts["alice"]).save("thirty")
    for number in range(30):
        pay(sandbox, "alice", ALICE, f"later-{number:02d}")
    return sorted(f"saved-{number:02d}" for number in range(30))


def test_another_tenants_payment_goes_in_between_the_steps_and_the_restoring_tenants_waits(
    opened, db_path, monkeypatch
):
    sandbox = opened()
    saved = saved_with_30_payments_then_30_more(sandbox)
    steps: list[int] = []
    answers: dict[str, Any] = {}
    alice_paying = threading.Thread(
        target=lambda: answers.update(alice=pay(sandbox, "alice", ALICE, "during"))
    )

    def after_step() -> None:
        steps.append(Database(db_path).value(MARKS))
        if len(steps) == 2:  # the restore under way: half of alice's rows are back
            answers["bob"] = pay(sandbox, "bob", BOB, "between")  # this thread writes between the steps
            paying = threading.Thread(
                target=lambda: answers.update(bob_thread=pay(sandbox, "bob", BOB, "thread"))
            )
            paying.start()
            paying.join()  # another thread's payment too: it does not wait for the restore
            alice_paying.start()  # alice's own waits for the whole restore
        if len(steps) > 2:
            assert "during" not in orders(db_path, ALICE)

    monkeypatch.setattr(snapshots, "_after_step", after_step)
    try:
        sandbox.snapshots_of(sandbox.accounts["alice"]).restore("thirty")
        alice_paying.join()
        assert len(steps) >= 5 and set(steps) == {1}  # several steps, the mark there through all of them
        assert answers["bob"]["errorcode"] == "0" and answers["bob_thread"]["errorcode"] == "0"
        assert answers["alice"]["errorcode"] == "0"
        assert orders(db_path, BOB) == ["between", "thread"]
        assert orders(db_path, ALICE) == sorted([*saved, "during"])  # paid after the restore, kept
        assert Database(db_path).value(MARKS) == 0
    finally:
        sandbox.close()


class Killed(BaseException):
    """The process ending mid-restore (no `except Exception` catches it)."""


def test_a_restore_cut_short_is_done_again_at_the_next_start(opened, db_path, monkeypatch):
    sandbox = opened()
    saved = saved_with_30_payments_then_30_more(sandbox)
    steps: list[int] = []

    def cut_short() -> None:
        steps.append(1)
        if len(steps) == 3:
            raise Killed

    monkeypatch.setattr(snapshots, "_after_step", cut_short)
    with pytest.raises(Killed):
        sandbox.snapshots_of(sandbox.accounts["alice"]).restore("thirty")
    monkeypatch.undo()
    half = orders(db_path, ALICE)
    assert half != saved and set(half) < set(saved)  # half restored, and the mark says so
    assert Database(db_path).value(MARKS) == 1
    sandbox.close()
    opened().close()  # the next start
    assert orders(db_path, ALICE) == saved
    assert Database(db_path).value(MARKS) == 0


def test_a_failed_step_is_done_again_at_once(opened, db_path, monkeypatch):
    sandbox = opened()
    saved = saved_with_30_payments_then_30_more(sandbox)
    failed: list[int] = []

    def failing_once() -> None:
        if not failed:
            failed.append(1)
            raise OSError("disk full for a moment")

    monkeypatch.setattr(snapshots, "_after_step", failing_once)
    try:
        answer = sandbox.snapshots_of(sandbox.accounts["alice"]).restore("thirty")
        assert answer["restored"] == "thirty" and answer["transactions"] == 30
        assert orders(db_path, ALICE) == saved
        assert Database(db_path).value(MARKS) == 0
    finally:
        sandbox.close()
