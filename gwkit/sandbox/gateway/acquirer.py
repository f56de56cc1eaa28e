"""The test acquirer: what the bank answers, decided by test card and amount.

As in the real test environment: `baseamount` 70000 declines, 60010 is a bank system error.
Cards listed in `data/test_cards.csv` have their documented outcome; any other valid card is
authorised.

The security code, billing premise and billing postcode checks follow the service's published test
values (`SECURITY_CODES`, `PREMISES`, `POSTCODES`); each answers `0` not given, `1` not checked,
`2` matched or `4` not matched. A value the table does not list is not checked (`1`): gwkit's choice,
as is `TE33 3ST` for a postcode not checked (the published table names none). A declined payment
reports a security code sent as not checked (`1`), as captured answers of 70000 declines show.

The issuer of a card (`issuer_fields`) is the test card's when `data/test_cards.csv` names one;
otherwise as the real test site answers cards it does not know specially (captured):
"SecureTrading Test Issuer1" in `ZZ`, and for Mastercard's `520000` test cards no `issuer` at all.

gwkit's own test amounts for the answers the real test environment gives no value for:
- 71000 is a soft decline (the issuer wants strong customer authentication) for an e-commerce
  payment made without 3-D Secure; the same amount after a THREEDQUERY, or by MOTO or RECUR
  (outside strong authentication), is authorised. Nothing is taken; the record is kept.
- 60034 is authorised by the bank, but answered 60034 (final status unknown): the transaction
  exists, and a TRANSACTIONQUERY shows what really happened (errorcode 0, settlestatus 0).
  60010 is the other way round: answered 60010, and nothing was taken (settlestatus 3).
"""

from __future__ import annotations

import random
import re
from collections.abc import Mapping
from typing import Any

from ...interface.cards import scheme_of
from ...interface.codes import message_of
from ...interface.testcards import test_card

DECLINE_AMOUNT = "70000"
BANK_ERROR_AMOUNT = "60010"
SOFT_DECLINE_AMOUNT = "71000"
UNKNOWN_OUTCOME_AMOUNT = "60034"
# Every test amount and the errorcode it answers (the error-code table must hold each).
TEST_AMOUNTS = {
    DECLINE_AMOUNT: 70000,
    BANK_ERROR_AMOUNT: 60010,
    SOFT_DECLINE_AMOUNT: 71000,
    UNKNOWN_OUTCOME_AMOUNT: 60034,
}
# A test authcode is no secret: drawn without the system call `secrets` makes per payment.
_AUTHCODES = random.Random()


# What the real test site answers for a card it does not know specially (captured, 2020-2021).
TEST_SITE_ISSUER = "SecureTrading Test Issuer1"
TEST_SITE_ISSUER_COUNTRY = "ZZ"
NO_ISSUER_PREFIX = "520000"  # Mastercard's test cards: no `issuer`, country ZZ


def issuer_fields(pan: str) -> dict[str, str]:
    """`issuer` and `issuercountryiso2a` of a record for the card `pan` (no `issuer` for 520000...)."""
    card = test_card(pan)
    if card and card.issuer:
        return {"issuer": card.issuer, "issuercountryiso2a": card.issuercountryiso2a}
    if pan.startswith(NO_ISSUER_PREFIX):
        return {"issuercountryiso2a": TEST_SITE_ISSUER_COUNTRY}
    return {"issuer": TEST_SITE_ISSUER, "issuercountryiso2a": TEST_SITE_ISSUER_COUNTRY}


NOT_GIVEN, NOT_CHECKED, MATCHED, NOT_MATCHED = "0", "1", "2", "4"
# The published test values: security code 123 (1234 for American Express) matches, 214 does not,
# 333 is not checked; premise (its number) 789 matches, 123 does not, 333 is not checked; postcode
# TE45 6ST (US 55555) matches, TE12 3ST (US 12345) does not.
SECURITY_CODES = {"214": NOT_MATCHED, "333": NOT_CHECKED}
PREMISES = {"789": MATCHED, "123": NOT_MATCHED, "333": NOT_CHECKED}
POSTCODES = {
    "TE456ST": MATCHED,
    "55555": MATCHED,
    "TE123ST": NOT_MATCHED,
    "12345": NOT_MATCHED,
    "TE333ST": NOT_CHECKED,
}
_PREMISE_NUMBER = re.compile(r"\d+")


