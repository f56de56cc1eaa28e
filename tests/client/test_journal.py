"""The journal: every exchange in SQLite, masked, with timings and target; never a card in clear."""

from __future__ import annotations

import sqlite3
import threading
import warnings
from datetime import UTC, datetime

import httpx
import pytest

import gwkit
import gwkit.report
from gwkit import sandbox as sandbox_module
from gwkit.exchange import Exchange
from gwkit.journal import Journal, default_path

PAN = "4111111111111111"
AMEX = "378282246310005"
AMEX_CODE = "7373"


@pytest.fixture(scope="module")
def sandbox(tmp_path_factory):
    handle = sandbox_module.start(tmp_path_factory.mktemp("journal") / "sandbox.db")
    yield handle
    handle.stop()


@pytest.fixture
def journal(tmp_path):
    with Journal(tmp_path / "journal.db") as opened:
        yield opened


@pytest.fixture
def client(sandbox, journal):
    with gwkit.Client(
        sandbox.base_url,
        sandbox.username,
        sandbox.password,
        sitereference=sandbox.sitereference,
        currencyiso3a="GBP",
        on_exchange=journal.hook(kind="sandbox"),
    ) as opened:
        yield opened


def expiry(sandbox) -> str:
    return f"12/{sandbox.now().year + 2}"


def test_each_exchange_is_recorded_with_timing_target_and_outcome(client, journal, sandbox):
    paid = client.auth(
        accounttypedescription="ECOM",
        baseamount=1050,
        pan=PAN,
        expirydate=expiry(sandbox),
        securitycode="123",
        orderreference="order-1",
    )
    client.auth(
        accounttypedescription="ECOM",
        baseamount=70000,
        pan=PAN,
        expirydate=expiry(sandbox),
        securitycode="123",
    )
    newest, oldest = journal.entries()
    assert len(journal) == 2
    assert oldest.outcome == "ok" and oldest.errorcode == "0" and oldest.errormessage == "Ok"
    assert newest.outcome == "error" and newest.errorcode == "70000" and newest.errormessage == "Decline"
    assert oldest.kind == "sandbox" and oldest.target == sandbox.base_url and oldest.alias == sandbox.username
    assert oldest.sitereference == sandbox.sitereference
    assert oldest.request_types == ("AUTH",) and oldest.status_code == 200
    assert oldest.requestreference == paid.requestreference
    assert oldest.elapsed_ms > 0 and oldest.started_at.tzinfo is not None
    assert oldest.request["request"][0]["orderreference"] == "order-1"
    assert oldest.records[0]["transactionreference"] == paid.record["transactionreference"]
    assert oldest.summary.endswith(f"AUTH 0 Ok {paid.record['transactionreference']}")
    assert journal.get(oldest.id) == oldest
    assert journal.entries(limit=1, oldest_first=True) == [oldest]


def test_records_table_links_references_to_exchanges(client, journal, sandbox):
    stored = client.store(accounttypedescription="CARDSTORE", pan=PAN, expirydate=expiry(sandbox))
    reference = stored.record["transactionreference"]
    rows = journal.rows(
        "SELECT e.request_types, r.requesttypedescription, r.errorcode FROM records r "
        "JOIN exchanges e ON e.id = r.exchange_id WHERE r.transactionreference = ?",
        (reference,),
    )
    assert rows == [{"request_types": "STORE", "requesttypedescription": "STORE", "errorcode": "0"}]
    [record] = list(journal.records())
    assert record["exchange_id"] == "1" and record["transactionreference"] == reference


