"""IsoDateInput: a date shown and typed as YYYY-MM-DD, checked while typing."""

from __future__ import annotations

from datetime import date

import pytest

from gwkit.widgets.iso_date import IsoDateInput, parse_iso_date


def test_a_date_set_by_the_program_is_shown_as_iso():
    box = IsoDateInput(description="To date", value=date(2026, 12, 1))
    assert box.text.value == "2026-12-01" and box.error.value == ""
    box.value = date(2027, 1, 31)
    assert box.text.value == "2027-01-31"
    box.value = None
    assert box.text.value == ""


def test_a_typed_date_becomes_the_value_and_observers_hear_it():
    box = IsoDateInput(description="To date")
    heard: list[date | None] = []
    box.observe(lambda change: heard.append(change["new"]), names="value")
    box.text.value = " 2026-02-28 "
    assert box.value == date(2026, 2, 28) and heard == [date(2026, 2, 28)] and box.error.value == ""
    assert box.text.value == " 2026-02-28 "  # the reader's text is not rewritten under their cursor


@pytest.mark.parametrize(
    "typed, said",
    [("12/01/2026", "YYYY-MM-DD"), ("2026-1-5", "YYYY-MM-DD"), ("2026-02-30", "not a day of the calendar")],
)
def test_text_that_is_not_an_iso_date_is_named_inline_and_gives_no_value(typed, said):
    box = IsoDateInput(description="To date", value=date(2026, 12, 1))
    box.text.value = typed
    assert box.value is None
    assert said in box.error.value and "To date" in box.error.value
    assert box.text.value == typed  # kept for the reader to correct
    box.text.value = "2026-12-02"
    assert box.error.value == "" and box.value == date(2026, 12, 2)


def test_blank_is_no_date_and_no_error():
    box = IsoDateInput(value=date(2026, 12, 1))
    box.text.value = ""
    assert box.value is None and box.error.value == ""


def test_parse_names_the_rule():
    assert parse_iso_date("2026-11-26") == date(2026, 11, 26)
    with pytest.raises(ValueError, match="YYYY-MM-DD"):
        parse_iso_date("26.11.2026")
