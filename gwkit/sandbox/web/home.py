"""What answers `/` and `/_sandbox/`: what this server is, its endpoints and where its docs are.

A browser gets a small HTML page; a client asking for JSON gets the same as data. Nothing here
needs credentials, and nothing here says more than that the sandbox is up.
"""

from __future__ import annotations

from ..http import SandboxRequest, SandboxResponse
from .pages import render
from .served import Served

ENDPOINTS = (
    (
        "POST /json/",
        "the gateway: AUTH, AUTH SUBSCRIPTION, ACCOUNTCHECK, SUBSCRIPTION, THREEDQUERY, STORE, "
        "TRANSACTIONUPDATE, TRANSACTIONQUERY, CACHETOKENISE, REFUND (JSON, Basic credentials)",
    ),
    ("GET /js/st.js", "the browser library that tokenises a card into a cachetoken"),
    ("GET /demo/merchant", "a demo shop page that pays with st.js"),
    ("/acs/...", "the simulated issuer (ACS) of 3-D Secure version 1"),
    ("GET /_sandbox/health", "whether the sandbox is up (more with credentials)"),
    ("/_sandbox/clock, /_sandbox/clock/advance", "the virtual clock of your sites: read it, move it"),
    ("/_sandbox/settle, /_sandbox/reset", "settle what is due; delete your sites' data"),
    ("/_sandbox/faults", "inject payment-aware faults into your sites' answers"),
    ("/_sandbox/snapshots", "save and restore your sites' state"),
)
DOCS = ("docs/sandbox.md", "docs/client.md", "docs/notebooks.md")


def home(sandbox: Served, request: SandboxRequest) -> SandboxResponse:
    if "application/json" in request.headers.get("accept", "") and "text/html" not in request.headers.get(
        "accept", ""
    ):
        return SandboxResponse.json(
            {
                "name": "gwkit sandbox",
                "status": "ok",
                "endpoints": [{"where": w, "what": what} for w, what in ENDPOINTS],
                "docs": list(DOCS),
            }
        )
    return render("home.html", title="gwkit sandbox", base_url=request.base_url or "", endpoints=ENDPOINTS)
