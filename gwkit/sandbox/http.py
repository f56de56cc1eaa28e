"""SandboxRequest and SandboxResponse: HTTP-shaped values the sandbox's pages take and give.

A body is read within limits (`read_json`, gwkit/interface/jsonread.py: the proxy reads with it too),
so that no input can make the sandbox recurse, parse a huge number or hold a huge string, and a key
named twice is refused: a body over a limit is a `BodyError` naming the limit.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import parse_qsl

from ..interface.jsonread import (
    DUPLICATE_KEYS,
    MAX_JSON_DEPTH,
    MAX_NUMBER_CHARS,
    MAX_STRING_CHARS,
    BodyError,
    read_json,
)

__all__ = [
    "DUPLICATE_KEYS",
    "JSON_HEADERS",
    "MAX_FORM_FIELDS",
    "MAX_JSON_DEPTH",
    "MAX_NUMBER_CHARS",
    "MAX_STRING_CHARS",
    "BodyError",
    "SandboxRequest",
    "SandboxResponse",
    "read_json",
]

# As the real service: JSON is UTF-8 by definition (RFC 8259), and application/json has no charset.
JSON_HEADERS = {"content-type": "application/json"}

MAX_FORM_FIELDS = 100


@dataclass
class SandboxRequest:
    method: str
    path: str
    headers: dict[str, str]  # lower-case names
    body: bytes = b""
    query: dict[str, str] = field(default_factory=dict)
    base_url: str = ""  # scheme://host:port the client used, for links back to the sandbox
    _parsed: Any = field(default=None, repr=False, compare=False)  # (value or BodyError,) once read
    # What the sandbox learnt of the request while answering it, for its later steps (as Starlette's
    # `request.state`): who sends a gateway request (web/endpoint.caller_of), read once.
    state: dict[str, Any] = field(default_factory=dict, repr=False, compare=False)

    def parsed_json(self) -> Any:
        """The body as JSON (`read_json`), parsed once however many readers ask: the scheduler that
        routes it, fault injection and the endpoint. A `BodyError` when it cannot or may not be read."""
        if self._parsed is None:
            try:
                self._parsed = (read_json(self.body),)
            except BodyError as error:
                self._parsed = (error,)
        [value] = self._parsed
        if isinstance(value, BodyError):
            raise value
        return value

    def json(self) -> Any:
        """The body as JSON ({} when empty); a `BodyError` when it cannot or may not be read."""
        return read_json(self.body) if self.body else {}

    def form(self) -> dict[str, str]:
        """The body as an HTML form; a `BodyError` when it is not UTF-8 or has too many fields."""
        try:
            text = self.body.decode("utf-8")
            return dict(
                parse_qsl(text, keep_blank_values=True, max_num_fields=MAX_FORM_FIELDS, errors="strict")
            )
        except UnicodeDecodeError:
            raise BodyError("the form body is not UTF-8 (percent-encode it as UTF-8)") from None
        except ValueError:  # parse_qsl: more fields than max_num_fields
            raise BodyError(f"the form has more than {MAX_FORM_FIELDS} fields", limit="form fields") from None


@dataclass
class SandboxResponse:
    status: int
    headers: dict[str, str]
    body: bytes

    @classmethod
    def json(cls, data: Any, status: int = 200, headers: Mapping[str, str] | None = None) -> SandboxResponse:
        return cls(status, {**JSON_HEADERS, **(headers or {})}, json.dumps(data).encode("utf-8"))

    @classmethod
    def html(cls, text: str, status: int = 200, headers: Mapping[str, str] | None = None) -> SandboxResponse:
        return cls(
            status, {"content-type": "text/html; charset=utf-8", **(headers or {})}, text.encode("utf-8")
        )

    @classmethod
    def bad_body(cls, error: BodyError, expected: str | None = None) -> SandboxResponse:
        """400 naming what is wrong with the body (and the limit broken, if one was)."""
        limit = {"limit": error.limit} if error.limit else {}
        detail = f"the body must be {expected}: {error.detail}" if expected else error.detail
        return cls.json({"error": "bad request", "detail": detail, **limit}, status=400)
