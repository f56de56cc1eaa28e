"""What the gateway's error codes mean, in words a support or finance user can act on.

Codes and messages follow the interface (section 7) and the real test environment. Any code not
listed "needs further investigation", as the interface says.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class ErrorCode:
    code: int
    message: str  # the gateway's errormessage
    meaning: str  # what happened, in plain language
    action: str  # what to do about it

    @property
    def ok(self) -> bool:
        return self.code == 0


ERROR_CODES: dict[int, ErrorCode] = {
    e.code: e
    for e in [
        ErrorCode(0, "Ok", "The request succeeded.",
                  "Nothing to do. For an AUTH, also check settlestatus: 3 means cancelled."),
        ErrorCode(30000, "Invalid field", "A field broke its rule; errordata names the field(s).",
                  "Correct the fields listed in errordata and send again."),
        ErrorCode(60010, "Bank System Error", "The acquiring bank's system failed to answer.",
                  "Nothing was charged. Retry later; if it persists, contact support."),
        ErrorCode(60013, "No valid updates specified", "A TRANSACTIONUPDATE had no usable updates.",
                  "Send updates naming an updatable field, e.g. {\"transactionactive\": \"0\"}."),
        ErrorCode(60017, "Transaction not updatable",
                  "The record cannot change any more, e.g. a settled or cancelled AUTH.",
                  "Query the transaction to see its settlestatus; settled (100) and cancelled (3) are final."),
        ErrorCode(60018, "Invalid requesttype", "The request type is unknown or empty.",
                  "Use one of the documented request types; errordata shows what was sent."),
        ErrorCode(60019, "No searchable filter specified", "A TRANSACTIONQUERY had no usable filter.",
                  "Filter on at least one field, e.g. transactionreference or orderreference."),
        ErrorCode(60022, "Unauthenticated",
                  "3-D Secure: the cardholder was not authenticated; the bank was not contacted.",
                  "No funds move. Ask the customer to try again or use another card."),
        ErrorCode(60031, "Invalid acquirer for 3-D Secure",
                  "The card's payment type is not supported by 3-D Secure on this account.",
                  "Send a standard AUTH without 3-D Secure, or use another card."),
        ErrorCode(70000, "Decline", "The bank declined the payment; no funds move.",
                  "Ask the customer for another card or to contact their bank."),
        ErrorCode(99999, "Unknown error", "An unknown error that needs manual inspection.",
                  "Report the request and response (masked) to the gateway's support."),
    ]
}


def explain(code: int | str | None) -> ErrorCode:
    """The meaning of an errorcode; unknown codes get a generic 'investigate' entry."""
    try:
        number = int(code)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return ErrorCode(-1, "No error code", "The record carries no readable errorcode.",
                         "Inspect the raw response.")
    return ERROR_CODES.get(number) or ErrorCode(
        number, "", f"Error code {number} is not in gwkit's table.", "Needs further investigation."
    )


# settlestatus values of the real gateway (real-gateway-facts.md): what each means for the money.
SETTLE_STATUSES: dict[str, str] = {
    "0": "pending (settles automatically)",
    "1": "pending (settled manually)",
    "2": "suspended",
    "3": "cancelled",
    "10": "pending (alternative payment)",
    "100": "settled",
}


def settle_status_label(value: object) -> str:
    """`100 settled`, `3 cancelled`; `unknown` for a missing value."""
    if value is None or value != value:  # None or NaN
        return "unknown"
    text = str(value)
    return f"{text} {SETTLE_STATUSES.get(text, '(not documented)')}"
