"""3-D Secure fixtures: a sandbox with a fixed clock, a client for it, gwkit's term URL receiver.

The sandbox here is on `module_db_path`, so a module marked `both_stores` runs on SQLite and on PostgreSQL.
"""

import pytest

from support.threeds import client, receiver, serving  # noqa: F401  (shared fixtures, defined once)


@pytest.fixture(scope="module")
def gateway(module_db_path):
    yield from serving(module_db_path)
