"""`threedbypasspaymenttypes`: the payment types for which 3-D Secure is skipped.

A list of payment types (`["VISA", "AMEX"]`), sent in a request object or set for a site (the
sandbox's accounts file). When it names the card's payment type, the gateway skips the THREEDQUERY:
it makes no THREEDQUERY record but uses up one transaction reference, and the rest of the object
runs; a THREEDQUERY alone is answered `22000` `Bypass` (captured: the browser library v3's
`tests/wiremock/__files/ccBypass_requesttypedescriptions.json` and `ccAccountcheckAuth.json`;
real-gateway-facts.md, "RISKDEC, request-type order and threedbypasspaymenttypes").

Unlike every other field its value is a list, not a string: validation checks it here.
"""

from __future__ import annotations

import re
from typing import Any

BYPASS_FIELD = "threedbypasspaymenttypes"
MAX_PAYMENT_TYPES = 20
_PAYMENT_TYPE = re.compile(r"[A-Z]{1,20}")
BYPASS_RULE = (
    f'must be a list of at most {MAX_PAYMENT_TYPES} payment types in capitals, such as ["VISA", "MASTERCARD"]'
)


def bypass_rule_broken(value: Any) -> str | None:
    """None when `value` is a usable list of payment types, otherwise the rule it breaks."""
    if (
        not isinstance(value, list)
        or len(value) > MAX_PAYMENT_TYPES
        or not all(isinstance(item, str) and _PAYMENT_TYPE.fullmatch(item) for item in value)
    ):
        return BYPASS_RULE
    return None


def bypassed_types(value: Any) -> frozenset[str]:
    """The payment types a (valid) value names; none for a value that breaks the rule."""
    return frozenset(value) if bypass_rule_broken(value) is None else frozenset()
