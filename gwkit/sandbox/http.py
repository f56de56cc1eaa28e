"""SandboxRequest and SandboxResponse: HTTP-shaped values the sandbox's pages take and give.

A body is read within limits (`read_json`), so that no input can make the sandbox recurse, parse a
huge number or hold a huge string: a body over a limit is a `BodyError` naming the limit.
"""

from __future__ import annotations

import json
import math
import re
import threading
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import parse_qsl

from ..interface.errors import GwkitError

# As the real service: JSON is UTF-8 by definition (RFC 8259), and application/json has no charset.
JSON_HEADERS = {"content-type": "application/json"}

MAX_JSON_DEPTH = 32  # arrays and objects inside each other; an envelope needs 6
MAX_NUMBER_CHARS = 100  # int() of a long number is slow, and past 4300 digits it raises
MAX_STRING_CHARS = 65_536  # the longest field of the interface (md); each field's own length is validation's
MAX_FORM_FIELDS = 100


class BodyError(GwkitError, ValueError):
    """A body the sandbox will not read: not UTF-8, not JSON, or over a limit.

    `what` says what is wrong, never quoting the body (it may hold card data); `where` is the path
    of the offending value (`request.0.pan`) or "body"; `detail` is both; `limit` names the limit
    broken, or is None for a body that is not UTF-8 JSON at all."""

    def __init__(self, what: str, where: str = "body", limit: str | None = None):
        self.what = what
        self.where = where
        self.limit = limit
        self.detail = what if where == "body" else f"{where}: {what}"
        super().__init__(self.detail)


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


def read_json(body: bytes) -> Any:
    """Parse a JSON body within the limits above."""
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise BodyError(f"not UTF-8 (byte {exc.start})") from None
    _parsing.refused = False
    try:
        value = _DECODER.decode(text)
    except json.JSONDecodeError as exc:  # the position only: the message may quote the body
        raise BodyError(f"not JSON: line {exc.lineno} column {exc.colno}") from None
    except RecursionError:
        raise _too_deep("body") from None
    # Walking the parsed body costs time on big bodies only: a small one cannot break a limit.
    if _parsing.refused or len(text) > MAX_STRING_CHARS or text.count("[") + text.count("{") > MAX_JSON_DEPTH:
        _check_limits(value)
    return value


class _Refused:
    """Stands in for a value the body may not have, until its place is known (`_check_limits`)."""

    def __init__(self, detail: str, limit: str | None):
        self.detail = detail
        self.limit = limit
        _parsing.refused = True


def _parse_int(text: str) -> Any:
    if len(text) > MAX_NUMBER_CHARS:
        return _Refused(f"a number longer than {MAX_NUMBER_CHARS} characters", "number length")
    return int(text)


def _parse_float(text: str) -> Any:
    if len(text) > MAX_NUMBER_CHARS:
        return _Refused(f"a number longer than {MAX_NUMBER_CHARS} characters", "number length")
    number = float(text)
    return number if math.isfinite(number) else _Refused("a number out of range", "number length")


def _parse_constant(text: str) -> Any:
    return _Refused(f"{text} is not JSON", None)


# One decoder for every body (building one per call costs more than parsing a small body); whether
# it refused a value is per thread, as bodies are parsed on several threads at once.
_DECODER = json.JSONDecoder(parse_int=_parse_int, parse_float=_parse_float, parse_constant=_parse_constant)
_parsing = threading.local()


def _check_limits(value: Any) -> None:
    for item, path, depth in _walk(value):
        where = _path_text(path)
        if depth > MAX_JSON_DEPTH:
            raise _too_deep(where)
        if isinstance(item, _Refused):
            raise BodyError(item.detail, where, item.limit)
        if isinstance(item, str) and len(item) > MAX_STRING_CHARS:
            raise BodyError(f"a string longer than {MAX_STRING_CHARS} characters", where, "string length")


def _walk(value: Any) -> Iterator[tuple[Any, tuple[Any, ...], int]]:
    """Every value of a parsed body (keys too), with its path and depth; without recursion."""
    stack: list[tuple[Any, tuple[Any, ...], int]] = [(value, (), 0)]
    while stack:
        item, path, depth = stack.pop()
        yield item, path, depth
        if isinstance(item, dict):
            for key, inner in item.items():
                stack.append((key, (*path, key), depth))
                stack.append((inner, (*path, key), depth + 1))
        elif isinstance(item, list):
            stack.extend((inner, (*path, index), depth + 1) for index, inner in enumerate(item))


def _path_text(path: tuple[Any, ...]) -> str:
    shown = ".".join(map(_shown, path[:_PATH_SHOWN]))
    return (shown + "..." if len(path) > _PATH_SHOWN else shown) or "body"


def _shown(step: Any) -> str:
    """A step of a path as shown in an error: an index or a name, never other text of the body."""
    return str(step) if isinstance(step, int) or _NAME.fullmatch(step) else "?"


_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,39}")
_PATH_SHOWN = 6


def _too_deep(where: str) -> BodyError:
    return BodyError(f"arrays and objects nested deeper than {MAX_JSON_DEPTH}", where, "nesting depth")


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
