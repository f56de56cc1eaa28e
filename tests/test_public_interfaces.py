"""gwkit uses other libraries through their public interfaces, and leaves its host process alone:
none of these appear in gwkit/ (uvicorn's internals are held by one adapter module, tested in
tests/sandbox/test_uvicorn_adapter.py)."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
FORBIDDEN = {
    "_transport_for_url": "httpx's private transport choice (sending.transport_for chooses)",
    "._cookies": "httpx.Client's private cookie jar",
    "sys.modules[": "the user's module table",
    "__closure__": "another library's closures",
    "cell_contents": "another library's closures",
    "gc.freeze": "the user's garbage collector",
    "ipykernel": "the user's kernel",
    "iopub_thread": "the user's kernel",
}


def test_gwkit_reaches_into_no_other_librarys_internals_nor_the_users_process():
    found = []
    for path in sorted((ROOT / "gwkit").rglob("*.py")):
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            for text, what in FORBIDDEN.items():
                if text in line:
                    found.append(f"{path.relative_to(ROOT)}:{number}: {text} ({what})")
    assert found == []


def test_the_forbidden_words_are_found_where_they_are():
    """The check above would catch each (it is not looking at the wrong files)."""
    sample = "\n".join(FORBIDDEN)
    assert all(re.search(re.escape(text), sample) for text in FORBIDDEN)
