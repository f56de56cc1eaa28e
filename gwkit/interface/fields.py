"""Every field the interface names, once, as data.

A `Field` says what a value may look like (type class, lengths, choices, extra rules), where the
field may appear, whether it is sensitive, and how reports should type it. Validation, the
sandbox, the notebook forms and the reports all read this table.
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from . import types as t
from .cards import luhn_ok, scheme_of

# Where a field appears.
REQUEST = "request"
RESPONSE = "response"
SUBSCRIPTION = "subscription"
BILLING = "billing"
THREEDS = "threeds"
TOKENISE = "tokenise"

# How a report types a column.
TEXT, AMOUNT, CATEGORY, INTEGER, DATE, DATETIME = "text", "amount", "category", "integer", "date", "datetime"

# How a sensitive value is masked.
MASK_PAN, REDACT = "pan", "redact"


@dataclass(frozen=True)
class Rule:
    """A rule beyond the type class. `check(value, request)` is True when the value obeys it;
    `reads_request`: the verdict depends on other fields of the request, not on the value alone."""

    text: str
    check: Callable[[str, Mapping[str, object]], bool]
    reads_request: bool = False


@dataclass(frozen=True)
class Field:
    name: str
    type: t.TypeClass
    max_length: int | None = None
    min_length: int = 1
    choices: tuple[str, ...] = ()
    rules: tuple[Rule, ...] = ()
    where: frozenset[str] = frozenset({REQUEST})
    sensitive: str | None = None  # MASK_PAN or REDACT
    report: str = TEXT
    label: str = ""
    help: str = ""

    @property
    def title(self) -> str:
        return self.label or self.name


def _positive(value: str, _request: Mapping[str, object]) -> bool:
    return value.isdigit() and int(value) > 0


def _no_leading_zero(value: str, _request: Mapping[str, object]) -> bool:
    return value == "0" or not value.startswith("0")


def _securitycode_fits_scheme(value: str, request: Mapping[str, object]) -> bool:
    pan = request.get("pan")
    scheme = scheme_of(pan) if isinstance(pan, str) and pan.isdigit() else None
    return scheme is None or len(value) == scheme.securitycode_length


def _month(value: str, _request: Mapping[str, object]) -> bool:
    return value.isdigit() and 1 <= int(value) <= 12


def _ip_address(value: str, _request: Mapping[str, object]) -> bool:
    try:
        ipaddress.ip_address(value)
    except ValueError:
        return False
    return True


def _signed_minutes(value: str, _request: Mapping[str, object]) -> bool:
    digits = value[1:] if value.startswith("-") else value
    return digits.isdigit() and digits.isascii() and len(digits) <= 4


def _timestamp(value: str, _request: Mapping[str, object]) -> bool:
    try:
        datetime.strptime(value, "%Y-%m-%d %H:%M:%S")
    except ValueError:
        return False
    return len(value) == 19


def _uppercase(value: str, _request: Mapping[str, object]) -> bool:
    return value == value.upper()


_POSTCODES = {
    "US": re.compile(r"[0-9]{5}(-[0-9]{4})?"),
    "GB": re.compile(
        r"(GIR ?0AA|[A-PR-UWYZ]([0-9]{1,2}|[A-HK-Y][0-9]{1,2}|[0-9][A-HJKPS-UW]|[A-HK-Y][0-9][ABEHMNPRV-Y])"
        r" ?[0-9][ABD-HJLNP-UW-Z]{2})",
        re.IGNORECASE,
    ),
    "CA": re.compile(
        r"[ABCEGHJ-NPRSTVXY][0-9][ABCEGHJ-NPRSTV-Z] ?[0-9][ABCEGHJ-NPRSTV-Z][0-9]", re.IGNORECASE
    ),
}

US_STATES = {
    "AL": "Alabama",
    "AK": "Alaska",
    "AZ": "Arizona",
    "AR": "Arkansas",
    "CA": "California",
    "CO": "Colorado",
    "CT": "Connecticut",
    "DE": "Delaware",
    "DC": "District of Columbia",
    "FL": "Florida",
    "GA": "Georgia",
    "HI": "Hawaii",
    "ID": "Idaho",
    "IL": "Illinois",
    "IN": "Indiana",
    "IA": "Iowa",
    "KS": "Kansas",
    "KY": "Kentucky",
    "LA": "Louisiana",
    "ME": "Maine",
    "MD": "Maryland",
    "MA": "Massachusetts",
    "MI": "Michigan",
    "MN": "Minnesota",
    "MS": "Mississippi",
    "MO": "Missouri",
    "MT": "Montana",
    "NE": "Nebraska",
    "NV": "Nevada",
    "NH": "New Hampshire",
    "NJ": "New Jersey",
    "NM": "New Mexico",
    "NY": "New York",
    "NC": "North Carolina",
    "ND": "North Dakota",
    "OH": "Ohio",
    "OK": "Oklahoma",
    "OR": "Oregon",
    "PA": "Pennsylvania",
    "RI": "Rhode Island",
    "SC": "South Carolina",
    "SD": "South Dakota",
    "TN": "Tennessee",
    "TX": "Texas",
    "UT": "Utah",
    "VT": "Vermont",
    "VA": "Virginia",
    "WA": "Washington",
    "WV": "West Virginia",
    "WI": "Wisconsin",
    "WY": "Wyoming",
    "AS": "American Samoa",
    "GU": "Guam",
    "MP": "Northern Mariana Islands",
    "PR": "Puerto Rico",
    "VI": "U.S. Virgin Islands",
}
_US_STATE_NAMES = {name.casefold() for name in US_STATES.values()}


def _postcode_fits_country(value: str, request: Mapping[str, object]) -> bool:
    pattern = _POSTCODES.get(str(request.get("billingcountryiso2a", "")).upper())
    return pattern is None or bool(pattern.fullmatch(value.strip()))


def _us_state(value: str, request: Mapping[str, object]) -> bool:
    if str(request.get("billingcountryiso2a", "")).upper() != "US":
        return True
    return value.upper() in US_STATES or value.strip().casefold() in _US_STATE_NAMES


POSITIVE = Rule("must be greater than zero, in base units with no separators", _positive)
NO_LEADING_ZERO = Rule("must not start with 0", _no_leading_zero)
LUHN = Rule("must pass the Luhn check", lambda v, _r: luhn_ok(v))
SECURITYCODE_SCHEME = Rule(
    "must have 4 digits for American Express and 3 for every other scheme",
    _securitycode_fits_scheme,
    reads_request=True,
)
UPPERCASE = Rule("must be upper case", _uppercase)
POSTCODE = Rule(
    "must be a valid postcode for a US, GB or CA billing address", _postcode_fits_country, reads_request=True
)
US_STATE = Rule(
    "must be a US state code (e.g. NY) or state name for US addresses", _us_state, reads_request=True
)
AT_LEAST_ONE = Rule("must be at least 1", _positive)
MONTH = Rule("must be a month, 01 to 12", _month)
TIMESTAMP = Rule("must be a real time in the format YYYY-MM-DD HH:MM:SS", _timestamp)
IP_ADDRESS = Rule("must be an IPv4 or IPv6 address, e.g. 203.0.113.7", _ip_address)
TIMEZONE_MINUTES = Rule(
    "must be minutes from UTC, digits with an optional leading -, e.g. -60", _signed_minutes
)
# ACCOUNTCHECK takes no money: its amount may be 0 (or absent), as the real service allows.
ZERO_OR_MORE = Rule("must be 0 or more, in base units with no separators", lambda v, _r: v.isdigit())


def _f(name: str, type_: t.TypeClass, max_length: int | None = None, **kw: Any) -> Field:
    where = kw.pop("where", {REQUEST})
    return Field(name, type_, max_length, where=frozenset(where), **kw)


_REQ_RESP = {REQUEST, RESPONSE}

_FIELD_LIST: list[Field] = [
    # 2.2 request fields
    _f("requesttypedescriptions", t.ALPHA, 20, label="Request types", help="Request types to run, in order."),
    _f(
        "sitereference",
        t.ALPHANUMERIC_UNDERSCORE,
        50,
        where=_REQ_RESP,
        report=CATEGORY,
        label="Site reference",
        help="Identifies the merchant site; test sites start with test_.",
    ),
    _f(
        "accounttypedescription",
        t.ALPHA,
        20,
        where=_REQ_RESP,
        report=CATEGORY,
        choices=("ECOM", "MOTO", "RECUR", "CARDSTORE", "CFT"),
        label="Account type",
        help="Source of the transaction.",
    ),
    _f(
        "currencyiso3a",
        t.ALPHA,
        3,
        min_length=3,
        rules=(UPPERCASE,),
        where=_REQ_RESP,
        report=CATEGORY,
        label="Currency",
        help="ISO 4217 alphabetic code, e.g. GBP.",
    ),
    _f(
        "baseamount",
        t.NUMERIC,
        13,
        rules=(POSITIVE, NO_LEADING_ZERO),
        where=_REQ_RESP | {SUBSCRIPTION},
        report=AMOUNT,
        label="Amount (base units)",
        help="1000 is 10.00 in major units.",
    ),
    _f("orderreference", t.ALPHANUMERIC_SYMBOLS, 255, where=_REQ_RESP, label="Order reference"),
    _f(
        "pan",
        t.NUMERIC,
        19,
        min_length=12,
        rules=(LUHN,),
        sensitive=MASK_PAN,
        where={REQUEST, TOKENISE},
        label="Card number",
    ),
    _f("expirydate", t.DATE_MONTH, 7, min_length=7, where=_REQ_RESP, label="Expiry date (MM/YYYY)"),
    _f(
        "securitycode",
        t.NUMERIC,
        4,
        min_length=3,
        rules=(SECURITYCODE_SCHEME,),
        sensitive=REDACT,
        where={REQUEST, TOKENISE},
        label="Security code",
    ),
    _f(
        "md",
        t.ALPHANUMERIC_SYMBOLS,
        65536,
        sensitive=REDACT,
        where=_REQ_RESP | {THREEDS},
        label="MD",
        help="3-D Secure session reference from the THREEDQUERY.",
    ),
    _f(
        "pares",
        t.ALPHANUMERIC_SYMBOLS,
        1024,
        sensitive=REDACT,
        where={REQUEST, THREEDS},
        label="PaRes",
        help="Returned unchanged from the issuer's ACS.",
    ),
    _f(
        "parenttransactionreference",
        t.ALPHANUMERIC_HYPHENS,
        25,
        where=_REQ_RESP,
        label="Parent transaction reference",
    ),
    _f(
        "credentialsonfile",
        t.NUMERIC,
        1,
        choices=("0", "1", "2"),
        where=_REQ_RESP,
        report=CATEGORY,
        label="Credentials on file",
    ),
    _f(
        "termurl",
        t.URL,
        1024,
        where={REQUEST, THREEDS},
        label="Term URL",
        help="Where the ACS sends the customer back.",
    ),
    _f("accept", t.HEADER, 1024, where={REQUEST, THREEDS}, label="Browser Accept header"),
    _f("useragent", t.HEADER, 255, where={REQUEST, THREEDS}, label="Browser User-Agent"),
    # EMV 3-D Secure (v2): what the browser library reads from the customer's browser for the
    # THREEDQUERY (real-gateway-facts.md, "3-D Secure v2"; the library sends each as a string)
    _f(
        "browsercolordepth",
        t.NUMERIC,
        2,
        where={REQUEST, THREEDS},
        label="Browser colour depth",
        help="Bits per pixel of the customer's screen, e.g. 24.",
    ),
    _f(
        "browserjavaenabled",
        t.ALPHA,
        5,
        choices=("true", "false"),
        where={REQUEST, THREEDS},
        label="Browser Java enabled",
    ),
    _f(
        "browserjavascriptenabled",
        t.ALPHA,
        5,
        choices=("true", "false"),
        where={REQUEST, THREEDS},
        label="Browser JavaScript enabled",
    ),
    _f(
        "browserlanguage",
        t.ALPHANUMERIC_HYPHENS,
        35,
        where={REQUEST, THREEDS},
        label="Browser language",
        help="The browser's language tag, e.g. en-GB.",
    ),
    _f("browserscreenheight", t.NUMERIC, 6, where={REQUEST, THREEDS}, label="Screen height (pixels)"),
    _f("browserscreenwidth", t.NUMERIC, 6, where={REQUEST, THREEDS}, label="Screen width (pixels)"),
    _f(
        "browsertz",
        t.STRING,
        5,
        rules=(TIMEZONE_MINUTES,),
        where={REQUEST, THREEDS},
        label="Browser time zone",
        help="Minutes between UTC and the browser's local time, as JavaScript's getTimezoneOffset().",
    ),
    _f(
        "customerip",
        t.STRING,
        45,
        rules=(IP_ADDRESS,),
        where={REQUEST, THREEDS},
        label="Customer IP address",
    ),
    _f(
        "threedresponse",
        t.STRING,
        65536,
        sensitive=REDACT,
        where={REQUEST, THREEDS},
        label="3-D Secure response (JWT)",
        help="The browser library's unsigned JWT with the outcome of the challenge; sent with the AUTH.",
    ),
    _f(
        "threedpayload",
        t.STRING,
        65536,
        sensitive=REDACT,
        where={RESPONSE, THREEDS},
        label="3-D Secure payload (CReq)",
        help="The challenge request for the issuer's ACS, base64url JSON.",
    ),
    _f(
        "threedstransactionid",
        t.ALPHANUMERIC_HYPHENS,
        36,
        where={RESPONSE, THREEDS},
        label="3DS server transaction ID",
        help="The UUID that names one EMV 3-D Secure authentication, from THREEDLOOKUP.",
    ),
    _f(
        "threedmethodurl",
        t.URL,
        2048,
        where={RESPONSE, THREEDS},
        label="3DS method URL",
        help="The issuer's page the browser loads in a hidden frame before the THREEDQUERY.",
    ),
    _f(
        "threednotificationurl",
        t.URL,
        2048,
        where={RESPONSE, THREEDS},
        label="3DS method notification URL",
        help="Where the 3DS method page reports that it has run.",
    ),
    _f(
        "cres",
        t.STRING,
        65536,
        sensitive=REDACT,
        where={THREEDS},
        label="CRes",
        help="The ACS's challenge response, base64url JSON, posted by the browser to the term URL.",
    ),
    _f(
        "authmethod",
        t.ALPHA,
        20,
        where={RESPONSE, THREEDS},
        report=CATEGORY,
        label="Authorisation method",
        help="FINAL: the AUTH is the final amount.",
    ),
    _f("cachetoken", t.STRING, 4096, sensitive=REDACT, where=_REQ_RESP | {TOKENISE}, label="Cache token"),
    _f("requestreference", t.ALPHANUMERIC_HYPHENS, 25, where=_REQ_RESP, label="Request reference"),
    # 2.3 subscription fields
    _f(
        "subscriptiontype",
        t.ALPHA,
        11,
        choices=("RECURRING", "INSTALLMENT"),
        where=_REQ_RESP | {SUBSCRIPTION},
        report=CATEGORY,
        label="Subscription type",
    ),
    _f(
        "subscriptionunit",
        t.ALPHA,
        5,
        choices=("MONTH", "DAY"),
        where=_REQ_RESP | {SUBSCRIPTION},
        report=CATEGORY,
        label="Unit",
    ),
    _f(
        "subscriptionfrequency",
        t.NUMERIC,
        11,
        rules=(AT_LEAST_ONE,),
        where=_REQ_RESP | {SUBSCRIPTION},
        report=INTEGER,
        label="Frequency",
        help="Units between payments.",
    ),
    _f(
        "subscriptionnumber",
        t.NUMERIC,
        5,
        rules=(AT_LEAST_ONE,),
        where=_REQ_RESP | {SUBSCRIPTION},
        report=INTEGER,
        label="Payment number",
        help="Starts at 1.",
    ),
    _f(
        "subscriptionfinalnumber",
        t.NUMERIC,
        5,
        where=_REQ_RESP | {SUBSCRIPTION},
        report=INTEGER,
        label="Final payment number",
        help="0 means no end.",
    ),
    _f(
        "subscriptionbegindate",
        t.DATE_ISO,
        10,
        min_length=10,
        where=_REQ_RESP | {SUBSCRIPTION},
        report=DATE,
        label="First automated payment",
    ),
    _f(
        "transactionactive",
        t.NUMERIC,
        1,
        choices=("0", "1", "2"),
        where=_REQ_RESP | {SUBSCRIPTION},
        report=CATEGORY,
        label="Active state",
    ),
    # 2.8 billing fields
    _f("billingpremise", t.ALPHANUMERIC_SYMBOLS, 25, where={REQUEST, BILLING}, label="Premise"),
    _f("billingstreet", t.ALPHANUMERIC_SYMBOLS, 127, where={REQUEST, BILLING}, label="Street"),
    _f("billingtown", t.ALPHANUMERIC_SYMBOLS, 127, where={REQUEST, BILLING}, label="Town"),
    _f(
        "billingcounty",
        t.ALPHANUMERIC_SYMBOLS,
        127,
        rules=(US_STATE,),
        where={REQUEST, BILLING},
        label="County / state",
    ),
    _f(
        "billingcountryiso2a",
        t.ALPHA,
        2,
        min_length=2,
        rules=(UPPERCASE,),
        where={REQUEST, BILLING},
        report=CATEGORY,
        label="Country",
    ),
    # Typed Alphanumeric, but "validated only for US, GB and CA" (ZIP+4 and many countries use "-"):
    # elsewhere only the length and the absence of control characters are checked.
    _f(
        "billingpostcode",
        t.ALPHANUMERIC_SYMBOLS,
        25,
        rules=(POSTCODE,),
        where={REQUEST, BILLING},
        label="Postcode",
    ),
    _f("billingemail", t.EMAIL, 255, where={REQUEST, BILLING}, label="Email"),
    _f(
        "billingtelephonetype",
        t.CHAR,
        1,
        choices=("H", "M", "W"),
        where={REQUEST, BILLING},
        label="Telephone type",
    ),
    _f("billingtelephone", t.NUMERIC_SYMBOLS, 20, where={REQUEST, BILLING}, label="Telephone"),
    _f("billingprefixname", t.ALPHANUMERIC_SYMBOLS, 25, where={REQUEST, BILLING}, label="Prefix"),
    _f("billingfirstname", t.ALPHANUMERIC_SYMBOLS, 127, where={REQUEST, BILLING}, label="First name"),
    _f("billingmiddlename", t.ALPHANUMERIC_SYMBOLS, 127, where={REQUEST, BILLING}, label="Middle name"),
    _f("billinglastname", t.ALPHANUMERIC_SYMBOLS, 127, where={REQUEST, BILLING}, label="Last name"),
    _f("billingsuffixname", t.ALPHANUMERIC_SYMBOLS, 25, where={REQUEST, BILLING}, label="Suffix"),
    # browser tokenisation (CACHETOKENISE); the official clients also send the expiry as these two in
    # place of `expirydate` in every request that carries a card (see validation.with_expirydate)
    _f(
        "expirymonth",
        t.NUMERIC,
        2,
        min_length=2,
        rules=(MONTH,),
        where={REQUEST, TOKENISE},
        label="Expiry month",
    ),
    _f("expiryyear", t.NUMERIC, 4, min_length=4, where={REQUEST, TOKENISE}, label="Expiry year"),
    _f(
        "paymenttypedescription",
        t.ALPHA,
        20,
        where={RESPONSE, TOKENISE},
        report=CATEGORY,
        label="Payment type",
    ),
    # settlement fields the gateway lets a merchant update
    _f(
        "settlestatus",
        t.NUMERIC,
        3,
        choices=("0", "1", "2", "3", "10", "100"),
        where=_REQ_RESP,
        report=CATEGORY,
        label="Settle status",
    ),
    _f(
        "settlebaseamount",
        t.NUMERIC,
        13,
        rules=(POSITIVE, NO_LEADING_ZERO),
        where=_REQ_RESP,
        report=AMOUNT,
        label="Settle amount (base units)",
    ),
    # 2.4 to 2.7 response fields
    _f("transactionreference", t.ALPHANUMERIC_HYPHENS, 25, where=_REQ_RESP, label="Transaction reference"),
    _f("transactionstartedtimestamp", t.STRING, 19, where={RESPONSE}, report=DATETIME, label="Started"),
    _f("settleduedate", t.DATE_ISO, 10, where={RESPONSE}, report=DATE, label="Settle due date"),
    _f("errorcode", t.NUMERIC, 5, where={RESPONSE}, report=CATEGORY, label="Error code"),
    _f("errormessage", t.STRING, 255, where={RESPONSE}, label="Error message"),
    _f("errordata", t.STRING, None, where={RESPONSE}, label="Error data"),
    _f("requesttypedescription", t.ALPHA, 20, where={RESPONSE}, report=CATEGORY, label="Request type"),
    _f("maskedpan", t.STRING, 19, where={RESPONSE}, label="Masked card number"),
    _f("livestatus", t.NUMERIC, 1, where={RESPONSE}, report=CATEGORY, label="Live status"),
    _f("issuer", t.STRING, 255, where={RESPONSE}, report=CATEGORY, label="Issuer"),
    _f("issuercountryiso2a", t.ALPHA, 2, where={RESPONSE}, report=CATEGORY, label="Issuer country"),
    _f("splitfinalnumber", t.NUMERIC, 5, where={RESPONSE}, label="Split final number"),
    _f("dccenabled", t.NUMERIC, 1, where={RESPONSE}, report=CATEGORY, label="DCC enabled"),
    _f("tid", t.STRING, 255, where={RESPONSE}, label="Terminal ID"),
    _f("merchantnumber", t.STRING, 255, where={RESPONSE}, label="Merchant number"),
    _f("merchantcountryiso2a", t.ALPHA, 2, where={RESPONSE}, report=CATEGORY, label="Merchant country"),
    _f("merchantname", t.STRING, 255, where={RESPONSE}, report=CATEGORY, label="Merchant"),
    _f("acquirerresponsecode", t.STRING, 10, where={RESPONSE}, report=CATEGORY, label="Acquirer response"),
    _f(
        "securityresponsesecuritycode",
        t.NUMERIC,
        1,
        where={RESPONSE},
        report=CATEGORY,
        label="Security code check",
    ),
    _f("securityresponsepostcode", t.NUMERIC, 1, where={RESPONSE}, report=CATEGORY, label="Postcode check"),
    _f("securityresponseaddress", t.NUMERIC, 1, where={RESPONSE}, report=CATEGORY, label="Address check"),
    _f("authcode", t.STRING, 255, where={RESPONSE}, label="Auth code"),
    _f("operatorname", t.STRING, 255, where={RESPONSE}, report=CATEGORY, label="Operator"),
    _f(
        "enrolled",
        t.CHAR,
        1,
        choices=("Y", "N", "U"),
        where={RESPONSE, THREEDS},
        report=CATEGORY,
        label="3-D Secure enrolled",
    ),
    _f("xid", t.ALPHANUMERIC, 255, where={RESPONSE, THREEDS}, label="XID"),
    _f("pareq", t.ALPHANUMERIC_SYMBOLS, 2048, where={RESPONSE, THREEDS}, label="PaReq"),
    _f("acsurl", t.URL, 1024, where={RESPONSE, THREEDS}, label="ACS URL"),
    _f("threedversion", t.STRING, 6, where={RESPONSE, THREEDS}, report=CATEGORY, label="3-D Secure version"),
    _f("status", t.CHAR, 1, where={RESPONSE, THREEDS}, report=CATEGORY, label="3-D Secure status"),
    _f("cavv", t.STRING, 32, where={RESPONSE, THREEDS}, label="CAVV"),
    _f("eci", t.STRING, 2, where={RESPONSE, THREEDS}, report=CATEGORY, label="ECI"),
    _f("interface", t.STRING, 255, where={RESPONSE}, report=CATEGORY, label="Interface"),
]

FIELDS: dict[str, Field] = {f.name: f for f in _FIELD_LIST}
# RISKDEC's answer (real-gateway-facts.md, "RISKDEC, ..."): the fraud screening's verdict.
FIELDS.update(
    (f.name, f)
    for f in (
        _f(
            "fraudcontrolshieldstatuscode",
            t.ALPHA,
            20,
            where={RESPONSE},
            report=CATEGORY,
            label="Fraud screening verdict",
        ),
        _f(
            "fraudcontrolresponsecode",
            t.NUMERIC,
            4,
            where={RESPONSE},
            report=CATEGORY,
            label="Fraud response",
        ),
        _f("fraudcontrolreference", t.STRING, 255, where={RESPONSE}, label="Fraud screening reference"),
        _f(
            "acquirerrecommendedaction",
            t.ALPHA,
            1,
            where={RESPONSE},
            report=CATEGORY,
            label="Recommended action",
        ),
    )
)

BILLING_FIELDS: tuple[str, ...] = tuple(f.name for f in _FIELD_LIST if BILLING in f.where)
SUBSCRIPTION_FIELDS: tuple[str, ...] = (
    "subscriptiontype",
    "subscriptionunit",
    "subscriptionfrequency",
    "subscriptionnumber",
    "subscriptionfinalnumber",
    "subscriptionbegindate",
)
# Names a TRANSACTIONQUERY filter takes that are not fields of a record: a date range on
# `transactionstartedtimestamp`, both days included.
FILTER_ONLY_FIELDS: dict[str, Field] = {
    "startdate": _f(
        "startdate",
        t.DATE_ISO,
        10,
        min_length=10,
        where={"filter"},
        report=DATE,
        label="From date",
        help="Transactions started on or after this day.",
    ),
    "enddate": _f(
        "enddate",
        t.DATE_ISO,
        10,
        min_length=10,
        where={"filter"},
        report=DATE,
        label="To date",
        help="Transactions started on or before this day.",
    ),
    "starttimestamp": _f(
        "starttimestamp",
        t.STRING,
        19,
        min_length=19,
        rules=(TIMESTAMP,),
        where={"filter"},
        report=DATETIME,
        label="From time",
        help="Transactions started at or after this time (YYYY-MM-DD HH:MM:SS).",
    ),
    "endtimestamp": _f(
        "endtimestamp",
        t.STRING,
        19,
        min_length=19,
        rules=(TIMESTAMP,),
        where={"filter"},
        report=DATETIME,
        label="To time",
        help="Transactions started at or before this time (YYYY-MM-DD HH:MM:SS).",
    ),
}
# The one baseamount rule that differs by request type: an ACCOUNTCHECK takes no money.
ACCOUNTCHECK_BASEAMOUNT = Field(
    "baseamount",
    t.NUMERIC,
    13,
    rules=(ZERO_OR_MORE, NO_LEADING_ZERO),
    where=frozenset({REQUEST, RESPONSE}),
    report=AMOUNT,
    label="Amount (base units)",
    help="0 or absent: the card is checked and no money is taken.",
)
SENSITIVE_FIELDS: dict[str, str] = {f.name: f.sensitive for f in _FIELD_LIST if f.sensitive}
# Fields the gateway and its official clients send that carry no business meaning; accepted and ignored.
IGNORED_FIELDS = frozenset({"versioninfo", "acceptcustomeroutput", "libraryversion"})
