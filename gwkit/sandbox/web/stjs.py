"""/js/st.js: the sandbox's st.js (static/st.js), with the card rules of the spec tables filled in."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from ...interface import cards
from ...interface.fields import FIELDS
from ..http import SandboxRequest, SandboxResponse
from .served import Served

STJS_PATH = Path(__file__).parent / "static" / "st.js"
_RULES_SLOT = re.compile(r"/\*gwkit:rules\*/.*?/\*gwkit:end\*/", re.DOTALL)


def stjs_rules() -> dict[str, Any]:
    """The card rules st.js checks in the browser, from the spec tables (gwkit.interface)."""
    lengths = [scheme.securitycode_length for scheme in cards.SCHEMES.values()]
    usual = max(set(lengths), key=lengths.count)
    prefixes = cards._PREFIXES  # prefix -> scheme code; the longest matching prefix wins
    unusual = {p for p, code in prefixes.items() if cards.SCHEMES[code].securitycode_length != usual}
    # Longer prefixes inside an unusual range must be listed too, or they would lose to it.
    listed = {p for p in prefixes if any(p.startswith(u) for u in unusual)}
    return {
        "panMinLength": FIELDS["pan"].min_length,
        "panMaxLength": FIELDS["pan"].max_length,
        "securitycodeLength": usual,
        "securitycodeLengthByPrefix": {
            p: cards.SCHEMES[prefixes[p]].securitycode_length for p in sorted(listed)
        },
    }


def stjs_source() -> str:
    rules = json.dumps(stjs_rules())
    return _RULES_SLOT.sub(
        lambda _m: f"/*gwkit:rules*/{rules}/*gwkit:end*/", STJS_PATH.read_text(encoding="utf-8"), count=1
    )


def serve_stjs(sandbox: Served, request: SandboxRequest) -> SandboxResponse:
    # A <script src> needs no CORS: st.js is loaded by pages of any origin without it.
    return SandboxResponse(
        200,
        {"content-type": "application/javascript; charset=utf-8", "cache-control": "no-cache"},
        stjs_source().encode("utf-8"),
    )
