"""gwkit's pytest plugin: a sandbox gateway and a client for every test, and faults by marker.

Installed with gwkit, it loads by itself (entry point `pytest11`); `pytest -p gwkit.pytest_plugin`
names it explicitly. Fixtures:

- `gwkit_sandbox`: a fresh in-process sandbox (its own SQLite file in the test's temporary
  folder, no server, no socket) for each test;
- `gwkit_client`: a `gwkit.Client` talking to it through an in-process transport, with the
  sandbox's default credentials and site reference.

The marker `@pytest.mark.gwkit_faults(drop_next=1, process=True)` sets the sandbox's faults before
the test runs: the next answers of the gateway are lost (after the request was processed, unless
`process=False`).

    def test_my_checkout_reconciles_a_lost_answer(gwkit_client):
        ...
"""

from __future__ import annotations

from typing import Iterator

import pytest

from .client import Client

try:
    from .sandbox import DEFAULT_ACCOUNT, Sandbox, SandboxTransport
except ImportError:  # gwkit without the [sandbox] extra: the plugin loads, its fixtures skip
    Sandbox = None  # type: ignore[assignment,misc]

MARKER = "gwkit_faults"


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", f"{MARKER}(drop_next=N, process=True): inject faults into gwkit_sandbox "
                                       "before the test")


@pytest.fixture
def gwkit_sandbox(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator["Sandbox"]:
    if Sandbox is None:
        pytest.skip("gwkit's sandbox is not installed: pip install 'gwkit[sandbox]'")
    sandbox = Sandbox(tmp_path_factory.mktemp("gwkit") / "sandbox.db")
    marker = request.node.get_closest_marker(MARKER)
    if marker is not None:
        if marker.args:
            raise pytest.UsageError(f"@pytest.mark.{MARKER} takes keyword arguments only, e.g. drop_next=1")
        sandbox.faults.set(**marker.kwargs)
    yield sandbox
    sandbox.close()


@pytest.fixture
def gwkit_client(gwkit_sandbox: "Sandbox") -> Iterator[Client]:
    account = DEFAULT_ACCOUNT
    with Client("http://gwkit-sandbox.invalid", account.username, account.password,
                sitereference=account.sitereferences[0], transport=SandboxTransport(gwkit_sandbox)) as client:
        yield client
