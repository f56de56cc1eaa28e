"""The test cards and what each does (the real test environment's, plus gwkit's own extras).

One data file, `data/test_cards.csv` (shipped in the wheel as `gwkit/_data/test_cards.csv`), read
by the sandbox's acquirer to decide outcomes and by the notebooks' card pickers to explain them.
"""

from __future__ import annotations

import csv
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path


@dataclass(frozen=True)
class TestCard:
    __test__ = False  # not a pytest test class

    pan: str
    paymenttypedescription: str
    outcome: str  # authorised | declined
    enrolled: str  # Y, N, U, or "" where the scheme has no 3-D Secure
    issuer: str
    issuercountryiso2a: str
    source: str
    notes: str
    # The 3-D Secure version the sandbox runs for the card: 1.0.2 (v1), 2.1.0 or 2.2.0 (EMV 3-D
    # Secure), or "" where the scheme has none; pick cards for a story by it, so new cards change none.
    threedversion: str = ""
    # What 3-D Secure does with the card, as one word (e.g. challenge-success, v1-enrolled).
    threedscase: str = ""

    @property
    def emv3ds(self) -> bool:
        """Is the card one of the EMV 3-D Secure (v2) test cards?"""
        return self.threedversion.startswith("2.")


def _test_cards_path() -> Path:
    in_repo = Path(__file__).resolve().parents[2] / "data" / "test_cards.csv"
    return in_repo if in_repo.exists() else Path(__file__).resolve().parents[1] / "_data" / "test_cards.csv"


@lru_cache(maxsize=1)
def test_cards() -> dict[str, TestCard]:
    """Every test card by its number."""
    with open(_test_cards_path(), newline="", encoding="utf-8") as handle:
        return {row["pan"]: TestCard(**row) for row in csv.DictReader(handle)}


def test_card(pan: str) -> TestCard | None:
    return test_cards().get(pan)


test_cards.__test__ = False  # type: ignore[attr-defined]
test_card.__test__ = False  # type: ignore[attr-defined]
