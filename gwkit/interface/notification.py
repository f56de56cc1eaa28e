"""URL notifications as the real service sends them: the fields, and how `responsesitesecurity` is made.

The gateway POSTs a form (`application/x-www-form-urlencoded; charset=UTF-8`) to the merchant's URL.
With a notification password, `responsesitesecurity` is the SHA-256 (hex) of the values of the
fields sent, taken in the order of their names (ASCII), leaving out `notificationreference` and
`responsesitesecurity`, followed by the password. The worked example of docs/notifications.md:

    >>> fields = {"notificationreference": "nt4f1c2d", "transactionreference": "75-9-1",
    ...           "errorcode": "0", "baseamount": "1050", "currencyiso3a": "GBP",
    ...           "parenttransactionreference": ""}
    >>> signed_text(fields, "mypassword")
    '1050GBP075-9-1mypassword'
    >>> signature(fields, "mypassword")
    'b4be00e37ea1e7aa76bcfe475abe28067485a4cce4b12802f63d12fb3399b0f9'
"""

from __future__ import annotations

import hashlib
import hmac
from collections.abc import Mapping

CONTENT_TYPE = "application/x-www-form-urlencoded; charset=UTF-8"
SIGNATURE_FIELD = "responsesitesecurity"
REFERENCE_FIELD = "notificationreference"
UNSIGNED_FIELDS = frozenset({SIGNATURE_FIELD, REFERENCE_FIELD})
DEFAULT_FIELDS = (
    "notificationreference",
    "transactionreference",
    "parenttransactionreference",
    "requesttypedescription",
    "errorcode",
    "settlestatus",
    "orderreference",
    "baseamount",
    "currencyiso3a",
    "maskedpan",
    "authcode",
    "accounttypedescription",
    "sitereference",
)


def signed_text(fields: Mapping[str, str], password: str) -> str:
    """What is hashed: the signed fields' values in the order of their names (ASCII), then the password."""
    names = sorted(name for name in fields if name not in UNSIGNED_FIELDS)
    return "".join(fields[name] for name in names) + password


def signature(fields: Mapping[str, str], password: str) -> str:
    """`responsesitesecurity` of these fields (the ones sent) with the notification password."""
    return hashlib.sha256(signed_text(fields, password).encode("utf-8")).hexdigest()


def signature_ok(fields: Mapping[str, str], password: str) -> bool:
    """Whether a received notification's `responsesitesecurity` is the one its fields and `password`
    make (compared in constant time, as a merchant's handler must)."""
    sent = fields.get(SIGNATURE_FIELD)
    return sent is not None and hmac.compare_digest(sent.lower(), signature(fields, password))
