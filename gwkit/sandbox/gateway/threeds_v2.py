"""EMV 3-D Secure (3-D Secure version 2) in the sandbox, beside version 1 (threeds.py).

The flow (real-gateway-facts.md, "3-D Secure v2"; docs/threeds.md, "v2 in the sandbox"):
1. THREEDLOOKUP with the card: a transaction ID (`threedstransactionid`), the card's version,
   the 3DS method page when the issuer has one, and a `cachetoken` the THREEDQUERY may carry.
2. The 3DS method (web/acs_v2.py): the browser loads the issuer's page in a hidden frame; it
   tells the gateway's notification page, which records "method completed" here.
3. THREEDQUERY with the browser's data: per the card's case (`data/test_cards.csv`, column
   `threedscase`) frictionless (the issuer decides at once: the request object goes on, its AUTH
   gets the outcome) or a challenge (`acsurl` and `threedpayload`; the object stops there).
4. The challenge at the sandbox's ACS (web/acs_v2.py), whose outcome is kept here.
5. The AUTH with `threedresponse`, the browser library's unsigned JWT: its outcome is the session's,
   never the JWT's; a JWT that says otherwise is refused.

A card the table does not know, or a v1 card, keeps version 1's answers. Sessions live in
`threeds_v2_sessions`, one per transaction ID, for two hours of the site's clock; a THREEDQUERY also
keeps version 1's session row (amount, currency, term URL), which its AUTH inherits through.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import json
import secrets
import uuid
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from ...interface.cards import Scheme, scheme_of
from ...interface.codes import message_of
from ...interface.masking import mask_pan
from ...interface.testcards import TestCard, test_card
from ...interface.wire import TIMESTAMP
from . import acquirer, threeds
from .context import Context
from .payments import MERCHANT, Card, billing_details, card_from_fields, expired, load_card, settle_due_date
from .refusal import Refusal, invalid_field
from .sql import Sql
from .store import Connection, Row

METHOD_PATH = "/acs/v2/method"  # the issuer's 3DS method page (threedmethodurl)
NOTIFY_PATH = "/acs/v2/method/notify"  # the gateway's page the method page tells (threednotificationurl)
ACS_PATH = "/acs/v2"  # the issuer's challenge page (acsurl)

# The cases of data/test_cards.csv (column threedscase).
METHOD_CASES = frozenset({"frictionless-method-url", "challenge-method-url", "method-not-completed"})
CHALLENGE_CASES = frozenset(
    {"challenge-success", "challenge-failed", "challenge-error", "challenge-method-url"}
)
SILENT_METHOD = "method-not-completed"  # the method page never tells the gateway
FAILED_CHALLENGE = "challenge-failed"  # the ACS answers N whatever the cardholder does
ERROR_CHALLENGE = "challenge-error"  # the ACS answers an error message, not a CRes
DIRECTORY_DOWN = frozenset({"ds-unavailable", "improper-ares"})
# The issuer's frictionless answer (transStatus of the ARes) per case.
FRICTIONLESS_STATUS = {
    "frictionless-success": "Y",
    "frictionless-method-url": "Y",
    "method-not-completed": "Y",
    "frictionless-failed": "N",
    "attempted": "A",
    "unavailable": "U",
    "rejected": "R",
    "ds-unavailable": "U",
    "improper-ares": "U",
    "not-enrolled": "N",
}
ERRO = "E"  # the session's outcome when the ACS answered an error message
AUTHENTICATED = frozenset({"Y", "A"})  # the liability shift: the issuer answers for a chargeback
UNAUTHENTICATED_STATUSES = frozenset({"N", "R", ERRO})  # the AUTH is refused 60022, the bank not asked

# Session states: looked up (THREEDLOOKUP) -> frictionless or challenge (THREEDQUERY) -> answered (by
# the ACS, challenge only) -> used (by one AUTH).
LOOKED_UP, FRICTIONLESS, CHALLENGE, ANSWERED, USED = (
    "lookedup",
    "frictionless",
    "challenge",
    "answered",
    "used",
)
METHOD_NONE, METHOD_WAITING, METHOD_COMPLETED = "none", "waiting", "completed"

SCHEMA = Sql(
    sqlite="""
