"""The messages of EMV 3-D Secure (v2) that pass through the merchant's side, read and built as
the makers' browser library does: the challenge request (CReq) the gateway hands out as
`threedpayload`, the challenge response (CRes) the ACS posts back as `cres`, the 3DS method's
`threeDSMethodData`, and the unsigned JWT sent to the gateway as `threedresponse`.

All of them are JSON in base64: the CReq, CRes and method data in base64url (EMV 3DS), the JWT's
parts in plain base64 without padding (the browser library's `btoa`).
"""

from __future__ import annotations

import base64
import binascii
import json
import time
import uuid
from collections.abc import Mapping
from typing import Any

from ..errors import ThreeDSecureError

__all__ = [
    "ACTION_CODES",
    "decode_b64_json",
    "encode_b64url_json",
    "method_data",
    "read_jwt",
    "threedresponse_jwt",
]

# What the browser library reports after the challenge (its ResultActionCode), and whether it
# counts as validated: SUCCESS the cardholder passed, FAILURE they did not, ERROR the challenge
# broke, NOACTION nothing was asked (frictionless).
ACTION_CODES = {"SUCCESS": True, "NOACTION": True, "FAILURE": False, "ERROR": False}
_JWT_LIFETIME = 7200  # seconds: the browser library's two hours


def decode_b64_json(text: str, what: str) -> dict[str, Any]:
    """JSON from base64 or base64url, padded or not; ThreeDSecureError naming `what` otherwise."""
    cleaned = text.strip().replace("-", "+").replace("_", "/")
    try:
        data = json.loads(base64.b64decode(cleaned + "=" * (-len(cleaned) % 4), validate=True))
    except (binascii.Error, ValueError) as error:
        raise ThreeDSecureError(f"{what} is not base64-encoded JSON: {error}") from error
    if not isinstance(data, dict):
        raise ThreeDSecureError(f"{what} is not a JSON object")
    return data


def encode_b64url_json(data: Mapping[str, Any]) -> str:
    """base64url without padding, as EMV 3DS encodes its browser messages."""
    raw = json.dumps(dict(data), separators=(",", ":")).encode()
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def method_data(transaction_id: str, notification_url: str) -> str:
    """The `threeDSMethodData` form field the browser posts to the 3DS method URL."""
    return encode_b64url_json(
        {"threeDSServerTransID": transaction_id, "threeDSMethodNotificationURL": notification_url}
    )


def _b64(data: Mapping[str, Any]) -> str:
    return base64.b64encode(json.dumps(dict(data), separators=(",", ":")).encode()).decode().rstrip("=")


def threedresponse_jwt(
    action_code: str,
    *,
    cres: str | None = None,
    description: str = "",
    now: float | None = None,
) -> str:
    """The `threedresponse` the browser library builds after a challenge: an unsigned JWT (`alg`
    none) whose Payload says whether the cardholder was validated, the library's ActionCode, the
    CRes's transStatus as PAResStatus, and the CRes itself."""
    if action_code not in ACTION_CODES:
        raise ThreeDSecureError(f"action code {action_code!r}: expected one of {', '.join(ACTION_CODES)}")
    validated = ACTION_CODES[action_code]
    cres_fields: dict[str, Any] = {}
    if cres:
        try:
            cres_fields = decode_b64_json(cres, "cres")
        except ThreeDSecureError:
            cres_fields = {}  # as the library: an unreadable CRes leaves the status empty
    issued = round(time.time() if now is None else now)
    payload: dict[str, Any] = {
        "Validated": validated,
        "Payment": {
            "Type": "CCA",
            "ProcessorTransactionId": "",
            "ExtendedData": {
                "Amount": "",
                "CAVV": "",
                "CurrencyCode": "",
                "ECIFlag": "",
                "ThreeDSVersion": cres_fields.get("messageVersion", ""),
                "PAResStatus": cres_fields.get("transStatus", ""),
                "SignatureVerification": "Y",
            },
        },
        "ActionCode": action_code,
        "ErrorNumber": 0 if validated else 1000,
        "ErrorDescription": description,
    }
    if cres:
        payload["CRes"] = cres
    claims = {
        "iss": "",
        "iat": issued,
        "exp": issued + _JWT_LIFETIME,
        "jti": str(uuid.uuid4()),
        "ConsumerSessionId": "",
        "ReferenceId": "",
        "aud": "",
        "Payload": payload,
    }
    return f"{_b64({'alg': 'none'})}.{_b64(claims)}."


def read_jwt(token: str) -> dict[str, Any]:
    """The claims of an unsigned JWT (for showing what was sent; nothing is verified)."""
    parts = token.split(".")
    if len(parts) != 3:
        raise ThreeDSecureError("threedresponse is not a JWT (three dot-separated parts)")
    return decode_b64_json(parts[1], "threedresponse")