def test_no_clear_pan_or_security_code_ever_reaches_the_file(client, journal, sandbox, tmp_path):
    client.auth(
        accounttypedescription="ECOM",
        baseamount=1050,
        pan=PAN,
        expirydate=expiry(sandbox),
        securitycode="123",
        orderreference=f"customer typed {PAN} here",
    )
    client.auth(
        accounttypedescription="ECOM",
        baseamount=1050,
        pan=AMEX,
        expirydate=expiry(sandbox),
        securitycode=AMEX_CODE,
    )
    client.store(accounttypedescription="CARDSTORE", pan=AMEX, expirydate=expiry(sandbox))
    client.send(
        {
            "requesttypedescriptions": ["AUTH"],
            "sitereference": sandbox.sitereference,
            "pan": PAN,
            "securitycode": AMEX_CODE,
            "baseamount": "1050",
            "currencyiso3a": "GBP",
            "accounttypedescription": "ECOM",
            "expirydate": "13/2030",
        },
        validate=False,
    )
    # an exchange that fails, with a card number in its error text
    journal.record(
        Exchange(
            datetime.now(UTC),
            0.1,
            "http://x",
            "u",
            {"request": [{"pan": PAN, "securitycode": AMEX_CODE}]},
            error=f"TransportError: failed while sending {PAN}",
        )
    )
    assert len(journal) == 5
    raw = b"".join(p.read_bytes() for p in tmp_path.glob("journal.db*"))
    assert raw, "the journal files exist"
    for secret in (PAN, AMEX):
        assert secret.encode() not in raw
    assert f'"{AMEX_CODE}"'.encode() not in raw
    assert b'"securitycode":"[redacted]"' in raw
    assert b"411111######1111" in raw and b"378282######0005" in raw


def test_a_failed_exchange_is_recorded_as_failed(journal):
    def refuse(request):
        raise httpx.ConnectError("connection refused", request=request)

    with gwkit.Client(
        "http://gateway.test",
        "user",
        "pw",
        sitereference="test_s",
        currencyiso3a="GBP",
        transport=httpx.MockTransport(refuse),
        retries=1,
        on_exchange=journal.hook(kind="gateway"),
    ) as failing:
        with pytest.raises(gwkit.ConnectError):
            failing.auth(
                accounttypedescription="ECOM",
                baseamount=1050,
                pan=PAN,
                expirydate="12/2099",
                securitycode="123",
            )
    entries = journal.entries()
    assert len(entries) == 2  # the first try and the one retry (nothing was sent)
    assert all(e.outcome == "failed" and e.response is None for e in entries)
    assert "ConnectError" in entries[0].error and entries[0].kind == "gateway"


def test_plain_sqlite_in_wal_mode(journal, client, sandbox):
    client.auth(
        accounttypedescription="ECOM",
        baseamount=1050,
        pan=PAN,
        expirydate=expiry(sandbox),
        securitycode="123",
    )
    other = sqlite3.connect(journal.path)
    try:
        assert other.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
        assert other.execute("SELECT count(*), min(outcome) FROM exchanges").fetchone() == (1, "ok")
        assert other.execute("SELECT count(*) FROM records").fetchone() == (1,)
    finally:
        other.close()


def test_a_journal_that_cannot_write_warns_and_never_breaks_the_payment(sandbox, tmp_path):
    broken = Journal(tmp_path / "broken.db")
    hook = broken.hook()
    broken.close()
    with gwkit.Client(
        sandbox.base_url,
        sandbox.username,
        sandbox.password,
        sitereference=sandbox.sitereference,
        currencyiso3a="GBP",
        on_exchange=hook,
    ) as opened:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            response = opened.auth(
                accounttypedescription="ECOM",
                baseamount=1050,
                pan=PAN,
                expirydate=expiry(sandbox),
                securitycode="123",
            )
    assert response.record.errorcode == 0
    assert any("could not record an exchange" in str(w.message) for w in caught)


