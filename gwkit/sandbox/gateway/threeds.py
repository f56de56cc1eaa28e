"""3-D Secure version 1 in the sandbox (interface 2.6, 2.7, 3.3, 4.3 to 4.5).

THREEDQUERY decides enrolment from the card (`data/test_cards.csv`, column `enrolled`; cards not
listed are `N` when their scheme supports 3-D Secure, and schemes without 3-D Secure get 60031).
THREEDQUERY's handler and the THREEDQUERY parent rule are threeds_v2's: it answers the EMV 3-D
Secure test cards itself and every other card through `threedquery_of_card` and
`card_from_threedquery` here.
An enrolled card opens a session, kept in `threeds_sessions`: the THREEDQUERY reference, the card
(by its encrypted row), amount, term URL, creation time on the virtual clock and its state
(`queried` -> `answered` by the ACS -> `used` by one AUTH). The merchant only ever holds `md`,
which the sandbox keeps as a SHA-256 hash.

The ACS (web/acs.py) answers with a PaRes signed here with an HMAC key kept in the store's `meta`
table, so a changed PaRes is refused. The AUTH that follows finds its card through the card source
`threeds` (md + pares) or, for `N` and `U`, through the THREEDQUERY parent rule.

Choices where the interface says "not shown" (documented in the README):
- `status` values besides Y and N: `A` (attempted, eci 06 Visa / 01 Mastercard, with cavv) and
  `U` (ACS unavailable, eci 07 / 00, no cavv); the bank decides both.
- md problems (unknown, expired after two hours, already used) are 30000 `["md"]`; a PaRes that is
  altered, from another session or not the latest issued is 30000 `["pares"]`. Nothing is kept.
- A Maestro e-commerce AUTH needs 3-D Secure with status Y: otherwise 60022 `Unauthenticated`
  (with md/pares: a kept record, settlestatus 3; without: refused, errordata ["md", "pares"]).

As the real service answers (captured answers, docs/sandbox.md): a THREEDQUERY record carries
`settlestatus` 0 and its day as `settleduedate`, echoes no `baseamount` nor `currencyiso3a` (they are
kept for the AUTH; `envelopes.answered_record` leaves them out), and one chained after an
ACCOUNTCHECK names it as `parenttransactionreference`. A security code sent with the THREEDQUERY is
checked then; the AUTH after authentication reports that check (the code itself is never kept).
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import secrets
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from ...interface.cards import Scheme, scheme_of
from ...interface.codes import message_of
from ...interface.errors import GwkitError
from ...interface.masking import mask_pan
from ...interface.testcards import test_card
from ...interface.wire import TIMESTAMP
from . import acquirer
from .context import Context
from .payments import (
    INHERITABLE,
    MERCHANT,
    Card,
    billing_details,
    card_from_fields,
    lent_card,
    load_card,
    settle_due_date,
)
from .refusal import invalid_field
from .sql import Sql
from .store import Connection, Row, Store, StoreError, details_of, record_of

THREEDVERSION = "1.0.2"
SESSION_LIFETIME = timedelta(hours=2)  # interface 4.4: wait no more than two hours
ACS_PATH = "/acs/v1"
KEY_NAME = "threeds:hmac_key"

QUERIED, ANSWERED, USED = "queried", "answered", "used"
# Where a THREEDQUERY's details keep the result of the security code check sent with it.
SECURITY_CHECK = "securitycodecheck"
UNAUTHENTICATED = {"errorcode": "60022", "errormessage": message_of(60022), "settlestatus": "3"}

# eci by PaRes status: (Visa and other schemes, Mastercard family).
_ECI = {"Y": ("05", "02"), "A": ("06", "01"), "U": ("07", "00")}
_MASTERCARD_FAMILY = frozenset({"MASTERCARD", "MASTERCARDDEBIT", "MAESTRO"})

# The ACS signing key: made once per database, from the database's own random source (PostgreSQL's
# core has no random bytes without pgcrypto: two random UUIDs, 244 random bits).
SCHEMA = Sql(
    sqlite=f"""
CREATE TABLE IF NOT EXISTS threeds_sessions (
    transactionreference TEXT PRIMARY KEY,  -- the THREEDQUERY
    md_hash TEXT UNIQUE,                    -- SHA-256 of md; NULL when the card is not enrolled
    sitereference TEXT NOT NULL,
    card_id INTEGER NOT NULL REFERENCES cards(id),
    enrolled TEXT NOT NULL,
    xid TEXT NOT NULL,
    baseamount TEXT NOT NULL,
    currencyiso3a TEXT NOT NULL,
    termurl TEXT NOT NULL,
    created TEXT NOT NULL,                  -- virtual time
    state TEXT NOT NULL,                    -- queried, answered (by the ACS), used (by an AUTH)
    status TEXT,                            -- the ACS outcome: Y, N, A or U
    pares_hash TEXT,                        -- SHA-256 of the latest PaRes issued
    answered TEXT,
    used TEXT
);
INSERT INTO meta (key, value) VALUES ('{KEY_NAME}', lower(hex(randomblob(32)))) ON CONFLICT (key) DO NOTHING;
""",
    postgresql=f"""