def security_response(pan: str, securitycode: str | None) -> str:
    """`securityresponsesecuritycode` for the code sent with the card (never kept)."""
    if not securitycode:
        return NOT_GIVEN
    scheme = scheme_of(pan)
    if securitycode == ("1234" if scheme and scheme.securitycode_length == 4 else "123"):
        return MATCHED
    return SECURITY_CODES.get(securitycode, NOT_MATCHED)


def address_responses(billing: Mapping[str, Any]) -> dict[str, str]:
    """`securityresponseaddress` (by the premise's number) and `securityresponsepostcode`."""
    premise = str(billing.get("billingpremise") or "").strip()
    postcode = str(billing.get("billingpostcode") or "").upper().replace(" ", "")
    number = _PREMISE_NUMBER.search(premise)
    return {
        "securityresponsepostcode": POSTCODES.get(postcode, NOT_CHECKED) if postcode else NOT_GIVEN,
        "securityresponseaddress": (PREMISES.get(number.group(), NOT_CHECKED) if number else NOT_CHECKED)
        if premise
        else NOT_GIVEN,
    }


def decide(
    pan: str,
    baseamount: str,
    securitycode: str | None,
    *,
    strong_auth_exempt: bool = False,
    billing: Mapping[str, Any] | None = None,
    security_checked: str | None = None,
) -> dict[str, str]:
    """The bank's part of an AUTH record. `strong_auth_exempt`: the payment went through 3-D Secure,
    or is outside strong customer authentication (MOTO, RECUR), so no soft decline. `billing`: the
    premise and postcode to check; `security_checked`: the result of a security code checked earlier
    in the same flow (the THREEDQUERY's), used when none is sent now."""
    security = {
        "securityresponsesecuritycode": security_response(pan, securitycode)
        if securitycode or not security_checked
        else security_checked,
        **address_responses(billing or {}),
    }
    card = test_card(pan)
    if baseamount == BANK_ERROR_AMOUNT:
        return {
            "errorcode": "60010",
            "errormessage": message_of(60010),
            "acquirerresponsecode": "91",
            "authcode": "",
            "settlestatus": "3",
            **security,
        }
    if baseamount == DECLINE_AMOUNT or (card and card.outcome == "declined"):
        return decline(security)
    if baseamount == SOFT_DECLINE_AMOUNT and not strong_auth_exempt:
        # Visa's "additional customer authentication required"
        return {
            "errorcode": "71000",
            "errormessage": message_of(71000),
            "acquirerresponsecode": "1A",
            "authcode": "",
            "settlestatus": "3",
            **security,
        }
    return {
        "errorcode": "0",
        "errormessage": "Ok",
        "acquirerresponsecode": "00",
        "authcode": new_authcode(),
        "settlestatus": "0",
        **security,
    }


AUTHCODES = tuple(f"TEST{number}" for number in range(10, 100))


def new_authcode() -> str:
    """The authcode of an authorised payment: drawn for each (a decline's is always the same)."""
    return _AUTHCODES.choice(AUTHCODES)


def new_authcodes(count: int) -> list[str]:
    """`count` authcodes drawn at once, as `new_authcode` draws each (the engine's, per batch)."""
    return _AUTHCODES.choices(AUTHCODES, k=count)


def decline(security: dict[str, str] | None = None) -> dict[str, str]:
    """A 70000 decline; a security code sent is reported not checked (the bank stopped before it)."""
    security = dict(security or {})
    if security.get("securityresponsesecuritycode", NOT_GIVEN) != NOT_GIVEN:
        security["securityresponsesecuritycode"] = NOT_CHECKED
    return {
        "errorcode": "70000",
        "errormessage": message_of(70000),
        "acquirerresponsecode": "05",
        "authcode": "DECLINED",
        "settlestatus": "3",
        **security,
    }


def answered_outcome(baseamount: str, kept: dict[str, str]) -> dict[str, str]:
    """What the answer says over the kept record: 60034 for the unknown-outcome amount when the
    payment was made (the record keeps the truth, for a TRANSACTIONQUERY to find)."""
    if baseamount == UNKNOWN_OUTCOME_AMOUNT and kept.get("errorcode") == "0":
        return {"errorcode": "60034", "errormessage": message_of(60034)}
    return {}
