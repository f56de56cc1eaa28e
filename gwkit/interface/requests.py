"""Every request type of the interface and its variants, as data.

A request object names its request types in `requesttypedescriptions`. Each type (or the
combined `AUTH` + `SUBSCRIPTION`) has one or more variants, told apart by which fields are present
(`md`/`pares`, `threedresponse`, `cachetoken`, `parenttransactionreference`, or card fields). A variant lists the
fields it requires, those it allows, those it forbids, and per-type limits on allowed values.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import cached_property

from .fields import ACCOUNTCHECK_BASEAMOUNT, BILLING_FIELDS, SUBSCRIPTION_FIELDS, Field


@dataclass(frozen=True)
class Variant:
    name: str
    title: str
    required: tuple[str, ...]
    optional: tuple[str, ...] = ()
    forbidden: Mapping[str, str] = field(default_factory=dict)  # field -> why
    # Rules of the interface the real service does not enforce, by field: a forbidden field it accepts
    # and ignores, or a required field it answers without. The client keeps the rule (strict
    # validation); the sandbox does as the real service (validation with strict=False).
    not_enforced: frozenset[str] = frozenset()
    choices: Mapping[str, tuple[str, ...]] = field(default_factory=dict)  # per-type allowed values
    # The variant applies when any of these fields is present; () marks the fallback variant.
    selected_by: tuple[str, ...] = ()
    help: str = ""
    # A field whose rule differs for this request type (an ACCOUNTCHECK's amount may be 0).
    fields: Mapping[str, Field] = field(default_factory=dict)

    @property
    def allowed(self) -> tuple[str, ...]:
        return self.required + tuple(f for f in self.optional if f not in self.required)


@dataclass(frozen=True)
class RequestType:
    key: str  # e.g. "AUTH" or "AUTH+SUBSCRIPTION"
    types: tuple[str, ...]
    title: str
    variants: tuple[Variant, ...]
    help: str = ""

    def variant(self, name: str) -> Variant:
        for variant in self.variants:
            if variant.name == name:
                return variant
        raise KeyError(f"{self.key} has no variant {name!r}; choose from {[v.name for v in self.variants]}")

    def select(self, request: Mapping[str, object]) -> Variant:
        """The variant a request object is for, from the fields it carries."""
        selectors, fallback = self._selection
        get = request.get
        for name, variant in selectors:  # a plain loop: this runs for every request sent
            value = get(name)
            if value is not None and value != "":
                return variant
        if fallback is None:  # pragma: no cover - a table error
            raise LookupError(f"{self.key} has no fallback variant")
        return fallback

    @cached_property
    def _selection(self) -> tuple[tuple[tuple[str, Variant], ...], Variant | None]:
        """(selecting field, its variant) in the order they are tried, and the fallback variant."""
        selectors = tuple((name, variant) for variant in self.variants for name in variant.selected_by)
        return selectors, next((variant for variant in self.variants if not variant.selected_by), None)


CARD = ("pan", "expirydate")
COMMON = ("requestreference",)
BILLING = BILLING_FIELDS
NO_CARD_DATA = "card details are inherited, so card fields must not be sent"
NO_SECURITYCODE_STORE = "the security code must never be sent in a STORE request or stored"
NOT_WITH_3DS = "only sent after a THREEDQUERY for an enrolled card"
NOT_WITH_TOKEN = "the cachetoken stands in for card data"

_THREEDS_SELECTOR = ("md", "pares")
_THREEDS_V2_SELECTOR = ("threedresponse",)
# What the browser library reads from the customer's browser for an EMV 3-D Secure (v2) THREEDQUERY.
BROWSER = (
    "browsercolordepth",
    "browserjavaenabled",
    "browserjavascriptenabled",
    "browserlanguage",
    "browserscreenheight",
    "browserscreenwidth",
    "browsertz",
    "useragent",
    "accept",
    "customerip",
)
NOT_WITH_3DS_V2 = "only sent after an EMV 3-D Secure (v2) THREEDQUERY"
INHERITED_V2 = "details are inherited from the THREEDQUERY"
# The browser library sends the remaining request types with the card or its cachetoken again; the
# real service takes them from the THREEDQUERY (gwkit's client sends none).
_V2_NOT_ENFORCED = frozenset({"pan", "expirydate", "securitycode", "cachetoken"})
_PARENT_SELECTOR = ("parenttransactionreference",)
_TOKEN_SELECTOR = ("cachetoken",)

# The order of variants matters: the first whose selector matches wins, the last is the fallback.
AUTH = RequestType(
    "AUTH",
    ("AUTH",),
    "Authorisation",
    help="Authorises a card payment; funds are reserved when it succeeds.",
    variants=(
        Variant(
            "threeds",
            "After 3-D Secure (enrolled card)",
            ("md", "pares"),
            ("sitereference", "orderreference", "credentialsonfile") + COMMON + BILLING,
            forbidden=dict.fromkeys(
                ("pan", "expirydate", "securitycode", "cachetoken", "parenttransactionreference"),
                "details are inherited from the THREEDQUERY",
            ),
            selected_by=_THREEDS_SELECTOR,
            help="Send md and pares from the ACS; everything else is inherited from the THREEDQUERY.",
        ),
        Variant(
            "threedresponse",
            "After EMV 3-D Secure (v2)",
            ("sitereference", "parenttransactionreference", "threedresponse"),
            (
                "accounttypedescription",
                "currencyiso3a",
                "baseamount",
                "orderreference",
                "credentialsonfile",
            )
            + COMMON
            + BILLING,
            forbidden={
                **dict.fromkeys(("pan", "expirydate", "securitycode", "cachetoken"), INHERITED_V2),
                "md": NOT_WITH_3DS,
                "pares": NOT_WITH_3DS,
            },
            not_enforced=_V2_NOT_ENFORCED,
            choices={"accounttypedescription": ("ECOM",)},
            selected_by=_THREEDS_V2_SELECTOR,
            help="Send the browser library's threedresponse with the THREEDQUERY as parent; the card "
            "and its authentication are inherited from the THREEDQUERY.",
        ),
        Variant(
            "cachetoken",
            "With a cachetoken",
            ("sitereference", "accounttypedescription", "currencyiso3a", "baseamount", "cachetoken"),
            ("orderreference", "credentialsonfile") + COMMON + BILLING,
            forbidden={
                "pan": NOT_WITH_TOKEN,
                "expirydate": NOT_WITH_TOKEN,
                "securitycode": NOT_WITH_TOKEN,
                "md": NOT_WITH_3DS,
                "pares": NOT_WITH_3DS,
                "threedresponse": NOT_WITH_3DS_V2,
                "parenttransactionreference": NOT_WITH_TOKEN,
            },
            choices={"accounttypedescription": ("ECOM", "MOTO")},
            selected_by=_TOKEN_SELECTOR,
            help="The browser library's cachetoken replaces the card fields.",
        ),
        Variant(
            "parent",
            "From a stored card or a THREEDQUERY (not enrolled or unknown)",
            ("sitereference", "parenttransactionreference"),
            (
                "accounttypedescription",
                "currencyiso3a",
                "baseamount",
                "orderreference",
                "securitycode",
                "credentialsonfile",
            )
            + COMMON
            + BILLING,
            forbidden={
                "pan": NO_CARD_DATA,
                "expirydate": NO_CARD_DATA,
                "md": NOT_WITH_3DS,
                "pares": NOT_WITH_3DS,
            },
            choices={"accounttypedescription": ("ECOM", "MOTO", "RECUR")},
            selected_by=_PARENT_SELECTOR,
            help="Card and billing details are inherited from the parent STORE or THREEDQUERY record "
            "(a THREEDQUERY whose card was not enrolled, or an EMV 3-D Secure one that ended frictionless).",
        ),
        Variant(
            "card",
            "With card details",
            ("sitereference", "accounttypedescription", "currencyiso3a", "baseamount") + CARD,
            ("securitycode", "orderreference", "credentialsonfile") + COMMON + BILLING,
            forbidden={"md": NOT_WITH_3DS, "pares": NOT_WITH_3DS},
            choices={"accounttypedescription": ("ECOM", "MOTO", "RECUR")},
        ),
    ),
)

_SUBSCRIPTION_REQUIRED = (
    (
        "sitereference",
        "accounttypedescription",
        "currencyiso3a",
        "baseamount",
        "orderreference",
    )
    + SUBSCRIPTION_FIELDS
    + ("credentialsonfile",)
)
_SUBSCRIPTION_CHOICES = {"accounttypedescription": ("ECOM", "MOTO")}
# Captured answers: ACCOUNTCHECK+AUTH+SUBSCRIPTION without an orderreference is answered 0 on all three.
_SUBSCRIPTION_NOT_ENFORCED = frozenset({"orderreference"})
_SUBSCRIPTION_OPTIONAL = ("transactionactive",) + COMMON + BILLING

AUTH_SUBSCRIPTION = RequestType(
    "AUTH+SUBSCRIPTION",
    ("AUTH", "SUBSCRIPTION"),
    "Subscription (first payment and schedule)",
    help="Processes the first payment now and schedules later payments in the subscription engine.",
    variants=(
        Variant(
            "threeds",
            "Card enrolled in 3-D Secure",
            _SUBSCRIPTION_REQUIRED + ("md", "pares"),
            _SUBSCRIPTION_OPTIONAL,
            forbidden=dict.fromkeys(
                ("pan", "expirydate", "securitycode", "cachetoken", "parenttransactionreference"),
                "details are inherited from the THREEDQUERY",
            ),
            choices=_SUBSCRIPTION_CHOICES,
            selected_by=_THREEDS_SELECTOR,
            not_enforced=_SUBSCRIPTION_NOT_ENFORCED,
        ),
        Variant(
            "threedresponse",
            "After EMV 3-D Secure (v2)",
            _SUBSCRIPTION_REQUIRED + ("parenttransactionreference", "threedresponse"),
            _SUBSCRIPTION_OPTIONAL,
            forbidden={
                **dict.fromkeys(("pan", "expirydate", "securitycode", "cachetoken"), INHERITED_V2),
                "md": NOT_WITH_3DS,
                "pares": NOT_WITH_3DS,
            },
            choices=_SUBSCRIPTION_CHOICES,
            selected_by=_THREEDS_V2_SELECTOR,
            not_enforced=_SUBSCRIPTION_NOT_ENFORCED | _V2_NOT_ENFORCED,
        ),
        Variant(
            "parent",
            "Card not enrolled in 3-D Secure, or a stored card",
            _SUBSCRIPTION_REQUIRED + ("parenttransactionreference",),
            _SUBSCRIPTION_OPTIONAL + ("securitycode",),
            forbidden={
                "pan": NO_CARD_DATA,
                "expirydate": NO_CARD_DATA,
                "md": NOT_WITH_3DS,
                "pares": NOT_WITH_3DS,
                "cachetoken": NO_CARD_DATA,
            },
            choices=_SUBSCRIPTION_CHOICES,
            selected_by=_PARENT_SELECTOR,
            not_enforced=_SUBSCRIPTION_NOT_ENFORCED,
        ),
        Variant(
            "card",
            "Site that does not use 3-D Secure",
            _SUBSCRIPTION_REQUIRED + CARD,
            _SUBSCRIPTION_OPTIONAL + ("securitycode",),
            forbidden={
                "md": NOT_WITH_3DS,
                "pares": NOT_WITH_3DS,
                "cachetoken": "not accepted for subscriptions",
            },
            choices=_SUBSCRIPTION_CHOICES,
            not_enforced=_SUBSCRIPTION_NOT_ENFORCED,
        ),
    ),
)

_THREEDQUERY_REQUIRED = ("termurl", "currencyiso3a", "accounttypedescription", "sitereference", "baseamount")
_THREEDQUERY_OPTIONAL = BROWSER + ("orderreference",) + COMMON + BILLING

THREEDQUERY = RequestType(
    "THREEDQUERY",
    ("THREEDQUERY",),
    "3-D Secure enrolment check",
    help="Checks whether the card is enrolled in 3-D Secure and starts its authentication: version 1 "
    "(pareq and md for the ACS), or EMV 3-D Secure (v2) with the browser fields, frictionless or with "
    "a challenge (threedpayload for the ACS).",
    variants=(
        Variant(
            "cachetoken",
            "With the cachetoken of a THREEDLOOKUP",
            _THREEDQUERY_REQUIRED + ("cachetoken",),
            _THREEDQUERY_OPTIONAL,
            forbidden={
                "pan": NOT_WITH_TOKEN,
                "expirydate": NOT_WITH_TOKEN,
                "securitycode": NOT_WITH_TOKEN,
                "md": NOT_WITH_3DS,
                "pares": NOT_WITH_3DS,
            },
            choices={"accounttypedescription": ("ECOM",)},
            selected_by=_TOKEN_SELECTOR,
            help="The THREEDLOOKUP's cachetoken stands in for the card (EMV 3-D Secure).",
        ),
        Variant(
            "storedcard",
            "With a stored card",
            _THREEDQUERY_REQUIRED + ("parenttransactionreference",),
            _THREEDQUERY_OPTIONAL + ("securitycode",),
            forbidden={"pan": NO_CARD_DATA, "expirydate": NO_CARD_DATA},
            choices={"accounttypedescription": ("ECOM",)},
            selected_by=_PARENT_SELECTOR,
        ),
        Variant(
            "card",
            "With card details",
            _THREEDQUERY_REQUIRED + CARD,
            _THREEDQUERY_OPTIONAL + ("securitycode",),
            forbidden={"md": NOT_WITH_3DS, "pares": NOT_WITH_3DS},
            choices={"accounttypedescription": ("ECOM",)},
        ),
    ),
)

THREEDLOOKUP = RequestType(
    "THREEDLOOKUP",
    ("THREEDLOOKUP",),
    "EMV 3-D Secure (v2) look-up",
    help="Starts EMV 3-D Secure: which version the card's issuer runs, the transaction's ID, the 3DS "
    "method page (when the issuer has one) and a cachetoken for the THREEDQUERY. Nothing is kept.",
    variants=(
        Variant(
            "card",
            "With card details",
            ("sitereference",) + CARD,
            # The browser library sends the card alone (V3 ThreeDLookupRequest.ts); the help centre's
            # example adds the amount, currency and account type.
            ("accounttypedescription", "currencyiso3a", "baseamount", "securitycode", "orderreference")
            + COMMON,
            forbidden={
                "md": NOT_WITH_3DS,
                "pares": NOT_WITH_3DS,
                "cachetoken": "THREEDLOOKUP takes card details",
            },
            choices={"accounttypedescription": ("ECOM",)},
        ),
    ),
)

STORE = RequestType(
    "STORE",
    ("STORE",),
    "Card store",
    help="Stores card and billing details for later use; the bank is not contacted.",
    variants=(
        Variant(
            "card",
            "Store a card",
            ("sitereference", "accounttypedescription") + CARD,
            ("orderreference",) + COMMON + BILLING,
            forbidden={
                "securitycode": NO_SECURITYCODE_STORE,
                "md": NOT_WITH_3DS,
                "pares": NOT_WITH_3DS,
                "cachetoken": "STORE takes card details",
            },
            # The real test site answers a STORE with a security code 0 and does not keep the code
            # (the official client's module test_store sends one): gwkit's client still refuses it.
            not_enforced=frozenset({"securitycode"}),
            choices={"accounttypedescription": ("CARDSTORE",)},
        ),
    ),
)

TRANSACTIONUPDATE = RequestType(
    "TRANSACTIONUPDATE",
    ("TRANSACTIONUPDATE",),
    "Update a transaction",
    help="Changes a stored record (subscription, stored card, unsettled AUTH) found by its filter.",
    variants=(
        Variant(
            "filter",
            "Filter and updates",
            (),
            ("filter", "updates") + COMMON,
            help="The gateway answers 60019 without a usable filter, 60013 without usable updates.",
        ),
    ),
)

TRANSACTIONQUERY = RequestType(
    "TRANSACTIONQUERY",
    ("TRANSACTIONQUERY",),
    "Query transactions",
    help="Retrieves stored records matching a filter; card numbers are masked.",
    variants=(
        Variant(
            "filter",
            "Filter",
            (),
            ("filter",) + COMMON,
            help="The gateway answers 60019 without a usable filter.",
        ),
    ),
)

CACHETOKENISE = RequestType(
    "CACHETOKENISE",
    ("CACHETOKENISE",),
    "Tokenise card details (browser library)",
    help="What st.js sends from the browser: card fields in, a 15-minute cachetoken out.",
    variants=(
        Variant(
            "card",
            "Card fields",
            ("sitereference", "pan", "expirymonth", "expiryyear"),
            ("securitycode", "paymenttypedescription") + COMMON,
        ),
    ),
)

_ACCOUNTCHECK_CHOICES = {"accounttypedescription": ("ECOM", "MOTO", "RECUR")}
_ACCOUNTCHECK_AMOUNT = {"baseamount": ACCOUNTCHECK_BASEAMOUNT}

ACCOUNTCHECK = RequestType(
    "ACCOUNTCHECK",
    ("ACCOUNTCHECK",),
    "Account check (no money taken)",
    help="Checks a card (and its security code) with the bank without taking money: baseamount 0 or "
    "absent. The recommended alternative to the card store; can be the parent of an AUTH or of "
    "a subscription.",
    variants=(
        Variant(
            "parent",
            "From a stored card",
            ("sitereference", "parenttransactionreference", "accounttypedescription", "currencyiso3a"),
            ("baseamount", "orderreference", "securitycode", "credentialsonfile") + COMMON + BILLING,
            forbidden={
                "pan": NO_CARD_DATA,
                "expirydate": NO_CARD_DATA,
                "md": NOT_WITH_3DS,
                "pares": NOT_WITH_3DS,
                "cachetoken": NO_CARD_DATA,
            },
            choices=_ACCOUNTCHECK_CHOICES,
            selected_by=_PARENT_SELECTOR,
            fields=_ACCOUNTCHECK_AMOUNT,
            help="The card and billing details of the stored card are checked.",
        ),
        Variant(
            "card",
            "With card details",
            ("sitereference", "accounttypedescription", "currencyiso3a") + CARD,
            ("baseamount", "securitycode", "orderreference", "credentialsonfile") + COMMON + BILLING,
            forbidden={"md": NOT_WITH_3DS, "pares": NOT_WITH_3DS, "cachetoken": "send card details"},
            choices=_ACCOUNTCHECK_CHOICES,
            fields=_ACCOUNTCHECK_AMOUNT,
        ),
    ),
)

SUBSCRIPTION = RequestType(
    "SUBSCRIPTION",
    ("SUBSCRIPTION",),
    "Subscription from a parent (ACCOUNTCHECK or AUTH)",
    help="Schedules payments with the card of an earlier ACCOUNTCHECK or AUTH: named by "
    "parenttransactionreference, or the record just before it in the same request object or envelope.",
    variants=(
        Variant(
            "parent",
            "From an ACCOUNTCHECK or AUTH",
            (
                "sitereference",
                "parenttransactionreference",
                "subscriptiontype",
                "subscriptionunit",
                "subscriptionfrequency",
                "subscriptionnumber",
                "subscriptionfinalnumber",
            ),
            (
                "subscriptionbegindate",
                "baseamount",
                "currencyiso3a",
                "accounttypedescription",
                "orderreference",
                "credentialsonfile",
                "transactionactive",
            )
            + COMMON,
            forbidden={
                "pan": NO_CARD_DATA,
                "expirydate": NO_CARD_DATA,
                "cachetoken": NO_CARD_DATA,
                "md": NOT_WITH_3DS,
                "pares": NOT_WITH_3DS,
            },
            choices={"accounttypedescription": ("ECOM", "MOTO", "RECUR")},
            help="Without subscriptionbegindate the first payment is due one interval after an AUTH "
            "parent (the AUTH was the first payment), or today after an ACCOUNTCHECK.",
        ),
    ),
)

REQUEST_TYPES: dict[str, RequestType] = {
    rt.key: rt
    for rt in (
        AUTH,
        AUTH_SUBSCRIPTION,
        ACCOUNTCHECK,
        SUBSCRIPTION,
        THREEDQUERY,
        THREEDLOOKUP,
        STORE,
        TRANSACTIONUPDATE,
        TRANSACTIONQUERY,
        CACHETOKENISE,
    )
}
# Request types the gateway knows.
SINGLE_TYPES = frozenset(
    {
        "AUTH",
        "ACCOUNTCHECK",
        "THREEDQUERY",
        "THREEDLOOKUP",
        "STORE",
        "TRANSACTIONUPDATE",
        "TRANSACTIONQUERY",
        "CACHETOKENISE",
        "SUBSCRIPTION",
    }
)
# Several request types in one object run in order. In these pairs the second takes the first's
# record as its parent (as the real service chains them); other pairs run side by side.
CHAINS = frozenset(
    {
        ("THREEDQUERY", "AUTH"),
        ("ACCOUNTCHECK", "AUTH"),
        ("ACCOUNTCHECK", "THREEDQUERY"),
        ("ACCOUNTCHECK", "SUBSCRIPTION"),
        ("AUTH", "SUBSCRIPTION"),
    }
)
# Request types that act on records named by a filter or a parent, never combined with another in one
# object (the real service answers TRANSACTIONUPDATE+REFUND with 30000 requesttypedescriptions).
ALONE_TYPES = frozenset({"TRANSACTIONUPDATE", "CACHETOKENISE", "REFUND", "THREEDLOOKUP"})
# What a kept record's requesttypedescription may be: the values a query filter takes.
RECORD_TYPES: tuple[str, ...] = ("AUTH", "ACCOUNTCHECK", "REFUND", "SUBSCRIPTION", "THREEDQUERY", "STORE")

# REFUND (real-gateway-facts.md, "Request types beyond the interface's list"): money back to the card
# of an AUTH (full, or partial up to what is left of it), or a standalone refund (CFT) to a card.
NOT_WITH_PARENT_REFUND = "a refund of an AUTH goes back to the AUTH's card"
REFUND = RequestType(
    "REFUND",
    ("REFUND",),
    "Refund",
    help="Gives money back: all or part of a settled AUTH, or to a card with no parent (CFT).",
    variants=(
        Variant(
            "parent",
            "Refund of an AUTH",
            ("sitereference", "parenttransactionreference"),
            ("baseamount", "orderreference") + COMMON,
            forbidden={
                "pan": NOT_WITH_PARENT_REFUND,
                "expirydate": NOT_WITH_PARENT_REFUND,
                "securitycode": NOT_WITH_PARENT_REFUND,
                "cachetoken": NOT_WITH_PARENT_REFUND,
                "md": NOT_WITH_3DS,
                "pares": NOT_WITH_3DS,
            },
            selected_by=_PARENT_SELECTOR,
            help="Without baseamount, all that is left of the AUTH's amount is refunded, in the AUTH's currency.",
        ),
        Variant(
            "cft",
            "Standalone refund to a card (CFT)",
            ("sitereference", "accounttypedescription", "currencyiso3a", "baseamount") + CARD,
            ("securitycode", "orderreference") + COMMON + BILLING,
            forbidden={
                "md": NOT_WITH_3DS,
                "pares": NOT_WITH_3DS,
                "cachetoken": "a standalone refund takes card details",
            },
            choices={"accounttypedescription": ("CFT",)},
            help="Credit to a card with no earlier transaction: accounttypedescription CFT.",
        ),
    ),
)
REQUEST_TYPES[REFUND.key] = REFUND
SINGLE_TYPES = SINGLE_TYPES | {"REFUND"}

# RISKDEC (real-gateway-facts.md, "RISKDEC, request-type order and threedbypasspaymenttypes"): fraud
# screening, in the object of the payment it screens (RISKDEC ACCOUNTCHECK AUTH: the ACCOUNTCHECK
# takes it as parent; AUTH RISKDEC: it takes the AUTH), or alone. Its orders: gwkit.interface.orders.
# Alone, the official client's own test (test_riskdec) sends accounttypedescription FRAUDCONTROL, the
# account type of the answered record; with the payment's types it shares the payment's (ECOM).
_RISKDEC_ACCOUNTS = ("ECOM", "MOTO", "FRAUDCONTROL")
RISKDEC = RequestType(
    "RISKDEC",
    ("RISKDEC",),
    "Fraud screening (risk decision)",
    help="Screens a payment for fraud; the answer says whether to go on (the sandbox always accepts).",
    variants=(
        Variant(
            "parent",
            "Of an earlier transaction",
            ("sitereference", "parenttransactionreference"),
            ("accounttypedescription", "currencyiso3a", "baseamount", "orderreference") + COMMON + BILLING,
            forbidden={
                "pan": NO_CARD_DATA,
                "expirydate": NO_CARD_DATA,
                "md": NOT_WITH_3DS,
                "pares": NOT_WITH_3DS,
            },
            choices={"accounttypedescription": _RISKDEC_ACCOUNTS},
            selected_by=_PARENT_SELECTOR,
            help="The card is the parent record's.",
        ),
        Variant(
            "card",
            "With card details",
            ("sitereference", "accounttypedescription", "currencyiso3a", "baseamount") + CARD,
            ("securitycode", "orderreference") + COMMON + BILLING,
            forbidden={"md": NOT_WITH_3DS, "pares": NOT_WITH_3DS},
            choices={"accounttypedescription": _RISKDEC_ACCOUNTS},
        ),
    ),
)
REQUEST_TYPES[RISKDEC.key] = RISKDEC
SINGLE_TYPES = SINGLE_TYPES | {"RISKDEC"}
CHAINS = CHAINS | {("RISKDEC", "ACCOUNTCHECK"), ("RISKDEC", "AUTH"), ("AUTH", "RISKDEC")}
RECORD_TYPES = (*RECORD_TYPES, "RISKDEC")  # kept: a TRANSACTIONQUERY finds it

# TRANSACTIONQUERY and TRANSACTIONUPDATE filters: the fields a filter may name.
FILTER_FIELDS: tuple[str, ...] = (
    "sitereference",
    "transactionreference",
    "parenttransactionreference",
    "orderreference",
    "requesttypedescription",
    "accounttypedescription",
    "currencyiso3a",
    "paymenttypedescription",
    "settlestatus",
    "errorcode",
    "transactionactive",
    "startdate",
    "enddate",
    "starttimestamp",
    "endtimestamp",
)
# Fields a TRANSACTIONUPDATE may change; which apply depends on the record found: an unsettled AUTH
# (settlement), a subscription (its schedule and amount), a stored card (active state, billing details).
AUTH_UPDATABLE: tuple[str, ...] = ("settlestatus", "settleduedate", "settlebaseamount")
SUBSCRIPTION_UPDATABLE: tuple[str, ...] = (
    "baseamount",
    "subscriptionfinalnumber",
    "transactionactive",
    "subscriptionfrequency",
)
STORE_UPDATABLE: tuple[str, ...] = ("transactionactive",) + BILLING_FIELDS
UPDATABLE_FIELDS: tuple[str, ...] = tuple(
    dict.fromkeys(SUBSCRIPTION_UPDATABLE + AUTH_UPDATABLE + STORE_UPDATABLE)
)


def request_type_key(types: list[str] | tuple[str, ...]) -> str:
    return "+".join(types)


def request_type_for(types: list[str] | tuple[str, ...]) -> RequestType | None:
    return REQUEST_TYPES.get(request_type_key(types))
