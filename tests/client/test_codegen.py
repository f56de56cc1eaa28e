"""Copy as code: every style runs as written against a real sandbox on loopback, and masks by default."""

from __future__ import annotations

import json
import os
import subprocess

import pytest

import gwkit
from gwkit import sandbox as sandbox_module
from gwkit.codegen import STYLES, CodegenError, as_code
from gwkit.journal import Journal

PAN, CVV = "4111111111111111", "123"


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    handle = sandbox_module.start(tmp_path_factory.mktemp("codegen") / "sandbox.db")
    yield handle
    handle.stop()


def auth_request(server, order: str) -> dict:
    return {
        "requesttypedescriptions": ["AUTH"],
        "sitereference": server.sitereference,
        "currencyiso3a": "GBP",
        "accounttypedescription": "ECOM",
        "baseamount": "1050",
        "orderreference": order,
        "pan": PAN,
        "expirydate": "12/2030",
        "securitycode": CVV,
    }


def orders(server, order: str) -> list[dict]:
    with gwkit.Client(server.base_url, server.username, server.password) as client:
        return client.transaction_query(orderreference=order).record.query_records


def run_python(code: str) -> dict:
    scope: dict = {}
    exec(compile(code, "<generated>", "exec"), scope)
    return scope


@pytest.mark.parametrize("style", STYLES)
def test_masked_by_default_no_card_number_no_security_code_no_password(server, style):
    code = as_code(
        {"alias": server.username, "request": [auth_request(server, "masked")]},
        style,
        base_url=server.base_url,
        password=server.password,
    )
    assert PAN not in code and '"123"' not in code and "'123'" not in code
    assert "411111######1111" in code and "[redacted]" in code
    assert server.password not in code


def test_gwkit_code_runs_and_pays(server):
    code = as_code(
        auth_request(server, "py-1"),
        base_url=server.base_url,
        username=server.username,
        password=server.password,
        reveal=True,
    )
    assert "gw.auth(" in code and "requestreference" not in code
    scope = run_python(code)
    assert scope["response"].record.ok
    assert [r["orderreference"] for r in orders(server, "py-1")] == ["py-1"]


def test_httpx_code_runs_and_pays(server):
    code = as_code(
        {"alias": server.username, "request": [auth_request(server, "httpx-1")]},
        "httpx",
        base_url=server.base_url,
        password=server.password,
        reveal=True,
    )
    scope = run_python(code)
    assert scope["answer"].json()["response"][0]["errorcode"] == "0"
    assert len(orders(server, "httpx-1")) == 1


def test_curl_command_runs_and_pays(server):
    code = as_code(
        {"alias": server.username, "request": [auth_request(server, "curl-1")]},
        "curl",
        base_url=server.base_url,
        password=server.password,
        reveal=True,
    )
    done = subprocess.run(["bash", "-c", code], capture_output=True, text=True, timeout=60, check=True)
    assert json.loads(done.stdout)["response"][0]["errorcode"] == "0"
    assert len(orders(server, "curl-1")) == 1


def test_curl_without_reveal_reads_the_password_from_the_environment(server):
    code = as_code(
        {"alias": server.username, "request": [auth_request(server, "curl-env")]},
        "curl",
        base_url=server.base_url,
    )
    env = {**os.environ, "GWKIT_PASSWORD": server.password}
    done = subprocess.run(
        ["bash", "-c", code], capture_output=True, text=True, timeout=60, env=env, check=True
    )
    # the card was masked in the code, so the gateway refuses the card number: nothing is paid
    record = json.loads(done.stdout)["response"][0]
    assert record["errorcode"] == "30000" and "pan" in record["errordata"]
    assert orders(server, "curl-env") == []


def test_official_client_code_runs_and_pays(server):
    code = as_code(
        auth_request(server, "official-1"),
        "securetrading",
        base_url=server.base_url,
        username=server.username,
        password=server.password,
        reveal=True,
    )
    scope = run_python(code)
    assert scope["response"]["responses"][0]["errorcode"] == "0"
    assert len(orders(server, "official-1")) == 1


def test_query_and_update_use_filter_and_updates_arguments(server):
    code = as_code(
        {
            "requesttypedescriptions": ["TRANSACTIONUPDATE"],
            "filter": {"transactionreference": [{"value": "1-2-3"}]},
            "updates": {"settlestatus": "2"},
        }
    )
    assert "gw.transaction_update(" in code and "filter={" in code and "updates={" in code


def test_a_journal_entry_is_copied_as_code(server, tmp_path):
    with (
        Journal(tmp_path / "journal.db") as journal,
        gwkit.Client(
            server.base_url,
            server.username,
            server.password,
            sitereference=server.sitereference,
            on_exchange=journal.hook(),
        ) as client,
    ):
        client.auth(
            accounttypedescription="ECOM",
            currencyiso3a="GBP",
            baseamount=1050,
            orderreference="j-1",
            pan=PAN,
            expirydate="12/2030",
            securitycode=CVV,
        )
        (entry,) = journal.entries()
        code = as_code(entry, "curl", reveal=True)  # the journal holds masked data only: nothing to reveal
    assert PAN not in code and "411111######1111" in code and server.base_url in code


def test_unknown_style_and_sources_are_clear_errors():
    with pytest.raises(CodegenError, match="style must be one of"):
        as_code({"requesttypedescriptions": ["AUTH"]}, "perl")
    with pytest.raises(CodegenError, match="no request in int"):
        as_code(42)
