"""The gateway endpoint `POST /json/`: credentials, the JSON body, CORS; the Gateway answers."""

from __future__ import annotations

import json
from typing import Any

from ..gateway.accounts import Account
from ..gateway.core import Gateway
from ..gateway.envelopes import request_error, usable_reference
from ..gateway.fault import Fault
from ..http import SandboxRequest, SandboxResponse
from .auth import authenticate, unauthorised
from .cors import cors_headers, origin_rejected, rejected
from .served import Served


def gateway_endpoint(sandbox: Served, request: SandboxRequest) -> SandboxResponse:
    """POST and its CORS preflight: answers to browsers get their CORS headers."""
    origin = request.headers.get("origin")
    if origin is not None and origin_rejected(origin):
        return rejected(origin)
    response = SandboxResponse(204, {}, b"") if request.method == "OPTIONS" else answer(sandbox.gateway, request)
    if origin is not None:
        response.headers.update(cors_headers(origin, request))
    return response


def method_not_allowed(sandbox: Served, request: SandboxRequest) -> SandboxResponse:
    return SandboxResponse.json({"error": f"method not allowed: {request.method} {request.path}",
                                 "detail": "the gateway endpoint takes POST"}, status=405,
                                headers={"allow": "POST, OPTIONS"})


def answer(gateway: Gateway, request: SandboxRequest) -> SandboxResponse:
    account = authenticate(gateway.accounts, request.headers)
    if account is None and "authorization" in request.headers:
        return unauthorised()
    try:
        body = json.loads(request.body.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        if account is None:  # only an authenticated caller learns more than 401
            return unauthorised()
        # The position only: the message of a JSON error may quote the body (card data).
        if isinstance(exc, json.JSONDecodeError):
            where = f"line {exc.lineno} column {exc.colno}"
        else:
            where = "not UTF-8"
        reference = usable_reference(request.headers.get("requestreference"))
        return SandboxResponse.json(request_error(Fault(10205, [where]), reference))
    account = account or anonymous_account(gateway, body)
    if account is None:
        return unauthorised()
    return SandboxResponse.json(gateway.process(body, account, origin=request.headers.get("origin"),
                                                requestreference=request.headers.get("requestreference"),
                                                base_url=request.base_url))


def anonymous_account(gateway: Gateway, body: Any) -> Account | None:
    """Browser tokenisation needs no credentials: the site named in the request decides."""
    objects = body.get("request") if isinstance(body, dict) else None
    if not isinstance(objects, list) or not objects:
        return None
    sites = set()
    for obj in objects:
        if not isinstance(obj, dict) or obj.get("requesttypedescriptions") != ["CACHETOKENISE"]:
            return None
        sites.add(obj.get("sitereference"))
    if len(sites) != 1:
        return None
    site = sites.pop()
    return gateway.account_for_site(site) if isinstance(site, str) else None
