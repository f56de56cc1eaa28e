"""What the application gets: `Answer`; the upstream's answer passed on, the gateway's answer to an
invalid request made here (--strict), and each fault kind's answer on forwarded traffic."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from ..interface.codes import message_of
from ..interface.jsonread import BodyError, read_json
from ..interface.masking import mask_text
from ..interface.requests import SINGLE_TYPES
from ..interface.validation import Problem, errordata, normalised, validate_request
from ..interface.wire import FAULT_HEADER
from ..sandbox.gateway.envelopes import envelope, error_record
from ..sandbox.gateway.refusal import Refusal
from .upstreams import UpstreamAnswer

JSON_TYPE = {"content-type": "application/json; charset=utf-8"}
_PROXY_REASONS = {
    500: "Internal Server Error",
    502: "Bad Gateway",
    503: "Service Unavailable",
    504: "Gateway Timeout",
}
# The validation problems of the request, on every answer to one that has them (strict or not).
PROBLEMS_HEADER = "x-gwkit-problems"
PROBLEMS_HEADER_BYTES = 4096  # well under the 8 KiB most servers and clients accept for a header
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


def refused(sent: Any, reference: str | None) -> Answer:
    """--strict, for a request none of whose objects can be forwarded: the gateway's answer made
    here (the gateway is never asked): 10205 for a body that is not JSON, 30000 for one over a
    limit or with a key named twice, 30000 for an envelope without request objects, and for each
    object its `refusal_record`."""
    objects = sent.get("request") if isinstance(sent, dict) else None
    if isinstance(sent, BodyError) or not isinstance(objects, list) or not objects:
        fault = _body_fault(sent) if isinstance(sent, BodyError) else Refusal(30000, ["request"])
        return Answer(200, dict(JSON_TYPE), as_json(envelope([error_record("ERROR", fault)], reference)))
    records = [record for obj in objects if (record := refusal_record(obj)) is not None]
    return Answer(200, dict(JSON_TYPE), as_json(envelope(records, reference)))


def refusal_record(obj: Any, problems: list[Problem] | None = None) -> dict[str, Any] | None:
    """The gateway's ERROR record for an invalid request object: 30000 naming `request` for one that
    is not a JSON object, 60018 for request types it does not offer, else 30000 naming the fields
    (`problems`, or the object's own); None when it is valid."""
    if not isinstance(obj, dict):
        return error_record("ERROR", Refusal(30000, ["request"]))
    types = obj.get("requesttypedescriptions", obj.get("requesttypedescription"))
    listed = types if isinstance(types, list) else [types]
    if not types or not all(isinstance(t, str) and t in SINGLE_TYPES for t in listed):
        return error_record("ERROR", Refusal(60018, [str(t)[:40] for t in listed[:5]]))
    found = problems if problems is not None else validate_request(obj)
    return error_record("ERROR", Refusal(30000, errordata(found))) if found else None


def _body_fault(error: BodyError) -> Refusal:
    """As the gateway answers: not JSON is 10205 saying why; a value over a limit is 30000 naming where."""
    return Refusal(10205, [error.what]) if error.limit is None else Refusal(30000, [error.where, error.what])


def passed(upstream: UpstreamAnswer | None) -> Answer:
    assert upstream is not None
    kept = {k.lower(): v for k, v in upstream.headers.items() if k.lower() in ("content-type", FAULT_HEADER)}
    return Answer(upstream.status, kept, upstream.body)


def faulted(
    fault: Any, upstream: UpstreamAnswer | None, types: tuple[str, ...], reference: str | None
) -> Answer:
    """The application's answer under `fault`, given the upstream's answer (None: not forwarded)."""
    marked = {FAULT_HEADER: fault.kind}
    if fault.kind in ("latency", "threeds"):  # the upstream's answer (late; to the outcome's test card)
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
    """An answer's JSON object, read as every body is (bounded, `read_json`); None when it is not one."""
    try:
        value = read_json(body)
    except BodyError:
        return None
    return value if isinstance(value, dict) else None


def with_problems(answer: Answer, problems: list[Any]) -> Answer:
    """The answer with its request's validation problems in `x-gwkit-problems` (PROBLEMS_HEADER)."""
    if not problems or answer.silence is not None:
        return answer
    return Answer(answer.status, {**answer.headers, PROBLEMS_HEADER: problems_header(problems)}, answer.body)


def problems_header(problems: list[Any]) -> str:
    """`[{"object": 0, "field": "baseamount", "rule": "Numeric: digits 0-9 only"}, ...]`: ASCII JSON
    of at most PROBLEMS_HEADER_BYTES, never a value sent (card numbers in a name masked); the
    problems past the cap counted as `{"more": N}`."""
    shown: list[dict[str, Any]] = []
    for position, found in enumerate(problems):
        item = {"object": found.index, "field": mask_text(found.field), "rule": mask_text(found.rule)}
        more = {"more": len(problems) - position - 1}
        if len(json.dumps([*shown, item, more])) > PROBLEMS_HEADER_BYTES:
            shown.append({"more": len(problems) - position})
            break
        shown.append(item)
    return json.dumps(shown)
