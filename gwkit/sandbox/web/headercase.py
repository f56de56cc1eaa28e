"""Answer header names in canonical case (`Content-Type`), as the real service sends them.

HTTP header names are case-insensitive, but some clients read them by exact name: the official
Python client's `http_response_headers = ["content-type"]` finds the answer's `Content-Type` only
when it is spelled so. Starlette writes names in lower case and h11 sends them as given, so the
names are put in canonical case on their way out.
"""

from __future__ import annotations

from starlette.types import ASGIApp, Message, Receive, Scope, Send


def canonical(name: bytes) -> bytes:
    """`content-type` -> `Content-Type`: each hyphen-separated word capitalised."""
    return b"-".join(word[:1].upper() + word[1:].lower() for word in name.split(b"-"))


def canonical_header_case(app: ASGIApp) -> ASGIApp:
    """`app` whose answers' header names are in canonical case."""

    async def cased(scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            return await app(scope, receive, send)

        async def send_cased(message: Message) -> None:
            if message["type"] == "http.response.start":
                headers = [(canonical(name), value) for name, value in message.get("headers", ())]
                message = {**message, "headers": headers}
            await send(message)

        await app(scope, receive, send_cased)

    for name in ("sandbox", "workers"):  # what create_app's app carries, for whoever reads it
        if hasattr(app, name):
            setattr(cased, name, getattr(app, name))
    return cased
