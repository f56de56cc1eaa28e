"""gwkit uses other libraries through their public interfaces, and leaves its host process alone:
none of these appear in gwkit/ (uvicorn's internals are held by one adapter module, tested in
tests/sandbox/test_uvicorn_adapter.py)."""

from __future__ import annotations

import io
import re
import tokenize
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


def private_reads(source: str) -> list[str]:
    """Each `.name` with a leading underscore (dunders are public) read through anything but `self`:
    in gwkit/pooling.py, which wraps httpx and httpcore objects, that would be one of theirs."""
    tokens = [token for token in tokenize.generate_tokens(io.StringIO(source).readline) if token.string]
    found = []
    for i in range(1, len(tokens) - 1):
        dot, name = tokens[i], tokens[i + 1]
        if dot.string != "." or name.type != tokenize.NAME or not name.string.startswith("_"):
            continue
        if name.string.startswith("__") and name.string.endswith("__"):
            continue
        owner = tokens[i - 1].string
        if owner != "self" or (i >= 2 and tokens[i - 2].string == "."):
            found.append(f"{owner}.{name.string}")
    return found


def test_the_pool_reads_no_private_attribute_of_httpx_or_httpcore():
    source = (ROOT / "gwkit" / "pooling.py").read_text(encoding="utf-8")
    assert private_reads(source) == []


def test_a_private_read_is_found_and_the_modules_own_state_is_not():
    assert private_reads("ssl_context=pool._ssl_context,") == ["pool._ssl_context"]
    assert private_reads("self._pool = transport._pool") == ["transport._pool"]
    assert private_reads("x = self._stream._socket") == ["_stream._socket"]
    assert private_reads("n = client.transport._pool._max_connections") == [
        "transport._pool",
        "_pool._max_connections",
    ]
    assert private_reads("n = make()._pool") == [")._pool"]
    assert private_reads("await self._stream.read(n)  # not pool._x") == []
    assert private_reads("for cls in type(exc).__mro__:") == []
    assert private_reads("text = 'pool._x'") == []
