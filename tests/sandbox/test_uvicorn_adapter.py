"""gwkit/sandbox/web/uvicorn_adapter.py holds every use of uvicorn beyond its public API. The uvicorn
functions it copies or depends on are fingerprinted here: a uvicorn that changes one fails loudly,
naming it, instead of the sandbox going wrong quietly."""

from __future__ import annotations

import hashlib
import inspect
import re
import tomllib
from pathlib import Path

import pytest
import uvicorn
from uvicorn.protocols.http.h11_impl import H11Protocol

ROOT = Path(__file__).resolve().parents[2]

# sha256 (first 16 hex digits) of each function's source in uvicorn 0.54, and what the adapter does with it.
FINGERPRINTS = {
    (uvicorn.Server, "main_loop"): ("afccb353a119333f", "PromptServer.main_loop copies it, less its sleep"),
    (uvicorn.Server, "shutdown"): ("9b33c50562992b1e", "PromptServer.shutdown copies it, less its pauses"),
    (uvicorn.Server, "on_tick"): ("60ea49b06ccf68c1", "PromptServer.main_loop calls it every tick"),
    (uvicorn.Server, "_wait_tasks_to_complete"): ("17209be1e991445d", "PromptServer._connections_done"),
    (H11Protocol, "__init__"): ("ad1ed8e837b2db8d", "GuardedH11Protocol wraps the app it sets"),
    (H11Protocol, "handle_events"): ("e63a9d1492e3efe7", "builds the scope the wrapped app extends"),
    (H11Protocol, "connection_made"): ("6efb565ff3d36b91", "GuardedH11Protocol starts the head timer"),
    (H11Protocol, "data_received"): ("e03b145518ca44aa", "GuardedH11Protocol reads conn.their_state"),
    (H11Protocol, "connection_lost"): ("dbb688fa2b386000", "GuardedH11Protocol stops its timers"),
    (H11Protocol, "pause_writing"): ("17a8fd215d96a13c", "GuardedH11Protocol watches the drain"),
    (H11Protocol, "resume_writing"): ("7844bbaa8cceb1ef", "GuardedH11Protocol stops the stall timer"),
    (H11Protocol, "shutdown"): ("aaa6d607648bad7d", "PromptServer.shutdown calls it per connection"),
    (H11Protocol, "send_400_response"): ("56937b748fc59d92", "GuardedH11Protocol names the framing refusal"),
}


@pytest.mark.parametrize(
    ("owner", "name"), list(FINGERPRINTS), ids=[f"{o.__name__}.{n}" for o, n in FINGERPRINTS]
)
def test_the_uvicorn_functions_the_adapter_relies_on_are_unchanged(owner, name):
    expected, use = FINGERPRINTS[(owner, name)]
    function = getattr(owner, name, None)
    assert function is not None, f"uvicorn {uvicorn.__version__} has no {owner.__name__}.{name} ({use})"
    found = hashlib.sha256(inspect.getsource(function).encode()).hexdigest()[:16]
    assert found == expected, (
        f"uvicorn {uvicorn.__version__} changed {owner.__name__}.{name} ({use}): read the new one, bring "
        "gwkit/sandbox/web/uvicorn_adapter.py in line with it, then update its fingerprint here and "
        "uvicorn's range in pyproject.toml"
    )


def test_the_installed_uvicorn_is_in_the_range_pyproject_allows():
    extras = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"]
    [requirement] = [r for r in extras["sandbox"] if r.startswith("uvicorn")]
    bounds = re.fullmatch(r"uvicorn>=(\d+)\.(\d+),<(\d+)\.(\d+)", requirement)
    assert bounds, f"{requirement}: uvicorn needs a lower and an upper bound (the adapter copies one version)"
    low, high = tuple(map(int, bounds.groups()[:2])), tuple(map(int, bounds.groups()[2:]))
    installed = tuple(int(part) for part in uvicorn.__version__.split(".")[:2])
    assert low <= installed < high, f"uvicorn {uvicorn.__version__} is outside {requirement}"


def test_uvicorn_is_reached_beyond_its_public_api_only_in_the_adapter():
    """uvicorn's protocol classes and Server's methods are named in one module of gwkit."""
    private_use = re.compile(r"uvicorn\.protocols|\(uvicorn\.Server\)|server_state|def main_loop")
    users = sorted(
        str(path.relative_to(ROOT))
        for path in (ROOT / "gwkit").rglob("*.py")
        if private_use.search(path.read_text(encoding="utf-8"))
    )
    assert users == ["gwkit/sandbox/web/uvicorn_adapter.py"]
