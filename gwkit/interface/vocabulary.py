"""Every code the kit shows, in words: the one vocabulary beside the error-code table.

    labelled("settlestatus", "0")                       -> "0 · pending settlement"
    labelled("transactionactive", "0", {"requesttypedescription": "STORE"}) -> "0 · disabled"
    applies("settleduedate", {"errorcode": "70000", ...}) -> False (no settle date on a decline)
    cause_of(record, parent=stored_card).action         -> what to do, from the cause itself

The words follow the interface (section 3) and `real-gateway-facts.md`; a value the tables do not
know is shown as it came, never guessed at. The response view, records, panels and report frames
read these tables only.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

from .cards import luhn_ok
from .codes import explain, record_ok

SEPARATOR = " · "

# settlestatus, as a person reads it (the gateway's own states are SETTLE_STATUSES).
SETTLESTATUS_WORDS: dict[str, str] = {
    "0": "pending settlement",
    "1": "pending manual settlement",
    "2": "suspended",
    "3": "cancelled",
    "10": "pending (alternative payment)",
    "100": "settled",
}
ENROLLED_WORDS = {"Y": "enrolled", "N": "not enrolled", "U": "enrolment unknown"}
STATUS_WORDS = {"Y": "authenticated", "N": "not authenticated"}
# eci: the e-commerce indicator the issuer's check gives (Visa 05/06/07, Mastercard 02/01/00).
ECI_WORDS = {
    "05": "authenticated (Visa)",
    "06": "authentication attempted (Visa)",
    "07": "not authenticated (Visa)",
    "02": "authenticated (Mastercard)",
    "01": "authentication attempted (Mastercard)",
    "00": "not authenticated (Mastercard)",
}
ACQUIRER_RESPONSE_WORDS = {
    "00": "approved by the bank",
    "05": "declined by the bank",
    "1A": "bank asks for strong customer authentication",
    "91": "bank unavailable",
}
SECURITY_RESPONSE_WORDS = {"0": "not given", "1": "not checked", "2": "matched", "4": "not matched"}
# RISKDEC's verdict (captured: ACCEPT with 0100 or 0150, action C).
FRAUD_SHIELD_WORDS = {"ACCEPT": "accepted by fraud screening: go on with the payment"}
FRAUD_RESPONSE_WORDS = {"0100": "accepted", "0150": "accepted"}
RECOMMENDED_ACTION_WORDS = {"C": "continue"}
# transactionactive means different things on different records (interface 3.1 and 3.2).
SUBSCRIPTION_ACTIVE_WORDS = {"0": "suspended", "1": "active", "2": "pending (starts when the AUTH settles)"}
STORED_CARD_ACTIVE_WORDS = {"0": "disabled", "1": "enabled"}

VALUE_WORDS: dict[str, dict[str, str]] = {
    "settlestatus": SETTLESTATUS_WORDS,
    "enrolled": ENROLLED_WORDS,
    "status": STATUS_WORDS,
    "eci": ECI_WORDS,
    "acquirerresponsecode": ACQUIRER_RESPONSE_WORDS,
    "securityresponsesecuritycode": SECURITY_RESPONSE_WORDS,
    "securityresponsepostcode": SECURITY_RESPONSE_WORDS,
    "securityresponseaddress": SECURITY_RESPONSE_WORDS,
    "fraudcontrolshieldstatuscode": FRAUD_SHIELD_WORDS,
    "fraudcontrolresponsecode": FRAUD_RESPONSE_WORDS,
    "acquirerrecommendedaction": RECOMMENDED_ACTION_WORDS,
}
# Every field whose codes have words (errorcode's come from the error-code table).
WORDED_FIELDS = ("errorcode", "transactionactive", *VALUE_WORDS)


def words_for(field: str, value: Any, record: Mapping[str, Any] | None = None) -> str | None:
    """The words for one code of a field (None when the field has no vocabulary or the value is
    not in it). `record` tells what `transactionactive` means: a card store's or a subscription's."""
    if _missing(value):
        return None
    text = str(value)
    if field == "errorcode":
        entry = explain(text)
        return entry.message or None if entry.code >= 0 else None
    if field == "transactionactive":
        return _active_words(record).get(text)
    return VALUE_WORDS.get(field, {}).get(text)


def labelled(field: str, value: Any, record: Mapping[str, Any] | None = None) -> str:
    """The code with its words beside it, `0 · pending settlement`; the value alone when it has none."""
    if _missing(value):
        return ""
    words = words_for(field, value, record)
    return f"{value}{SEPARATOR}{words}" if words else str(value)


def settle_status_label(value: object) -> str:
    """`100 · settled`, `3 · cancelled`; `unknown` for a missing value, `7 · not documented`."""
    if _missing(value):
        return "unknown"
    return f"{value}{SEPARATOR}{SETTLESTATUS_WORDS.get(str(value), 'not documented')}"


def _missing(value: Any) -> bool:
    return value is None or (isinstance(value, float) and math.isnan(value))


def _active_words(record: Mapping[str, Any] | None) -> dict[str, str]:
    kind = str((record or {}).get("requesttypedescription") or "")
    if kind == "STORE" or (record or {}).get("accounttypedescription") == "CARDSTORE":
        return STORED_CARD_ACTIVE_WORDS
    return SUBSCRIPTION_ACTIVE_WORDS


# Fields that say something only when money will move: a decline or a cancelled payment has no
# settle date worth showing, and its authcode ("DECLINED") says what errorcode says.
ONLY_WHEN_OK = ("settleduedate", "settlebaseamount", "authcode")


def applies(field: str, record: Mapping[str, Any]) -> bool:
    """Whether a field of this record means something to a reader (it stays in the record)."""
    if field not in record or record.get(field) in (None, "", []):
        return False
    if field in ONLY_WHEN_OK:
        return record_ok(record)
    return not (field == "errordata" and str(record.get("errorcode")) == "0")


@dataclass(frozen=True)
class Cause:
    """Why a request failed, in words, and what to do about it: said once, from the cause."""

    name: str
    words: str
    action: str


CAUSES: dict[str, Cause] = {
    c.name: c
    for c in [
        Cause(
            "token used",
            "The cachetoken was already used: a token pays once.",
            "Have the customer's page tokenise the card again (st.js), then send the AUTH with the new token.",
        ),
        Cause(
            "token expired",
            "The cachetoken has expired: a token lives 15 minutes.",
            "Have the customer's page tokenise the card again (st.js), then send the AUTH at once.",
        ),
        Cause(
            "token refused",
            "The cachetoken was refused: it was already used, or is older than 15 minutes.",
            "Have the customer's page tokenise the card again (st.js), then send the AUTH at once.",
        ),
        Cause(
            "stored card disabled",
            "The stored card is disabled (transactionactive 0).",
            "Enable it with a TRANSACTIONUPDATE setting transactionactive to 1, or pay with another card.",
        ),
        Cause(
            "no such parent",
            "No transaction with that parenttransactionreference exists on this site.",
            "Check the reference; it must be a transaction of the same site.",
        ),
        Cause(
            "luhn failure",
            "The card number fails its check digit (the Luhn check): a digit is wrong or missing.",
            "Ask the customer to type the card number again.",
        ),
        Cause(
            "md refused",
            "The md was refused: it completes one AUTH only, within two hours of the enrolment check.",
            "Start 3-D Secure again with a new THREEDQUERY.",
        ),
    ]
}


def cause_of(
    record: Mapping[str, Any],
    *,
    parent: Mapping[str, Any] | None = None,
    parent_found: bool | None = None,
    parent_reference: str | None = None,
    token_state: str | None = None,
    pan: str | None = None,
) -> Cause | None:
    """The specific cause of an `Invalid field` record when the field tells it (None otherwise:
    the error-code table's meaning and action then say it). What the record alone cannot tell
    comes from the caller: the `parent` record looked up (or `parent_found` False) and the
    reference sent (`parent_reference`), the token's
    state (`used`/`expired`), the card number sent (`pan`, checked here, never kept)."""
    if str(record.get("errorcode")) != "30000":
        return None
    fields = record.get("errordata")
    named = set(fields) if isinstance(fields, list) else set()
    if named == {"cachetoken"}:
        return CAUSES[
            {"used": "token used", "expired": "token expired"}.get(token_state or "", "token refused")
        ]
    if named == {"parenttransactionreference"}:
        if parent is not None and str(parent.get("transactionactive")) == "0" and _is_stored_card(parent):
            card = f"{parent_reference or 'named'} ({parent.get('maskedpan') or 'card'})"
            return replace(
                CAUSES["stored card disabled"],
                words=f"The stored card {card} is disabled (transactionactive 0).",
            )
        if parent is None and parent_found is False:
            return replace(
                CAUSES["no such parent"],
                words=f"No transaction {parent_reference or 'of that reference'} exists on this site.",
            )
        return None
    if named == {"md"}:
        return CAUSES["md refused"]
    if "pan" in named and pan is not None and pan.isdigit() and not luhn_ok(pan):
        return CAUSES["luhn failure"]
    return None


def _is_stored_card(record: Mapping[str, Any]) -> bool:
    return (
        record.get("requesttypedescription") == "STORE" or record.get("accounttypedescription") == "CARDSTORE"
    )


# A request that got no answer to read, in words: by the kind of error the client raised (its class,
# or the start of the text an exchange and the journal keep, "HTTPStatusError: ..."). The class
# names are keys only: a person reads the words.
NO_ANSWER_WORDS: dict[str, str] = {
    "ConnectError": "no connection could be made, so nothing was sent",
    "RequestTimeoutError": "no answer in time: the request may have been processed",
    "AuthenticationError": "the gateway refused the user name or password (HTTP 401)",
    "HTTPStatusError": "an HTTP error instead of an answer: the request may have been processed",
    "ResponseFormatError": "an answer that could not be read (cut short, or not the gateway's): "
    "the request may have been processed",
    "TransportError": "the connection failed after the request was sent: it may have been processed",
    "UpstreamError": "the gateway behind the proxy gave no answer",
    "RecordedSilence": "the recording holds no answer: the gateway's answer was lost when it was recorded",
    "CassetteMiss": "the recording holds no answer for this request",
}
NO_ANSWER = "no readable answer"
_HTTP_STATUS = re.compile(r"\bHTTP status (\d{3})\b")


def no_answer_words(error: BaseException | str | None) -> str:
    """Why a request has no answer to read, in words, from the error the client raised or the text
    an exchange keeps of it: `no_answer_words(HTTPStatusError("unexpected HTTP status 502 ..."))` ->
    "HTTP 502 instead of an answer: the request may have been processed"."""
    if error is None:
        return NO_ANSWER
    if getattr(error, "sent", None) is False:  # a connection that timed out before the request went
        return NO_ANSWER_WORDS["ConnectError"]
    if isinstance(error, BaseException):
        kinds = [kind.__name__ for kind in type(error).__mro__]
        text = str(error)
    else:
        kinds, text = [error.split(":", 1)[0].strip()], error
    words = next((NO_ANSWER_WORDS[kind] for kind in kinds if kind in NO_ANSWER_WORDS), NO_ANSWER)
    status = _HTTP_STATUS.search(text)
    if status and words == NO_ANSWER_WORDS["HTTPStatusError"]:
        words = words.replace("an HTTP error", f"HTTP {status.group(1)}", 1)
    return words
