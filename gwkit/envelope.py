"""Request envelopes as the gateway expects them (interface section 2.1).

    {"alias": "<USERNAME>", "version": "1.00",
     "request": [{"requesttypedescriptions": ["AUTH"], "requestreference": "A1b2c3d4e", ...}]}

Every value is sent as a string. Each request object gets a `requestreference` (`A` and 8
characters from 0-9a-z), as the official clients do; the gateway echoes it in the response.
"""

from __future__ import annotations

import json
import secrets
from collections.abc import Iterable, Mapping
from decimal import Decimal
from typing import Any

from .errors import ValidationError
from .interface.masking import mask_value
from .interface.validation import Problem
from .interface.wire import VERSION

_REFERENCE_ALPHABET = "0123456789abcdefghijklmnopqrstuvwxyz"


# Bytes 0-251 map evenly onto the 36 characters (252 = 7 * 36); 252-255 are dropped, so every
# character is equally likely. One call into the system's random source per reference.
_TO_ALPHABET = bytes.maketrans(bytes(range(252)), (_REFERENCE_ALPHABET * 7).encode())
_UNEVEN = bytes(range(252, 256))


def new_request_reference() -> str:
    while True:
        chars = secrets.token_bytes(12).translate(_TO_ALPHABET, _UNEVEN)
        if len(chars) >= 8:
            return "A" + chars[:8].decode()


def to_wire(value: Any, name: str = "value") -> Any:
    """`value` as the gateway expects it: strings, lists of strings, objects of strings."""
    if isinstance(value, str):
        return value
    if isinstance(value, bool):
        return "1" if value else "0"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, Decimal) and value == value.to_integral_value():
        return str(int(value))
    if isinstance(value, Mapping):
        return {str(k): to_wire(v, f"{name}.{k}") for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [to_wire(v, name) for v in value]
    rule = f"cannot be sent as a string: {type(value).__name__} (amounts are integers in base units)"
    shown = mask_value(name.rpartition(".")[2], repr(value))  # "updates.securitycode" hides it too
    raise ValidationError([Problem(name, rule, shown)])


def build_request(
    types: str | Iterable[str], fields: Mapping[str, Any] | None = None, /, **more: Any
) -> dict[str, Any]:
    """One request object: `requesttypedescriptions` first, then the fields, every value a string."""
    names = [types] if isinstance(types, str) else list(types)
    request: dict[str, Any] = {"requesttypedescriptions": names}
    for name, value in ({**(fields or {}), **more} if more else fields or {}).items():
        if value.__class__ is str:  # most values are already strings
            request[name] = value
        elif value is not None:
            request[name] = to_wire(value, name)
    return request


def build_envelope(
    alias: str, requests: Iterable[Mapping[str, Any]], *, add_references: bool = True
) -> dict[str, Any]:
    """The envelope for several request objects; each gets a `requestreference` unless it has one.
    The objects are copied: the caller's are left as they are."""
    objects = [dict(request) for request in requests]
    if add_references:
        return envelope_around(alias, objects)
    return {"alias": alias, "version": VERSION, "request": objects}


def envelope_around(alias: str, objects: list[dict[str, Any]]) -> dict[str, Any]:
    """The envelope holding `objects` themselves (no copies, for objects the caller has just built);
    each gets a `requestreference` unless it has one."""
    for obj in objects:
        if not obj.get("requestreference"):
            obj["requestreference"] = new_request_reference()
    return {"alias": alias, "version": VERSION, "request": objects}


# Made once: `json.dumps` with options builds a new encoder on every call.
_ENCODER = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"))


def encode(envelope: Mapping[str, Any]) -> bytes:
    """The body of a request: compact JSON in UTF-8."""
    return _ENCODER.encode(envelope).encode()
