"""Chained request types: a later request type taking the record before it as its parent.

In one request object, the pairs of `gwkit.interface.requests.CHAINS` (THREEDQUERY then AUTH,
ACCOUNTCHECK then AUTH, THREEDQUERY or SUBSCRIPTION) run in order, the second with the first record's
`transactionreference` as its `parenttransactionreference` and without the card fields the first
one used (it inherits the card). Across the request objects of one envelope, an object whose first
request type chains from the record before it, and which names no parent and carries no card,
takes that record as its parent the same way (an ACCOUNTCHECK object, then a SUBSCRIPTION object).

The chain stops after a THREEDQUERY for a card that is enrolled (or whose enrolment is unknown):
the customer must authenticate first, so only the THREEDQUERY record comes back. With EMV 3-D
Secure (`threedversion` 2.x) it stops only for a challenge (an `acsurl`): a frictionless answer
goes on, as the real gateway does. After a failed
record the next request type still runs, and its own parent rule answers (a SUBSCRIPTION: 20019).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ...interface.requests import CHAINS

# What a request object may carry as its card; a child that inherits the card does not send it.
CARD_INPUTS = ("pan", "expirydate", "expirymonth", "expiryyear", "cachetoken", "md", "pares")


def child_request(request: Mapping[str, Any], parent: Mapping[str, Any]) -> dict[str, Any]:
    """The request a chained request type runs with: the object's fields, the card left to the parent."""
    child = {name: value for name, value in request.items() if name not in CARD_INPUTS}
    child["parenttransactionreference"] = parent["transactionreference"]
    return child


def goes_on(parent: Mapping[str, Any] | None) -> bool:
    """Does the next request type of the object run after `parent`, the record just answered?"""
    if parent is None or not parent.get("transactionreference"):
        return False
    if parent.get("requesttypedescription") != "THREEDQUERY":
        return True
    if str(parent.get("threedversion", "")).startswith("2."):  # EMV 3-D Secure: on unless challenged
        return not parent.get("acsurl")
    return parent.get("enrolled") not in ("Y", "U")


def with_envelope_parent(request: dict[str, Any], previous: Mapping[str, Any] | None) -> dict[str, Any]:
    """A request object that chains from the previous object's last record, with that record as its parent."""
    types = request.get("requesttypedescriptions")
    if (
        previous is None
        or not previous.get("transactionreference")
        or not isinstance(types, list)
        or not types
        or not isinstance(types[0], str)
        or (previous.get("requesttypedescription"), types[0]) not in CHAINS
        or request.get("parenttransactionreference")
        or any(request.get(n) for n in CARD_INPUTS)
    ):
        return request
    return {**request, "parenttransactionreference": previous["transactionreference"]}
