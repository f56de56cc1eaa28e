"""HTTP Basic authentication of web services users, and the 401 answer."""

from __future__ import annotations

import base64
from collections.abc import Mapping

from ..gateway.accounts import Account
from ..http import SandboxResponse


def authenticate(accounts: Mapping[str, Account], headers: Mapping[str, str]) -> Account | None:
    """The account whose user name and password the `authorization` header carries, or None."""
    scheme, _, encoded = headers.get("authorization", "").partition(" ")
    if scheme.lower() != "basic":
        return None
    try:
        username, _, password = base64.b64decode(encoded, validate=True).decode("utf-8").partition(":")
    except ValueError:  # not base64 (binascii.Error), not ASCII, or not UTF-8 (UnicodeDecodeError)
        return None
    account = accounts.get(username)
    return account if account and account.password_matches(password) else None


def unauthorised(detail: str = "missing or wrong web services user name or password") -> SandboxResponse:
    return SandboxResponse.json(
        {"error": "unauthorised", "detail": detail},
        status=401,
        headers={"www-authenticate": 'Basic realm="gwkit sandbox"'},
    )
