"""Reconciliation after a lost answer: the client never re-sends, and reconcile says whether it paid."""

from __future__ import annotations

import pytest

import gwkit
from gwkit.journal import Journal
from gwkit.reconcile import AUTHORISED, DECLINED, NOT_FOUND, SETTLED, SUSPENDED, UNKNOWN, reconcile
from gwkit.sandbox import Sandbox, SandboxTransport

USER, PASSWORD, SITE = "gwkit_sandbox", "gwkit-sandbox-password", "test_gwkit12345"
CARD = {
    "accounttypedescription": "ECOM",
    "currencyiso3a": "GBP",
    "pan": "4111111111111111",
    "expirydate": "12/2030",
    "securitycode": "123",
}


@pytest.fixture
def sandbox(tmp_path):
    sandbox = Sandbox(tmp_path / "sandbox.db")
    yield sandbox
    sandbox.close()


@pytest.fixture
def gw(sandbox, tmp_path):
    journal = Journal(tmp_path / "journal.db")
    with gwkit.Client(
        "http://sandbox.test",
        USER,
        PASSWORD,
        sitereference=SITE,
        transport=SandboxTransport(sandbox),
        on_exchange=journal.hook(),
    ) as client:
        client.journal = journal
        yield client
    journal.close()


def auth_count(sandbox: Sandbox) -> int:
    return (
        sandbox.store.connection()
        .execute("SELECT COUNT(*) FROM transactions WHERE requesttypedescription = 'AUTH'")
        .fetchone()[0]
    )


def test_answer_lost_after_processing_the_client_raises_never_resends_and_reconcile_finds_it(sandbox, gw):
    sandbox.faults.add("drop", count=1, process=True)
    with pytest.raises(gwkit.TransportError):
        gw.auth(baseamount=1050, orderreference="lost-1", **CARD)
    assert auth_count(sandbox) == 1  # processed once, never re-sent
    (failed,) = gw.journal.entries()
    assert failed.outcome == "failed"
    found = reconcile(gw, exchange=failed)
    assert found.exists and found.paid and found.state == AUTHORISED
    assert found.orderreference == "lost-1" and "lost-1" in found.summary


def test_request_dropped_before_processing_is_not_found(sandbox, gw):
    sandbox.faults.add("drop", count=1, process=False)
    with pytest.raises(gwkit.TransportError):
        gw.auth(baseamount=1050, orderreference="lost-2", **CARD)
    found = reconcile(gw, orderreference="lost-2")
    assert not found.exists and not found.paid and found.state == NOT_FOUND
    assert auth_count(sandbox) == 0


@pytest.mark.parametrize(
    "amount, state, paid", [(1050, AUTHORISED, True), (70000, DECLINED, False), (60010, UNKNOWN, False)]
)
def test_states_by_outcome(gw, amount, state, paid):
    gw.auth(baseamount=amount, orderreference=f"o-{amount}", **CARD)
    found = reconcile(gw, orderreference=f"o-{amount}")
    assert (found.state, found.paid) == (state, paid)


def test_settled_and_suspended(sandbox, gw):
    settled = gw.auth(baseamount=1050, orderreference="s-1", **CARD).record["transactionreference"]
    sandbox.settle(all_pending=True)
    held = gw.auth(baseamount=1050, orderreference="h-1", **CARD).record["transactionreference"]
    updated = gw.transaction_update(
        filter={"transactionreference": [{"value": held}]}, updates={"settlestatus": "2"}
    )
    assert updated.record.ok
    assert reconcile(gw, transactionreference=settled).state == SETTLED
    result = reconcile(gw, orderreference="h-1")
    assert result.state == SUSPENDED and result.paid


def test_two_payments_of_one_order_are_flagged_newest_first(gw):
    first = gw.auth(baseamount=1050, orderreference="twice", **CARD).record["transactionreference"]
    second = gw.auth(baseamount=1050, orderreference="twice", **CARD).record["transactionreference"]
    found = reconcile(gw, orderreference="twice")
    assert [r["transactionreference"] for r in found.payments] == [second, first]
    assert "2 payments found" in found.summary


def test_needs_something_to_look_for(gw):
    with pytest.raises(ValueError, match="orderreference or transactionreference"):
        reconcile(gw)