def test_threads_share_one_journal(sandbox, journal):
    def work():
        with gwkit.Client(
            sandbox.base_url,
            sandbox.username,
            sandbox.password,
            sitereference=sandbox.sitereference,
            currencyiso3a="GBP",
            on_exchange=journal.hook(),
        ) as own:
            for _ in range(5):
                own.auth(
                    accounttypedescription="ECOM",
                    baseamount=1050,
                    pan=PAN,
                    expirydate=expiry(sandbox),
                    securitycode="123",
                )

    threads = [threading.Thread(target=work) for _ in range(6)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(journal) == 30
    assert len({e.requestreference for e in journal.entries()}) == 30


def test_default_path_is_env_then_working_directory(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("GWKIT_JOURNAL", raising=False)
    assert default_path() == tmp_path.joinpath(".gwkit", "journal.db").relative_to(tmp_path)
    with Journal() as opened:
        assert opened.path.resolve() == tmp_path / ".gwkit" / "journal.db"
    monkeypatch.setenv("GWKIT_JOURNAL", str(tmp_path / "elsewhere" / "j.db"))
    with Journal() as opened:
        assert opened.path == tmp_path / "elsewhere" / "j.db" and opened.path.exists()


def test_unknown_id_is_a_clear_error(journal):
    with pytest.raises(KeyError, match="no exchange 99"):
        journal.get(99)


def test_an_injected_fault_is_journaled_with_its_kind(tmp_path):
    sandbox = sandbox_module.Sandbox(tmp_path / "faulty.db")
    sandbox.faults.add("gateway_error", code=60010, made=True)
    with (
        Journal(tmp_path / "journal.db") as journal,
        gwkit.Client(
            "http://sandbox.test",
            "gwkit_sandbox",
            "gwkit-sandbox-password",
            sitereference="test_gwkit12345",
            transport=sandbox_module.SandboxTransport(sandbox),
            on_exchange=journal.hook(),
        ) as client,
    ):
        card = {
            "accounttypedescription": "ECOM",
            "currencyiso3a": "GBP",
            "pan": "4111111111111111",
            "expirydate": "12/2030",
            "securitycode": "123",
        }
        client.auth(baseamount=1050, orderreference="faulted", **card)
        client.auth(baseamount=1050, orderreference="clean", **card)
        faulted, clean = journal.entries(oldest_first=True)
        assert (faulted.fault, faulted.errorcode, clean.fault) == ("gateway_error", "60010", None)
        assert "[injected fault: gateway_error]" in faulted.summary
        assert journal.rows("SELECT fault FROM exchanges ORDER BY id") == [
            {"fault": "gateway_error"},
            {"fault": None},
        ]
    sandbox.close()


def test_a_journal_written_before_the_fault_column_opens_and_gains_it(tmp_path):
    path = tmp_path / "old.db"
    with sqlite3.connect(path) as db:
        db.executescript("""
            CREATE TABLE exchanges (id INTEGER PRIMARY KEY AUTOINCREMENT, started_at TEXT NOT NULL,
                elapsed_ms REAL, kind TEXT, target TEXT, alias TEXT, sitereference TEXT, request_types TEXT,
                requestreference TEXT, status_code INTEGER, outcome TEXT NOT NULL, errorcode TEXT,
                errormessage TEXT, error TEXT, request_json TEXT NOT NULL, response_json TEXT);
            INSERT INTO exchanges (started_at, outcome, request_types, request_json)
                VALUES ('2026-01-01T00:00:00+00:00', 'ok', 'AUTH', '{}');
            PRAGMA user_version=1;""")
    with Journal(path) as journal:
        (entry,) = journal.entries()
        assert entry.request_types == ("AUTH",) and entry.fault is None and entry.gateway_time is None
        assert journal.rows("PRAGMA user_version") == [{"user_version": 3}]


def test_a_connection_journals_the_sandbox_clock_beside_the_wall_clock(tmp_path, monkeypatch):
    """The journal tells the time the records tell: the sandbox's virtual clock, not the wall clock."""
    from gwkit.config import Target
    from gwkit.connect import Connection

    with sandbox_module.start(tmp_path / "sandbox.db", clock_start=datetime(2031, 5, 6, 7, 8, 9)) as handle:
        target = Target("sandbox", handle.base_url, handle.username, handle.sitereference, "GBP", "test")
        with (
            Journal(tmp_path / "j.db") as journal,
            Connection(target, handle.password, sandbox=handle, journal=journal) as gw,
        ):
            record = gw.auth(
                accounttypedescription="ECOM",
                baseamount=1050,
                pan=PAN,
                expirydate="12/2035",
                securitycode="123",
            ).record
            (entry,) = journal.entries()
            assert entry.gateway_time == datetime(2031, 5, 6, 7, 8, 9)
            assert f"{entry.gateway_time:%Y-%m-%d %H:%M:%S}" == record["transactionstartedtimestamp"]
            assert entry.summary.startswith("07:08:09 AUTH")
            assert entry.started_at.tzinfo is not None  # the wall clock (UTC) is kept too
            frame = gwkit.report.journal_frame(journal)
            assert frame["gateway_time"].iloc[0] == datetime(2031, 5, 6, 7, 8, 9)
