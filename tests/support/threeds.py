"""Shared pieces of the 3-D Secure tests: a sandbox on 127.0.0.1 with a fixed clock, a client for
it, and gwkit's term URL receiver. Each folder's conftest.py that needs them provides them."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import datetime
from pathlib import Path

import pytest

import gwkit
import gwkit.sandbox
from gwkit.threeds import TermUrlReceiver

START = datetime(2026, 3, 2, 9, 0, 0)
CARD = {"pan": "4111110000000211", "expirydate": "12/2030", "securitycode": "123", "baseamount": "1050"}


def serving(db: str | Path) -> Iterator[gwkit.sandbox.SandboxHandle]:
    """A sandbox on `db` with the 3-D Secure tests' clock, stopped when the generator is closed."""
    handle = gwkit.sandbox.start(db, clock_start=START)
    yield handle
    handle.stop()


@pytest.fixture(scope="module")
def gateway(tmp_path_factory):
    yield from serving(tmp_path_factory.mktemp("threeds") / "sandbox.db")


@pytest.fixture(scope="module")
def client(gateway):
    with gwkit.Client(
        gateway.base_url,
        gateway.username,
        gateway.password,
        sitereference=gateway.sitereference,
        currencyiso3a="GBP",
    ) as c:
        yield c


@pytest.fixture(scope="module")
def receiver():
    with TermUrlReceiver() as r:
        yield r
