"""Validation of request objects against the field and request-type tables.

Every problem is reported at once, each naming the field, the rule it breaks and the offending
value (masked when sensitive). The client uses it before sending; the sandbox uses the same code
to answer `30000` with `errordata` listing the fields.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from .bypass import BYPASS_FIELD, bypass_rule_broken
from .fields import FIELDS, FILTER_ONLY_FIELDS, IGNORED_FIELDS, Field
from .masking import mask_text, mask_value
from .orders import supported_order, unsupported_order_rule
from .requests import (
    CHAINS,
    FILTER_FIELDS,
    RECORD_TYPES,
    REQUEST_TYPES,
    SINGLE_TYPES,
    UPDATABLE_FIELDS,
    RequestType,
    Variant,
    request_type_for,
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
        shown = "" if self.value is None else " (sent empty)" if self.value == "" else f" (sent {self.value})"
        return f"{self.field}: {self.rule}{shown}"

    def as_dict(self) -> dict[str, Any]:
        return {"field": self.field, "rule": self.rule, "value": self.value}


def _problem(name: str, rule: str, value: Any) -> Problem:
    value = mask_value(name, value)  # mask first: a cut could leave a partial PAN unrecognised
    if isinstance(value, str) and len(value) > 60:
        value = value[:57] + "..."
    return Problem(name, rule, value)


def check_value(
    name: str, value: Any, request: Mapping[str, Any] | None = None, choices: Iterable[str] | None = None
) -> list[Problem]:
    """Problems with one field's value: type, length, allowed values and the field's own rules."""
    spec = FIELDS.get(name) or FILTER_ONLY_FIELDS.get(name)
    if spec is None:
        return [Problem(name, "is not a field of the interface")]
    return _check(spec, name, value, request or {}, tuple(choices) if choices is not None else None)


# Values already found valid, by (id of the field's spec, value, choices): a client sends the same
# site, currency, account type and amounts again and again. Only short values of fields whose
# verdict depends on the value alone, and never card data or secrets (nothing sensitive is kept in
# memory for this).
_KNOWN_VALID: set[tuple[int, str, tuple[str, ...] | None]] = set()
_KNOWN_VALID_SIZE = 4096
_KNOWN_VALID_CHARS = 64


def _check(
    spec: Field, name: str, value: Any, request: Mapping[str, Any], choices: tuple[str, ...] | None
) -> list[Problem]:
    if value.__class__ is str and (id(spec), value, choices) in _KNOWN_VALID:
        return []
    return _check_and_remember(spec, name, value, request, choices)


def _check_and_remember(
    spec: Field, name: str, value: Any, request: Mapping[str, Any], choices: tuple[str, ...] | None
) -> list[Problem]:
    """`_check` of a value not known valid yet (the caller has looked): remembered when it is."""
    problems = _check_value(spec, name, value, request, choices)
    if not problems and value.__class__ is str and len(value) <= _KNOWN_VALID_CHARS and _rememberable(spec):
        if len(_KNOWN_VALID) >= _KNOWN_VALID_SIZE:
            _KNOWN_VALID.clear()
        _KNOWN_VALID.add((id(spec), value, choices))
    return problems


def _rememberable(spec: Field) -> bool:
    """May a verdict on this field's value be remembered: not card data or a secret, and not
    depending on other fields of the request."""
    return spec.sensitive is None and not any(rule.reads_request for rule in spec.rules)


def _check_value(
    spec: Field, name: str, value: Any, request: Mapping[str, Any], choices: tuple[str, ...] | None
) -> list[Problem]:
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
    used by the request type, which catches typos before anything is sent, and holds every required
    field. The sandbox validates with `strict=False`, as the gateway ignores fields it does not use
    and does not ask for the required fields the real service does not enforce (`not_enforced`).
    """
    if not isinstance(request, (dict, Mapping)):
        return [Problem("request", "each request object must be a JSON object")]
    problems: list[Problem] = []
    if "requesttypedescription" in request or "expirymonth" in request or "expiryyear" in request:
        request, problems = normalised(request)  # otherwise it is already in the tables' form
    types: Any = request.get("requesttypedescriptions")  # as sent: checked below
    entries = _known_entries(types)
    if entries is None:
        type_problems = _check_types(types)
        if type_problems:
            return type_problems
        if len(_valid_types) >= _VALID_TYPES_SIZE:
            _valid_types.clear()
        entries = _valid_types[tuple(types)] = _entries(types)
    request_types, chained = entries
    found = _check_variants([(rt, rt.select(request)) for rt in request_types], request, strict, chained)
    if problems:  # the expiry pair was sent, and is wrong: expirydate is not missing, the pair is wrong
        found = [p for p in found if p.field not in ("expirydate",) + _EXPIRY_PAIR]
    return problems + found


_EXPIRY_PAIR = ("expirymonth", "expiryyear")
_SHORT_EXPIRY = re.compile(r"(0[1-9]|1[0-2])/([0-9]{2})")


