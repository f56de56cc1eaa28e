"""Fixtures of the sandbox tests: a sandbox on a real loopback port with a tmp_path database, and
a raw-JSON caller for it (`support.sandbox.Gateway`).

A test module marked `both_stores` runs each test on SQLite and on PostgreSQL (`store_kind`); the
PostgreSQL half is skipped, saying how to enable it, where no server can be started
(support.databases). Other modules run on SQLite only.
"""

from __future__ import annotations

from pathlib import Path

import pytest

import gwkit.sandbox
from support.databases import STORE_KINDS, drop_schema, new_schema, postgres_server
from support.sandbox import CLOCK, Gateway


def pytest_generate_tests(metafunc):
    if "store_kind" in metafunc.fixturenames and metafunc.definition.get_closest_marker("both_stores"):
        metafunc.parametrize("store_kind", STORE_KINDS, indirect=True)


@pytest.fixture
def store_kind(request) -> str:
    return getattr(request, "param", "sqlite")


@pytest.fixture(scope="session")
def postgres_url() -> str:
    url, why_not = postgres_server()
    if url is None:
        pytest.skip(why_not)
    return url


@pytest.fixture
def db_path(store_kind, tmp_path, request, monkeypatch) -> str | Path:
    """The sandbox's database: a SQLite file, or a PostgreSQL URL of a fresh schema (its card key in tmp_path)."""
    if store_kind == "sqlite":
        yield tmp_path / "sandbox.db"
        return
    server = request.getfixturevalue("postgres_url")
    monkeypatch.setenv("GWKIT_SANDBOX_KEY_FILE", str(tmp_path / "sandbox.key"))
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
