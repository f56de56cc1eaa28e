"""The analyst's books (a session fixture, provided by tests/report/conftest.py): two months of
payments in GBP and EUR made through the sandbox by `gwkit.report.sample.sample_activity`, the data
notebook 07 reports on, with an order reference that would run as a spreadsheet formula."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

import pytest

import gwkit.sandbox
from gwkit.config import Target
from gwkit.connect import Connection
from gwkit.journal import Journal
from gwkit.querying import query_all
from gwkit.report.sample import sample_activity

BOOKS_START = datetime(2026, 1, 5, 9, 0, 0)
HYPERLINK = '=HYPERLINK("http://x.example","y")'


@dataclass
class Books:
    """What the analyst made: the references by name, and the connection, sandbox and journal."""

    gw: Any
    sandbox: Any
    journal: Journal
    refs: dict[str, str]

    def records(self) -> list[dict[str, Any]]:
        return [dict(r) for r in query_all(self.gw, start=BOOKS_START.date(), end=self.sandbox.now().date())]


@pytest.fixture(scope="session")
def books(tmp_path_factory):
    """Two months from 2026-01-05 (see gwkit/report/sample.py); Sam's order reference is a formula."""
    folder = tmp_path_factory.mktemp("books")
    handle = gwkit.sandbox.start(folder / "sandbox.db", clock_start=BOOKS_START)
    target = Target("sandbox", handle.base_url, handle.username, handle.sitereference, "GBP", "test")
    journal = Journal(folder / "journal.db")  # the updates, for the one-payment view
    # a Connection, as gwkit.connect gives a notebook: it knows its sandbox, so reports read its clock
    client = Connection(target, handle.password, sandbox=handle, journal=journal)
    try:
        refs = sample_activity(client, orders={"sam": HYPERLINK})
        yield Books(client, handle, journal, refs)
    finally:
        client.close()
        journal.close()
        handle.stop()
