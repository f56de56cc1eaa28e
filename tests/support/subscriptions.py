"""Shared fixtures of the subscription tests (provided by the conftest.py of each folder that uses them): a sandbox on 127.0.0.1 whose clock starts on a fixed
day, and a client for it. Each test gets its own database (subscriptions change the clock)."""

from __future__ import annotations

from datetime import datetime

import pytest

import gwkit
import gwkit.sandbox

CLOCK = datetime(2026, 1, 10, 9, 0, 0)
VISA = "4111111111111111"


@pytest.fixture
def sandbox(tmp_path):
    handle = gwkit.sandbox.start(tmp_path / "sandbox.db", clock_start=CLOCK)
    yield handle
    handle.stop()


@pytest.fixture
def gw(sandbox):
    with gwkit.Client(
        sandbox.base_url,
        sandbox.username,
        sandbox.password,
        sitereference=sandbox.sitereference,
        currencyiso3a="GBP",
    ) as client:
        yield client
