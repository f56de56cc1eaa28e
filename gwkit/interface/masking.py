"""Masking of card data and secrets, for reprs, logs, journals, cassettes and error messages.

The one rule of what is never shown, for every part of gwkit:

- A card number is a Luhn-valid run of 12 to 19 digits, written together or with single spaces,
  dashes or dots between them (`4111111111111111`, `5100 0000 0000 0008`, `4000-0000-0000-0812`),
  in any field or text. It is shown as its first 6 digits, `######`, and its last 4 (the gateway's
  `maskedpan`). A run that fails the Luhn check (an order reference, a phone number) stays clear.
- Security codes, PaRes, MD, cache tokens and passwords are never shown at all, under any name a
  client might give them: the names are compared whatever their case and separators
  (`SecurityCode`, `security_code`, `CVV-2`). Nor are EMV 3-D Secure's challenge messages
  (`threedpayload`, the CReq; `cres`; `threedresponse`) or its `threeDSSessionData`.
"""

from __future__ import annotations

import re
from functools import lru_cache
from typing import Any

from .cards import luhn_ok
from .fields import MASK_PAN, REDACT, SENSITIVE_FIELDS

REDACTED = "[redacted]"
# Names whose values are never shown: the secret fields, credentials, and the ACS's spelling of some
# (v1's PaReq, PaRes and MD; v2's creq, cres and threeDSSessionData, as the browser posts them). A
# pareq carries the card to the issuer: redacted wherever it is shown, as md and pares are.
SECRET_NAMES = frozenset(
    {"password", "authorization", "pareq", "PaRes", "MD", "creq", "cres", "CRes", "threeDSSessionData"}
).union(name for name, kind in SENSITIVE_FIELDS.items() if kind == REDACT)
# What clients and other gateways call the card security code (the 3 or 4 digits on the card).
SECURITY_CODE_NAMES = frozenset(
    {
        "securitycode",
        "cardsecuritycode",
        "cvv",
        "cvv2",
        "cvc",
        "cvc2",
        "cv2",
        "csc",
        "cid",
        "cvd",
        "cvn",
        "cvv2code",
        "cardcvv",
        "cardcvc",
        "cardverificationvalue",
        "cardverificationcode",
        "cardcode",
        "securitynumber",
    }
)
# Separators a name may have: `security_code`, `security-code`, `Security Code`, `cvv.2`.
_NAME_SEPARATORS = str.maketrans("", "", "_- .")
# A run of at least 12 digits, single spaces, dashes or dots between them, that is not part of a
# longer number (a shorter run cannot hold a card number: the regex alone passes it by, in C).
_DIGIT_RUN = re.compile(r"(?<!\d)\d(?:[ .-]?\d){11,}(?!\d)")
_GROUP = re.compile(r"\d+")
MIN_PAN_DIGITS, MAX_PAN_DIGITS = 12, 19


def _normal(name: str) -> str:
    return name.lower().translate(_NAME_SEPARATORS)


_SECRET_KEYS = frozenset(_normal(name) for name in SECRET_NAMES) | SECURITY_CODE_NAMES


@lru_cache(maxsize=4096)
def is_secret(name: str) -> bool:
    """Is `name` a field whose value is never shown (`securitycode`, `CVV-2`, `PaRes`, `password`...)?"""
    return _normal(name) in _SECRET_KEYS


def mask_pan(pan: str) -> str:
    """`411111######1111`: the first 6 digits, six `#`, the last 4. Short values are fully hidden.
    A number written with separators (`4111 1111 1111 1111`) is masked by its digits."""
    pan = str(pan)
    digits = pan.replace(" ", "").replace("-", "").replace(".", "")
    if digits.isdigit():
        pan = digits
    if len(pan) < MIN_PAN_DIGITS:
        return "#" * len(pan)
    return f"{pan[:6]}######{pan[-4:]}"


def mask_value(name: str, value: Any) -> Any:
    """The value of field `name` as it may be shown."""
    if value is None or value == "":
        return value
    kind = SENSITIVE_FIELDS.get(name)
    if kind == MASK_PAN:  # a filter keeps its shape: {"pan": [{"value": "411111######1111"}]}
        return mask_data(value) if isinstance(value, (dict, list)) else mask_pan(str(value))
    if isinstance(name, str) and is_secret(name):
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
        # A key may itself be a card number ({"4111111111111111": ...}): masked too.
        return {mask_text(k) if isinstance(k, str) else k: mask_value(k, v) for k, v in data.items()}
    if isinstance(data, list):
        return [mask_data(item) for item in data]
    if isinstance(data, str):
        return mask_text(data)
    return data


def mask_text(text: str) -> str:
    """Free text with every card number in it masked, however it is written (the module's rule)."""
    if len(text) < MIN_PAN_DIGITS:
        return text
    return _DIGIT_RUN.sub(_masked_run, text)


def _masked_run(match: re.Match[str]) -> str:
    """A run of digits with every card number in it masked: the longest Luhn-valid sequence of whole
    groups (the digits between separators) first, from the left."""
    run = match.group()
    groups = [(g.start(), g.end()) for g in _GROUP.finditer(run)]
    if len(groups) == 1:
        return mask_pan(run) if MIN_PAN_DIGITS <= len(run) <= MAX_PAN_DIGITS and luhn_ok(run) else run
    pieces, first = [], 0
    while first < len(groups):
        found = _card_from(run, groups, first)
        if found is None:
            first += 1
            continue
        last = found
        start, end = groups[first][0], groups[last][1]
        pieces.append((start, end, mask_pan(run[start:end])))
        first = last + 1
    shown, at = [], 0
    for start, end, masked in pieces:
        shown += [run[at:start], masked]
        at = end
    return "".join(shown) + run[at:]


def _card_from(run: str, groups: list[tuple[int, int]], first: int) -> int | None:
    """The last group of the longest card number that starts at group `first`, or None."""
    digits, ends = "", []
    for start, end in groups[first:]:
        digits += run[start:end]
        if len(digits) > MAX_PAN_DIGITS:
            break
        ends.append(digits)
    for last in range(len(ends) - 1, -1, -1):
        if len(ends[last]) >= MIN_PAN_DIGITS and luhn_ok(ends[last]):
            return first + last
    return None
