"""A storage failure on the PostgreSQL store: every `/json/` answer is a 200 (99999 for what could not
be kept), the log names the cause under each answer's reference, and nothing committed is lost.

PostgreSQL refuses the writes for real: a trigger in the test's own schema raises `disk_full` (SQLSTATE
53100, what a full disk raises) for the payments whose order reference starts with `full-`, either
at the INSERT (a failed statement inside a request's savepoint) or, deferred, at the COMMIT (the
group commit of concurrent requests fails as a whole, as on a full disk). Others, sent at the same
time, are kept; and terminating the sandbox's own server connections (`pg_terminate_backend`) costs
one answer each at most, never a 500 and never a kept payment.
"""

from __future__ import annotations

import asyncio
import logging
import re

import httpx
import pytest

import gwkit.sandbox
from support.databases import Database
from support.sandbox import CLOCK, DEFAULT_PASSWORD, DEFAULT_USERNAME, card_auth

TOGETHER = 24  # concurrent AUTHs per round: enough to be answered in shared write transactions

REFUSE_WRITE = """
CREATE FUNCTION refuse_write() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION 'could not extend file: No space left on device' USING ERRCODE = 'disk_full';
END $$
"""
TRIGGERS = {
    "statement": "CREATE TRIGGER full_disk AFTER INSERT ON transactions FOR EACH ROW "
    "WHEN (NEW.orderreference LIKE 'full-%') EXECUTE FUNCTION refuse_write()",
    "commit": "CREATE CONSTRAINT TRIGGER full_disk AFTER INSERT ON transactions "
    "DEFERRABLE INITIALLY DEFERRED FOR EACH ROW "
    "WHEN (NEW.orderreference LIKE 'full-%') EXECUTE FUNCTION refuse_write()",
}


@pytest.fixture
def store_kind() -> str:
    return "postgresql"


@pytest.fixture
def pg_sandbox(db_path):
    handle = gwkit.sandbox.start(db_path, clock_start=CLOCK)
    yield handle
    handle.stop()


async def auths(url: str, orders: list[str]) -> dict[str, httpx.Response]:
    async with httpx.AsyncClient(
        base_url=url, auth=(DEFAULT_USERNAME, DEFAULT_PASSWORD), timeout=60
    ) as client:
        body = {"alias": DEFAULT_USERNAME, "version": "1.00"}
        answers = await asyncio.gather(
            *(client.post("/json/", json={**body, "request": [card_auth(orderreference=o)]}) for o in orders)
        )
    return dict(zip(orders, answers, strict=True))


def answered(url: str, orders: list[str]) -> dict[str, dict]:
    records = {}
    for order, response in asyncio.run(auths(url, orders)).items():
        assert response.status_code == 200, response.text  # never a 500
        records[order] = response.json()["response"][0]
    return records


def kept_orders(db_path: str) -> list[str]:
    return sorted(order for (order,) in Database(db_path).rows("SELECT orderreference FROM transactions"))


@pytest.mark.parametrize("fails_at", sorted(TRIGGERS))
def test_a_refused_write_answers_99999_in_a_200_logs_the_cause_and_loses_nothing(
    pg_sandbox, db_path, caplog, fails_at
):
    before = answered(pg_sandbox.base_url, [f"before-{i}" for i in range(TOGETHER)])
    assert {record["errorcode"] for record in before.values()} == {"0"}
    Database(db_path).execute(REFUSE_WRITE)
    Database(db_path).execute(TRIGGERS[fails_at])
    caplog.set_level(logging.ERROR)
    orders = [f"{'full' if i % 3 == 0 else 'room'}-{i}" for i in range(TOGETHER)]  # mixed in each batch
    during = answered(pg_sandbox.base_url, orders)
    for order, record in during.items():
        assert record["errorcode"] == ("99999" if order.startswith("full-") else "0"), (order, record)
        if record["errorcode"] == "99999":  # the cause, under the reference the answer gave
            (reference,) = re.findall(r"E-[A-Z2-9]{8}", record["errordata"][0])
            assert re.search(
                rf"internal error {reference}: DiskFull: could not extend file: No space left on device",
                caplog.text,
            )
    Database(db_path).execute("DROP TRIGGER full_disk ON transactions")  # space again: it goes on
    after = answered(pg_sandbox.base_url, [f"after-{i}" for i in range(TOGETHER)])
    assert {record["errorcode"] for record in after.values()} == {"0"}
    made = [order for order, record in {**before, **during, **after}.items() if record["errorcode"] == "0"]
    assert kept_orders(db_path) == sorted(made)  # every payment answered 0 is kept, once; no 99999 one


def test_terminated_server_connections_never_answer_500_nor_lose_a_payment(db_path):
    """The sandbox's own connections (its application_name) are ended between rounds of payments."""
    name = f"gwkit-terminated-{id(db_path)}"
    sandbox = gwkit.sandbox.start(f"{db_path}&application_name={name}", clock_start=CLOCK)
    made: dict[str, dict] = {}
    terminated = 0
    try:
        for number in range(4):
            made |= answered(sandbox.base_url, [f"round{number}-{i}" for i in range(TOGETHER)])
            terminated += Database(db_path).value(
                "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity WHERE application_name = ?",
                (name,),
            )
    finally:
        sandbox.stop()
    assert terminated > 0
    codes = [record["errorcode"] for record in made.values()]
    assert set(codes) <= {"0", "99999"}, codes
    assert codes.count("99999") <= terminated  # each ended connection costs one answer at most
    kept = [order for order, record in made.items() if record["errorcode"] == "0"]
    assert kept_orders(db_path) == sorted(kept)