CREATE TABLE IF NOT EXISTS threeds_v2_sessions (
    threedstransactionid TEXT PRIMARY KEY,  -- the 3DS server's transaction ID (threeDSServerTransID)
    sitereference TEXT NOT NULL,
    card_id INTEGER NOT NULL REFERENCES cards(id),
    threedversion TEXT,                     -- 2.1.0 or 2.2.0; NULL for a card version 1 answers
    threedscase TEXT,                       -- the test card's case (data/test_cards.csv)
    securitycheck TEXT,                     -- the look-up's security code check (the code is never kept)
    cachetoken_hash TEXT UNIQUE,            -- SHA-256 of the look-up's cachetoken
    method TEXT NOT NULL,                   -- none, waiting, completed
    created TEXT NOT NULL,                  -- virtual time
    transactionreference TEXT UNIQUE,       -- the THREEDQUERY, once made
    acstransid TEXT,                        -- the ACS's transaction ID (challenge only)
    state TEXT NOT NULL,                    -- lookedup, frictionless, challenge, answered, used
    transstatus TEXT,                       -- Y, N, A, U, R; E: the ACS answered an error message
    cres_hash TEXT,                         -- SHA-256 of the latest CRes the ACS issued
    answered TEXT,
    used TEXT
);
""",
    postgresql="""
CREATE TABLE IF NOT EXISTS threeds_v2_sessions (
    threedstransactionid TEXT COLLATE "C" PRIMARY KEY,
    sitereference TEXT COLLATE "C" NOT NULL,
    card_id BIGINT NOT NULL REFERENCES cards(id) DEFERRABLE,
    threedversion TEXT COLLATE "C",
    threedscase TEXT COLLATE "C",
    securitycheck TEXT COLLATE "C",
    cachetoken_hash TEXT COLLATE "C" UNIQUE,
    method TEXT COLLATE "C" NOT NULL,
    created TEXT COLLATE "C" NOT NULL,
    transactionreference TEXT COLLATE "C" UNIQUE,
    acstransid TEXT COLLATE "C",
    state TEXT COLLATE "C" NOT NULL,
    transstatus TEXT COLLATE "C",
    cres_hash TEXT COLLATE "C",
    answered TEXT COLLATE "C",
    used TEXT COLLATE "C"
);
""",
)


@dataclass(frozen=True)
class V2Session:
    threedstransactionid: str
    sitereference: str
    card_id: int
    threedversion: str | None
    threedscase: str | None
    securitycheck: str | None
    method: str
    created: datetime
    transactionreference: str | None
    acstransid: str | None
    state: str
    transstatus: str | None
    cres_hash: str | None

    def expired(self, now: datetime) -> bool:
        return now - self.created > threeds.SESSION_LIFETIME

    @classmethod
    def from_row(cls, row: Row) -> V2Session:
        return cls(
            row["threedstransactionid"],
            row["sitereference"],
            row["card_id"],
            row["threedversion"],
            row["threedscase"],
            row["securitycheck"],
            row["method"],
            datetime.strptime(row["created"], TIMESTAMP),
            row["transactionreference"],
            row["acstransid"],
            row["state"],
            row["transstatus"],
            row["cres_hash"],
        )


def _session_where(conn: Connection, column: str, value: str | None) -> V2Session | None:
    if not value:
        return None
    row = conn.execute(f"SELECT * FROM threeds_v2_sessions WHERE {column} = ?", (value,)).fetchone()
    return V2Session.from_row(row) if row else None


def session_by_id(conn: Connection, threedstransactionid: str | None) -> V2Session | None:
    return _session_where(conn, "threedstransactionid", threedstransactionid)


def session_by_reference(conn: Connection, reference: str | None) -> V2Session | None:
    return _session_where(conn, "transactionreference", reference)


# -- base64url JSON (CReq, CRes, method data) ---------------------------------------------------


def encode_json(data: Mapping[str, Any]) -> str:
    """base64url of compact JSON, unpadded. ASCII JSON without `>`, `?` or `~` encodes without `-`
    and `_`, so the text is plain base64 too: the makers' browser library decodes it with `atob`."""
    text = json.dumps(data, separators=(",", ":"), ensure_ascii=True)
    return base64.urlsafe_b64encode(text.encode("ascii")).decode("ascii").rstrip("=")


