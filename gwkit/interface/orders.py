"""The orders of request types the gateway runs in one request object: an allow-list.

Any request type runs alone. Several in one object run in the order given, and only in the orders
listed in `SUPPORTED_ORDERS`: the gateway refuses any other order with one ERROR record, `30000`,
`errordata` `["requesttypedescriptions"]` (captured: py-payments-testing
`wiremock/__files/ccAccountcheckRiskdecAuth.json`, the browser library v3's
`tests/wiremock/__files/ccTdqAcheckRiskdecAuth.json`; real-gateway-facts.md, "RISKDEC, request-type
order and threedbypasspaymenttypes"). The client checks the same list before sending.

The list holds every order the kit ran before the list existed (its tests, notebooks and docs), and
the orders captured with RISKDEC. An order the captures do not show is not guessed: it is refused
until a capture or the makers' documentation shows the gateway runs it.
"""

from __future__ import annotations

from collections.abc import Sequence

from .requests import ALONE_TYPES, CHAINS

SUPPORTED_ORDERS: frozenset[tuple[str, ...]] = frozenset(
    {
        # the chains of the official clients' own tests and the browser library's flows
        ("THREEDQUERY", "AUTH"),
        ("ACCOUNTCHECK", "AUTH"),
        ("ACCOUNTCHECK", "THREEDQUERY"),
        ("ACCOUNTCHECK", "SUBSCRIPTION"),
        ("AUTH", "SUBSCRIPTION"),
        ("ACCOUNTCHECK", "AUTH", "SUBSCRIPTION"),
        ("THREEDQUERY", "AUTH", "SUBSCRIPTION"),
        ("ACCOUNTCHECK", "THREEDQUERY", "AUTH"),
        ("ACCOUNTCHECK", "THREEDQUERY", "AUTH", "SUBSCRIPTION"),
        # side by side, as the kit has run them (docs/sandbox.md, "Real client requests")
        ("AUTH", "TRANSACTIONQUERY"),
        ("STORE", "AUTH"),
        ("STORE", "THREEDQUERY"),
        # RISKDEC, as captured (py-payments-testing and the browser library v3's WireMock answers)
        ("RISKDEC", "AUTH"),
        ("RISKDEC", "ACCOUNTCHECK", "AUTH"),
        ("RISKDEC", "ACCOUNTCHECK", "THREEDQUERY"),
        ("RISKDEC", "ACCOUNTCHECK", "THREEDQUERY", "AUTH"),
        ("AUTH", "RISKDEC"),
        ("THREEDQUERY", "AUTH", "RISKDEC"),
    }
)


def supported_order(types: Sequence[str]) -> bool:
    """Does the gateway run these request types, in this order, in one request object?"""
    return len(types) == 1 or tuple(types) in SUPPORTED_ORDERS


def unsupported_order_rule(types: Sequence[str]) -> str:
    """Why an order of request types is refused, in words (for an order `supported_order` refuses)."""
    alone = [t for t in types if t in ALONE_TYPES]
    if alone:
        return f"{alone[0]} cannot be combined with other request types in one object"
    if "SUBSCRIPTION" in types:
        at = list(types).index("SUBSCRIPTION")
        if at != len(types) - 1 or (at > 0 and (types[at - 1], "SUBSCRIPTION") not in CHAINS):
            return "SUBSCRIPTION comes last, after AUTH or ACCOUNTCHECK (or alone, naming its parent)"
    shown = "; ".join(" ".join(order) for order in sorted(SUPPORTED_ORDERS))
    return f"is not an order of request types the gateway runs; the orders it runs: {shown}"
