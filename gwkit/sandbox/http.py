"""SandboxRequest and SandboxResponse: HTTP-shaped values the sandbox's pages take and give."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, Mapping
from urllib.parse import parse_qsl

JSON_HEADERS = {"content-type": "application/json; charset=utf-8"}


@dataclass
class SandboxRequest:
    method: str
    path: str
    headers: dict[str, str]  # lower-case names
    body: bytes = b""
    query: dict[str, str] = field(default_factory=dict)
    base_url: str = ""  # scheme://host:port the client used, for links back to the sandbox

    def json(self) -> Any:
        return json.loads(self.body.decode("utf-8")) if self.body else {}

    def form(self) -> dict[str, str]:
        return dict(parse_qsl(self.body.decode("utf-8"), keep_blank_values=True))


@dataclass
class SandboxResponse:
    status: int
    headers: dict[str, str]
    body: bytes

    @classmethod
    def json(cls, data: Any, status: int = 200, headers: Mapping[str, str] | None = None) -> "SandboxResponse":
        return cls(status, {**JSON_HEADERS, **(headers or {})}, json.dumps(data).encode("utf-8"))

    @classmethod
    def html(cls, text: str, status: int = 200, headers: Mapping[str, str] | None = None) -> "SandboxResponse":
        return cls(status, {"content-type": "text/html; charset=utf-8", **(headers or {})}, text.encode("utf-8"))
