"""The faults the sandbox can inject: each kind with its parameters, the values they take, and how
a fault picks the requests it acts on. One vocabulary for the control API (`sandbox/web/faults.py`
checks a fault against it), the injection (`sandbox/web/injection.py` acts on each kind) and the
notebook's panel (`widgets/faults_panel.py` offers them)."""

from __future__ import annotations

from typing import Any

# kind -> {parameter: default}; None: required (or, for latency, one of two forms).
KINDS: dict[str, dict[str, Any]] = {
    "latency": {"seconds": None, "min_seconds": None, "max_seconds": None},
    "timeout": {"process": True},
    "gateway_error": {"code": None, "made": False},
    "http_status": {"status": None, "process": True},
    "drop": {"process": True},
    "malformed": {"body": None, "process": True},
}
# Which requests a fault acts on (the next `count`, or a seeded `fraction`; of some request types or amounts).
SELECTOR_FIELDS = ("count", "fraction", "seed", "requesttypes", "amounts")

UNKNOWN_OUTCOME_CODES = (60010, 60034, 99999)  # gateway_error codes after which a payment may have been made
SOFT_DECLINE = 71000  # gateway_error: strong customer authentication required (never `made`)
DECLINE = 70000  # gateway_error: the bank declines, whatever the card (never `made`: nothing is taken)
NEVER_MADE_CODES = (SOFT_DECLINE, DECLINE)  # final refusals: `made` true would contradict them
GATEWAY_ERROR_CODES = (*UNKNOWN_OUTCOME_CODES, *NEVER_MADE_CODES)
PROXY_STATUSES = (500, 502, 503, 504)  # http_status: what a proxy in front of the gateway answers
MALFORMED_BODIES = ("truncated", "garbage")  # malformed: half the answer, or bytes that are not JSON
