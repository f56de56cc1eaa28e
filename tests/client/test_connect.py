"""`gwkit.connect()`: the sandbox by default, a real gateway when configured, never the password."""

from __future__ import annotations

import gc
import importlib

import nbformat
import pytest
from nbclient import NotebookClient

import gwkit
from gwkit import sandbox as sandbox_module
from gwkit.config import ConfigError
from gwkit.connect import Connection, connect, stop_sandboxes

connect_module = importlib.import_module("gwkit.connect")  # `gwkit.connect` is the function

SECRET = "s3cret-Passw0rd"
ENV = (
    "GWKIT_BASE_URL",
    "GWKIT_USERNAME",
    "GWKIT_PASSWORD",
    "GWKIT_SITEREFERENCE",
    "GWKIT_CURRENCY",
    "GWKIT_JOURNAL",
    "GWKIT_SANDBOX_DB",
    "GWKIT_TARGET",
    "GWKIT_CONFIG",
)


@pytest.fixture(autouse=True)
def clean(tmp_path, monkeypatch):
    """No GWKIT_ settings from outside, a fresh working directory, and every sandbox stopped after."""
    for name in ENV:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.chdir(tmp_path)
    yield
    stop_sandboxes()


@pytest.fixture(scope="module")
def remote(tmp_path_factory):
    """Another sandbox, standing in for a real gateway reached over HTTP."""
    handle = sandbox_module.start(tmp_path_factory.mktemp("remote") / "remote.db")
    yield handle
    handle.stop()


def expiry(year: int) -> str:
    return f"12/{year + 2}"


def test_without_configuration_it_starts_the_sandbox_and_journals(tmp_path):
    gw = connect()
    assert isinstance(gw, Connection) and isinstance(gw, gwkit.Client)
    assert gw.target.kind == "sandbox" and gw.sandbox is not None and gw.sandbox.running
    assert gw.base_url == gw.sandbox.base_url.rstrip("/") and gw.base_url.startswith("http://127.0.0.1:")
    assert gw.sitereference == gw.sandbox.sitereference and gw.currencyiso3a == "GBP"
    assert (tmp_path / ".gwkit" / "sandbox.db").exists()
    assert gw.journal.path == tmp_path / ".gwkit" / "journal.db"
    response = gw.auth(
        accounttypedescription="ECOM",
        baseamount=1050,
        pan="4111111111111111",
        expirydate=expiry(gw.sandbox.now().year),
        securitycode="123",
    )
    assert response.record.errorcode == 0
    assert len(gw.journal) == 1 and gw.journal.entries()[0].kind == "sandbox"
    assert list(gw.exchanges)[-1].requestreference == response.requestreference


def test_the_sandbox_is_reused_in_the_same_process():
    first, second = connect(), connect()
    assert first.sandbox is second.sandbox
    assert first.journal is second.journal
    first.sandbox.stop()  # stopped by hand: the next connect starts a new one
    third = connect()
    assert third.sandbox is not first.sandbox and third.sandbox.running


def test_env_vars_choose_the_sandbox_and_journal_files(tmp_path, monkeypatch):
    monkeypatch.setenv("GWKIT_SANDBOX_DB", str(tmp_path / "dbs" / "sb.db"))
    monkeypatch.setenv("GWKIT_JOURNAL", str(tmp_path / "dbs" / "j.db"))
    gw = connect()
    assert (tmp_path / "dbs" / "sb.db").exists() and gw.journal.path == tmp_path / "dbs" / "j.db"
    assert connect(journal=False).journal is None
    assert connect(journal=tmp_path / "other.db").journal.path == tmp_path / "other.db"


def test_a_postgresql_sandbox_database_is_for_the_team_sandbox_not_a_notebook(monkeypatch):
    monkeypatch.setenv("GWKIT_SANDBOX_DB", "postgresql://gwkit@127.0.0.1/gwkit_sandbox")
    with pytest.raises(ConfigError, match="GWKIT_BASE_URL"):
        connect()


