"""One line in plain words for a gateway record: what happened and what to do next.

The words come from the one error-code table (`codes`), the record's own fields and interface
3.3; the response view, forms and panels lead with this line.

    in_words({"requesttypedescription": "AUTH", "errorcode": "0", "baseamount": "1500",
              "currencyiso3a": "GBP", "maskedpan": "411111######1111", "settlestatus": "0",
              "transactionreference": "1-9-3", "settleduedate": "2027-01-02"})
    -> "Authorised: £15.00 from 411111######1111 (transaction 1-9-3); it settles on 2027-01-02."
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from .codes import explain, record_ok
from .currency import format_money
from .vocabulary import Cause, cause_of

_ENROLMENT = {
    "Y": "the card is enrolled in 3-D Secure: send the customer to the issuer's ACS, then the AUTH.",
    "N": "the card is not enrolled: send the AUTH naming this THREEDQUERY as parent.",
    "U": "enrolment is unknown: resend the THREEDQUERY, or send the AUTH naming it as parent.",
}


def in_words(record: Mapping[str, Any], cause: Cause | None = None) -> str:
    """What a record says, as one sentence a person acts on. A failure's words and action come
    from its `cause` when one is known (`vocabulary.cause_of`), else from the error-code table."""
    if not record_ok(record):
        return _failure(record, cause or cause_of(record))
    kind = str(record.get("requesttypedescription") or "request")
    reference = record.get("transactionreference")
    ref = f" (transaction {reference})" if reference else ""
    if kind == "AUTH":
        due = record.get("settleduedate")
        settles = f"; it settles on {due}." if due else "."
        return f"Authorised: {_amount(record)}{_card(record, ' from ')}{ref}{settles}"
    if kind == "ACCOUNTCHECK":
        return f"Card checked: {_card(record, '').strip() or 'the card'} is good to use{ref}; no money moved."
    if kind == "STORE":
        return (
            f"Card stored: {_card(record, '').strip() or 'the card'}{ref}. Pay with it by naming "
            f"{reference} as parenttransactionreference."
        )
    if kind == "THREEDQUERY" and str(record.get("threedversion", "")).startswith("2."):
        return f"EMV 3-D Secure {record['threedversion']}{ref}: {_emv_3ds(record)}"
    if kind == "THREEDQUERY":
        return f"Enrolment checked{ref}: {_ENROLMENT.get(str(record.get('enrolled')), 'see enrolled.')}"
    if kind == "THREEDLOOKUP":
        version = record.get("threedversion")
        if not version:
            return "Looked up: the card's issuer does not run EMV 3-D Secure (no threedversion)."
        method = " First load its 3DS method page in a hidden frame." if record.get("threedmethodurl") else ""
        return f"Looked up: the issuer runs EMV 3-D Secure {version}.{method} Then send the THREEDQUERY."
    if kind == "SUBSCRIPTION":
        return f"Subscription set up{ref}: {_subscription_payments(record)}"
    if kind == "TRANSACTIONQUERY":
        found = record.get("found", len(record.get("records") or []))
        return f"Query answered: {int(found):,} record(s) found."
    if kind == "TRANSACTIONUPDATE":
        return "Updated: the changes are kept; query the transaction to see them."
    if kind == "CACHETOKENISE":
        return "Card tokenised: the cachetoken can be used once, within its lifetime, to pay."
    return f"{kind} succeeded{ref}."


def _subscription_payments(record: Mapping[str, Any]) -> str:
    """Which payment the AUTH sent with a SUBSCRIPTION was, and when the gateway makes the next: the
    record's `subscriptionnumber` is the next payment's number, one higher than the AUTH's."""
    number = str(record.get("subscriptionnumber") or "")
    begins = record.get("subscriptionbegindate")
    starting = f", starting on {begins}" if begins else ""
    if not number.isdigit() or int(number) < 2:
        return f"the gateway makes the next payments on their dates{starting}."
    return (
        f"the AUTH sent with it is payment {int(number) - 1}; the gateway makes payment {number} and "
        f"the ones after it on their dates{starting}."
    )


def _emv_3ds(record: Mapping[str, Any]) -> str:
    """An EMV 3-D Secure THREEDQUERY: a challenge (acsurl), or decided without one (frictionless)."""
    if record.get("acsurl"):
        return (
            "the issuer wants to ask the cardholder (a challenge): send the browser to acsurl with the "
            "CReq, then the AUTH with threedresponse."
        )
    if record.get("enrolled") == "Y":
        return "frictionless, decided without a question; an AUTH sent with it is answered at once."
    return _ENROLMENT.get(str(record.get("enrolled")), "see enrolled.")


def _failure(record: Mapping[str, Any], cause: Cause | None) -> str:
    code = record.get("errorcode")
    if str(code) == "0":  # errorcode 0 with settlestatus 3
        return (
            f"Cancelled: {_amount(record) or 'the payment'} will not settle (settlestatus 3); no money moves."
        )
    meaning = explain(code)
    fields = record.get("errordata")
    named = ""
    if isinstance(fields, list) and fields and str(code) in ("30000", "60018", "60013", "10205"):
        named = f" ({'field' if str(code) == '30000' else 'detail'}: {', '.join(map(str, fields))})"
    words, action = (cause.words, cause.action) if cause else (meaning.meaning, meaning.action)
    return f"{meaning.message or 'Error'} {code}{named}: {words} What to do: {action}"


def _amount(record: Mapping[str, Any]) -> str:
    amount = record.get("baseamount")
    if amount is None or not str(amount).lstrip("-").isdigit():
        return ""
    return format_money(amount, record.get("currencyiso3a"))


def _card(record: Mapping[str, Any], before: str) -> str:
    masked = record.get("maskedpan")
    return f"{before}{masked}" if masked else ""