CREATE TABLE IF NOT EXISTS threeds_sessions (
    transactionreference TEXT COLLATE "C" PRIMARY KEY,
    md_hash TEXT COLLATE "C" UNIQUE,
    sitereference TEXT COLLATE "C" NOT NULL,
    card_id BIGINT NOT NULL REFERENCES cards(id) DEFERRABLE,
    enrolled TEXT COLLATE "C" NOT NULL,
    xid TEXT COLLATE "C" NOT NULL,
    baseamount TEXT COLLATE "C" NOT NULL,
    currencyiso3a TEXT COLLATE "C" NOT NULL,
    termurl TEXT COLLATE "C" NOT NULL,
    created TEXT COLLATE "C" NOT NULL,
    state TEXT COLLATE "C" NOT NULL,
    status TEXT COLLATE "C",
    pares_hash TEXT COLLATE "C",
    answered TEXT COLLATE "C",
    used TEXT COLLATE "C"
);
INSERT INTO meta (key, value) VALUES ('{KEY_NAME}', replace(gen_random_uuid()::text || gen_random_uuid()::text, '-', '')) ON CONFLICT (key) DO NOTHING;
""",
)


@dataclass(frozen=True)
class Session:
    transactionreference: str
    sitereference: str
    card_id: int
    enrolled: str
    xid: str
    baseamount: str
    currencyiso3a: str
    termurl: str
    created: datetime
    state: str
    status: str | None
    pares_hash: str | None

    def expired(self, now: datetime) -> bool:
        return now - self.created > SESSION_LIFETIME

    @classmethod
    def from_row(cls, row: Row) -> Session:
        return cls(
            row["transactionreference"],
            row["sitereference"],
            row["card_id"],
            row["enrolled"],
            row["xid"],
            row["baseamount"],
            row["currencyiso3a"],
            row["termurl"],
            datetime.strptime(row["created"], TIMESTAMP),
            row["state"],
            row["status"],
            row["pares_hash"],
        )


# -- signed tokens: PaReq and PaRes ------------------------------------------------------------


class BadToken(GwkitError, ValueError):
    """A PaReq or PaRes that is malformed or whose signature does not match."""


def digest(value: str) -> str:
    return hashlib.sha256(value.encode("utf-8")).hexdigest()


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).decode("ascii").rstrip("=")


def _unb64(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def _signature(key: str, purpose: str, payload: str) -> str:
    mac = hmac.new(bytes.fromhex(key), f"{purpose}:{payload}".encode("ascii"), hashlib.sha256)
    return _b64(mac.digest()[:18])


def sign(key: str, purpose: str, data: Mapping[str, str]) -> str:
    """`data` as `<base64url JSON>.<HMAC>`; `purpose` keeps a PaReq from passing as a PaRes."""
    payload = _b64(json.dumps(data, separators=(",", ":"), sort_keys=True).encode("utf-8"))
    return f"{payload}.{_signature(key, purpose, payload)}"


def verify(key: str, purpose: str, token: str) -> dict[str, str]:
    payload, dot, signature = (token or "").partition(".")
    if (
        not dot
        or not payload.isascii()
        or not hmac.compare_digest(
            signature.encode("ascii", "replace"), _signature(key, purpose, payload).encode("ascii")
        )
    ):
        raise BadToken(f"the {purpose} signature does not match: the value was changed")
    try:
        data = json.loads(_unb64(payload))
    except (ValueError, UnicodeDecodeError):  # pragma: no cover - a signed payload is always JSON
        raise BadToken(f"the {purpose} is not readable") from None
    if not isinstance(data, dict):  # pragma: no cover
        raise BadToken(f"the {purpose} is not readable")
    return data


def signing_key(store: Store, conn: Connection | None = None) -> str:
    key = store.meta_get(KEY_NAME, conn)
    if key is None:  # SCHEMA makes it with the store: a store without it was changed by hand
        raise StoreError(f"the store has no 3-D Secure signing key ({KEY_NAME!r} in table meta)")
    return key


def eci_for(status: str, paymenttype: str | None) -> str | None:
    pair = _ECI.get(status)
    if pair is None:
        return None
    return pair[1] if paymenttype in _MASTERCARD_FAMILY else pair[0]


def cavv_for(key: str, xid: str, status: str) -> str:
    """The issuer's authentication value: 20 bytes, base64 (28 characters), as real CAVVs look."""
    mac = hmac.new(bytes.fromhex(key), f"cavv:{xid}:{status}".encode("ascii"), hashlib.sha256)
    return base64.b64encode(mac.digest()[:20]).decode("ascii")