def decode_json(text: str | None) -> dict[str, Any] | None:
    """A base64 or base64url JSON object (padding optional), or None when it is not one."""
    if not isinstance(text, str) or not text or not text.isascii():
        return None
    cleaned = text.strip().replace("-", "+").replace("_", "/")
    try:
        data = json.loads(base64.b64decode(cleaned + "=" * (-len(cleaned) % 4), validate=True))
    except (binascii.Error, ValueError, UnicodeDecodeError):
        return None
    return data if isinstance(data, dict) else None


def creq_of(session: V2Session) -> str:
    """The challenge request (CReq) the browser posts to the ACS: the THREEDQUERY's `threedpayload`."""
    return encode_json(
        {
            "messageType": "CReq",
            "messageVersion": session.threedversion or "2.1.0",
            "threeDSServerTransID": session.threedstransactionid,
            "acsTransID": session.acstransid or "",
            "challengeWindowSize": "02",
        }
    )


def cres_of(session: V2Session, status: str, *, cancelled: bool = False) -> dict[str, str]:
    """The ACS's final challenge response (a final CRes carries Y or N only)."""
    cres = {
        "messageType": "CRes",
        "messageVersion": session.threedversion or "2.1.0",
        "threeDSServerTransID": session.threedstransactionid,
        "acsTransID": session.acstransid or "",
        "transStatus": status,
        "challengeCompletionInd": "Y",
    }
    if cancelled:
        cres["challengeCancel"] = "01"  # the cardholder cancelled
    return cres


def erro_of(session: V2Session) -> dict[str, str]:
    """The ACS's error message in place of a CRes (the "challenge error" cards)."""
    return {
        "messageType": "Erro",
        "messageVersion": session.threedversion or "2.1.0",
        "threeDSServerTransID": session.threedstransactionid,
        "acsTransID": session.acstransid or "",
        "errorComponent": "A",
        "errorCode": "402",
        "errorDescription": "Transaction timed out at the ACS",
        "errorDetail": "The gwkit sandbox's test card for an error during the challenge",
        "errorMessageType": "CReq",
    }


def one_time_code(store: Any, conn: Connection, session: V2Session) -> str:
    """The six digits the cardholder must enter (a real issuer would text them)."""
    key = threeds.signing_key(store, conn)
    mac = hmac.new(bytes.fromhex(key), f"otp:{session.acstransid}".encode("ascii"), hashlib.sha256)
    return f"{int.from_bytes(mac.digest()[:4], 'big') % 1_000_000:06d}"


def card_shown(conn: Connection, session: V2Session) -> tuple[str, str | None]:
    """(maskedpan, paymenttypedescription) of the session's card: what the ACS page shows."""
    row = conn.execute(
        "SELECT maskedpan, paymenttypedescription FROM cards WHERE id = ?", (session.card_id,)
    ).fetchone()
    return row["maskedpan"], row["paymenttypedescription"]


def mark_method_completed(conn: Connection, session: V2Session) -> None:
    conn.execute(
        "UPDATE threeds_v2_sessions SET method = ? WHERE threedstransactionid = ?",
        (METHOD_COMPLETED, session.threedstransactionid),
    )


