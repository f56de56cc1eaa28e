"""The test acquirer: what the bank answers, decided by test card and amount.

As in the real test environment: `baseamount` 70000 declines, 60010 is a bank system error,
security code 123 (1234 for American Express) matches. Cards listed in `data/test_cards.csv`
have their documented outcome; any other valid card is authorised.
"""

from __future__ import annotations

import secrets

from ...interface.cards import scheme_of
from ...interface.codes import message_of
from ...interface.testcards import test_card

DECLINE_AMOUNT = "70000"
BANK_ERROR_AMOUNT = "60010"


def issuer_of(pan: str) -> tuple[str, str]:
    card = test_card(pan)
    if card:
        return card.issuer, card.issuercountryiso2a
    return "gwkit Test Issuer", "GB"


def security_response(pan: str, securitycode: str | None) -> str:
    """`securityresponsesecuritycode`: 1 not given, 2 matched, 4 not matched."""
    if not securitycode:
        return "1"
    scheme = scheme_of(pan)
    expected = "1234" if scheme and scheme.securitycode_length == 4 else "123"
    return "2" if securitycode == expected else "4"


def decide(pan: str, baseamount: str, securitycode: str | None) -> dict[str, str]:
    """The bank's part of an AUTH record."""
    security = {"securityresponsesecuritycode": security_response(pan, securitycode),
                "securityresponsepostcode": "0", "securityresponseaddress": "0"}
    card = test_card(pan)
    if baseamount == BANK_ERROR_AMOUNT:
        return {"errorcode": "60010", "errormessage": message_of(60010), "acquirerresponsecode": "91",
                "authcode": "", "settlestatus": "3", **security}
    if baseamount == DECLINE_AMOUNT or (card and card.outcome == "declined"):
        return decline(security)
    return {"errorcode": "0", "errormessage": "Ok", "acquirerresponsecode": "00",
            "authcode": f"TEST{secrets.randbelow(90) + 10}", "settlestatus": "0", **security}


def decline(security: dict[str, str] | None = None) -> dict[str, str]:
    return {"errorcode": "70000", "errormessage": message_of(70000), "acquirerresponsecode": "05",
            "authcode": "DECLINED", "settlestatus": "3", **(security or {})}
