"""CORS for the gateway endpoint (interface 5.5), which st.js calls from the browser.

Only `/json/` answers cross-origin calls, because only st.js makes them: a CACHETOKENISE with no
credentials, posted as `application/json` (so a preflight comes first). Calls get CORS headers
echoing the origin, except from `https://localhost`, which is answered 403 with a JSON body and no
CORS headers, for preflights and POSTs alike. `Access-Control-Allow-Credentials` is never sent:
a browser never attaches the Basic credentials it keeps to a cross-origin call, so no other page
can pay or read with a visitor's credentials. The control API, the ACS and the demo merchant send
no CORS headers at all.
"""

from __future__ import annotations

from ..http import SandboxRequest, SandboxResponse

REJECTED_ORIGINS = frozenset({"https://localhost", "https://localhost:443"})


def origin_rejected(origin: str) -> bool:
    return origin.strip().rstrip("/").lower() in REJECTED_ORIGINS


def rejected(origin: str) -> SandboxResponse:
    return SandboxResponse.json(
        {
            "error": "origin rejected",
            "origin": origin,
            "detail": "interface 5.5: cross-origin requests from https://localhost are rejected; "
            "serve the page from a domain the gateway can reach",
        },
        status=403,
    )


def cors_headers(origin: str, request: SandboxRequest) -> dict[str, str]:
    headers = {"access-control-allow-origin": origin, "vary": "Origin"}
    if request.method == "OPTIONS":
        headers.update(
            {
                "access-control-allow-methods": "POST, OPTIONS",
                "access-control-allow-headers": "Content-Type, Accept",
                "access-control-max-age": "600",
            }
        )
        if request.headers.get("access-control-request-private-network") == "true":
            headers["access-control-allow-private-network"] = "true"
    return headers
