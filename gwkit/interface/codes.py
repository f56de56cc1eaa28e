"""The gateway's error codes: the one table, and the one rule for "is this record ok".

Messages follow the interface (section 7) and the real service's published registry
(`real-gateway-facts.md`). The client, the response view, the reports and the sandbox all read
this table; a code not listed "needs further investigation", as the interface says.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

OK = 0
CANCELLED = "3"  # settlestatus of a cancelled transaction: errorcode 0 alone does not mean paid


@dataclass(frozen=True)
class ErrorCode:
    code: int
    message: str  # the gateway's errormessage
    meaning: str  # what happened, in plain language
    action: str  # what to do about it
    unknown_outcome: bool = False  # the final status is not known: query before trying again

    @property
    def ok(self) -> bool:
        return self.code == OK


_UNKNOWN = "The final status is not known: the payment may or may not have been made."
_CHECK = (
    "Query the transaction (TRANSACTIONQUERY on orderreference) before trying again; never re-send blindly."
)

ERROR_CODES: dict[int, ErrorCode] = {
    e.code: e
    for e in [
        ErrorCode(
            0,
            "Ok",
            "The request succeeded.",
            "Nothing to do. For an AUTH, also check settlestatus: 3 means cancelled.",
        ),
        ErrorCode(
            10205,
            "Malformed JSON",
            "The request body is not valid JSON.",
            "Send a well-formed JSON envelope; errordata says where the body broke.",
        ),
        ErrorCode(
            20004,
            "Missing parent",
            "parenttransactionreference names no transaction.",
            "Check the parent's transactionreference and site.",
        ),
        ErrorCode(
            20005,
            "Refund requires settled parent or parent thats due to settle today",
            "The parent has not settled and is not due to settle today.",
            "Refund after the parent settles, or cancel it with TRANSACTIONUPDATE instead.",
        ),
        ErrorCode(
            20006,
            "Refund requires authorisation parent",
            "Only an AUTH can be refunded.",
            "Name the AUTH's transactionreference as the parent.",
        ),
        ErrorCode(
            20007,
            "Refund amount too great",
            "Refunds together would exceed the parent's amount.",
            "Refund at most what is left of the parent's amount.",
        ),
        ErrorCode(
            20011,
            "Cannot refund a decline transaction",
            "The parent was declined: no money moved.",
            "Nothing to refund.",
        ),
        ErrorCode(
            20012,
            "Refund requires a settled parent",
            "The parent has not settled yet.",
            "Refund after settlement, or cancel the AUTH instead.",
        ),
        ErrorCode(
            20014,
            "Cannot override amount in child transaction",
            "A child request changed an amount it must inherit.",
            "Leave baseamount out of the child.",
        ),
        ErrorCode(
            20015,
            "Cannot override currency in child transaction",
            "A child request changed the currency it must inherit.",
            "Leave currencyiso3a out of the child.",
        ),
        ErrorCode(
            20018,
            "Subscription requires RECUR account",
            "Subscriptions need a RECUR account type.",
            "Send the subscription with accounttypedescription RECUR.",
        ),
        ErrorCode(
            20019,
            "Subscription requires successful parent",
            "The subscription's parent failed.",
            "Start the subscription from a successful AUTH or ACCOUNTCHECK.",
        ),
        ErrorCode(
            20031,
            "Subscription with an accountcheck parent not supported on current acquirer",
            "This acquirer cannot start a subscription from an ACCOUNTCHECK.",
            "Start the subscription from an AUTH.",
        ),
        ErrorCode(
            20032,
            "Subscription cannot be used as a parent",
            "A SUBSCRIPTION record was named as a parent.",
            "Name the subscription's AUTH instead.",
        ),
        ErrorCode(
            22000,
            "Bypass",
            "3-D Secure was bypassed for this card's payment type (threedbypasspaymenttypes), and "
            "THREEDQUERY was the only request type: nothing else was asked.",
            "Send the AUTH without THREEDQUERY, or stop naming this payment type in threedbypasspaymenttypes.",
        ),
        ErrorCode(
            30000,
            "Invalid field",
            "A field broke its rule; errordata names the field(s).",
            "Correct the fields listed in errordata and send again.",
        ),
        ErrorCode(
            60010,
            "Bank System Error",
            "The acquiring bank's system failed to answer. " + _UNKNOWN,
            _CHECK,
            unknown_outcome=True,
        ),
        ErrorCode(
            60013,
            "No valid updates specified",
            "A TRANSACTIONUPDATE had no usable updates.",
            'Send updates naming an updatable field, e.g. {"transactionactive": "0"}.',
        ),
        ErrorCode(
            60017,
            "Transaction not updatable",
            "The record cannot change any more, e.g. a settled or cancelled AUTH.",
            "Query the transaction to see its settlestatus; settled (100) and cancelled (3) are final.",
        ),
        ErrorCode(
            60018,
            "Invalid requesttype",
            "The request type is unknown or empty.",
            "Use one of the documented request types; errordata shows what was sent.",
        ),
        ErrorCode(
            60019,
            "No searchable filter specified",
            "A TRANSACTIONQUERY had no usable filter.",
            "Filter on at least one field, e.g. transactionreference or orderreference.",
        ),
        ErrorCode(
            60022,
            "Unauthenticated",
            "3-D Secure: the cardholder was not authenticated; the bank was not contacted.",
            "No funds move. Ask the customer to try again or use another card.",
        ),
        ErrorCode(
            60031,
            "Invalid acquirer for 3-D Secure",
            "The card's payment type is not supported by 3-D Secure on this account.",
            "Send a standard AUTH without 3-D Secure, or use another card.",
        ),
        ErrorCode(60034, "Manual investigation required", _UNKNOWN, _CHECK, unknown_outcome=True),
        ErrorCode(
            70000,
            "Decline",
            "The bank declined the payment; no funds move.",
            "Ask the customer for another card or to contact their bank.",
        ),
        ErrorCode(
            71000,
            "Soft decline",
            "The issuer declined for lack of strong customer authentication.",
            "Resubmit the payment with 3-D Secure.",
        ),
        ErrorCode(
            99999,
            "Unknown error",
            "An unknown error that needs manual inspection. " + _UNKNOWN,
            _CHECK + " Report the request and response (masked) to the gateway's support.",
            unknown_outcome=True,
        ),
    ]
}


def explain(code: int | str | None) -> ErrorCode:
    """The meaning of an errorcode; unknown codes get a generic 'investigate' entry."""
    try:
        number = int(code)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return ErrorCode(
            -1, "No error code", "The record carries no readable errorcode.", "Inspect the raw response."
        )
    return ERROR_CODES.get(number) or ErrorCode(
        number, "", f"Error code {number} is not in gwkit's table.", "Needs further investigation."
    )


def message_of(code: int) -> str:
    """The gateway's `errormessage` for a code of the table (a KeyError for any other)."""
    return ERROR_CODES[code].message


def record_ok(record: Mapping[str, Any]) -> bool:
    """THE ok rule: `errorcode` 0 and not cancelled (`settlestatus` 3)."""
    return str(record.get("errorcode")) == "0" and str(record.get("settlestatus", "")) != CANCELLED


# settlestatus values of the real gateway (real-gateway-facts.md): what each means for the money.
SETTLE_STATUSES: dict[str, str] = {
    "0": "pending (settles automatically)",
    "1": "pending (settled manually)",
    "2": "suspended",
    "3": "cancelled",
    "10": "pending (alternative payment)",
    "100": "settled",
}
