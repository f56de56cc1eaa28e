"""Browser tokenisation (interface 4.6, 4.9, 5.5, 5.6): CACHETOKENISE, cache tokens, CORS, st.js.

A cache token stands for card details for 15 minutes of the sandbox clock, for one AUTH:

- The token is a Fernet ciphertext made with the sandbox's vault key. It carries the security
  code, sealed, so the sandbox never keeps a security code anywhere; the database keeps only the
  token's SHA-256 (never the token), the site, the times and the id of the card row (whose PAN
  the vault encrypts, as for every card the sandbox holds).
- Tokens begin with `gAAAA` (Fernet's version byte), so base64-decoding one never yields JSON:
  the official Python client, which unwraps base64 JSON `{"cachetoken": X}`, sends ours as given.
- A token is refused (30000 Invalid field, errordata ["cachetoken"]) when it is unknown, for
  another site, already used by an AUTH, or 15 minutes old: the same answer for all four, so an
  answer never tells whether a token exists. A refused AUTH (a Fault) does not use the token up;
  an answered one, authorised or declined, does.
- Expired tokens that were never used lose their card row (at each CACHETOKENISE and daily).

Cross-origin calls to `/json/` get CORS headers echoing the origin, except from `https://localhost`
(5.5), which is answered 403 with a JSON body and no CORS headers, for preflights and POSTs alike.
"""

from __future__ import annotations

import hashlib
import json
import re
from datetime import datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Mapping

from cryptography.fernet import InvalidToken

from ..interface import cards
from ..interface.cards import scheme_of
from ..interface.fields import FIELDS
from ..interface.masking import mask_pan
from .clock import TIMESTAMP
from .gateway import Context
from .payments import Card, load_card
from .registry import card_source, daily_job, invalid_field, request_handler, route
from .store import register_schema

if TYPE_CHECKING:  # pragma: no cover
    from .core import Sandbox, SandboxRequest, SandboxResponse

TOKEN_LIFETIME = timedelta(minutes=15)
REJECTED_ORIGINS = frozenset({"https://localhost", "https://localhost:443"})
STJS_PATH = Path(__file__).parent / "static" / "st.js"

register_schema("cachetokens", """
CREATE TABLE IF NOT EXISTS cachetokens (
    token_hash TEXT PRIMARY KEY,             -- SHA-256 of the token; the token itself is never kept
    sitereference TEXT NOT NULL,
    card_id INTEGER REFERENCES cards(id),    -- NULL once an unused token has expired
    maskedpan TEXT NOT NULL,
    paymenttypedescription TEXT,
    created TEXT NOT NULL,
    expires TEXT NOT NULL,
    used TEXT                                -- when an AUTH used it
);
-- Only the rows purge_expired still has to look at: each CACHETOKENISE purges, and would
-- otherwise walk every token that ever expired.
DROP INDEX IF EXISTS cachetokens_expires;
CREATE INDEX IF NOT EXISTS cachetokens_unpurged ON cachetokens (expires)
    WHERE used IS NULL AND card_id IS NOT NULL;
""")


def token_hash(token: str) -> str:
    return hashlib.sha256(token.encode("utf-8")).hexdigest()


# CACHETOKENISE ---------------------------------------------------------------------------------

@request_handler("CACHETOKENISE")
def handle_cachetokenise(ctx: Context, request: dict[str, Any]) -> list[dict[str, Any]]:
    """Card fields in, a token out; no card data is answered (as the real service: the token only)."""
    purge_expired(ctx.conn, ctx.now)
    pan = request["pan"]
    scheme = scheme_of(pan)
    if scheme is None:
        raise invalid_field("pan")
    expirydate = checked_expiry(request["expirymonth"], request["expiryyear"], ctx.now)
    if request.get("paymenttypedescription") not in (None, "", scheme.code):
        raise invalid_field("paymenttypedescription")
    token = ctx.store.vault.encrypt(json.dumps({"securitycode": request.get("securitycode") or None}))
    token = token.decode("ascii")
    card_id = ctx.store.add_card(ctx.conn, pan, expirydate, scheme.code)
    ctx.conn.execute(
        "INSERT INTO cachetokens (token_hash, sitereference, card_id, maskedpan, paymenttypedescription, "
        "created, expires) VALUES (?, ?, ?, ?, ?, ?, ?)",
        (token_hash(token), request["sitereference"], card_id, mask_pan(pan), scheme.code, ctx.timestamp,
         (ctx.now + TOKEN_LIFETIME).strftime(TIMESTAMP)))
    return [{"requesttypedescription": "CACHETOKENISE", "cachetoken": token,
             "errorcode": "0", "errormessage": "Ok"}]


def checked_expiry(month: str, year: str, now: datetime) -> str:
    """`MM/YYYY` for a card that has not expired by the sandbox clock, or a 30000 naming the field."""
    if not 1 <= int(month) <= 12:
        raise invalid_field("expirymonth")
    if int(year) < now.year:
        raise invalid_field("expiryyear")
    if (int(year), int(month)) < (now.year, now.month):
        raise invalid_field("expirymonth")
    return f"{month}/{year}"


# AUTH with a cachetoken ------------------------------------------------------------------------

@card_source("cachetoken")
def card_from_token(ctx: Context, request: Mapping[str, Any]) -> Card:
    """The card a live token of the request's site stands for; the token is used up by the AUTH."""
    token = request["cachetoken"]
    row = ctx.conn.execute(
        "SELECT * FROM cachetokens WHERE token_hash = ? AND sitereference = ? AND used IS NULL "
        "AND card_id IS NOT NULL AND expires > ?",
        (token_hash(token), request.get("sitereference"), ctx.timestamp)).fetchone()
    securitycode = _sealed_securitycode(ctx, token) if row is not None else None
    if row is None or securitycode is False:
        raise invalid_field("cachetoken")
    ctx.conn.execute("UPDATE cachetokens SET used = ? WHERE token_hash = ?", (ctx.timestamp, row["token_hash"]))
    return load_card(ctx, row["card_id"], securitycode)


