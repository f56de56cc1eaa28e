"""ProgressBar follows a long operation: gw.query_all's windows, day by day."""

from __future__ import annotations

from datetime import timedelta

from gwkit.widgets import ProgressBar


def test_the_bar_follows_query_all_to_the_end(gw):
    card = {
        "accounttypedescription": "ECOM",
        "pan": "4111111111111111",
        "expirydate": "12/2030",
        "securitycode": "123",
    }
    gw.auth(baseamount=1050, orderreference="bar-1", **card)
    today = gw.sandbox.now().date()
    bar = ProgressBar("Days queried")
    frame = gw.query_all(
        {"orderreference": "bar-1"}, start=today - timedelta(days=6), end=today, progress=bar
    )
    assert list(frame["orderreference"]) == ["bar-1"]
    assert (bar.bar.value, bar.bar.max, bar.bar.bar_style) == (7, 7, "success")
    assert bar.text.value == "7 of 7"


def test_the_bar_never_overflows():
    bar = ProgressBar()
    bar(0, 0)
    assert (bar.bar.value, bar.bar.max) == (0, 1)
    bar(5, 3)
    assert bar.bar.value == bar.bar.max == 3
