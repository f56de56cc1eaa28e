"""The proxy tests' fixtures: an in-process sandbox (`box`) and proxies on loopback (`run_proxy`)."""

from __future__ import annotations

from datetime import datetime

import pytest

import gwkit.sandbox
from gwkit.journal import Journal
from gwkit.proxy import Proxy, start

CLOCK = datetime(2026, 1, 15, 10, 0, 0)


@pytest.fixture
def box(tmp_path):
    sandbox = gwkit.sandbox.Sandbox(tmp_path / "sandbox.db", clock_start=CLOCK)
    yield sandbox
    sandbox.close()


@pytest.fixture
def run_proxy(tmp_path):
    """run_proxy(upstream, **options) -> (handle, lines): a proxy on loopback, journalled to
    tmp_path/journal.db; `lines` is what it would print in the terminal."""
    handles = []

    def run(upstream, **options):
        lines: list[str] = []
        options.setdefault("journal", Journal(tmp_path / "journal.db"))
        handle = start(Proxy(upstream, echo=lines.append, **options))
        handles.append(handle)
        return handle, lines

    yield run
    for handle in handles:
        handle.stop()
