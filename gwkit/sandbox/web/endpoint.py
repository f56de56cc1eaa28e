"""The gateway endpoint `POST /json/`: credentials, the JSON body, CORS; the Gateway answers."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ...interface.validation import normalised
from ..gateway.accounts import Account
from ..gateway.core import Gateway
from ..gateway.envelopes import request_error, usable_reference
from ..gateway.refusal import Refusal, unknown_error
from ..http import BodyError, SandboxRequest, SandboxResponse
from .cors import cors_headers, origin_rejected, rejected
from .credentials import authenticate, unauthorised
from .served import Served


@dataclass(frozen=True)
class Caller:
    """Who sends a gateway request and what it says: read once per request (`caller_of`), used by
    the fault selection (injection.py) and by the answer."""

    account: Account | None  # None: wrong credentials, or none and not a browser tokenisation
    body: Any  # the parsed JSON body; None when it cannot be read (`error`)
    error: BodyError | None = None


def caller_of(gateway: Gateway, request: SandboxRequest) -> Caller:
    """The one authentication of a gateway request: Basic credentials, or for browser tokenisation
    without any, the site its body names. Read once, however many steps ask (the scheduler's
    group commit, the fault selection, the answer)."""
    known = request.state.get("caller")
    if known is not None and known[0] is gateway:
        return known[1]
    caller = _read_caller(gateway, request)
    request.state["caller"] = (gateway, caller)
    return caller


def sites_written_by(gateway: Gateway, request: SandboxRequest) -> tuple[str, ...]:
    """The sites a gateway request may write to: its account's (none when it is refused unread)."""
    account = caller_of(gateway, request).account
    return tuple(account.sitereferences) if account is not None else ()


def _read_caller(gateway: Gateway, request: SandboxRequest) -> Caller:
    account = authenticate(gateway.accounts, request.headers)
    try:
        body, error = request.parsed_json(), None
    except BodyError as exc:
        body, error = None, exc
    if account is None and error is None and "authorization" not in request.headers:
        account = anonymous_account(gateway, body)
    return Caller(account, body, error)


def gateway_endpoint(
    sandbox: Served, request: SandboxRequest, caller: Caller | None = None
) -> SandboxResponse:
    """POST and its CORS preflight: answers to browsers get their CORS headers. `caller`: the
    request's `caller_of`, when the fault selection has already read it."""
    origin = request.headers.get("origin")
    if origin is not None and origin_rejected(origin):
        return rejected(origin)
    if request.method == "OPTIONS":
        response = SandboxResponse(204, {}, b"")
    else:
        response = answer(sandbox.gateway, request, caller or caller_of(sandbox.gateway, request))
    if origin is not None:
        response.headers.update(cors_headers(origin, request))
    return response


def method_not_allowed(sandbox: Served, request: SandboxRequest) -> SandboxResponse:
    return SandboxResponse.json(
        {
            "error": f"method not allowed: {request.method} {request.path}",
            "detail": "the gateway endpoint takes POST",
        },
        status=405,
        headers={"allow": "POST, OPTIONS"},
    )


def answer(gateway: Gateway, request: SandboxRequest, caller: Caller) -> SandboxResponse:
    if caller.account is None:  # only an authenticated caller learns more than 401
        return unauthorised()
    if caller.error is not None:
        reference = usable_reference(request.headers.get("requestreference"))
        return SandboxResponse.json(request_error(body_fault(caller.error), reference))
    try:
        return SandboxResponse.json(
            gateway.process(
                caller.body,
                caller.account,
                origin=request.headers.get("origin"),
                requestreference=request.headers.get("requestreference"),
                base_url=request.base_url,
            )
        )
    except Exception as exc:  # a sandbox bug outside any request object: still the gateway's answer
        reference = usable_reference(request.headers.get("requestreference"))
        return SandboxResponse.json(request_error(unknown_error(exc), reference))


def body_fault(error: BodyError) -> Refusal:
    """A body that is not JSON is 10205 Malformed JSON; one over a limit is 30000 naming where and the limit."""
    if error.limit is None:
        return Refusal(10205, [error.what])
    return Refusal(30000, [error.where, error.what])


def anonymous_account(gateway: Gateway, body: Any) -> Account | None:
    """Browser tokenisation needs no credentials: the site named in the request decides."""
    objects = body.get("request") if isinstance(body, dict) else None
    if not isinstance(objects, list) or not objects:
        return None
    sites = set()
    for obj in objects:
        if not isinstance(obj, dict) or normalised(obj)[0].get("requesttypedescriptions") != [
            "CACHETOKENISE"
        ]:
            return None
        site = obj.get("sitereference")
        if not isinstance(site, str):
            return None
        sites.add(site)
    return gateway.account_for_site(sites.pop()) if len(sites) == 1 else None
