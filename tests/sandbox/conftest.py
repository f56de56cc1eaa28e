"""Fixtures of the sandbox tests: a sandbox on a real loopback port with a tmp_path database, and
a raw-JSON caller for it (`support.sandbox.Gateway`).

A test module marked `both_stores` runs each test on SQLite and on PostgreSQL (`store_kind`); the
PostgreSQL half is skipped, saying how to enable it, where no server can be started
(support.databases), and fails where PostgreSQL is required (CI as root: .ci/run). Other modules run on SQLite only. The store is a module-scoped parameter, so a
module's fixtures of module scope (`module_db_path`) run on each store too, one store after the other.
"""

from __future__ import annotations

from pathlib import Path

import pytest

import gwkit.sandbox
from support.databases import STORE_KINDS, drop_schema, new_schema, postgres_server, without_postgres
from support.sandbox import CLOCK, Gateway


def pytest_generate_tests(metafunc):
    if "store_kind" in metafunc.fixturenames and metafunc.definition.get_closest_marker("both_stores"):
        metafunc.parametrize("store_kind", STORE_KINDS, indirect=True, scope="module")


@pytest.fixture(scope="module")
def store_kind(request) -> str:
    return getattr(request, "param", "sqlite")


@pytest.fixture(scope="session")
def postgres_url() -> str:
    url, why_not = postgres_server()
    if url is None:
        without_postgres(why_not)
    return url


@pytest.fixture
def db_path(store_kind, tmp_path, request, monkeypatch) -> str | Path:
    """The sandbox's database: a SQLite file, or a PostgreSQL URL of a fresh schema (its card key in tmp_path)."""
    yield from _database(store_kind, tmp_path, request, monkeypatch)


@pytest.fixture(scope="module")
def module_db_path(store_kind, tmp_path_factory, request) -> str | Path:
    """`db_path` for a module's fixtures that serve a whole module (a sandbox started once)."""
    with pytest.MonkeyPatch.context() as monkeypatch:
        yield from _database(store_kind, tmp_path_factory.mktemp("module-db"), request, monkeypatch)


def _database(store_kind: str, directory: Path, request, monkeypatch):
    if store_kind == "sqlite":
        yield directory / "sandbox.db"
        return
    server = request.getfixturevalue("postgres_url")
    monkeypatch.setenv("GWKIT_SANDBOX_KEY_FILE", str(directory / "sandbox.key"))
    name, url = new_schema(server)
    yield url
    drop_schema(server, name)


@pytest.fixture
def sandbox(db_path):
    handle = gwkit.sandbox.start(db_path, clock_start=CLOCK)
    yield handle
    handle.stop()


@pytest.fixture
def gateway(sandbox):
    client = Gateway(sandbox.base_url)
    yield client
    client.close()