def mark_answered(conn: Connection, session: V2Session, status: str, cres: str, now: datetime) -> None:
    """The ACS's outcome of the challenge (the latest counts until an AUTH uses it)."""
    conn.execute(
        "UPDATE threeds_v2_sessions SET state = ?, transstatus = ?, cres_hash = ?, answered = ? "
        "WHERE threedstransactionid = ?",
        (ANSWERED, status, threeds.digest(cres), now.strftime(TIMESTAMP), session.threedstransactionid),
    )


def _mark_used(ctx: Context, session: V2Session) -> None:
    ctx.conn.execute(
        "UPDATE threeds_v2_sessions SET state = ?, used = ? WHERE threedstransactionid = ?",
        (USED, ctx.timestamp, session.threedstransactionid),
    )


def emv_card(pan: str) -> TestCard | None:
    """The card's row of the test cards when it is an EMV 3-D Secure test card, else None (version 1)."""
    card = test_card(pan)
    return card if card is not None and card.emv3ds else None


# -- THREEDLOOKUP ------------------------------------------------------------------------------


def _card_scheme(ctx: Context, card: Card, field_name: str) -> Scheme:
    scheme = scheme_of(card.pan)
    if scheme is None:
        raise invalid_field("pan")
    if not scheme.threeds_supported:
        raise Refusal(60031, [field_name])
    if expired(card.expirydate, ctx.now.date()):
        raise invalid_field("expirydate")
    return scheme


def handle_threedlookup(ctx: Context, request: dict[str, Any]) -> list[dict[str, Any]]:
    card = card_from_fields(ctx, request)
    scheme = _card_scheme(ctx, card, "pan")
    row = emv_card(card.pan)
    transaction_id = str(uuid.uuid4())
    token = secrets.token_urlsafe(24)
    base = ctx.base_url.rstrip("/")
    cachetoken = base64.b64encode(
        json.dumps({"datacenterurl": base, "cachetoken": token}).encode("ascii")
    ).decode("ascii")
    method = METHOD_WAITING if row and row.threedscase in METHOD_CASES else METHOD_NONE
    card_id = ctx.store.add_card(ctx.conn, card.pan, card.expirydate, scheme.code)
    ctx.conn.execute(
        "INSERT INTO threeds_v2_sessions (threedstransactionid, sitereference, card_id, threedversion, "
        "threedscase, securitycheck, cachetoken_hash, method, created, state) "
        "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        (
            transaction_id,
            request["sitereference"],
            card_id,
            row.threedversion if row else None,
            row.threedscase if row else None,
            acquirer.security_response(card.pan, card.securitycode) if card.securitycode else None,
            threeds.digest(token),
            method,
            ctx.timestamp,
            LOOKED_UP,
        ),
    )
    return [
        {
            "transactionstartedtimestamp": ctx.timestamp,
            "requesttypedescription": "THREEDLOOKUP",
            "errorcode": "0",
            "errormessage": "Ok",
            "threedstransactionid": transaction_id,
            **({"threedversion": row.threedversion} if row else {}),
            **(
                {"threedmethodurl": base + METHOD_PATH, "threednotificationurl": base + NOTIFY_PATH}
                if method == METHOD_WAITING
                else {}
            ),
            "paymenttypedescription": scheme.code,
            "maskedpan": mask_pan(card.pan),
            "cachetoken": cachetoken,
        }
    ]


def _lookup_of_token(ctx: Context, cachetoken: str) -> V2Session:
    """The look-up a THREEDQUERY's cachetoken names: unknown, another site's, used or too old: 30000."""
    wrapped = decode_json(cachetoken)
    token = wrapped.get("cachetoken") if wrapped else None
    session = (
        _session_where(ctx.conn, "cachetoken_hash", threeds.digest(token)) if isinstance(token, str) else None
    )
    if (
        session is None
        or session.sitereference not in ctx.sites
        or session.state != LOOKED_UP
        or session.expired(ctx.now)
    ):
        raise invalid_field("cachetoken")
    return session


