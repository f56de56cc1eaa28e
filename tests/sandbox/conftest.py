"""Fixtures of the sandbox tests: a sandbox on a real loopback port with a tmp_path database, and
a raw-JSON caller for it (`support.sandbox.Gateway`)."""

from __future__ import annotations

from pathlib import Path

import pytest

import gwkit.sandbox
from support.sandbox import CLOCK, Gateway


@pytest.fixture
def db_path(tmp_path) -> Path:
    return tmp_path / "sandbox.db"


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
