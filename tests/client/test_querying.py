"""query_all past the 500-record cap: 5,000 transactions over 50 days come back each exactly once."""

from __future__ import annotations

from collections import Counter
from datetime import date, timedelta
from itertools import pairwise

import pytest

import gwkit
from gwkit.querying import QueryCapError, Window, query_all
from gwkit.sandbox import Sandbox, SandboxTransport

USER, PASSWORD, SITE = "gwkit_sandbox", "gwkit-sandbox-password", "test_gwkit12345"
CARD = {
    "accounttypedescription": "ECOM",
    "currencyiso3a": "GBP",
    "pan": "4111111111111111",
    "expirydate": "12/2030",
    "securitycode": "123",
    "sitereference": SITE,
}
DAYS, PER_DAY = 50, 100


def auth_objects(day: int, count: int) -> list[dict]:
    return [
        {
            "requesttypedescriptions": ["AUTH"],
            "baseamount": str(1000 + i),
            "orderreference": f"d{day}-{i}",
            **CARD,
        }
        for i in range(count)
    ]


@pytest.fixture(scope="module")
def busy(tmp_path_factory):
    """A sandbox holding 5,000 AUTHs, 100 a day for 50 days."""
    sandbox = Sandbox(tmp_path_factory.mktemp("query") / "sandbox.db")
    client = gwkit.Client(
        "http://sandbox.test", USER, PASSWORD, sitereference=SITE, transport=SandboxTransport(sandbox)
    )
    first = sandbox.clock.today()
    for day in range(DAYS):
        assert client.send(auth_objects(day, PER_DAY)).ok
        sandbox.advance(by="P1D")
    yield client, first
    client.close()
    sandbox.close()


def test_five_thousand_records_each_exactly_once(busy):
    client, first = busy
    seen = []
    records = query_all(
        client, start=first, end=first + timedelta(days=DAYS), progress=lambda d, t: seen.append((d, t))
    )
    references = Counter(r["transactionreference"] for r in records)
    assert len(references) == DAYS * PER_DAY and set(references.values()) == {1}
    assert {r["orderreference"] for r in records} == {
        f"d{d}-{i}" for d in range(DAYS) for i in range(PER_DAY)
    }
    stamps = [r["transactionstartedtimestamp"] for r in records]
    assert stamps == sorted(stamps, reverse=True)  # newest first
    assert seen[-1] == (DAYS + 1, DAYS + 1) and all(a <= b for (a, _), (b, _) in pairwise(seen))


def test_filters_apply_inside_every_window(busy):
    client, first = busy
    records = query_all(client, {"orderreference": "d7-3"}, start=first, end=first + timedelta(days=DAYS))
    assert [r["orderreference"] for r in records] == ["d7-3"]


def test_a_day_over_the_cap_is_a_clear_error(tmp_path):
    sandbox = Sandbox(tmp_path / "sandbox.db")
    with gwkit.Client(
        "http://sandbox.test", USER, PASSWORD, sitereference=SITE, transport=SandboxTransport(sandbox)
    ) as client:
        for batch in range(6):
            client.send(auth_objects(batch, 100))
        today = sandbox.clock.today()
        with pytest.raises(QueryCapError, match=f"more than 500 records match on {today}"):
            query_all(client, start=today, end=today)
    sandbox.close()


def test_windows_split_into_halves_that_cover_every_day():
    window = Window(date(2026, 1, 1), date(2026, 1, 31))
    earlier, later = window.halves()
    assert (earlier.start, earlier.end, later.start, later.end) == (
        date(2026, 1, 1),
        date(2026, 1, 15),
        date(2026, 1, 16),
        date(2026, 1, 31),
    )
    assert earlier.days + later.days == window.days
    with pytest.raises(ValueError, match="before start"):
        query_all(None, start=date(2026, 2, 1), end=date(2026, 1, 1))