def issue_pares(key: str, session: Session, status: str, paymenttype: str | None) -> str:
    """The ACS's answer for `session`: status, eci, cavv (when authenticated or attempted), signed."""
    data = {
        "ref": session.transactionreference,
        "xid": session.xid,
        "status": status,
        "nonce": secrets.token_hex(4),
    }
    eci = eci_for(status, paymenttype)
    if eci:
        data["eci"] = eci
    if status in ("Y", "A"):
        data["cavv"] = cavv_for(key, session.xid, status)
    return sign(key, "pares", data)


# -- sessions ----------------------------------------------------------------------------------


def session_by_md(conn: Connection, md: str | None) -> Session | None:
    if not md:
        return None
    row = conn.execute("SELECT * FROM threeds_sessions WHERE md_hash = ?", (digest(md),)).fetchone()
    return Session.from_row(row) if row else None


def session_by_reference(conn: Connection, reference: str) -> Session | None:
    row = conn.execute(
        "SELECT * FROM threeds_sessions WHERE transactionreference = ?", (reference,)
    ).fetchone()
    return Session.from_row(row) if row else None


def mark_answered(conn: Connection, session: Session, status: str, pares: str, now: datetime) -> None:
    conn.execute(
        "UPDATE threeds_sessions SET state = ?, status = ?, pares_hash = ?, answered = ? "
        "WHERE transactionreference = ?",
        (ANSWERED, status, digest(pares), now.strftime(TIMESTAMP), session.transactionreference),
    )


def mark_used(ctx: Context, session: Session) -> None:
    ctx.conn.execute(
        "UPDATE threeds_sessions SET state = ?, used = ? WHERE transactionreference = ?",
        (USED, ctx.timestamp, session.transactionreference),
    )


# -- THREEDQUERY -------------------------------------------------------------------------------


def enrolment(pan: str) -> str:
    """Y, N or U for a card whose scheme supports 3-D Secure; test cards decide, others are N."""
    card = test_card(pan)
    return card.enrolled if card and card.enrolled in ("Y", "N", "U") else "N"


def query_card(ctx: Context, request: Mapping[str, Any]) -> Card:
    """The card a THREEDQUERY is for: its card fields, or a stored card or ACCOUNTCHECK as parent."""
    if request.get("parenttransactionreference"):
        row = ctx.find(request["parenttransactionreference"])
        if row["requesttypedescription"] not in ("STORE", "ACCOUNTCHECK"):
            raise invalid_field("parenttransactionreference")
        return lent_card(ctx, row, request)
    if scheme_of(request["pan"]) is None:
        raise invalid_field("pan")
    return card_from_fields(ctx, request)


def threedquery_of_card(
    ctx: Context, request: Mapping[str, Any], card: Card, scheme: Scheme
) -> list[dict[str, Any]]:
    """A version 1 THREEDQUERY for a checked card (threeds_v2.handle_threedquery chooses the version)."""
    enrolled = enrolment(card.pan)
    issuer = acquirer.issuer_fields(card.pan)
    reference = ctx.new_reference()
    xid = secrets.token_hex(14)
    record: dict[str, Any] = {
        "transactionstartedtimestamp": ctx.timestamp,
        "livestatus": "0",
        **issuer,
        "errorcode": "0",
        "errormessage": "Ok",
        "acquirerresponsecode": "0",  # captured on THREEDQUERY records, as dccenabled
        "dccenabled": "0",
        "settlestatus": "0",  # answered as the real service does; a THREEDQUERY never settles
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
        "sitereference": request["sitereference"],
        **({"orderreference": request["orderreference"]} if request.get("orderreference") else {}),
        **({"parenttransactionreference": card.parent} if card.parent else {}),
        "enrolled": enrolled,
        "xid": xid,
        "threedversion": THREEDVERSION,
    }
    md = None
    if enrolled == "Y":
        key = signing_key(ctx.store, ctx.conn)
        md = secrets.token_urlsafe(32)
        record["pareq"] = sign(
            key,
            "pareq",
            {
                "ref": reference,
                "xid": xid,
                "merchant": MERCHANT["merchantname"],
                "amount": request["baseamount"],
                "currency": request["currencyiso3a"],
                "pan": mask_pan(card.pan),
                "date": ctx.timestamp,
                "type": scheme.code,
                **({"issuer": issuer["issuer"]} if "issuer" in issuer else {}),
            },
        )
        record["acsurl"] = ctx.base_url.rstrip("/") + ACS_PATH
    card_id = card.card_id or ctx.store.add_card(ctx.conn, card.pan, card.expirydate, scheme.code)
    details = {**card.details, **billing_details(request)}
    checked = card.security_checked or (
        acquirer.security_response(card.pan, card.securitycode) if card.securitycode else None
    )
    if checked:  # the check's result, for the AUTH that follows (the code is never kept)
        details[SECURITY_CHECK] = checked
    ctx.store.add_transaction(ctx.conn, record, card_id=card_id, details=details)  # kept without md
    add_session(ctx, request, reference, card_id, enrolled, md=md, xid=xid)
    return [{**record, "md": md} if md else record]


