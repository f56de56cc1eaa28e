"""Validation of request objects against the field and request-type tables.

Every problem is reported at once, each naming the field, the rule it breaks and the offending
value (masked when sensitive). The client uses it before sending; the sandbox uses the same code
to answer `30000` with `errordata` listing the fields.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Iterable, Mapping

from .fields import FIELDS, FILTER_ONLY_FIELDS, IGNORED_FIELDS, Field
from .masking import mask_text, mask_value
from .requests import (
    FILTER_FIELDS, REQUEST_TYPES, SINGLE_TYPES, UPDATABLE_FIELDS, RequestType, Variant, request_type_for,
)


# Control characters (C0 but tab, DEL, C1) and unpaired surrogates, in any field: CR/LF could
# forge lines of a log or a header, NUL cuts C strings, and a surrogate cannot be stored as UTF-8.
# A tab is allowed: the official client's own tests send one in a name.
_CONTROL = re.compile(r"[\x00-\x08\x0a-\x1f\x7f-\x9f\ud800-\udfff]")
_CONTROL_RULE = "must not contain control characters (such as CR, LF or NUL) or unpaired surrogates"


@dataclass(frozen=True)
class Problem:
    field: str
    rule: str
    value: Any = None  # already masked

    def __str__(self) -> str:
        shown = "" if self.value is None else f" (got {self.value!r})"
        return f"{self.field}: {self.rule}{shown}"

    def as_dict(self) -> dict[str, Any]:
        return {"field": self.field, "rule": self.rule, "value": self.value}


def _problem(name: str, rule: str, value: Any) -> Problem:
    value = mask_value(name, value)  # mask first: a cut could leave a partial PAN unrecognised
    if isinstance(value, str) and len(value) > 60:
        value = value[:57] + "..."
    return Problem(name, rule, value)


def check_value(name: str, value: Any, request: Mapping[str, Any] | None = None,
                choices: Iterable[str] | None = None) -> list[Problem]:
    """Problems with one field's value: type, length, allowed values and the field's own rules."""
    spec = FIELDS.get(name) or FILTER_ONLY_FIELDS.get(name)
    if spec is None:
        return [Problem(name, "is not a field of the interface")]
    return _check(spec, name, value, request or {}, tuple(choices) if choices is not None else None)


# Values already found valid, by (field, value, choices): a client sends the same site, currency,
# account type and amounts again and again. Only short values of fields whose verdict depends on
# the value alone, and never card data or secrets (nothing sensitive is kept in memory for this).
_KNOWN_VALID: set[tuple[int, str, tuple[str, ...] | None]] = set()
_KNOWN_VALID_SIZE = 4096
_KNOWN_VALID_CHARS = 64


def _check(spec: Field, name: str, value: Any, request: Mapping[str, Any],
           choices: tuple[str, ...] | None) -> list[Problem]:
    if not isinstance(value, str):
        return _check_value(spec, name, value, request, choices)
    key = (id(spec), value, choices)
    if key in _KNOWN_VALID:
        return []
    problems = _check_value(spec, name, value, request, choices)
    if (not problems and len(value) <= _KNOWN_VALID_CHARS and spec.sensitive is None
            and not any(rule.reads_request for rule in spec.rules)):
        if len(_KNOWN_VALID) >= _KNOWN_VALID_SIZE:
            _KNOWN_VALID.clear()
        _KNOWN_VALID.add(key)
    return problems


def _check_value(spec: Field, name: str, value: Any, request: Mapping[str, Any],
                 choices: tuple[str, ...] | None) -> list[Problem]:
    if not isinstance(value, str):
        return [_problem(name, "must be a string (every value on the wire is a string)", value)]
    if value == "":
        return [Problem(name, "must not be empty", "")]
    if spec.max_length is not None and len(value) > spec.max_length:
        return [_problem(name, f"must be at most {spec.max_length} characters (has {len(value)})", value)]
    if len(value) < spec.min_length:
        return [_problem(name, f"must be at least {spec.min_length} characters (has {len(value)})", value)]
    broken = spec.type.check(value)
    if broken:
        return [_problem(name, f"{spec.type.name}: {broken}", value)]
    if _CONTROL.search(value):  # what the type allowed may still hold one (a URL, an email, free text)
        return [_problem(name, _CONTROL_RULE, value)]
    allowed = choices if choices is not None else spec.choices
    if allowed and value not in allowed:
        return [_problem(name, f"must be one of {', '.join(allowed)}", value)]
    if not spec.rules:
        return []
    return [_problem(name, rule.text, value) for rule in spec.rules if not rule.check(value, request)]


def validate_request(request: Mapping[str, Any], *, strict: bool = True) -> list[Problem]:
    """Every problem of one request object.

    `strict` (the client's default) also reports fields that are unknown to the interface or not
    used by the request type, which catches typos before anything is sent. The sandbox validates
    with `strict=False`, as the gateway ignores fields it does not use.
    """
    if not isinstance(request, Mapping):
        return [Problem("request", "each request object must be a JSON object")]
    types = request.get("requesttypedescriptions")
    problems = _check_types(types)
    if problems:
        return problems
    variants = variants_for(types, request)
    return _check_variants(variants, request, strict)


def _check_types(types: Any) -> list[Problem]:
    name = "requesttypedescriptions"
    if not isinstance(types, list) or not types or not all(isinstance(t, str) for t in types):
        return [_problem(name, "must be a non-empty list of request type names", types)]
    unknown = [t for t in types if t not in SINGLE_TYPES]
    if unknown:
        return [_problem(name, f"unknown request type(s) {mask_text(', '.join(unknown))}", types)]
    if "SUBSCRIPTION" in types and "AUTH" not in types:
        return [Problem(name, "SUBSCRIPTION must be sent together with AUTH", types)]
    if len(set(types)) != len(types):
        return [Problem(name, "names a request type twice", types)]
    return []


def request_types_of(types: list[str]) -> list[RequestType]:
    """The table entries a list of request types is made of (AUTH and SUBSCRIPTION combine)."""
    combined = request_type_for(types)
    if combined:
        return [combined]
    found: list[RequestType] = []
    for name in types:
        if name == "SUBSCRIPTION":
            continue
        key = "AUTH+SUBSCRIPTION" if name == "AUTH" and "SUBSCRIPTION" in types else name
        found.append(REQUEST_TYPES[key])
    return found


def variants_for(types: list[str], request: Mapping[str, Any]) -> list[tuple[RequestType, Variant]]:
    return [(rt, rt.select(request)) for rt in request_types_of(types)]


# The merged field sets of a combination of variants, made once per combination (validation is on
# the client's hot path). Keyed by the variants' ids; the entry keeps the variants alive.
_MERGED: dict[tuple[int, ...], tuple[Any, ...]] = {}


def _merged(variants: list[tuple[RequestType, Variant]]) -> tuple[Any, ...]:
    key = tuple(id(variant) for _, variant in variants)
    merged = _MERGED.get(key)
    if merged is None:
        allowed: set[str] = {"requesttypedescriptions"}
        forbidden: dict[str, tuple[str, str]] = {}
        choices: dict[str, tuple[str, ...]] = {}
        required: list[str] = []
        for rt, variant in variants:
            allowed.update(variant.allowed)
            required.extend(f for f in variant.required if f not in required)
            for name, why in variant.forbidden.items():
                forbidden.setdefault(name, (rt.key, why))
            for name, values in variant.choices.items():  # several types: a value any of them takes
                choices[name] = tuple(dict.fromkeys(choices.get(name, ()) + values))
        merged = _MERGED[key] = (tuple(v for _, v in variants), frozenset(allowed), tuple(required),
                                 forbidden, choices)
    return merged


def allowed_fields(variants: list[tuple[RequestType, Variant]]) -> frozenset[str]:
    """Every field the variants of one request object use together (`variants_for`'s answer)."""
    return _merged(variants)[1]


def _check_variants(variants: list[tuple[RequestType, Variant]], request: Mapping[str, Any],
                    strict: bool) -> list[Problem]:
    problems: list[Problem] = []
    _, allowed, required, forbidden, choices = _merged(variants)
    for name in required:
        if request.get(name) in (None, ""):
            what = " + ".join(f"{rt.key} ({v.name})" for rt, v in variants)
            problems.append(Problem(name, f"is required in {what} requests"))
    for name, value in request.items():
        if name in allowed and name in FIELDS:  # the usual case first: a field this request type uses
            if value is not None and name != "requesttypedescriptions":
                problems.extend(_check(FIELDS[name], name, value, request, choices.get(name)))
            continue
        if name in IGNORED_FIELDS or name == "requesttypedescriptions":
            continue
        if name in forbidden and name not in allowed:
            key, why = forbidden[name]
            problems.append(_problem(name, f"must not be sent in {key} requests: {why}", value))
            continue
        if name in ("filter", "updates"):
            if name in allowed:
                problems.extend(_check_filter(value) if name == "filter" else _check_updates(value))
            elif strict:
                problems.append(Problem(name, "is only used by TRANSACTIONQUERY and TRANSACTIONUPDATE"))
            continue
        if name not in FIELDS:
            if strict:
                problems.append(_problem(name, "is not a field of the interface", value))
            continue
        if strict:  # a field of the interface that this request type does not use
            keys = ", ".join(rt.key for rt, _ in variants)
            problems.append(_problem(name, f"is not used by {keys} requests", value))
    return problems


def _check_filter(value: Any) -> list[Problem]:
    """The filter's shape and values. An empty filter is well formed but not usable (60019)."""
    if not isinstance(value, Mapping):
        return [_problem("filter", 'must be an object such as {"transactionreference": [{"value": "1-2-3"}]}',
                         value)]
    problems: list[Problem] = []
    for name, entries in value.items():
        where = f"filter.{name}"
        if name not in FILTER_FIELDS:
            problems.append(Problem(where, f"is not a filter; use one of {', '.join(FILTER_FIELDS)}"))
            continue
        if not isinstance(entries, list):
            problems.append(_problem(where, 'must be a list such as [{"value": "..."}]', entries))
            continue
        for entry in entries:
            if not isinstance(entry, Mapping) or "value" not in entry:
                problems.append(_problem(where, 'each entry must be an object {"value": "..."}', entry))
                continue
            problems.extend(Problem(where, p.rule, p.value) for p in check_value(name, entry["value"]))
    return problems


def _check_updates(value: Any) -> list[Problem]:
    """The updates' names and values. Empty updates are well formed but not usable (60013)."""
    if not isinstance(value, Mapping):
        return [_problem("updates", 'must be an object such as {"transactionactive": "0"}', value)]
    problems: list[Problem] = []
    for name, new in value.items():
        where = f"updates.{name}"
        if name not in UPDATABLE_FIELDS:
            problems.append(Problem(where, f"cannot be updated; updatable: {', '.join(UPDATABLE_FIELDS)}"))
            continue
        problems.extend(Problem(where, p.rule, p.value) for p in check_value(name, new))
    return problems


def errordata(problems: Iterable[Problem]) -> list[str]:
    """The gateway's `errordata`: the offending field names, each once, in order.

    A problem in the filter is reported as `filter`; one in the updates names the field to update.
    """
    names: list[str] = []
    for problem in problems:
        name = problem.field
        if name.startswith("filter."):
            name = "filter"
        elif name.startswith("updates."):
            name = name[len("updates."):]
        if name not in names:
            names.append(name)
    return names