def test_the_rich_output_shows_the_target_but_never_the_password():
    gw = connect()
    text, rich = repr(gw), gw._repr_html_()
    for shown in (text, rich):
        assert gw.base_url in shown and gw.sitereference in shown and gw.username in shown
        assert gw.sandbox.password not in shown
    assert "SANDBOX" in rich and "gwkit-connection" in rich and "Sandbox clock" in rich
    assert "embedded sandbox" in text and "[redacted]" in text


def test_environment_variables_select_a_real_gateway(remote, monkeypatch):
    monkeypatch.setenv("GWKIT_BASE_URL", remote.base_url)
    monkeypatch.setenv("GWKIT_USERNAME", remote.username)
    monkeypatch.setenv("GWKIT_PASSWORD", remote.password)
    monkeypatch.setenv("GWKIT_SITEREFERENCE", remote.sitereference)
    monkeypatch.setenv("GWKIT_CURRENCY", "EUR")
    gw = connect()
    assert gw.target.kind == "gateway" and gw.sandbox is None
    assert gw.target.source == "environment" and gw.currencyiso3a == "EUR"
    assert connect_module._SANDBOXES == {}  # no sandbox was started
    response = gw.auth(
        accounttypedescription="ECOM",
        baseamount=1050,
        pan="4111111111111111",
        expirydate=expiry(remote.now().year),
        securitycode="123",
    )
    assert response.record["currencyiso3a"] == "EUR"
    assert gw.journal.entries()[0].kind == "gateway" and gw.journal.entries()[0].target == remote.base_url
    rich = gw._repr_html_()
    assert (
        "REAL GATEWAY (test site)" in rich and remote.password not in rich and remote.password not in repr(gw)
    )


def test_gwkit_toml_configures_a_gateway_with_the_password_from_a_variable(remote, tmp_path, monkeypatch):
    monkeypatch.setenv("MY_GATEWAY_PASSWORD", remote.password)
    (tmp_path / "gwkit.toml").write_text(f"""
[gateway]
base_url = "{remote.base_url}"
username = "{remote.username}"
password_env = "MY_GATEWAY_PASSWORD"
sitereference = "{remote.sitereference}"
currencyiso3a = "USD"

[journal]
path = "logs/journal.db"
""")
    gw = connect()
    assert gw.target.kind == "gateway" and gw.target.source == "gwkit.toml"
    assert gw.currencyiso3a == "USD" and gw.journal.path == (tmp_path / "logs" / "journal.db")
    assert (
        gw.auth(
            accounttypedescription="ECOM",
            baseamount=1050,
            pan="4111111111111111",
            expirydate=expiry(remote.now().year),
            securitycode="123",
        ).record.errorcode
        == 0
    )
    # environment variables override the file; GWKIT_TARGET=sandbox overrides both
    monkeypatch.setenv("GWKIT_CURRENCY", "GBP")
    assert connect().currencyiso3a == "GBP" and connect().target.source == "environment + gwkit.toml"
    monkeypatch.setenv("GWKIT_TARGET", "sandbox")
    assert connect().target.kind == "sandbox"


def test_a_real_gateway_without_credentials_names_what_is_missing(monkeypatch):
    monkeypatch.setenv("GWKIT_BASE_URL", "https://gateway.example")
    monkeypatch.setenv("GWKIT_PASSWORD", SECRET)
    with pytest.raises(ConfigError) as caught:
        connect()
    message = str(caught.value)
    assert (
        "username, sitereference" in message
        and "GWKIT_USERNAME" in message
        and "GWKIT_SITEREFERENCE" in message
    )
    assert SECRET not in message
    with pytest.raises(ConfigError, match="a real gateway needs base_url"):
        monkeypatch.delenv("GWKIT_BASE_URL")
        connect(target="gateway")


