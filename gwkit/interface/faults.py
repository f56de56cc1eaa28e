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
    "threeds": {"outcome": None},
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

# threeds: the outcome of the next THREEDQUERY, made by sending the test card that has it in place of
# the card the application sent (the rest of the request as it came): a real test site answers the
# same card alike. The payment's later requests name the THREEDQUERY, so they keep its card.
THREEDS_OUTCOMES = {
    "challenge": "4900490000000147",  # EMV 3-D Secure 2.1.0: the issuer asks for a challenge at its ACS
    "enrolled": "4111111111111111",  # version 1, enrolled (Y): the customer goes to the ACS (PaReq, MD)
    "not-enrolled": "4000000000000721",  # version 1, not enrolled (N): the AUTH goes on without it
    "failed": "4900490000000014",  # EMV 3-D Secure 2.1.0: not authenticated (N); its AUTH is refused 60022
}


def with_outcome_card(envelope: Any, outcome: str) -> Any:
    """`envelope` with the card of each THREEDQUERY object replaced by the test card of `outcome`
    (a copy; anything that is not an envelope comes back as it is)."""
    if not isinstance(envelope, dict) or not isinstance(envelope.get("request"), list):
        return envelope
    objects = [
        {**obj, "pan": THREEDS_OUTCOMES[outcome]} if _queries_card(obj) else obj
        for obj in envelope["request"]
    ]
    return {**envelope, "request": objects}


def _queries_card(obj: Any) -> bool:
    if not isinstance(obj, dict) or not isinstance(obj.get("pan"), str):
        return False
    types = obj.get("requesttypedescriptions", [obj.get("requesttypedescription")])  # or the singular form
    return isinstance(types, list) and "THREEDQUERY" in types
