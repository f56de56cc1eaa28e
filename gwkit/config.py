"""Reading gwkit's configuration: `connect()` arguments, GWKIT_* environment variables and
`gwkit.toml`, merged (first match wins), and the `Target` a connection sends to. Holds no
password in the target; starts nothing."""

from __future__ import annotations

import os
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .errors import GwkitError

CONFIG_FILE = "gwkit.toml"
DEFAULT_CURRENCY = "GBP"
SANDBOX, GATEWAY = "sandbox", "gateway"

ENV_VARS = {
    "base_url": "GWKIT_BASE_URL",
    "username": "GWKIT_USERNAME",
    "password": "GWKIT_PASSWORD",
    "sitereference": "GWKIT_SITEREFERENCE",
    "currencyiso3a": "GWKIT_CURRENCY",
}
REQUIRED_FOR_GATEWAY = ("username", "password", "sitereference")


class ConfigError(GwkitError, ValueError):
    """The configuration is incomplete or unreadable; the message says what to set and where."""


@dataclass(frozen=True)
class Target:
    """Where a connection sends its requests. Holds no password."""

    kind: str  # SANDBOX or GATEWAY
    base_url: str
    username: str
    sitereference: str | None
    currencyiso3a: str | None
    source: str  # where the settings came from, e.g. "environment" or "gwkit.toml"

    @property
    def is_sandbox(self) -> bool:
        return self.kind == SANDBOX

    @property
    def is_test_site(self) -> bool:
        return bool(self.sitereference and self.sitereference.startswith("test_"))

    @property
    def title(self) -> str:
        return "embedded sandbox" if self.is_sandbox else "real gateway"


def read_settings(
    config: str | os.PathLike[str] | None, arguments: Mapping[str, Any]
) -> tuple[dict[str, dict[str, Any]], str]:
    """Merged settings {"gateway": {...}, "journal": {...}, "sandbox": {...}} and their source."""
    data, path = read_config(config)
    gateway = dict(data.get("gateway", {}))
    password_env = gateway.pop("password_env", None)
    if password_env and password_env in os.environ:
        gateway.setdefault("password", os.environ[password_env])
    sources = {path.name} if gateway else set()
    for name, variable in ENV_VARS.items():
        if os.environ.get(variable):
            gateway[name] = os.environ[variable]
            sources.add("environment")
    for name, value in arguments.items():
        if value is not None:
            gateway[name] = value
            sources.add("connect() arguments")
    if password_env and not gateway.get("password"):
        raise ConfigError(f"{path}: password_env names {password_env!r}, but that variable is not set")
    settings = {
        "gateway": gateway,
        "journal": dict(data.get("journal", {})),
        "sandbox": dict(data.get("sandbox", {})),
    }
    return settings, " + ".join(sorted(sources)) or "defaults"


def read_config(config: str | os.PathLike[str] | None) -> tuple[dict[str, Any], Path]:
    path = Path(config or os.environ.get("GWKIT_CONFIG") or CONFIG_FILE)
    if not path.exists():
        if config is not None:
            raise ConfigError(f"config file {path} does not exist")
        return {}, path
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as error:
        raise ConfigError(f"{path} is not valid TOML: {error}") from None
    unknown = set(data) - {"gateway", "journal", "sandbox"}
    if unknown:
        raise ConfigError(
            f"{path}: unknown section(s) {', '.join(sorted(unknown))}; use [gateway], [journal], [sandbox]"
        )
    for section in ("gateway", "journal", "sandbox"):
        if not isinstance(data.get(section, {}), dict):
            raise ConfigError(f"{path}: [{section}] must be a table")
    return data, path
