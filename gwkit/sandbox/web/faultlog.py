"""The fault log: every injected fault, one row each, in the sandbox's store (`fault_log`)."""

from __future__ import annotations

import json
import sqlite3
from dataclasses import dataclass
from typing import Any, Iterable

SCHEMA = """
CREATE TABLE IF NOT EXISTS fault_log (
    id INTEGER PRIMARY KEY,
    sitereference TEXT NOT NULL,
    injected TEXT NOT NULL,          -- sandbox clock
    fault_id INTEGER NOT NULL,
    kind TEXT NOT NULL,
    params TEXT NOT NULL,            -- JSON: the kind's parameters
    requesttypes TEXT NOT NULL,      -- JSON list of the request types of the request
    orderreference TEXT,
    transactionreference TEXT,       -- of the transaction made, when one was
    made INTEGER NOT NULL            -- 1: a transaction was made and stored
);
CREATE INDEX IF NOT EXISTS fault_log_site ON fault_log (sitereference, id);
"""


@dataclass(frozen=True)
class Injection:
    """One injected fault, as logged."""

    sitereference: str
    fault_id: int
    kind: str
    params: dict[str, Any]
    requesttypes: list[str]
    orderreference: str | None
    transactionreference: str | None
    made: bool


def record(conn: sqlite3.Connection, injected: str, entry: Injection) -> None:
    conn.execute(
        "INSERT INTO fault_log (sitereference, injected, fault_id, kind, params, requesttypes, "
        "orderreference, transactionreference, made) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
        (
            entry.sitereference,
            injected,
            entry.fault_id,
            entry.kind,
            json.dumps(entry.params),
            json.dumps(entry.requesttypes),
            entry.orderreference,
            entry.transactionreference,
            int(entry.made),
        ),
    )


def read(conn: sqlite3.Connection, sites: Iterable[str]) -> list[dict[str, Any]]:
    sites = list(sites)
    rows = conn.execute(
        f"SELECT * FROM fault_log WHERE sitereference IN ({', '.join('?' * len(sites))}) ORDER BY id", sites
    ).fetchall()
    return [
        {
            "sitereference": r["sitereference"],
            "injected": r["injected"],
            "fault_id": r["fault_id"],
            "kind": r["kind"],
            "params": json.loads(r["params"]),
            "requesttypes": json.loads(r["requesttypes"]),
            "orderreference": r["orderreference"],
            "transactionreference": r["transactionreference"],
            "made": bool(r["made"]),
        }
        for r in rows
    ]