def with_full_expiry_year(request: dict[str, Any]) -> dict[str, Any]:
    """A card expiry written `MM/YY` read as the gateway reads it, `MM/20YY`.

    The gateway makers' browser library sends `MM/YY` in some flows, and the real gateway accepted
    it (one capture, not verified beyond it: real-gateway-facts.md, "More captured answers"). So the
    sandbox takes it; gwkit's client keeps the interface's `MM/YYYY` and refuses `MM/YY` before
    sending."""
    expiry = request.get("expirydate")
    if isinstance(expiry, str) and (short := _SHORT_EXPIRY.fullmatch(expiry)):
        return {**request, "expirydate": f"{short[1]}/20{short[2]}"}
    return request


def normalised(request: Mapping[str, Any]) -> tuple[dict[str, Any], list[Problem]]:
    """A request object in the form the tables describe, and the problems met on the way.

    The official clients send what the interface does not show, and the real service accepts it:
    `requesttypedescription` (one string) in place of the list `requesttypedescriptions`, and the
    card expiry as `expirymonth` + `expiryyear` in place of `expirydate` (CACHETOKENISE takes the
    pair itself). A good pair becomes `expirydate`; a bad or lone half is kept, with a problem
    naming that half. Normalising twice changes nothing more.
    """
    result = dict(request)
    single = result.pop("requesttypedescription", None)
    if "requesttypedescriptions" not in result and isinstance(single, str):
        result["requesttypedescriptions"] = [single]
    types = result.get("requesttypedescriptions")
    if types == ["CACHETOKENISE"] or not any(result.get(name) not in (None, "") for name in _EXPIRY_PAIR):
        return result, []
    if result.get("expirydate") not in (None, ""):  # both forms sent: expirydate is the interface's
        return {k: v for k, v in result.items() if k not in _EXPIRY_PAIR}, []
    problems: list[Problem] = []
    for name in _EXPIRY_PAIR:
        value = result.get(name)
        if value in (None, ""):
            other = _EXPIRY_PAIR[1 - _EXPIRY_PAIR.index(name)]
            problems.append(Problem(name, f"is required with {other} (or send expirydate as MM/YYYY)"))
        else:
            problems.extend(check_value(name, value))
    if problems:
        return result, problems
    month, year = (result.pop(name) for name in _EXPIRY_PAIR)
    result["expirydate"] = f"{month}/{year}"
    return result, []


def _check_types(types: Any) -> list[Problem]:
    name = "requesttypedescriptions"
    if not isinstance(types, list) or not types or not all(isinstance(t, str) for t in types):
        return [_problem(name, "must be a non-empty list of request type names", types)]
    unknown = [t for t in types if t not in SINGLE_TYPES]
    if unknown:
        return [_problem(name, f"unknown request type(s) {mask_text(', '.join(unknown))}", types)]
    if len(set(types)) != len(types):
        return [Problem(name, "names a request type twice", types)]
    return combination_problems(types)


def combination_problems(types: list[str]) -> list[Problem]:
    """Request types of one object in an order the service does not run (30000 naming the field):
    the allow-list of `gwkit.interface.orders`."""
    if supported_order(types):
        return []
    return [Problem("requesttypedescriptions", unsupported_order_rule(types), types)]


def request_types_of(types: list[str]) -> list[RequestType]:
    """The table entries a list of request types is made of (AUTH and SUBSCRIPTION combine)."""
    combined = request_type_for(types)
    if combined:
        return [combined]
    found: list[RequestType] = []
    for at, name in enumerate(types):
        if name == "SUBSCRIPTION" and at > 0 and types[at - 1] == "AUTH":
            continue  # the AUTH before it made the combined AUTH+SUBSCRIPTION entry
        following = types[at + 1] if at + 1 < len(types) else None
        key = "AUTH+SUBSCRIPTION" if name == "AUTH" and following == "SUBSCRIPTION" else name
        found.append(REQUEST_TYPES[key])
    return found


def chained_entries(types: list[str]) -> tuple[bool, ...]:
    """For each entry of `request_types_of(types)`: does it take the record before it as its parent?"""
    entries = request_types_of(types)
    return tuple(
        at > 0 and (entries[at - 1].types[-1], entry.types[0]) in CHAINS for at, entry in enumerate(entries)
    )


def variants_for(types: list[str], request: Mapping[str, Any]) -> list[tuple[RequestType, Variant]]:
    entries = _known_entries(types)
    request_types = entries[0] if entries is not None else request_types_of(types)
    return [(rt, rt.select(request)) for rt in request_types]


# The table entries and chaining of each list of request types found valid, worked out once: the
# same few combinations come again and again. Only valid lists are kept, so the table stays small.
_valid_types: dict[tuple[str, ...], tuple[tuple[RequestType, ...], tuple[bool, ...]]] = {}
_VALID_TYPES_SIZE = 256


