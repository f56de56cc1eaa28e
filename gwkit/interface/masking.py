"""Masking of card data and secrets, for reprs, logs, journals and error messages.

A PAN is shown as its first 6 digits, `######`, and its last 4 (the gateway's `maskedpan`).
Security codes, PaRes, MD, cache tokens and passwords are never shown at all; nor are EMV 3-D
Secure's challenge messages (`threedpayload`, the CReq; `cres`; `threedresponse`) or its
`threeDSSessionData`.
"""

from __future__ import annotations

from typing import Any

from .cards import luhn_ok
from .fields import MASK_PAN, REDACT, SENSITIVE_FIELDS
from .wire import PAN_PATTERN

REDACTED = "[redacted]"
# Names whose values are never shown: the secret fields, credentials, and the ACS's spelling of some
# (v1's PaRes and MD; v2's creq, cres and threeDSSessionData, as the browser posts them).
SECRET_NAMES = frozenset(
    {"password", "authorization", "PaRes", "MD", "creq", "cres", "CRes", "threeDSSessionData"}
).union(name for name, kind in SENSITIVE_FIELDS.items() if kind == REDACT)


def mask_pan(pan: str) -> str:
    """`411111######1111`: the first 6 digits, six `#`, the last 4. Short values are fully hidden."""
    pan = str(pan)
    if len(pan) < 12:
        return "#" * len(pan)
    return f"{pan[:6]}######{pan[-4:]}"


def mask_value(name: str, value: Any) -> Any:
    """The value of field `name` as it may be shown."""
    if value is None or value == "":
        return value
    kind = SENSITIVE_FIELDS.get(name)
    if kind == MASK_PAN:  # a filter keeps its shape: {"pan": [{"value": "411111######1111"}]}
        return mask_data(value) if isinstance(value, (dict, list)) else mask_pan(str(value))
    if name in SECRET_NAMES:
        return REDACTED
    if isinstance(value, str):
        return mask_text(value)
    if isinstance(value, int) and not isinstance(value, bool):  # a card number given as a number
        text = str(value)
        masked = mask_text(text)
        return value if masked == text else masked
    if isinstance(value, (dict, list)):
        return mask_data(value)
    return value


def mask_data(data: Any) -> Any:
    """A deep copy of a request, response or envelope with every sensitive value masked."""
    if isinstance(data, dict):
        # mask_value first: a sensitive name hides its value whatever its shape ({"securitycode": ["123"]}).
        return {k: mask_value(k, v) for k, v in data.items()}
    if isinstance(data, list):
        return [mask_data(item) for item in data]
    if isinstance(data, str):
        return mask_text(data)
    return data


def mask_text(text: str) -> str:
    """Free text with every card-number-like run of 12-19 digits that passes Luhn masked."""
    if len(text) < 12:
        return text
    return PAN_PATTERN.sub(lambda m: mask_pan(m.group()) if luhn_ok(m.group()) else m.group(), text)
