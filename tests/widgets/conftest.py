"""Fixtures of the widget tests: one sandbox per test module and a `Connection` to it, as
`gwkit.connect()` would give a notebook."""

from __future__ import annotations

import pytest

from gwkit import sandbox as sandbox_module
from gwkit.config import Target
from gwkit.connect import Connection


@pytest.fixture(scope="module")
def sandbox(tmp_path_factory):
    handle = sandbox_module.start(tmp_path_factory.mktemp("kit") / "sandbox.db")
    yield handle
    handle.stop()


@pytest.fixture
def gw(sandbox):
    target = Target("sandbox", sandbox.base_url, sandbox.username, sandbox.sitereference, "GBP", "test")
    with Connection(target, sandbox.password, sandbox=sandbox) as connection:
        yield connection