def _sealed_securitycode(ctx: Context, token: str) -> str | None | bool:
    """The security code sealed in the token (None when none was given); False if it cannot be opened."""
    try:
        return json.loads(ctx.store.vault.decrypt(token.encode("ascii")))["securitycode"]
    except (InvalidToken, UnicodeError, ValueError, KeyError, TypeError):
        return False


# expiry ----------------------------------------------------------------------------------------

def purge_expired(conn, now: datetime) -> int:
    """Drop the card rows of expired tokens that no AUTH used; the token rows stay, without a card."""
    rows = conn.execute("SELECT token_hash, card_id FROM cachetokens WHERE used IS NULL AND card_id IS NOT NULL "
                        "AND expires <= ?", (now.strftime(TIMESTAMP),)).fetchall()
    for row in rows:
        conn.execute("UPDATE cachetokens SET card_id = NULL WHERE token_hash = ?", (row["token_hash"],))
        conn.execute("DELETE FROM cards WHERE id = ? AND NOT EXISTS "
                     "(SELECT 1 FROM transactions WHERE card_id = ?)", (row["card_id"], row["card_id"]))
    return len(rows)


@daily_job("cachetoken-expiry", order=90)
def expire_tokens(job, day) -> dict[str, Any]:
    with job.store.write() as conn:
        purged = purge_expired(conn, job.clock.now())
    return {"expired_tokens": purged}


def token_rows(sandbox: "Sandbox", sitereference: str | None = None) -> list[dict[str, Any]]:
    """The tokens issued (masked card, times, state), newest first: for notebooks and reports."""
    now = sandbox.clock.timestamp()
    sql = "SELECT * FROM cachetokens" + (" WHERE sitereference = ?" if sitereference else "")
    rows = sandbox.store.connection().execute(sql + " ORDER BY created DESC",
                                              (sitereference,) if sitereference else ()).fetchall()
    return [{"sitereference": r["sitereference"], "maskedpan": r["maskedpan"],
             "paymenttypedescription": r["paymenttypedescription"], "created": r["created"],
             "expires": r["expires"], "used": r["used"],
             "state": "used" if r["used"] else ("expired" if r["expires"] <= now else "live")} for r in rows]


# CORS for the gateway endpoint (interface 5.5) -------------------------------------------------

def origin_rejected(origin: str) -> bool:
    return origin.strip().rstrip("/").lower() in REJECTED_ORIGINS


def cross_origin(request: "SandboxRequest", gateway: Callable[["SandboxRequest"], "SandboxResponse"]
                 ) -> "SandboxResponse":
    """`/json/` with CORS: preflights answered, answers to browsers given their CORS headers."""
    from .core import SandboxResponse

    origin = request.headers.get("origin")
    if origin is not None and origin_rejected(origin):
        return SandboxResponse.json({
            "error": "origin rejected", "origin": origin,
            "detail": "interface 5.5: cross-origin requests from https://localhost are rejected; "
                      "serve the page from a domain the gateway can reach"}, status=403)
    response = SandboxResponse(204, {}, b"") if request.method == "OPTIONS" else gateway(request)
    if origin is not None:
        response.headers.update(cors_headers(origin, request))
    return response


def cors_headers(origin: str, request: "SandboxRequest") -> dict[str, str]:
    headers = {"access-control-allow-origin": origin, "vary": "Origin"}
    if request.method == "OPTIONS":
        headers.update({"access-control-allow-methods": "POST, OPTIONS",
                        "access-control-allow-headers": "Content-Type, Accept",
                        "access-control-max-age": "600"})
        if request.headers.get("access-control-request-private-network") == "true":
            headers["access-control-allow-private-network"] = "true"
    return headers


# /js/st.js -------------------------------------------------------------------------------------

_RULES_SLOT = re.compile(r"/\*gwkit:rules\*/.*?/\*gwkit:end\*/", re.DOTALL)


def stjs_rules() -> dict[str, Any]:
    """The card rules st.js checks in the browser, from the spec tables (gwkit.interface)."""
    lengths = [scheme.securitycode_length for scheme in cards.SCHEMES.values()]
    usual = max(set(lengths), key=lengths.count)
    prefixes = cards._PREFIXES  # prefix -> scheme code; the longest matching prefix wins
    unusual = {p for p, code in prefixes.items() if cards.SCHEMES[code].securitycode_length != usual}
    # Longer prefixes inside an unusual range must be listed too, or they would lose to it.
    listed = {p for p in prefixes if any(p.startswith(u) for u in unusual)}
    return {"panMinLength": FIELDS["pan"].min_length, "panMaxLength": FIELDS["pan"].max_length,
            "securitycodeLength": usual,
            "securitycodeLengthByPrefix": {p: cards.SCHEMES[prefixes[p]].securitycode_length
                                           for p in sorted(listed)}}


def stjs_source() -> str:
    rules = json.dumps(stjs_rules())
    return _RULES_SLOT.sub(lambda _m: f"/*gwkit:rules*/{rules}/*gwkit:end*/",
                           STJS_PATH.read_text(encoding="utf-8"), count=1)


@route("GET", "/js/st.js")
def serve_stjs(sandbox: "Sandbox", request: "SandboxRequest") -> "SandboxResponse":
    from .core import SandboxResponse

    return SandboxResponse(200, {"content-type": "application/javascript; charset=utf-8",
                                 "cache-control": "no-cache", "access-control-allow-origin": "*"},
                           stjs_source().encode("utf-8"))
