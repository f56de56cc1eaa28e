"""Browser tokenisation (interface 4.6, 4.9, 5.6): CACHETOKENISE and the AUTH with a cache token.

A cache token stands for card details for 15 minutes of the sandbox clock, for one AUTH:

- The token is a Fernet ciphertext made with the sandbox's vault key. It carries the security
  code, sealed, so the sandbox never keeps a security code anywhere; the database keeps only the
  token's SHA-256 (never the token), the site, the times and the id of the card row (whose PAN
  the vault encrypts, as for every card the sandbox holds).
- Tokens begin with `gAAAA` (Fernet's version byte), so base64-decoding one never yields JSON:
  the official Python client, which unwraps base64 JSON `{"cachetoken": X}`, sends ours as given.
- A token is refused (30000 Invalid field, errordata ["cachetoken"]) when it is unknown, for
  another site, already used by an AUTH, or 15 minutes old: the same answer for all four, so an
  answer never tells whether a token exists. A refused AUTH (a Refusal) does not use the token up;
  an answered one, authorised or declined, does.
- Expired tokens that were never used lose their card row (at each CACHETOKENISE and daily).

CORS (interface 5.5) and st.js are HTTP matters: see web/cors.py and web/stjs.py.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from datetime import date, datetime, timedelta
from typing import Any, Literal

from cryptography.fernet import InvalidToken

from ...interface.cards import scheme_of
from ...interface.masking import mask_pan
from ...interface.wire import TIMESTAMP
from .clock import Clock
from .context import Context, DailyJob, JobContext
from .payments import Card, load_card
from .refusal import invalid_field
from .sql import Sql
from .store import Connection, Store

TOKEN_LIFETIME = timedelta(minutes=15)

SCHEMA = Sql(
    sqlite="""
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
""",
    postgresql="""
CREATE TABLE IF NOT EXISTS cachetokens (
    token_hash TEXT COLLATE "C" PRIMARY KEY,
    sitereference TEXT COLLATE "C" NOT NULL,
    card_id BIGINT REFERENCES cards(id) DEFERRABLE,
    maskedpan TEXT COLLATE "C" NOT NULL,
    paymenttypedescription TEXT COLLATE "C",
    created TEXT COLLATE "C" NOT NULL,
    expires TEXT COLLATE "C" NOT NULL,
    used TEXT COLLATE "C"
);
DROP INDEX IF EXISTS cachetokens_expires;
CREATE INDEX IF NOT EXISTS cachetokens_unpurged ON cachetokens (expires)
    WHERE used IS NULL AND card_id IS NOT NULL;
""",
)


def token_hash(token: str) -> str:
    return hashlib.sha256(token.encode("utf-8")).hexdigest()


def site_of_token(conn: Connection, token: str) -> str | None:
    """The site a cachetoken was made for, or None if there is no such token."""
    row = conn.execute(
        "SELECT sitereference FROM cachetokens WHERE token_hash = ?", (token_hash(token),)
    ).fetchone()
    return None if row is None else row[0]


# CACHETOKENISE ---------------------------------------------------------------------------------


def handle_cachetokenise(ctx: Context, request: dict[str, Any]) -> list[dict[str, Any]]:
    """Card fields in, a token out; no card data is answered (as the real service: the token only)."""
    purge_expired(ctx.conn, ctx.now, request["sitereference"])
    pan = request["pan"]
    scheme = scheme_of(pan)
    if scheme is None:
        raise invalid_field("pan")
    expirydate = checked_expiry(request["expirymonth"], request["expiryyear"], ctx.now)
    if request.get("paymenttypedescription") not in (None, "", scheme.code):
        raise invalid_field("paymenttypedescription")
    sealed = {"securitycode": request.get("securitycode") or None}
    token = ctx.store.vault.encrypt(json.dumps(sealed)).decode("ascii")
    card_id = ctx.store.add_card(ctx.conn, pan, expirydate, scheme.code)
    ctx.conn.execute(
        "INSERT INTO cachetokens (token_hash, sitereference, card_id, maskedpan, paymenttypedescription, "
        "created, expires) VALUES (?, ?, ?, ?, ?, ?, ?)",
        (
            token_hash(token),
            request["sitereference"],
            card_id,
            mask_pan(pan),
            scheme.code,
            ctx.timestamp,
            (ctx.now + TOKEN_LIFETIME).strftime(TIMESTAMP),
        ),
    )
    return [
        {
            "requesttypedescription": "CACHETOKENISE",
            "cachetoken": token,
            "errorcode": "0",
            "errormessage": "Ok",
        }
    ]


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


def card_from_token(ctx: Context, request: Mapping[str, Any]) -> Card:
    """The card a live token of the request's site stands for; the token is used up by the AUTH."""
    token = request["cachetoken"]
    row = ctx.conn.execute(
        "SELECT * FROM cachetokens WHERE token_hash = ? AND sitereference = ? AND used IS NULL "
        "AND card_id IS NOT NULL AND expires > ?",
        (token_hash(token), request.get("sitereference"), ctx.timestamp),
    ).fetchone()
    securitycode = _sealed_securitycode(ctx, token) if row is not None else None
    if row is None or securitycode is False:
        raise invalid_field("cachetoken")
    ctx.conn.execute(
        "UPDATE cachetokens SET used = ? WHERE token_hash = ?", (ctx.timestamp, row["token_hash"])
    )
    return load_card(ctx, row["card_id"], securitycode)


