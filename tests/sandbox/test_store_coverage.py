"""The sandbox test suite runs on both stores (issue 15): every test module of tests/sandbox is
marked `both_stores` (conftest.py), except those named here with the reason."""

from __future__ import annotations

import re
from pathlib import Path

HERE = Path(__file__).resolve().parent
ONE_STORE = {
    "test_fault_codes.py": "reads the sandbox's sources and starts no sandbox",
    "test_pg_store.py": "PostgreSQL's own store: its schema versions, migrations and workers",
    "test_store_interface.py": "the store interface without a server, and the rules its sources keep",
    "test_team_workers.py": "worker processes, which only a PostgreSQL sandbox has",
    "test_store_coverage.py": "this check",
    "test_checkpoint.py": "SQLite's WAL checkpoints: PostgreSQL's store has no WAL of its own to copy",
    "test_references.py": "SQLite's reference counter taken ahead: PostgreSQL's numbers come from a sequence",
    "test_framing.py": "the server's edge: ambiguous framing is refused before any store is reached",
    "test_full_disk.py": "a full disk made with RLIMIT_FSIZE, which only a store in a file meets",
    "test_pg_storage_failure.py": "PostgreSQL refusing writes (a trigger, ended connections): its own half",
    "test_latency_budget.py": "the web layer's budget of delayed requests, held before any store is reached",
    "test_notifications_workers.py": "worker processes, which only a PostgreSQL sandbox has",
    "test_scheduling.py": "which of the web layer's threads a request goes to, decided before any store",
    "test_one_way_in.py": "how the web layer reads, authenticates, routes and secures a request, before any store",
    "test_tables.py": "the handler tables, merged from the modules' constants without a store",
    "test_uvicorn_adapter.py": "uvicorn's sources and version, with no sandbox",
    "test_site_locks.py": "PostgreSQL's lock per site: SQLite has one writer at a time, whatever the sites",
    "test_multi_host.py": "independent processes (hosts) over one database, which only PostgreSQL serves",
    "test_restore_steps.py": "SQLite's restore in steps; PostgreSQL's is one transaction of the tenant's sites",
}
MARKED = re.compile(r"^pytestmark = pytest\.mark\.both_stores\b", re.MULTILINE)


def test_every_sandbox_test_module_runs_on_both_stores():
    modules = {
        str(path.relative_to(HERE)): path.read_text(encoding="utf-8") for path in HERE.rglob("test_*.py")
    }
    unmarked = sorted(
        name for name, text in modules.items() if name not in ONE_STORE and not MARKED.search(text)
    )
    assert unmarked == [], "mark them `pytestmark = pytest.mark.both_stores`, or say in ONE_STORE why not"
    assert set(ONE_STORE) <= set(modules), "ONE_STORE names a module that is gone"
