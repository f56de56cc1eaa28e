"""The follow-up actions a response record suggests, as plain data (the view makes buttons).

QUERY      any record with a transactionreference: query it with TRANSACTIONQUERY
USE_CARD   a successful STORE record: an AUTH form with the stored card as parent
AUTH_AFTER a THREEDQUERY answered "not enrolled" (N) or "unknown" (U): the AUTH that follows it
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from ..interface.codes import record_ok

QUERY, USE_CARD, AUTH_AFTER = "query", "use-card", "auth-after-3ds"


@dataclass(frozen=True)
class Action:
    kind: str
    label: str
    reference: str
    form: tuple[str, str] | None = None  # (request type, variant) of the form the action opens
    values: Mapping[str, str] = field(default_factory=dict)  # pre-filled form values


def follow_ups(record: Mapping[str, Any]) -> list[Action]:
    """What a user may want to do next with `record` (a response record, masked or not)."""
    reference = record.get("transactionreference")
    if not isinstance(reference, str) or not reference:
        return []
    kind = record.get("requesttypedescription")
    ok = record_ok(record)
    noun = {"SUBSCRIPTION": "subscription", "STORE": "stored card"}.get(str(kind), "transaction")
    actions = [Action(QUERY, f"Query this {noun} ({reference})", reference)]
    if kind == "STORE" and ok and str(record.get("transactionactive", "1")) != "0":
        actions.append(
            Action(
                USE_CARD,
                f"Use this stored card ({reference})",
                reference,
                ("AUTH", "parent"),
                {"parenttransactionreference": reference},
            )
        )
    if kind == "THREEDQUERY" and ok and record.get("enrolled") in ("N", "U"):
        actions.append(
            Action(
                AUTH_AFTER,
                f"AUTH after this 3-D Secure check ({reference})",
                reference,
                ("AUTH", "parent"),
                {"parenttransactionreference": reference},
            )
        )
    return actions