def _sealed_securitycode(ctx: Context, token: str) -> str | Literal[False] | None:
    """The security code sealed in the token (None when none was given); False if it cannot be opened."""
    try:
        return json.loads(ctx.store.vault.decrypt(token.encode("ascii")))["securitycode"]
    except (InvalidToken, UnicodeError, ValueError, KeyError, TypeError):
        return False


# expiry ----------------------------------------------------------------------------------------

_EXPIRED = (
    "FROM cachetokens WHERE used IS NULL AND card_id IS NOT NULL AND expires <= ? AND sitereference = ?"
)


def purge_expired(conn, now: datetime, sitereference: str) -> int:
    """Drop the card rows of a site's tokens expired by its clock's `now` that no AUTH used; the token
    rows stay, without a card."""
    rows = conn.execute(
        f"SELECT token_hash, card_id {_EXPIRED}", (now.strftime(TIMESTAMP), sitereference)
    ).fetchall()
    for row in rows:
        conn.execute("UPDATE cachetokens SET card_id = NULL WHERE token_hash = ?", (row["token_hash"],))
        conn.execute(
            "DELETE FROM cards WHERE id = ? AND NOT EXISTS (SELECT 1 FROM transactions WHERE card_id = ?)",
            (row["card_id"], row["card_id"]),
        )
    return len(rows)


def expire_tokens(job: JobContext, day) -> dict[str, Any]:
    """Drop the cards of the tokens of `job.sites` expired by their sites' clocks."""
    purged = 0
    for site, now in _expiring(job).items():
        purged += purge_expired(job.writes.conn, now, site)
        job.cache[_CHECKED].add(site)
    job.writes.wrote(purged)
    return {"expired_tokens": purged}


# JobContext.cache: the sites that have no expired token left in this run. A token expires by its site's
# clock, which stands still while the run goes on, so once a site's are dropped (or it had none), the
# later days of the run find none: a token made meanwhile expires after the clock's now.
_CHECKED = "cachetokens checked"


def _expiring(job: JobContext) -> dict[str, datetime]:
    """The sites of `job` with a token to drop, and their clocks (asked without the write lock)."""
    checked = job.cache.setdefault(_CHECKED, set())
    reads = job.store.connection()
    expiring = {}
    for site, now in job.clocks().items():
        if site in checked:
            continue
        if reads.execute(f"SELECT EXISTS (SELECT 1 {_EXPIRED})", (now.strftime(TIMESTAMP), site)).fetchone()[
            0
        ]:
            expiring[site] = now
        else:
            checked.add(site)
    return expiring


def token_rows(store: Store, clock: Clock, sitereference: str | None = None) -> list[dict[str, Any]]:
    """The tokens issued (masked card, times, state), newest first: for notebooks and reports."""
    sql = "SELECT * FROM cachetokens" + (" WHERE sitereference = ?" if sitereference else "")
    rows = (
        store.connection()
        .execute(sql + " ORDER BY created DESC", (sitereference,) if sitereference else ())
        .fetchall()
    )
    nows = {
        site: moment.strftime(TIMESTAMP)
        for site, moment in clock.clocks({r["sitereference"] for r in rows}).items()
    }
    return [
        {
            "sitereference": r["sitereference"],
            "maskedpan": r["maskedpan"],
            "paymenttypedescription": r["paymenttypedescription"],
            "created": r["created"],
            "expires": r["expires"],
            "used": r["used"],
            "state": "used"
            if r["used"]
            else ("expired" if r["expires"] <= nows[r["sitereference"]] else "live"),
        }
        for r in rows
    ]


REQUEST_HANDLERS = {"CACHETOKENISE": handle_cachetokenise}
CARD_SOURCES = {"cachetoken": card_from_token}


def next_expiry_day(job: JobContext, day: date) -> date | None:
    """`day` if a token of the sites has expired by its site's clock (a run drops those whatever its
    day), else None: a later day's run would find the same, nothing."""
    return day if _expiring(job) else None


DAILY_JOBS = (DailyJob("cachetoken-expiry", 90, expire_tokens, next_expiry_day),)