@pytest.mark.parametrize(
    "content, error",
    [
        ("[gateway\nbase_url = 1", "is not valid TOML"),
        ("[gatway]\nbase_url = 'x'", "unknown section(s) gatway"),
        ("gateway = 3", "[gateway] must be a table"),
        ("[gateway]\nbase_url = 'https://g.example'\npassword_env = 'NOT_SET_ANYWHERE'", "NOT_SET_ANYWHERE"),
    ],
)
def test_a_bad_config_file_is_a_clear_error(tmp_path, content, error):
    (tmp_path / "gwkit.toml").write_text(content)
    with pytest.raises(ConfigError) as caught:
        connect()
    assert error in str(caught.value)


def test_a_named_config_file_must_exist(tmp_path):
    with pytest.raises(ConfigError, match="does not exist"):
        connect(config=tmp_path / "nope.toml")
    with pytest.raises(ConfigError, match="target must be"):
        connect(target="production")


def test_a_live_site_reference_is_flagged(remote):
    gw = connect(
        base_url=remote.base_url,
        username=remote.username,
        password=remote.password,
        sitereference="live_site1",
        journal=False,
    )
    assert "not a test_ site" in gw._repr_html_()
    assert gw.target.source == "connect() arguments"


def test_password_env_may_be_unset_when_the_password_comes_from_the_environment(
    remote, tmp_path, monkeypatch
):
    (tmp_path / "gwkit.toml").write_text(f"""
[gateway]
base_url = "{remote.base_url}"
username = "{remote.username}"
password_env = "NOT_SET_HERE"
sitereference = "{remote.sitereference}"
""")
    monkeypatch.setenv("GWKIT_PASSWORD", remote.password)
    gw = connect(journal=False)
    assert gw.target.kind == "gateway" and gw.target.source == "environment + gwkit.toml"


def test_the_connection_reconciles_a_lost_answer_and_queries_past_the_cap(tmp_path):
    gw = connect(sandbox_db=tmp_path / "sandbox.db", journal=False)
    card = {
        "accounttypedescription": "ECOM",
        "pan": "4111111111111111",
        "expirydate": "12/2030",
        "securitycode": "123",
    }
    gw.auth(baseamount=1050, orderreference="kept", **card)
    gw.sandbox.faults.add("drop", count=1, process=True)
    with pytest.raises(gwkit.TransportError):
        gw.auth(baseamount=2000, orderreference="lost", **card)
    result = gw.reconcile(exchange=gw.exchanges[-1])
    assert result.paid and result.orderreference == "lost"
    today = gw.sandbox.now().date()
    frame = gw.query_all(start=today, end=today)
    assert sorted(frame["orderreference"]) == ["kept", "lost"]
    assert str(frame["baseamount"].dtype) == "Int64"  # typed, in base units


def _kernel_run(cells: list[str], folder) -> nbformat.NotebookNode:
    notebook = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(source) for source in cells])
    NotebookClient(
        notebook,
        timeout=120,
        kernel_name="python3",
        shutdown_kernel="immediate",
        resources={"metadata": {"path": str(folder)}},
    ).execute()
    return notebook


def _printed(cell: nbformat.NotebookNode) -> str:
    return "".join(output.get("text", "") for output in cell.outputs)


@pytest.mark.notebook
def test_in_a_kernel_connect_leaves_the_collector_and_ipykernel_alone(tmp_path, monkeypatch):
    """A library does not change its host process: no gc.freeze, ipykernel's IOPub thread untouched."""
    monkeypatch.setenv("GWKIT_SANDBOX_DB", str(tmp_path / "sandbox.db"))
    monkeypatch.setenv("GWKIT_JOURNAL", str(tmp_path / "journal.db"))
    notebook = _kernel_run(
        [
            "import gc, gwkit\nbefore = gc.get_freeze_count()\nthread = get_ipython().kernel.iopub_thread\n"
            "stop = thread.stop\ngw = gwkit.connect()\nprint(gc.get_freeze_count() == before, thread.stop == stop)",
        ],
        tmp_path,
    )
    assert _printed(notebook.cells[0]).split() == ["True", "True"]


def test_outside_a_kernel_connect_leaves_the_collector_alone(tmp_path):
    before = gc.get_freeze_count()
    connect(sandbox_db=tmp_path / "sandbox.db", journal=False)
    assert gc.get_freeze_count() == before
