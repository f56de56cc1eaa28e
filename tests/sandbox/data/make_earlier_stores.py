"""Make the stores of `test_earlier_stores.py` with an earlier gwkit (run with that gwkit importable).

    git worktree add --detach /tmp/gwkit-earlier <commit before issue 31>
    PYTHONPATH=/tmp/gwkit-earlier .venv/bin/python tests/sandbox/data/make_earlier_stores.py \
        postgresql://gwkit:gwkit@127.0.0.1:5432/gwkit_test

writes, beside this script, `earlier.db` and `earlier.db.key` (a SQLite sandbox: an AUTH, a
subscription with its first automated payment, a cachetoken, a snapshot `before`) and
`earlier-postgresql.sql` (the same in a PostgreSQL schema, dumped with pg_dump, its schema name
replaced by `{schema}`, its card key in `earlier-postgresql.key`).
"""

from __future__ import annotations

import os
import secrets
import shutil
import subprocess
import sys
import tempfile
from datetime import datetime
from pathlib import Path
from urllib.parse import quote

import gwkit.sandbox
from gwkit.sandbox.gateway.accounts import DEFAULT_SITEREFERENCE as SITE

HERE = Path(__file__).resolve().parent
CLOCK = datetime(2026, 1, 15, 10, 0, 0)
CARD = {"pan": "4111111111111111", "expirydate": "12/2030", "securitycode": "123"}


def fill(sandbox: gwkit.sandbox.Sandbox) -> None:
    account = sandbox.gateway.default_account

    def send(*requests: dict) -> list[dict]:
        envelope = {"alias": account.username, "version": "1.00", "request": list(requests)}
        answered = sandbox.gateway.process(envelope, account)["response"]
        assert all(record["errorcode"] == "0" for record in answered), answered
        return answered

    base = {"sitereference": SITE, "accounttypedescription": "ECOM", "currencyiso3a": "GBP"}
    send(
        {**base, **CARD, "requesttypedescriptions": ["AUTH"], "baseamount": "1050", "orderreference": "kept"}
    )
    send(
        {
            **base,
            **CARD,
            "requesttypedescriptions": ["AUTH", "SUBSCRIPTION"],
            "baseamount": "700",
            "orderreference": "monthly",
            "subscriptiontype": "RECURRING",
            "subscriptionunit": "MONTH",
            "subscriptionfrequency": "1",
            "subscriptionnumber": "1",
            "subscriptionfinalnumber": "12",
            "subscriptionbegindate": "2026-02-01",
            "credentialsonfile": "1",
        }
    )
    send(
        {
            "sitereference": SITE,
            "requesttypedescriptions": ["CACHETOKENISE"],
            "pan": CARD["pan"],
            "expirymonth": "12",
            "expiryyear": "2030",
            "securitycode": "123",
        }
    )
    sandbox.advance(to="2026-02-02T10:00:00")  # settles the AUTHs, makes the first automated payment
    sandbox.snapshots.save("before")


def main(server: str) -> None:
    with tempfile.TemporaryDirectory() as scratch:
        db = Path(scratch) / "earlier.db"
        sandbox = gwkit.sandbox.Sandbox(db, clock_start=CLOCK)
        fill(sandbox)
        sandbox.store.checkpoint()
        snapshots = Path(f"{db}.snapshots")
        sandbox.close()
        shutil.copy(db, HERE / "earlier.db")
        shutil.copy(f"{db}.key", HERE / "earlier.db.key")
        (saved,) = snapshots.rglob("before.db")
        shutil.copy(saved, HERE / "earlier-snapshot-before.db")

        schema = f"t_{secrets.token_hex(6)}"
        subprocess.run(["psql", server, "-qc", f"CREATE SCHEMA {schema}"], check=True)
        os.environ["GWKIT_SANDBOX_KEY_FILE"] = str(HERE / "earlier-postgresql.key")
        url = f"{server}?options={quote(f'-csearch_path={schema}')}"
        try:
            sandbox = gwkit.sandbox.Sandbox(url, clock_start=CLOCK)
            fill(sandbox)
            sandbox.close()
            dump = subprocess.run(
                ["pg_dump", "--no-owner", "--no-privileges", f"--schema={schema}", server],
                check=True,
                capture_output=True,
                text=True,
            ).stdout
        finally:
            subprocess.run(["psql", server, "-qc", f"DROP SCHEMA {schema} CASCADE"], check=True)
    skipped = ("SET ", "SELECT pg_catalog.set_config", f"CREATE SCHEMA {schema}")  # the test makes its schema
    kept = [line for line in dump.splitlines() if not line.startswith(skipped)]
    (HERE / "earlier-postgresql.sql").write_text("\n".join(kept).replace(schema, "{schema}") + "\n")


if __name__ == "__main__":
    main(sys.argv[1])