# -- THREEDQUERY -------------------------------------------------------------------------------


def handle_threedquery(ctx: Context, request: dict[str, Any]) -> list[dict[str, Any]]:
    """Version 2 for the EMV 3-D Secure test cards, version 1 (threeds.py) for every other card."""
    lookup = _lookup_of_token(ctx, request["cachetoken"]) if request.get("cachetoken") else None
    if lookup is not None:
        card = load_card(
            ctx, lookup.card_id, security_checked=lookup.securitycheck, details=billing_details(request)
        )
    else:
        card = threeds.query_card(ctx, request)
    scheme = _card_scheme(ctx, card, "parenttransactionreference" if card.parent else "pan")
    row = emv_card(card.pan)
    if row is None:
        records = threeds.threedquery_of_card(ctx, request, card, scheme)
        if lookup is not None:  # the look-up is spent on version 1's THREEDQUERY
            ctx.conn.execute(
                "UPDATE threeds_v2_sessions SET state = ?, transactionreference = ? WHERE threedstransactionid = ?",
                (USED, records[0]["transactionreference"], lookup.threedstransactionid),
            )
        return records
    return _emv_threedquery(ctx, request, card, scheme, row, lookup)


def _bank_system_error(request: Mapping[str, Any], case: str) -> bool:
    """The directory server down with ACCOUNTCHECK THREEDQUERY (no AUTH): 60010 (V3 feature files)."""
    return case in DIRECTORY_DOWN and request.get("requesttypedescriptions") == [
        "ACCOUNTCHECK",
        "THREEDQUERY",
    ]


def _emv_threedquery(
    ctx: Context,
    request: Mapping[str, Any],
    card: Card,
    scheme: Scheme,
    row: TestCard,
    lookup: V2Session | None,
) -> list[dict[str, Any]]:
    case = row.threedscase
    challenge = case in CHALLENGE_CASES
    issuer, country = acquirer.issuer_of(card.pan)
    reference = ctx.new_reference()
    failed = _bank_system_error(request, case)
    record: dict[str, Any] = {
        "transactionstartedtimestamp": ctx.timestamp,
        "livestatus": "0",
        "issuer": issuer,
        "errorcode": "60010" if failed else "0",
        "errormessage": message_of(60010) if failed else "Ok",
        "acquirerresponsecode": "0",
        "dccenabled": "0",
        "settlestatus": "0",
        "settleduedate": settle_due_date(ctx.now),
        **MERCHANT,
        "baseamount": request["baseamount"],  # kept for the AUTH to inherit, not answered
        "transactionreference": reference,
        "paymenttypedescription": scheme.code,
        "accounttypedescription": "ECOM",
        "requesttypedescription": "THREEDQUERY",
        "currencyiso3a": request["currencyiso3a"],
        "operatorname": ctx.account.username,
        "maskedpan": mask_pan(card.pan),
        "issuercountryiso2a": country,
        "sitereference": request["sitereference"],
        **({"orderreference": request["orderreference"]} if request.get("orderreference") else {}),
        **({"parenttransactionreference": card.parent} if card.parent else {}),
        "enrolled": row.enrolled,
        "threedversion": row.threedversion,
    }
    if challenge and not failed:
        record["acsurl"] = ctx.base_url.rstrip("/") + ACS_PATH
    card_id = card.card_id or ctx.store.add_card(ctx.conn, card.pan, card.expirydate, scheme.code)
    details = {**card.details, **billing_details(request)}
    checked = card.security_checked or (
        acquirer.security_response(card.pan, card.securitycode) if card.securitycode else None
    )
    if checked:
        details[threeds.SECURITY_CHECK] = checked
    ctx.store.add_transaction(ctx.conn, record, card_id=card_id, details=details)  # kept without its payload
    threeds.add_session(ctx, request, reference, card_id, row.enrolled)
    session = _queried_session(ctx, request, card_id, row, lookup, reference, challenge and not failed)
    if challenge and not failed:
        return [{**record, "threedpayload": creq_of(session)}]
    return [record]