def add_session(
    ctx: Context,
    request: Mapping[str, Any],
    reference: str,
    card_id: int,
    enrolled: str,
    *,
    md: str | None = None,
    xid: str | None = None,
) -> None:
    """A THREEDQUERY's session: what its AUTH inherits (amount, currency, term URL). An EMV 3-D Secure
    one has no md, and its xid, never answered, only seeds the CAVV."""
    ctx.conn.execute(
        "INSERT INTO threeds_sessions (transactionreference, md_hash, sitereference, card_id, enrolled, xid, "
        "baseamount, currencyiso3a, termurl, created, state) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        (
            reference,
            digest(md) if md else None,
            request["sitereference"],
            card_id,
            enrolled,
            xid or secrets.token_hex(14),
            request["baseamount"],
            request["currencyiso3a"],
            request["termurl"],
            ctx.timestamp,
            QUERIED,
        ),
    )


# -- the AUTH after 3-D Secure -----------------------------------------------------------------


def _inherited(row: Row) -> dict[str, str]:
    kept = record_of(row)
    return {name: kept[name] for name in INHERITABLE if kept.get(name)}


def check_inherited(request: Mapping[str, Any], session: Session, *, amount_fixed: bool) -> None:
    """An AUTH may not turn a 3-D Secure (customer present, e-commerce) session into anything else."""
    if request.get("accounttypedescription") not in (None, "", "ECOM"):
        raise invalid_field("accounttypedescription")
    if request.get("currencyiso3a") not in (None, "", session.currencyiso3a):
        raise invalid_field("currencyiso3a")
    if amount_fixed and request.get("baseamount") not in (None, "", session.baseamount):
        raise invalid_field("baseamount")  # the cardholder authenticated this amount
    if request.get("sitereference") not in (None, "", session.sitereference):
        raise invalid_field("sitereference")


def card_of_session(ctx: Context, session: Session, request: Mapping[str, Any]) -> Card:
    row = ctx.find(session.transactionreference)
    details = details_of(row)
    return load_card(
        ctx,
        session.card_id,
        request.get("securitycode"),
        security_checked=details.pop(SECURITY_CHECK, None),
        details=details,
        inherited=_inherited(row),
        parent=session.transactionreference,
        extra={"sitereference": session.sitereference, "enrolled": session.enrolled, "xid": session.xid},
    )


def card_from_threeds(ctx: Context, request: Mapping[str, Any]) -> Card:
    """Enrolled: `md` finds the session, `pares` must be the ACS's latest answer, unchanged."""
    session = session_by_md(ctx.conn, request.get("md"))
    if session is None or session.sitereference not in ctx.sites or session.enrolled != "Y":
        raise invalid_field("md")
    if session.state == USED or session.expired(ctx.now):
        raise invalid_field("md")
    pares = request.get("pares") or ""
    try:
        answer = verify(signing_key(ctx.store, ctx.conn), "pares", pares)
    except BadToken:
        raise invalid_field("pares") from None
    if (
        answer.get("ref") != session.transactionreference
        or session.pares_hash is None
        or not hmac.compare_digest(digest(pares), session.pares_hash)
    ):
        raise invalid_field("pares")
    check_inherited(request, session, amount_fixed=True)
    card = card_of_session(ctx, session, request)
    status = answer["status"]
    card.extra.update(
        {
            "status": status,
            "threedversion": THREEDVERSION,
            **{k: answer[k] for k in ("eci", "cavv") if answer.get(k)},
        }
    )
    card.threeds_authenticated = status in ("Y", "A")
    if status == "N" or (card.paymenttype == "MAESTRO" and status != "Y"):
        card.outcome = dict(UNAUTHENTICATED)  # the bank is not contacted
    mark_used(ctx, session)
    return card


def card_from_threedquery(ctx: Context, row: Row, request: Mapping[str, Any]) -> Card:
    """Not enrolled or unknown: the AUTH names the THREEDQUERY, once. Enrolled cards need md/pares."""
    session = session_by_reference(ctx.conn, row["transactionreference"])
    if session is None or session.enrolled == "Y" or session.state == USED:
        raise invalid_field("parenttransactionreference")
    check_inherited(request, session, amount_fixed=False)
    card = card_of_session(ctx, session, request)
    mark_used(ctx, session)
    return card


# THREEDQUERY's handler and parent rule are threeds_v2's, which answers version 1 through this module.
CARD_SOURCES = {"threeds": card_from_threeds}
