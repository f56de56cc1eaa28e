"""The answer's envelope: request reference, version, records and secrand; error records."""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

from ...interface.validation import check_value
from ...interface.wire import VERSION
from .refusal import Refusal

MAX_REQUEST_OBJECTS = 100  # request objects in one envelope: an envelope is answered as one unit of work

_ALNUM = "abcdefghijklmnopqrstuvwxyz0123456789"
_SECRAND_ALPHABET = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"


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


def usable_reference(reference: Any) -> str | None:
    """A request reference worth echoing: the field's own rule (letters, digits, hyphens; 25)."""
    if isinstance(reference, str) and not check_value("requestreference", reference):
        return reference
    return None


def answer_reference(header: Any, objects: Any) -> str | None:
    """The reference an answer echoes: the `requestreference` HTTP header (the official clients
    check it), else the first request object's own `requestreference`."""
    if usable_reference(header):
        return header
    for request in objects if isinstance(objects, list) else ():
        if isinstance(request, dict) and usable_reference(request.get("requestreference")):
            return request["requestreference"]
    return None


def error_record(requesttype: str, fault: Refusal, timestamp: str | None = None) -> dict[str, Any]:
    """A refused request type's record; a refused request object's is `requesttype` ERROR, with the
    `transactionstartedtimestamp` of its refusal (as the real service answers)."""
    return {
        "requesttypedescription": requesttype,
        **({"transactionstartedtimestamp": timestamp} if timestamp else {}),
        "errorcode": str(fault.errorcode),
        "errormessage": fault.errormessage,
        "errordata": fault.errordata,
    }


def uses_reference(record: Mapping[str, Any]) -> bool:
    """Does this ERROR record use up a transaction reference, as the real gateway's do?

    Captured (real-gateway-facts.md, "More captured answers"): an ERROR for an invalid field carries
    a `transactionreference`; one refusing the order of request types (`errordata`
    `["requesttypedescriptions"]`) carries none. No capture shows one on a 60018 (unknown request
    type) or a 10205 (malformed JSON): those use none, nor does a refused envelope or an item of
    `request` that is no request object (nothing of a request was read)."""
    return (
        record.get("requesttypedescription") == "ERROR"
        and record.get("errorcode") == "30000"
        and record.get("errordata") not in (["requesttypedescriptions"], ["request"])
        and "transactionreference" not in record
    )


# Fields a record keeps that its answer leaves out, as the real service answers: no record names its
# site (the request did), and a THREEDQUERY echoes no amount (its AUTH inherits the kept one).
NOT_ANSWERED = ("sitereference",)
NOT_ANSWERED_BY_TYPE: dict[str, tuple[str, ...]] = {"THREEDQUERY": ("baseamount", "currencyiso3a")}


def answered_record(record: Mapping[str, Any]) -> dict[str, Any]:
    """A record as the gateway answers it (a kept one, or one just made)."""
    left_out = NOT_ANSWERED + NOT_ANSWERED_BY_TYPE.get(record.get("requesttypedescription", ""), ())
    return {name: value for name, value in record.items() if name not in left_out}


def envelope(records: list[dict[str, Any]], requestreference: str | None = None) -> dict[str, Any]:
    return {
        "requestreference": requestreference or generated_request_reference(),
        "version": VERSION,
        "response": records,
        "secrand": new_secrand(),
    }


def request_error(
    fault: Refusal, requestreference: str | None = None, timestamp: str | None = None
) -> dict[str, Any]:
    """A whole-request failure: one record with `requesttypedescription` ERROR."""
    return envelope([error_record("ERROR", fault, timestamp)], requestreference)


def too_many_objects(objects: list[Any]) -> Refusal | None:
    """The fault of an envelope with more request objects than the sandbox answers at once."""
    if len(objects) <= MAX_REQUEST_OBJECTS:
        return None
    return Refusal(
        30000,
        ["request", f"at most {MAX_REQUEST_OBJECTS} request objects in one envelope (got {len(objects)})"],
    )
