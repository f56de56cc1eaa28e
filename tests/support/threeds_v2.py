"""Shared pieces of the EMV 3-D Secure (v2) tests: request objects, the browser library's unsigned
JWT (`threedresponse`) as it builds it, and reading the sandbox's v2 pages.

Sources (real-gateway-facts.md, "3-D Secure v2"): V3 = penfold/trustpayments-public-stjs-js-payments-v3
at commit 337c1617; PYT = SecureTrading/py-payments-testing; SDK = npm @trustpayments/3ds-sdk-js 1.2.73.
"""

from __future__ import annotations

import base64
import json
import re
from html import unescape
from typing import Any

from gwkit.interface import testcards
from support.sandbox import SITE

TERMURL = "https://merchant.example/3ds/term"
EXPIRY = "12/2030"
SUBSCRIPTION_FIELDS = {
    "subscriptiontype": "RECURRING",
    "subscriptionunit": "MONTH",
    "subscriptionfrequency": "1",
    "subscriptionnumber": "1",
    "subscriptionfinalnumber": "12",
    "subscriptionbegindate": "2026-02-15",
    "credentialsonfile": "1",
    "orderreference": "order-v2",
}
BROWSER = {  # what the library reads from the browser (V3 BrowserDataProvider.ts), as strings
    "browsercolordepth": "24",
    "browserjavaenabled": "false",
    "browserjavascriptenabled": "true",
    "browserlanguage": "en-GB",
    "browserscreenheight": "1080",
    "browserscreenwidth": "1920",
    "browsertz": "-60",
    "useragent": "Mozilla/5.0 (X11; Linux x86_64)",
    "accept": "text/html,*/*;q=0.8",
    "customerip": "127.0.0.1",
}


def cards_of(*cases: str) -> list[str]:
    """The EMV 3-D Secure test cards of these cases (data/test_cards.csv, column threedscase)."""
    return [c.pan for c in testcards.test_cards().values() if c.emv3ds and c.threedscase in cases]


def securitycode(pan: str) -> str:
    return "1234" if pan.startswith(("34", "37")) else "123"


def threedquery(pan: str, *types: str, **fields: Any) -> dict[str, Any]:
    """A THREEDQUERY (and the request types after it) with the card and the browser's data."""
    return {
        "requesttypedescriptions": list(types or ("THREEDQUERY", "AUTH")),
        "sitereference": SITE,
        "accounttypedescription": "ECOM",
        "currencyiso3a": "GBP",
        "baseamount": "1050",
        "pan": pan,
        "expirydate": EXPIRY,
        "securitycode": securitycode(pan),
        "termurl": TERMURL,
        **BROWSER,
        **fields,
    }


def lookup(pan: str, **fields: Any) -> dict[str, Any]:
    return {
        "requesttypedescriptions": ["THREEDLOOKUP"],
        "sitereference": SITE,
        "accounttypedescription": "ECOM",
        "currencyiso3a": "GBP",
        "baseamount": "1050",
        "pan": pan,
        "expirydate": EXPIRY,
        **fields,
    }


def after_challenge(parent: str, jwt: str, *types: str, **fields: Any) -> dict[str, Any]:
    """The remaining request types, sent again with the library's threedresponse."""
    return {
        "requesttypedescriptions": list(types or ("AUTH",)),
        "sitereference": SITE,
        "parenttransactionreference": parent,
        "threedresponse": jwt,
        **fields,
    }


def b64(data: Any) -> str:
    """btoa(JSON.stringify(data)) without its padding, as the library's UnsignedJwtGenerator."""
    return base64.b64encode(json.dumps(data).encode()).decode().rstrip("=")


def decoded(text: str) -> dict[str, Any]:
    """A base64 or base64url JSON object."""
    cleaned = text.replace("-", "+").replace("_", "/")
    return json.loads(base64.b64decode(cleaned + "=" * (-len(cleaned) % 4)))


def unsigned_jwt(payload: dict[str, Any], header: dict[str, Any] | None = None) -> str:
    return f"{b64(header or {'alg': 'none'})}.{b64(payload)}."


def library_jwt(
    action: str, *, cres: str | None = None, pares_status: str | None = None, **extra: Any
) -> str:
    """The threedresponse the library builds (V3 threedresponse-converter/): Validated from the
    ActionCode, the CRes's transStatus as PAResStatus, the CRes itself."""
    status = (
        pares_status if pares_status is not None else (decoded(cres).get("transStatus", "") if cres else "")
    )
    return unsigned_jwt(
        {
            "iss": "",
            "jti": "b1c2",
            "Payload": {
                "Validated": action in ("SUCCESS", "COMPLETED"),
                "Payment": {
                    "Type": "CCA",
                    "ExtendedData": {"PAResStatus": status, "SignatureVerification": "Y"},
                },
                "ActionCode": action,
                "ErrorNumber": 0 if action == "SUCCESS" else 1000,
                **({"CRes": cres} if cres is not None else {}),
                **extra,
            },
        }
    )


def form_value(page: str, name: str) -> str:
    return unescape(re.search(rf"name='{name}' value='([^']*)'", page).group(1))


def shown_code(page: str) -> str:
    return re.search(r"id='acs2-otp-shown'[^>]*>(\d{6})<", page).group(1)


def error_text(page: str) -> str:
    return unescape(re.search(r"id='acs-error'>([^<]*)<", page).group(1))
