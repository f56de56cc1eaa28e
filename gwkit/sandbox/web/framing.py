"""Ambiguous message framing refused at the server's edge (RFC 9112 section 6.3): request smuggling.

Behind a reverse proxy (docs/team-sandbox.md), a request whose length two parties can read two ways
lets a client hide a second request in the body of the first: the proxy sees one request, the
sandbox two. h11 already refuses a transfer coding other than `chunked` (or one sent twice),
Content-Length fields that differ and one that is not a decimal number (identical ones, `2, 2`, it
reads as one, as RFC 9110 section 8.6 allows); these are the cases it lets through:

- both Content-Length and Transfer-Encoding (h11 reads the body as chunked, a proxy may not);
- Transfer-Encoding in an HTTP/1.0 request (RFC 9112 section 6.1: the framing is faulty).

Each is answered once with 400 naming the rule, and the connection is closed: nothing after the
head is read as a request.
"""

from __future__ import annotations

import h11

RULE = "RFC 9112 section 6.3"


def framing_problem(request: h11.Request) -> str | None:
    """Why this request head's framing is ambiguous, or None when it is not."""
    names = {name for name, _ in request.headers}
    if b"transfer-encoding" not in names:
        return None
    if b"content-length" in names:
        return f"Content-Length and Transfer-Encoding must not both be sent ({RULE})"
    if request.http_version == b"1.0":
        return f"Transfer-Encoding is not allowed in an HTTP/1.0 request ({RULE})"
    return None


class FramingCheckedConnection(h11.Connection):
    """h11's server connection, refusing a request head whose framing is ambiguous (see above):
    `next_event` raises `h11.RemoteProtocolError`, on which the server answers 400 and closes."""

    refusal: str | None = None  # why the last request was refused, for the 400's body

    def next_event(self):
        event = super().next_event()
        if isinstance(event, h11.Request):
            problem = framing_problem(event)
            if problem is not None:
                self.refusal = problem
                raise h11.RemoteProtocolError(problem, error_status_hint=400)
        return event
