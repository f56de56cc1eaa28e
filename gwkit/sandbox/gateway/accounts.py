"""Web services users of the sandbox: a user name, a password, and the site references it may use.

`--accounts FILE` reads a TOML file:

    [[account]]
    username = "alice@example.test"
    password = "correct horse"
    sitereferences = ["test_alice12345", "test_alice67890"]

    [[account]]
    username = "ops@example.test"
    password = "operator secret"
    sitereferences = ["test_ops12345"]
    admin = true          # an operator: the control API acts on every site of the sandbox

    [account.sites.test_ops12345]                  # settings of one site of the account above
    threedbypasspaymenttypes = ["VISA", "AMEX"]    # 3-D Secure skipped for these payment types

Without one, the default account below is used.
"""

from __future__ import annotations

import hmac
import tomllib
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ...interface.bypass import BYPASS_FIELD, bypass_rule_broken
from ...interface.errors import GwkitError
from ...interface.validation import check_value

DEFAULT_USERNAME = "gwkit_sandbox"
DEFAULT_PASSWORD = "gwkit-sandbox-password"
DEFAULT_SITEREFERENCE = "test_gwkit12345"


@dataclass(frozen=True)
class Account:
    username: str
    password: str
    sitereferences: tuple[str, ...]
    admin: bool = False
    # (site, payment types) of the sites whose THREEDQUERY is skipped for those types (threedbypasspaymenttypes)
    threedbypass: tuple[tuple[str, tuple[str, ...]], ...] = ()

    def bypassed_types(self, sitereference: str | None) -> frozenset[str]:
        """The payment types the site's setting names in `threedbypasspaymenttypes` (none: no setting)."""
        return frozenset(next((types for site, types in self.threedbypass if site == sitereference), ()))

    def __repr__(self) -> str:
        return (
            f"Account(username={self.username!r}, password=[redacted], sitereferences={self.sitereferences!r}"
            f"{', admin=True' if self.admin else ''})"
        )

    def password_matches(self, password: str) -> bool:
        return hmac.compare_digest(self.password.encode(), password.encode())


DEFAULT_ACCOUNT = Account(DEFAULT_USERNAME, DEFAULT_PASSWORD, (DEFAULT_SITEREFERENCE,))


def account_for_site(accounts: Iterable[Account], sitereference: str) -> Account | None:
    """The account a site belongs to (a site belongs to one account)."""
    return next((a for a in accounts if sitereference in a.sitereferences), None)


class SiteNotYours(GwkitError, LookupError):
    """A control request named a site that is not one of the caller's (or that does not exist)."""

    def __init__(self, sitereference: str):
        super().__init__(f"sitereference {sitereference!r} is not one of your sites")
        self.sitereference = sitereference


def control_sites(
    account: Account, every_site: Iterable[str], sitereference: str | None = None
) -> tuple[str, ...]:
    """The sites a control request acts on: the caller's (an operator's: every site), or the one named."""
    sites = tuple(every_site) if account.admin else account.sitereferences
    if sitereference is None:
        return sites
    if sitereference not in sites:
        raise SiteNotYours(sitereference)
    return (sitereference,)


class AccountsError(GwkitError, ValueError):
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
                raise AccountsError(
                    f"{path}: site reference {site!r} is listed for both {owner!r} and "
                    f"{account.username!r}; a site belongs to one account"
                )
    return accounts


def _account(path, index: int, entry: Any) -> Account:
    where = f"{path}: [[account]] number {index}"
    if not isinstance(entry, dict):
        raise AccountsError(f"{where}: must be a table with username, password and sitereferences")
    username, password, sites = entry.get("username"), entry.get("password"), entry.get("sitereferences")
    if isinstance(username, str) and username:
        where += f" ({username!r})"
    unknown = sorted(set(entry) - {"username", "password", "sitereferences", "admin", "sites"})
    if unknown:
        raise AccountsError(
            f"{where}: unknown key(s) {', '.join(unknown)}; "
            "an account has username, password, sitereferences and optionally admin and sites"
        )
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
    admin = entry.get("admin", False)
    if not isinstance(admin, bool):
        raise AccountsError(f"{where}: admin must be true or false")
    return Account(
        username, password, tuple(sites), admin, _site_settings(where, entry.get("sites", {}), sites)
    )


def _site_settings(where: str, settings: Any, sites: list[str]) -> tuple[tuple[str, tuple[str, ...]], ...]:
    """`[account.sites.<site>]` tables: the settings of the account's own sites (today one:
    `threedbypasspaymenttypes`)."""
    if not isinstance(settings, dict):
        raise AccountsError(
            f"{where}: sites must be tables named by site reference, e.g. [account.sites.{sites[0]}]"
        )
    bypass = []
    for site, table in settings.items():
        if site not in sites:
            raise AccountsError(f"{where}: sites.{site}: not one of this account's sitereferences")
        if not isinstance(table, dict) or set(table) - {BYPASS_FIELD}:
            raise AccountsError(f"{where}: sites.{site}: a site takes only {BYPASS_FIELD}")
        types = table.get(BYPASS_FIELD, [])
        broken = bypass_rule_broken(types)
        if broken:
            raise AccountsError(f"{where}: sites.{site}: {BYPASS_FIELD} {broken}")
        bypass.append((site, tuple(types)))
    return tuple(bypass)