def _known_entries(types: Any) -> tuple[tuple[RequestType, ...], tuple[bool, ...]] | None:
    if types.__class__ is not list:
        return None
    try:
        found = _valid_types.get(tuple(types))
    except TypeError:  # an unhashable item: not a list of names anyway
        return None
    if found is not None and any(REQUEST_TYPES.get(rt.key) is not rt for rt in found[0]):
        return None  # the tables have changed since (a request type replaced at run time)
    return found


def _entries(types: list[str]) -> tuple[tuple[RequestType, ...], tuple[bool, ...]]:
    return tuple(request_types_of(types)), chained_entries(types)


# The merged field sets of a combination of variants, made once per combination (validation is on
# the client's hot path). Keyed by the variants' ids; the entry keeps the variants alive.
_MERGED: dict[tuple[tuple[int, ...], tuple[bool, ...]], tuple[Any, ...]] = {}


def _merged(variants: list[tuple[RequestType, Variant]], chained: tuple[bool, ...] = ()) -> tuple[Any, ...]:
    key = (tuple([id(variant) for _, variant in variants]), chained)
    merged = _MERGED.get(key)
    if merged is None:
        allowed: set[str] = {"requesttypedescriptions"}
        forbidden: dict[str, tuple[str, str]] = {}
        not_enforced: set[str] = set()
        choices: dict[str, tuple[str, ...]] = {}
        required: list[str] = []
        for at, (rt, variant) in enumerate(variants):
            allowed.update(variant.allowed)
            takes_parent = at < len(chained) and chained[at]  # the record before it is its parent
            required.extend(
                f
                for f in variant.required
                if f not in required and not (takes_parent and f == "parenttransactionreference")
            )
            for name, why in variant.forbidden.items():
                forbidden.setdefault(name, (rt.key, why))
            not_enforced.update(variant.not_enforced)
            for name, values in variant.choices.items():  # several types: a value any of them takes
                choices[name] = tuple(dict.fromkeys(choices.get(name, ()) + values))
        # A field's own rule for a request type holds only when every type using the field agrees.
        specs = {
            name: spec
            for _, variant in variants
            for name, spec in variant.fields.items()
            if all(name in v.fields for _, v in variants if name in v.allowed)
        }
        # For each field these types use: the spec and the allowed values its value is checked against.
        checks = {
            name: (spec, choices.get(name), id(spec))
            for name in allowed
            if name in FIELDS and name != "requesttypedescriptions"
            for spec in (specs.get(name) or FIELDS[name],)
        }
        merged = _MERGED[key] = (
            tuple(v for _, v in variants),
            frozenset(allowed),
            tuple(required),
            forbidden,
            checks,
            frozenset(not_enforced),
        )
    return merged


def allowed_fields(variants: list[tuple[RequestType, Variant]]) -> frozenset[str]:
    """Every field the variants of one request object use together (`variants_for`'s answer)."""
    allowed: frozenset[str] = _merged(variants)[1]
    return allowed


def _check_variants(
    variants: list[tuple[RequestType, Variant]],
    request: Mapping[str, Any],
    strict: bool,
    chained: tuple[bool, ...] = (),
) -> list[Problem]:
    problems: list[Problem] = []
    _, allowed, required, forbidden, checks, not_enforced = _merged(variants, chained)
    for name in required:
        value = request.get(name)
        if value is None or value == "":
            if not strict and name in not_enforced:
                continue  # the gateway answers as the real service, which accepts the request without it
            what = " + ".join(f"{rt.key} ({v.name})" for rt, v in variants)
            problems.append(Problem(name, f"is required in {what} requests"))
    for name, value in request.items():
        check = checks.get(name)
        if check is not None:  # the usual case first: a field this request type uses
            if value is not None:
                spec, field_choices, spec_id = check
                if value.__class__ is not str or (spec_id, value, field_choices) not in _KNOWN_VALID:
                    problems.extend(_check_and_remember(spec, name, value, request, field_choices))
            continue
        if name in IGNORED_FIELDS or name == "requesttypedescriptions":
            continue
        if name in forbidden and name not in allowed:
            if not strict and name in not_enforced:
                continue  # as the real service: accepted, ignored (and never kept)
            key, why = forbidden[name]
            problems.append(_problem(name, f"must not be sent in {key} requests: {why}", value))
            continue
        if name == BYPASS_FIELD:  # a list of payment types, in any request object (the gateway's)
            broken = bypass_rule_broken(value)
            if broken:
                problems.append(_problem(name, broken, value))
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
        return [
            _problem(
                "filter", 'must be an object such as {"transactionreference": [{"value": "1-2-3"}]}', value
            )
        ]
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
            choices = RECORD_TYPES if name == "requesttypedescription" else None
            problems.extend(
                Problem(where, p.rule, p.value) for p in check_value(name, entry["value"], choices=choices)
            )
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
            name = name[len("updates.") :]
        if name not in names:
            names.append(name)
    return names
