"""What the application gets: `Answer`; the upstream's answer passed on, the gateway's answer to an
invalid request made here (--strict), and each fault kind's answer on forwarded traffic."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from ..interface.codes import message_of
from ..interface.requests import SINGLE_TYPES
from ..interface.validation import Problem, errordata, normalised, validate_request
from ..interface.wire import FAULT_HEADER
from ..sandbox.gateway.envelopes import envelope, error_record
from ..sandbox.gateway.refusal import Refusal
from ..sandbox.http import BodyError
from .upstreams import UpstreamAnswer

JSON_TYPE = {"content-type": "application/json; charset=utf-8"}
_PROXY_REASONS = {
    500: "Internal Server Error",
    502: "Bad Gateway",
    503: "Service Unavailable",
    504: "Gateway Timeout",
}
GARBAGE = b"\x00\xff<html>upstream sent garbage\xfe\x1f"


@dataclass
class Answer:
    """What the application gets: an HTTP answer, or `silence` ("drop": the connection is closed;
    "timeout": no answer until the application gives up)."""

    status: int
    headers: dict[str, str]
    body: bytes
    silence: str | None = None


def objects_of(sent: Any) -> list[dict[str, Any]]:
    objects = sent.get("request") if isinstance(sent, dict) else None
    return [o for o in objects if isinstance(o, dict)] if isinstance(objects, list) else []


def types_of(obj: dict[str, Any]) -> list[str]:
    types = normalised(obj)[0].get("requesttypedescriptions")
    return [t for t in types if isinstance(t, str)] if isinstance(types, list) else []


def refused(sent: Any, problems: list[Problem], reference: str | None) -> Answer:
    """--strict: the gateway's answer to an invalid request, made here (the gateway is never asked):
    10205 for a body that is not JSON, 30000 for an envelope without request objects, and for each
    invalid object 60018 (request types it does not offer) or 30000 naming the fields."""
    objects = objects_of(sent)
    if isinstance(sent, BodyError) or not objects:
        fault = _body_fault(sent) if isinstance(sent, BodyError) else Refusal(30000, ["request"])
        return Answer(200, dict(JSON_TYPE), as_json(envelope([error_record("ERROR", fault)], reference)))
    records = []
    for obj in objects:
        types = obj.get("requesttypedescriptions", obj.get("requesttypedescription"))
        listed = types if isinstance(types, list) else [types]
        if not types or not all(isinstance(t, str) and t in SINGLE_TYPES for t in listed):
            records.append(error_record("ERROR", Refusal(60018, [str(t)[:40] for t in listed[:5]])))
        elif found := validate_request(obj):  # one ERROR record per refused object, as the gateway answers
            records.append(error_record("ERROR", Refusal(30000, errordata(found))))
    return Answer(200, dict(JSON_TYPE), as_json(envelope(records, reference)))


def _body_fault(error: BodyError) -> Refusal:
    """As the gateway answers: not JSON is 10205 saying why; a value over a limit is 30000 naming where."""
    return Refusal(10205, [error.what]) if error.limit is None else Refusal(30000, [error.where, error.what])


def passed(upstream: UpstreamAnswer | None) -> Answer:
    assert upstream is not None
    kept = {k: v for k, v in upstream.headers.items() if k.lower() in ("content-type", FAULT_HEADER)}
    return Answer(upstream.status, kept, upstream.body)


def faulted(
    fault: Any, upstream: UpstreamAnswer | None, types: tuple[str, ...], reference: str | None
) -> Answer:
    """The application's answer under `fault`, given the upstream's answer (None: not forwarded)."""
    marked = {FAULT_HEADER: fault.kind}
    if fault.kind == "latency":
        answer = passed(upstream)
        return Answer(answer.status, {**answer.headers, **marked}, answer.body)
    if fault.kind in ("drop", "timeout"):
        return Answer(0, marked, b"", silence=fault.kind)
    if fault.kind == "http_status":
        status = fault.params["status"]
        title = f"{status} {_PROXY_REASONS[status]}"
        page = f"<html><head><title>{title}</title></head><body><h1>{title}</h1><hr>proxy</body></html>"
        return Answer(status, {"content-type": "text/html; charset=utf-8", **marked}, page.encode())
    if fault.kind == "malformed":
        if fault.params["body"] == "garbage":
            return Answer(200, {**JSON_TYPE, **marked}, GARBAGE)
        whole = upstream.body if upstream is not None else as_json(envelope([], reference))
        return Answer(200, {**JSON_TYPE, **marked}, whole[: len(whole) // 2])
    return Answer(200, {**JSON_TYPE, **marked}, as_json(_gateway_error(fault, upstream, types, reference)))


def _gateway_error(
    fault: Any, upstream: UpstreamAnswer | None, types: tuple[str, ...], reference: str | None
) -> dict[str, Any]:
    """An error record for each record the upstream made (with its transactionreference), or for each
    request type sent when it was not forwarded."""
    code = fault.params["code"]
    answered = json_object(upstream.body) if upstream is not None else None
    records = (answered or {}).get("response") if isinstance(answered, dict) else None
    made = [
        (r.get("requesttypedescription"), r.get("transactionreference"))
        for r in (records if isinstance(records, list) else [])
        if isinstance(r, dict)
    ]
    sent = [(t, None) for key in types or ("ERROR",) for t in key.split("+")]
    return envelope(
        [
            {
                "requesttypedescription": requesttype,
                "errorcode": str(code),
                "errormessage": message_of(code),
                "errordata": [],
                **({"transactionreference": made_reference} if made_reference else {}),
            }
            for requesttype, made_reference in made or sent
        ],
        (answered or {}).get("requestreference") if isinstance(answered, dict) else reference,
    )


def as_json(data: Any) -> bytes:
    return json.dumps(data).encode("utf-8")


def json_object(body: bytes) -> dict[str, Any] | None:
    try:
        value = json.loads(body)
    except ValueError:
        return None
    return value if isinstance(value, dict) else None
