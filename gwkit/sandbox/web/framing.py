"""Ambiguous message framing refused at the server's edge (RFC 9112 section 6.3): request smuggling.

Behind a reverse proxy (docs/team-sandbox.md), a request whose length two parties can read two ways
lets a client hide a second request in the body of the first: the proxy sees one request, the
sandbox two. h11 (uvicorn's HTTP/1.1 parser) already refuses a transfer coding other than `chunked`
(or one sent twice), Content-Length fields that differ and one that is not a decimal number
(identical ones, `2, 2`, it reads as one, as RFC 9110 section 8.6 allows); these are the cases it
lets through:

- both Content-Length and Transfer-Encoding (h11 reads the body as chunked, a proxy may not);
- Transfer-Encoding in an HTTP/1.0 request (RFC 9112 section 6.1: the framing is faulty).

Each is answered once with 400 naming the rule, and `Connection: close`: uvicorn closes the
connection after that answer, so nothing after the head is ever read as a request.
"""

from __future__ import annotations

import json
from collections.abc import Iterable

from starlette.types import ASGIApp, Receive, Scope, Send

RULE = "RFC 9112 section 6.3"


def framing_problem(headers: Iterable[tuple[bytes, bytes]], http_version: str) -> str | None:
    """Why a request head's framing is ambiguous, or None when it is not."""
    names = {name.lower() for name, _ in headers}
    if b"transfer-encoding" not in names:
        return None
    if b"content-length" in names:
        return f"Content-Length and Transfer-Encoding must not both be sent ({RULE})"
    if http_version == "1.0":
        return f"Transfer-Encoding is not allowed in an HTTP/1.0 request ({RULE})"
    return None


def refuse_ambiguous_framing(app: ASGIApp) -> ASGIApp:
    """`app`, with a request whose framing is ambiguous answered 400 (and the connection closed)
    before it is read."""

    async def checked(scope: Scope, receive: Receive, send: Send) -> None:
        problem = None
        if scope["type"] == "http":
            problem = framing_problem(scope["headers"], scope.get("http_version", "1.1"))
        if problem is None:
            return await app(scope, receive, send)
        body = json.dumps({"error": "ambiguous framing", "detail": problem}).encode()
        headers = [
            (b"Content-Type", b"application/json"),
            (b"Content-Length", str(len(body)).encode()),
            (b"Connection", b"close"),
        ]
        await send({"type": "http.response.start", "status": 400, "headers": headers})
        await send({"type": "http.response.body", "body": body})

    return checked
