"""The HTML pages the sandbox serves itself (the ACS, the demo merchant): Jinja2 templates with
autoescaping, and the security headers every answer carries.

Every HTML page gets a Content-Security-Policy whose scripts and styles run only with the page's
own nonce, `X-Content-Type-Options: nosniff`, and a frame policy: the demo merchant's pages, which
notebook 06 shows in an iframe, may be framed by the sandbox itself and by pages on loopback
(JupyterLab); the ACS pages by any page, since 3-D Secure v1 has the merchant's page frame the
ACS (the stepper's iframe too, whose notebook output may have an opaque origin); any other HTML
page is never framed (`frame-ancestors 'none'`, `X-Frame-Options: DENY`).
"""

from __future__ import annotations

import secrets
from collections.abc import Mapping
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from jinja2 import Environment, FileSystemLoader, StrictUndefined, select_autoescape

from ..http import SandboxResponse

TEMPLATES = Path(__file__).parent / "templates"
LOOPBACK_FRAMERS = "'self' http://localhost:* http://127.0.0.1:* http://[::1]:*"
NOT_FRAMED = "'none'"
ANY_FRAMER = (
    None  # no frame-ancestors at all: a framer of opaque origin (about:blank, srcdoc) matches no list
)

_ENVIRONMENT = Environment(
    loader=FileSystemLoader(TEMPLATES),
    autoescape=select_autoescape(default=True),
    undefined=StrictUndefined,
    trim_blocks=True,
    lstrip_blocks=True,
)


def render(
    template: str,
    *,
    status: int = 200,
    framed_by: str | None = NOT_FRAMED,
    form_action: str = "'self'",
    headers: Mapping[str, str] | None = None,
    **context: Any,
) -> SandboxResponse:
    """The page `template` rendered with `context` (every value escaped), with its security headers."""
    nonce = secrets.token_urlsafe(16)
    text = _ENVIRONMENT.get_template(template).render(nonce=nonce, **context)
    policy = content_security_policy(nonce, framed_by=framed_by, form_action=form_action)
    return SandboxResponse.html(text, status, headers={**(headers or {}), **page_headers(policy, framed_by)})


def content_security_policy(
    nonce: str, *, framed_by: str | None = NOT_FRAMED, form_action: str = "'self'"
) -> str:
    directives = (
        "default-src 'none'",
        f"script-src 'self' 'nonce-{nonce}'",
        f"style-src 'nonce-{nonce}'",
        "connect-src 'self'",  # st.js posts to the sandbox's own /json/
        "img-src 'self' data:",
        f"form-action {form_action}",
        "base-uri 'none'",
    )
    return "; ".join((*directives, f"frame-ancestors {framed_by}") if framed_by else directives)


def page_headers(policy: str, framed_by: str | None) -> dict[str, str]:
    headers = {
        "content-security-policy": policy,
        "x-content-type-options": "nosniff",
        "referrer-policy": "no-referrer",
    }
    if framed_by == NOT_FRAMED:  # browsers without frame-ancestors still honour this
        headers["x-frame-options"] = "DENY"
    return headers


def secured(response: SandboxResponse) -> SandboxResponse:
    """Every answer: nosniff; HTML that brought no policy of its own gets the strictest one."""
    response.headers.setdefault("x-content-type-options", "nosniff")
    if (
        response.headers.get("content-type", "").startswith("text/html")
        and "content-security-policy" not in response.headers
    ):
        strict = "default-src 'none'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
        response.headers.update(page_headers(strict, NOT_FRAMED))
    return response


def origin_of(url: str) -> str | None:
    """scheme://host[:port] of an http(s) URL, for a CSP source; None for anything else."""
    try:
        parts = urlsplit(url)
        host, port = parts.hostname, parts.port
    except ValueError:
        return None
    # an ASCII host only: the origin goes into a header (an IDN term URL gets no origin: 'self' only)
    if (
        parts.scheme not in ("http", "https")
        or not host
        or not all(c.isascii() and (c.isalnum() or c in ".-:") for c in host)
    ):
        return None
    shown = f"[{host}]" if ":" in host else host
    return f"{parts.scheme}://{shown}" + (f":{port}" if port else "")
