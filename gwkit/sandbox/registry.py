"""Where the parts of the sandbox plug in.

The gateway core knows no request type by itself: each module of `gwkit.sandbox.handlers`
registers what it serves. Registration happens at import, so `handlers/__init__.py` imports
every module.

- `request_handler(key)`: answers request objects of a request type key (`AUTH`,
  `AUTH+SUBSCRIPTION`, `STORE`, ...) with a list of records.
- `card_source(variant)`: where an AUTH-like request of a variant (`card`, `parent`,
  `cachetoken`, `threeds`) gets its card.
- `parent_rule(requesttype)`: checks and inheritance when a request names a parent record of
  that type through `parenttransactionreference`.
- `update_rule(requesttype)`: what TRANSACTIONUPDATE may change on records of that type.
- `route(method, path)`: an extra HTTP page of the sandbox (ACS pages, st.js, demo merchant).
- `daily_job(name, order)`: work the sandbox does once per day of its clock (settlement,
  the subscription engine).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable


class Fault(Exception):
    """A request the gateway refuses: answered as an error record, and nothing of it is kept."""

    def __init__(self, errorcode: int, errormessage: str, errordata: list[str] | None = None):
        self.errorcode = errorcode
        self.errormessage = errormessage
        self.errordata = list(errordata or [])
        super().__init__(f"{errorcode} {errormessage} {self.errordata}")


def invalid_field(*names: str) -> Fault:
    return Fault(30000, "Invalid field", list(names))


REQUEST_HANDLERS: dict[str, Callable[..., list[dict[str, Any]]]] = {}
CARD_SOURCES: dict[str, Callable[..., Any]] = {}
PARENT_RULES: dict[str, Callable[..., Any]] = {}
ROUTES: dict[tuple[str, str], Callable[..., Any]] = {}


@dataclass(frozen=True)
class DailyJob:
    name: str
    order: int
    run: Callable[..., dict[str, Any]]


DAILY_JOBS: list[DailyJob] = []


def request_handler(key: str):
    def register(fn):
        REQUEST_HANDLERS[key] = fn
        return fn
    return register


def card_source(variant: str):
    def register(fn):
        CARD_SOURCES[variant] = fn
        return fn
    return register


def parent_rule(requesttype: str):
    def register(fn):
        PARENT_RULES[requesttype] = fn
        return fn
    return register


def route(method: str, path: str):
    """`path` is exact, or ends in `/*` to serve everything below it."""
    def register(fn):
        ROUTES[(method.upper(), path)] = fn
        return fn
    return register


def daily_job(name: str, order: int):
    def register(fn):
        DAILY_JOBS[:] = sorted([j for j in DAILY_JOBS if j.name != name] + [DailyJob(name, order, fn)],
                               key=lambda j: j.order)
        return fn
    return register


def find_route(method: str, path: str) -> Callable[..., Any] | None:
    handler = ROUTES.get((method.upper(), path))
    if handler:
        return handler
    for (m, pattern), fn in ROUTES.items():
        if m == method.upper() and pattern.endswith("/*") and path.startswith(pattern[:-1]):
            return fn
    return None

UPDATE_RULES: dict[str, Callable[..., Any]] = {}


def update_rule(requesttype: str):
    """How TRANSACTIONUPDATE changes records of a request type: fn(ctx, row, updates) -> changes."""
    def register(fn):
        UPDATE_RULES[requesttype] = fn
        return fn
    return register
