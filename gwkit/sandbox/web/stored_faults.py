"""The fault book of the team sandbox: faults kept in PostgreSQL, so every worker injects the same ones.

The same interface as `faults.FaultBook`. A fault is a row of `gwkit_faults` (schema version 3):
its site, the payload it was added with, how many are left of a `count`, and the state of a
seeded fault's random source. `pick` reads a site's faults in a write transaction (after every
other writer of any worker), so a count is used exactly once across workers, and a seeded fraction
draws the same sequence whichever workers its requests reach.
"""

from __future__ import annotations

import json
from typing import Any, Iterable

from ..gateway.pgstore import PgStore
from .faults import ActiveFault, FaultBook, parse_fault

_COLUMNS = "id, sitereference, payload, count_left, random_state"


class StoredFaultBook(FaultBook):
    def __init__(self, store: PgStore):
        self._store = store

    def __bool__(self) -> bool:
        return self._store.faults_present()

    def add(self, payload: dict[str, Any], sitereference: str) -> ActiveFault:
        fault = parse_fault(payload, 0, sitereference)  # refused here, with the field and the rule, if wrong
        with self._store.write() as conn:
            (fault.id,) = conn.execute(
                "INSERT INTO gwkit_faults (sitereference, payload, count_left, random_state) "
                "VALUES (?, ?::jsonb, ?, ?::jsonb) RETURNING id",
                (sitereference, json.dumps(payload), fault.count, _state(fault)),
            ).fetchone()
        return fault

    def active(self, sites: Iterable[str]) -> list[ActiveFault]:
        rows = (
            self._store.connection()
            .execute(
                f"SELECT {_COLUMNS} FROM gwkit_faults WHERE sitereference IN (SELECT value FROM json_each(?)) "
                "ORDER BY id",
                (json.dumps(list(sites)),),
            )
            .fetchall()
        )
        return [_fault(row) for row in rows]

    def clear(self, sites: Iterable[str], kind: str | None = None) -> int:
        of_sites = "DELETE FROM gwkit_faults WHERE sitereference IN (SELECT value FROM json_each(?))"
        with self._store.write() as conn:
            if kind is None:
                cleared = conn.execute(of_sites, (json.dumps(list(sites)),))
            else:
                cleared = conn.execute(
                    of_sites + " AND payload->>'kind' = ?", (json.dumps(list(sites)), kind)
                )
        return cleared.rowcount

    def pick(
        self, sitereference: str, requesttypes: Iterable[str], amounts: Iterable[int | None]
    ) -> ActiveFault | None:
        requesttypes, amounts = list(requesttypes), list(amounts)
        with self._store.write() as conn:
            rows = conn.execute(
                f"SELECT {_COLUMNS} FROM gwkit_faults WHERE sitereference = ? ORDER BY id", (sitereference,)
            ).fetchall()
            for row in rows:
                fault = _fault(row)
                if not fault.matches(requesttypes, amounts):
                    continue
                fired = fault.fires()
                picked = fault.picked() if fired else None  # the delay is drawn before the state is kept
                if fault.used_up:
                    conn.execute("DELETE FROM gwkit_faults WHERE id = ?", (fault.id,))
                else:
                    conn.execute(
                        "UPDATE gwkit_faults SET count_left = ?, random_state = ?::jsonb WHERE id = ?",
                        (fault.count, _state(fault), fault.id),
                    )
                if picked is not None:
                    return picked
        return None


def _fault(row: Any) -> ActiveFault:
    fault_id, site, payload, count_left, state = row
    fault = parse_fault(payload, fault_id, site)
    fault.count = count_left
    if state is not None:
        version, internal, gauss = state
        fault._random.setstate((version, tuple(internal), gauss))
    return fault


def _state(fault: ActiveFault) -> str | None:
    """A seeded fault's random source, to go on from where it was; an unseeded one starts afresh."""
    return json.dumps(fault._random.getstate()) if fault.seed is not None else None