def _queried_session(
    ctx: Context,
    request: Mapping[str, Any],
    card_id: int,
    row: TestCard,
    lookup: V2Session | None,
    reference: str,
    challenge: bool,
) -> V2Session:
    state = CHALLENGE if challenge else FRICTIONLESS
    acstransid = str(uuid.uuid4()) if challenge else None
    transstatus = None if challenge else FRICTIONLESS_STATUS.get(row.threedscase, "U")
    if lookup is None:  # a THREEDQUERY with the card: a transaction of its own, no method
        transaction_id = str(uuid.uuid4())
        ctx.conn.execute(
            "INSERT INTO threeds_v2_sessions (threedstransactionid, sitereference, card_id, threedversion, "
            "threedscase, method, created, transactionreference, acstransid, state, transstatus) "
            "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (
                transaction_id,
                request["sitereference"],
                card_id,
                row.threedversion,
                row.threedscase,
                METHOD_NONE,
                ctx.timestamp,
                reference,
                acstransid,
                state,
                transstatus,
            ),
        )
    else:
        transaction_id = lookup.threedstransactionid
        ctx.conn.execute(
            "UPDATE threeds_v2_sessions SET transactionreference = ?, acstransid = ?, state = ?, transstatus = ? "
            "WHERE threedstransactionid = ?",
            (reference, acstransid, state, transstatus, transaction_id),
        )
    session = session_by_id(ctx.conn, transaction_id)
    assert session is not None  # just written
    return session


# -- the AUTH after EMV 3-D Secure -------------------------------------------------------------


def _authenticated_card(ctx: Context, session: V2Session, request: Mapping[str, Any], status: str) -> Card:
    """The THREEDQUERY's card with the authentication's outcome for the AUTH; the sessions used up."""
    v1 = threeds.session_by_reference(ctx.conn, session.transactionreference or "")
    if v1 is None or v1.state == threeds.USED or session.expired(ctx.now):
        raise invalid_field("parenttransactionreference")
    threeds.check_inherited(request, v1, amount_fixed=True)  # the issuer decided on this amount
    card = threeds.card_of_session(ctx, v1, request)
    card.extra.pop("xid", None)  # EMV 3-D Secure has no XID
    eci = threeds.eci_for(status, card.paymenttype) if status in ("Y", "A", "U") else None
    card.extra.update(
        {
            **({"status": status} if status != ERRO else {}),  # an error message: no outcome to name
            "threedversion": session.threedversion or "2.1.0",
            **({"eci": eci} if eci else {}),
            **(
                {"cavv": threeds.cavv_for(threeds.signing_key(ctx.store, ctx.conn), v1.xid, status)}
                if status in AUTHENTICATED
                else {}
            ),
            "authmethod": "FINAL",
        }
    )
    card.threeds_authenticated = status in AUTHENTICATED
    if status in UNAUTHENTICATED_STATUSES:
        card.outcome = dict(threeds.UNAUTHENTICATED)  # the bank is not contacted
    threeds.mark_used(ctx, v1)
    _mark_used(ctx, session)
    return card


def card_from_threedquery(ctx: Context, row: Row, request: Mapping[str, Any]) -> Card:
    """An AUTH naming a THREEDQUERY as its parent (in its request object, or later): a frictionless
    EMV 3-D Secure one lends its card and outcome; version 1's rule answers for the others."""
    session = session_by_reference(ctx.conn, row["transactionreference"])
    if session is None:
        return threeds.card_from_threedquery(ctx, row, request)
    if row["errorcode"] != "0":
        raise invalid_field("parenttransactionreference")
    if session.state in (CHALLENGE, ANSWERED):  # the challenge's outcome comes with threedresponse
        raise invalid_field("threedresponse")
    if session.state != FRICTIONLESS:
        raise invalid_field("parenttransactionreference")
    return _authenticated_card(ctx, session, request, session.transstatus or "U")


