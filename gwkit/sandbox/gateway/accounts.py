"""Web services users of the sandbox: a user name, a password, and the site references it may use.

`--accounts FILE` reads a TOML file:

    [[account]]
    username = "alice@example.test"
    password = "correct horse"
    sitereferences = ["test_alice12345", "test_alice67890"]

Without one, the default account below is used.
"""

from __future__ import annotations

import hmac
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable

from ...interface.validation import check_value

DEFAULT_USERNAME = "gwkit_sandbox"
DEFAULT_PASSWORD = "gwkit-sandbox-password"
DEFAULT_SITEREFERENCE = "test_gwkit12345"


@dataclass(frozen=True)
class Account:
    username: str
    password: str
    sitereferences: tuple[str, ...]

    def __repr__(self) -> str:
        return f"Account(username={self.username!r}, password=[redacted], sitereferences={self.sitereferences!r})"

    def password_matches(self, password: str) -> bool:
        return hmac.compare_digest(self.password.encode(), password.encode())


DEFAULT_ACCOUNT = Account(DEFAULT_USERNAME, DEFAULT_PASSWORD, (DEFAULT_SITEREFERENCE,))


def account_for_site(accounts: Iterable[Account], sitereference: str) -> Account | None:
    """The account a site belongs to (a site belongs to one account)."""
    return next((a for a in accounts if sitereference in a.sitereferences), None)


class AccountsError(ValueError):
    """The accounts file cannot be used; the message names the entry and the rule."""


def load_accounts(path: str | Path) -> list[Account]:
    try:
        data = tomllib.loads(Path(path).read_text(encoding="utf-8"))
    except tomllib.TOMLDecodeError as exc:
        raise AccountsError(f"{path}: not valid TOML: {exc}") from None
    entries = data.get("account")
    if not isinstance(entries, list) or not entries:
        raise AccountsError(f"{path}: needs at least one [[account]] table")
    accounts = [_account(path, index, entry) for index, entry in enumerate(entries, 1)]
    usernames: set[str] = set()
    owners: dict[str, str] = {}  # site reference -> username
    for account in accounts:
        if account.username in usernames:
            raise AccountsError(f"{path}: username {account.username!r} is listed twice")
        usernames.add(account.username)
        for site in account.sitereferences:
            owner = owners.setdefault(site, account.username)
            if owner != account.username:
                raise AccountsError(f"{path}: site reference {site!r} is listed for both {owner!r} and "
                                    f"{account.username!r}; a site belongs to one account")
    return accounts


def _account(path, index: int, entry: Any) -> Account:
    where = f"{path}: [[account]] number {index}"
    if not isinstance(entry, dict):
        raise AccountsError(f"{where}: must be a table with username, password and sitereferences")
    username, password, sites = entry.get("username"), entry.get("password"), entry.get("sitereferences")
    if isinstance(username, str) and username:
        where += f" ({username!r})"
    unknown = sorted(set(entry) - {"username", "password", "sitereferences"})
    if unknown:
        raise AccountsError(f"{where}: unknown key(s) {', '.join(unknown)}; "
                            "an account has username, password and sitereferences")
    if not isinstance(username, str) or not username:
        raise AccountsError(f"{where}: username must be a non-empty string")
    if not isinstance(password, str) or not password:
        raise AccountsError(f"{where}: password must be a non-empty string")
    if not isinstance(sites, list) or not sites or not all(isinstance(s, str) and s for s in sites):
        raise AccountsError(f"{where}: sitereferences must be a non-empty list of strings")
    for site in sites:
        problems = check_value("sitereference", site)
        if problems:
            raise AccountsError(f"{where}: sitereferences: {site!r} {problems[0].rule}")
    return Account(username, password, tuple(sites))
