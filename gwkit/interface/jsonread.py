"""The one JSON reader of a request body: bounded in size and depth, duplicate keys refused.

The sandbox reads every body with `read_json`, and the proxy reads what it validates and forwards
with it too, so both see one value: no input can make either recurse, parse a huge number or hold a
huge string, and an object that names a key twice is refused, whichever copy an upstream would
keep (the real gateway's behaviour is not documented; gwkit refuses them everywhere). A body over a
limit is a `BodyError` naming the limit and the path of the value (`request.0.baseamount`), never
quoting the body: it may hold card data.
"""

from __future__ import annotations

import json
import math
import re
import threading
from collections.abc import Iterator
from typing import Any

from .errors import GwkitError

MAX_JSON_DEPTH = 32  # arrays and objects inside each other; an envelope needs 6
MAX_NUMBER_CHARS = 100  # int() of a long number is slow, and past 4300 digits it raises
MAX_STRING_CHARS = 65_536  # the longest field of the interface (md); each field's own length is validation's
DUPLICATE_KEYS = "duplicate keys"  # the limit a key named twice in one object breaks


class BodyError(GwkitError, ValueError):
    """A body gwkit will not read: not UTF-8, not JSON, over a limit, or with a key named twice.

    `what` says what is wrong, never quoting the body (it may hold card data); `where` is the path
    of the offending value (`request.0.pan`) or "body"; `detail` is both; `limit` names the limit
    broken, or is None for a body that is not UTF-8 JSON at all."""

    def __init__(self, what: str, where: str = "body", limit: str | None = None):
        self.what = what
        self.where = where
        self.limit = limit
        self.detail = what if where == "body" else f"{where}: {what}"
        super().__init__(self.detail)


def read_json(body: bytes) -> Any:
    """Parse a JSON body within the limits above; a `BodyError` when it cannot or may not be read."""
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


def _object(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """An object; a key named twice keeps a `_Refused` in its place, so its path is known later."""
    value = dict(pairs)
    if len(value) < len(pairs):
        seen: set[str] = set()
        for key, _ in pairs:
            if key in seen:
                value[key] = _Refused("the key is named more than once in its object", DUPLICATE_KEYS)
            seen.add(key)
    return value


# One decoder for every body (building one per call costs more than parsing a small body); whether
# it refused a value is per thread, as bodies are parsed on several threads at once.
_DECODER = json.JSONDecoder(
    parse_int=_parse_int, parse_float=_parse_float, parse_constant=_parse_constant, object_pairs_hook=_object
)
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
    """Every value of a parsed body (keys too), with its path and depth, in the body's order;
    without recursion."""
    stack: list[tuple[Any, tuple[Any, ...], int]] = [(value, (), 0)]
    while stack:
        item, path, depth = stack.pop()
        yield item, path, depth
        if isinstance(item, dict):
            for key, inner in reversed(item.items()):
                stack.append((inner, (*path, key), depth + 1))
                stack.append((key, (*path, key), depth))
        elif isinstance(item, list):
            stack.extend(
                (inner, (*path, index), depth + 1) for index, inner in reversed(list(enumerate(item)))
            )


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