def decode_threedresponse(text: Any) -> dict[str, Any] | None:
    """The JWT's payload: `header.payload.` with an `alg` none header (the browser library builds it
    unsigned), or None when it is not one."""
    if not isinstance(text, str):
        return None
    parts = text.split(".")
    if len(parts) != 3:
        return None
    header, payload = decode_json(parts[0]), decode_json(parts[1])
    if header is None or payload is None or str(header.get("alg", "")).lower() != "none":
        return None
    return payload


# What the library's ActionCode says of the outcome (V3 AbstractThreeDResponseConverter).
_ACTION_STATUSES = {"SUCCESS": AUTHENTICATED, "COMPLETED": AUTHENTICATED, "FAILURE": {"N"}, "ERROR": {ERRO}}


def _object(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, dict) else {}


def contradicts(claims: Mapping[str, Any], session: V2Session) -> bool:
    """Does the JWT say anything the sandbox's own ACS session does not?"""
    status = session.transstatus or ""
    action = claims.get("ActionCode")
    if isinstance(action, str) and action in _ACTION_STATUSES and status not in _ACTION_STATUSES[action]:
        return True
    validated = claims.get("Validated")
    if isinstance(validated, bool) and validated != (status in AUTHENTICATED):
        return True
    pares_status = _object(_object(claims.get("Payment")).get("ExtendedData")).get("PAResStatus")
    if pares_status not in (None, "") and pares_status != status:
        return True
    if claims.get("CRes") not in (None, ""):
        cres = decode_json(claims.get("CRes"))
        if (
            cres is None
            or cres.get("threeDSServerTransID") != session.threedstransactionid
            or cres.get("acsTransID") != session.acstransid
            or (cres.get("messageType") == "CRes" and cres.get("transStatus") != status)
            or (cres.get("messageType") == "Erro") != (status == ERRO)
        ):
            return True
    return False


def card_from_threedresponse(ctx: Context, request: Mapping[str, Any]) -> Card:
    """The AUTH after a challenge: `parenttransactionreference` the THREEDQUERY, `threedresponse`
    the library's JWT. The outcome is the session's; a JWT that contradicts it is refused."""
    parent = ctx.find(request.get("parenttransactionreference"))
    if parent["requesttypedescription"] != "THREEDQUERY":
        raise invalid_field("parenttransactionreference")
    payload = decode_threedresponse(request.get("threedresponse"))
    claims = payload.get("Payload") if payload else None
    if not isinstance(claims, dict):
        raise invalid_field("threedresponse")
    if claims.get("PaRes") or claims.get("MD"):  # the library's version 1 path: MD and PaRes inside
        v1_request = {**request, "md": claims.get("MD"), "pares": claims.get("PaRes")}
        v1 = threeds.session_by_md(ctx.conn, claims.get("MD") if isinstance(claims.get("MD"), str) else None)
        if v1 is None or v1.transactionreference != parent["transactionreference"]:
            raise invalid_field("threedresponse")
        return threeds.card_from_threeds(ctx, v1_request)
    session = session_by_reference(ctx.conn, parent["transactionreference"])
    if session is None or session.sitereference not in ctx.sites:
        raise invalid_field("threedresponse")  # a version 1 THREEDQUERY: its PaRes is needed
    if session.state == USED:
        raise invalid_field("parenttransactionreference")
    if session.state != ANSWERED or contradicts(claims, session):
        raise invalid_field("threedresponse")
    return _authenticated_card(ctx, session, request, session.transstatus or ERRO)


REQUEST_HANDLERS = {"THREEDLOOKUP": handle_threedlookup, "THREEDQUERY": handle_threedquery}
CARD_SOURCES = {"threedresponse": card_from_threedresponse}
PARENT_RULES = {"THREEDQUERY": card_from_threedquery}
