"""The gateway proper: one envelope in, one envelope out.

Each request object is validated with the spec tables (the same code as the client), then each
of its request types is answered, in order, by the handler registered for it. A request object
is processed in one write transaction; a refused request type (a `Fault`) is rolled back to a
savepoint, so nothing of a rejected request is kept.
"""

from __future__ import annotations

import json
import logging
import os
import sqlite3
import traceback
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Any

from ..interface.requests import SINGLE_TYPES
from ..interface.validation import check_value, errordata, request_types_of, validate_request
from .accounts import Account
from .clock import TIMESTAMP
from .registry import REQUEST_HANDLERS, Fault

if TYPE_CHECKING:  # pragma: no cover
    from .core import Sandbox

VERSION = "1.00"
_ALNUM = "abcdefghijklmnopqrstuvwxyz0123456789"
_SECRAND_ALPHABET = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"
log = logging.getLogger("gwkit.sandbox")


@dataclass
class Context:
    """What a handler sees of one request object being answered."""

    sandbox: "Sandbox"
    conn: sqlite3.Connection
    account: Account
    now: datetime
    origin: str | None = None
    base_url: str = ""
    previous: list[dict[str, Any]] = field(default_factory=list)

    @property
    def store(self):
        return self.sandbox.store

    @property
    def sites(self) -> tuple[str, ...]:
        return self.account.sitereferences

    @property
    def timestamp(self) -> str:
        return self.now.strftime(TIMESTAMP)

    def new_reference(self) -> str:
        return self.store.next_reference(self.conn)

    def find(self, reference: str | None, field_name: str = "parenttransactionreference") -> sqlite3.Row:
        """A transaction of this account's sites, or a 30000 naming `field_name`."""
        row = self.store.transaction(self.conn, reference, self.sites) if reference else None
        if row is None:
            raise Fault(30000, "Invalid field", [field_name])
        return row


def _random_text(alphabet: str, length: int) -> str:
    # One urandom call per string (the hot path makes two per answer). The slight modulo bias
    # does not matter: these identify answers, they protect nothing.
    return "".join(alphabet[byte % len(alphabet)] for byte in os.urandom(length))


def generated_request_reference() -> str:
    """`W<digits>-<8 lowercase letters and digits>`, as the gateway makes when none was sent."""
    digits = 10 + os.urandom(1)[0] % 90
    return f"W{digits}-{_random_text(_ALNUM, 8)}"


def new_secrand() -> str:
    """2 to 15 letters and digits."""
    return _random_text(_SECRAND_ALPHABET, 2 + os.urandom(1)[0] % 14)


def error_record(requesttype: str, fault: Fault) -> dict[str, Any]:
    return {"requesttypedescription": requesttype, "errorcode": str(fault.errorcode),
            "errormessage": fault.errormessage, "errordata": fault.errordata}


def envelope(records: list[dict[str, Any]], requestreference: str | None = None) -> dict[str, Any]:
    return {"requestreference": requestreference or generated_request_reference(), "version": VERSION,
            "response": records, "secrand": new_secrand()}


def request_error(fault: Fault, requestreference: str | None = None) -> dict[str, Any]:
    """A whole-request failure: one record with `requesttypedescription` ERROR."""
    return envelope([error_record("ERROR", fault)], requestreference)


def process(sandbox: "Sandbox", body: Any, account: Account, *, origin: str | None = None,
            base_url: str = "", requestreference: str | None = None) -> dict[str, Any]:
    """Answer a parsed envelope from an authenticated account.

    `requestreference` is the HTTP header of that name. The official clients send it, and for an
    envelope of several request objects it is the only reference they check the answer against.
    """
    if not isinstance(body, dict):
        return request_error(Fault(30000, "Invalid field", ["request"]), usable_reference(requestreference))
    objects = body.get("request")
    reference = usable_reference(requestreference) or _echoed_reference(objects)
    if body.get("alias") not in (None, account.username):
        return request_error(Fault(30000, "Invalid field", ["alias"]), reference)
    if body.get("version", VERSION) != VERSION:
        return request_error(Fault(30000, "Invalid field", ["version"]), reference)
    if not isinstance(objects, list) or not objects:
        return request_error(Fault(30000, "Invalid field", ["request"]), reference)
    records: list[dict[str, Any]] = []
    for request in objects:
        records.extend(_answer_object(sandbox, request, account, origin, base_url))
    return envelope(records, reference)


def _echoed_reference(objects: Any) -> str | None:
    if isinstance(objects, list):
        for request in objects:
            if isinstance(request, dict) and usable_reference(request.get("requestreference")):
                return request["requestreference"]
    return None


def usable_reference(reference: Any) -> str | None:
    """A request reference worth echoing: the field's own rule (letters, digits, hyphens; 25)."""
    if isinstance(reference, str) and not check_value("requestreference", reference):
        return reference
    return None


def _answer_object(sandbox: "Sandbox", request: Any, account: Account, origin: str | None,
                   base_url: str) -> list[dict[str, Any]]:
    if not isinstance(request, dict):
        return [error_record("ERROR", Fault(30000, "Invalid field", ["request"]))]
    types = request.get("requesttypedescriptions")
    if (not isinstance(types, list) or not types or not all(isinstance(t, str) for t in types)
            or any(t not in SINGLE_TYPES for t in types)
            or ("SUBSCRIPTION" in types and "AUTH" not in types)):
        return [error_record("ERROR", Fault(60018, "Invalid requesttype", _as_sent(types)))]
    problems = validate_request(request, strict=False)
    if problems:
        fault = Fault(30000, "Invalid field", errordata(problems))
        return [error_record(t, fault) for t in types]
    site = request.get("sitereference")
    if site is not None and site not in account.sitereferences:
        fault = Fault(30000, "Invalid field", ["sitereference"])
        return [error_record(t, fault) for t in types]
    try:
        return _run_handlers(sandbox, request, account, origin, base_url)
    except Exception as exc:  # a sandbox bug: nothing of the request object was kept (rolled back)
        # Where and what, but not the message: it may quote request values such as card data.
        log.error("request object failed with %s; answered 99999\n%s", type(exc).__name__,
                  "".join(traceback.format_tb(exc.__traceback__)))
        return [error_record(t, Fault(99999, "Unknown error", [type(exc).__name__])) for t in types]


def _as_sent(types: Any) -> list[str]:
    """`errordata` of a 60018: the request types as sent, or the field's name when none was."""
    if types is None:
        return ["requesttypedescriptions"]
    sent = types if isinstance(types, list) else [types]
    return [t if isinstance(t, str) else json.dumps(t) for t in sent]


def _run_handlers(sandbox: "Sandbox", request: dict[str, Any], account: Account, origin: str | None,
                  base_url: str) -> list[dict[str, Any]]:
    records: list[dict[str, Any]] = []
    with sandbox.store.write() as conn:
        ctx = Context(sandbox, conn, account, sandbox.clock.now(), origin, base_url, records)
        for request_type in request_types_of(request["requesttypedescriptions"]):
            handler = REQUEST_HANDLERS.get(request_type.key)
            if handler is None:
                records.extend(error_record(t, Fault(60018, "Invalid requesttype", [t]))
                               for t in request_type.types)
                break
            conn.execute("SAVEPOINT request_type")
            try:
                answered = handler(ctx, request)
            except Fault as fault:
                conn.execute("ROLLBACK TO request_type")
                conn.execute("RELEASE request_type")
                records.extend(error_record(t, fault) for t in request_type.types)
                break  # later request types of the object depend on this one: they are not run
            conn.execute("RELEASE request_type")
            records.extend(answered)
    return records
