"""URL notifications: per-site rules, and the deliveries they make, kept in the database.

A rule is a condition (request types, error codes, a change of `settlestatus`), the URL, the
fields to send, an optional notification password and a flow (online, offline, failover). For each
transaction made or changed, the first matching online rule fires (a failover rule counts as
online) and every matching offline rule fires. Each delivery is a row here before anything is sent,
and each attempt is a row before it is sent (at least once, as the real service: a crash may repeat
an attempt with the same `notificationreference`).

The SQL runs as written on SQLite and PostgreSQL: no ids made by the database, `ON CONFLICT DO
NOTHING`, `RETURNING`, placeholders `?` only. `delivery.py` sends them.
"""

from __future__ import annotations

import ipaddress
import json
import secrets
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any
from urllib.parse import SplitResult, quote, urlsplit, urlunsplit

from ...interface.errors import GwkitError
from ...interface.fields import FIELDS, SENSITIVE_FIELDS
from ...interface.masking import mask_pan
from ...interface.notification import DEFAULT_FIELDS, REFERENCE_FIELD, SIGNATURE_FIELD, signature
from ...interface.wire import PAN_PATTERN

SCHEMA = """
CREATE TABLE IF NOT EXISTS notification_rules (
    rule_id TEXT PRIMARY KEY,
    sitereference TEXT NOT NULL,
    position INTEGER NOT NULL,        -- 1, 2, ... per site: rules are matched in this order
    created TEXT NOT NULL,            -- sandbox clock
    flow TEXT NOT NULL,               -- online, offline, failover
    url TEXT NOT NULL,
    requesttypes TEXT NOT NULL,       -- JSON list; empty: any
    errorcodes TEXT NOT NULL,         -- JSON list; empty: any
    settlestatuses TEXT NOT NULL,     -- JSON list; empty: the rule fires when a transaction is made
    fields TEXT NOT NULL,             -- JSON list of the field names sent
    password TEXT,                    -- the notification password (signs; never shown)
    timeout DOUBLE PRECISION NOT NULL -- wall-clock seconds an attempt may take (at most 8)
);
CREATE INDEX IF NOT EXISTS notification_rules_of_site ON notification_rules (sitereference);
CREATE TABLE IF NOT EXISTS notification_deliveries (
    notificationreference TEXT PRIMARY KEY,
    sitereference TEXT NOT NULL,
    rule_id TEXT NOT NULL,
    event TEXT NOT NULL,              -- "made", or "settlestatus:<new value>"
    transactionreference TEXT NOT NULL,
    flow TEXT NOT NULL,
    url TEXT NOT NULL,
    timeout DOUBLE PRECISION NOT NULL,
    form TEXT NOT NULL,               -- JSON list of [name, value] as sent (signed; no PAN, no code)
    state TEXT NOT NULL,              -- pending, retrying, delivered, failed
    created TEXT NOT NULL,            -- sandbox clock
    made DOUBLE PRECISION NOT NULL,   -- wall clock (epoch seconds): orders those of one sandbox time
    next_at TEXT NOT NULL,            -- sandbox clock: when the next attempt is due
    attempts INTEGER NOT NULL,
    claimed_by TEXT,                  -- the worker sending it now
    claimed_until DOUBLE PRECISION,   -- wall clock (epoch seconds): then another worker may take it
    late INTEGER,                     -- 1: an online delivery sent after its answer (its process died)
    resend INTEGER,                   -- 1: a resend asked while an attempt was under way: sent after it
    UNIQUE (rule_id, transactionreference, event)
);
CREATE INDEX IF NOT EXISTS notification_deliveries_open ON notification_deliveries (state, next_at);
CREATE INDEX IF NOT EXISTS notification_deliveries_site ON notification_deliveries (sitereference, created);
CREATE TABLE IF NOT EXISTS notification_attempts (
    notificationreference TEXT NOT NULL,
    number INTEGER NOT NULL,
    sitereference TEXT NOT NULL,
    at TEXT NOT NULL,                 -- sandbox clock
    worker TEXT NOT NULL,
    status INTEGER,                   -- HTTP status; NULL: no answer (yet)
    latency_ms DOUBLE PRECISION,
    error TEXT,
    PRIMARY KEY (notificationreference, number)
);
"""

# Columns added since the tables were first made: a database an earlier gwkit made gets them.
ADDED_COLUMNS = (
    ("notification_deliveries", "late", "INTEGER"),
    ("notification_deliveries", "resend", "INTEGER"),
)

FLOWS = ("online", "offline", "failover")
ONLINE_FLOWS = frozenset({"online", "failover"})
MAX_TIMEOUT = 8.0  # seconds, wall clock: the real service's
RETRY_FOR = timedelta(hours=48)  # offline retries stop this long (sandbox clock) after the delivery was made
FIRST_RETRY = timedelta(minutes=5)
LONGEST_WAIT = timedelta(hours=8)
MAX_RULES_PER_SITE = 100
MAX_URL_LENGTH = 2048
ISO = "%Y-%m-%dT%H:%M:%S"
OPEN_STATES = ("pending", "retrying")
STATES = (*OPEN_STATES, "delivered", "failed", "cancelled")  # cancelled: its rule was deleted first
ANSWER_OWNER = "answer:"  # claimed_by of an online delivery its request's answer is waiting to send
LOOPBACK_HOSTS = ("127.0.0.0/8", "::1", "localhost")
MOST_PER_PAGE = 500


class NotificationError(GwkitError, ValueError):
    """A rule or a control request that cannot be taken; the message names the field and the rule."""


class NotFound(GwkitError, LookupError):
    """No such rule or delivery among the caller's sites."""


@dataclass(frozen=True)
class Rule:
    rule_id: str
    sitereference: str
    created: str
    flow: str
    url: str
    requesttypes: tuple[str, ...]
    errorcodes: tuple[str, ...]
    settlestatuses: tuple[str, ...]
    fields: tuple[str, ...]
    password: str | None
    timeout: float

    def matches(self, record: Mapping[str, Any], event: str) -> bool:
        if self.settlestatuses:
            wanted = {f"settlestatus:{status}" for status in self.settlestatuses}
            if event not in wanted:
                return False
        elif event != "made":
            return False
        if self.requesttypes and str(record.get("requesttypedescription")) not in self.requesttypes:
            return False
        return not self.errorcodes or str(record.get("errorcode")) in self.errorcodes

    def shown(self) -> dict[str, Any]:
        """The rule as the control API shows it: the password only as whether there is one."""
        return {
            "id": self.rule_id,
            "sitereference": self.sitereference,
            "created": self.created,
            "flow": self.flow,
            "url": self.url,
            "requesttypes": list(self.requesttypes),
            "errorcodes": list(self.errorcodes),
            "settlestatuses": list(self.settlestatuses),
            "fields": list(self.fields),
            "password": self.password is not None,
            "timeout": self.timeout,
        }


# rules


def rule_from(
    payload: Mapping[str, Any], sitereference: str, created: datetime, allowed_hosts: frozenset[str] | None
) -> Rule:
    """A new rule from the control API's JSON; NotificationError naming the field when it cannot be."""
    known = {"url", "flow", "requesttypes", "errorcodes", "settlestatuses", "fields", "password", "timeout"}
    unknown = sorted(set(payload) - known - {"sitereference"})
    if unknown:
        raise NotificationError(
            f"unknown field(s) {', '.join(unknown)}: a rule takes {', '.join(sorted(known))}, sitereference"
        )
    flow = payload.get("flow", "offline")
    if flow not in FLOWS:
        raise NotificationError(f"flow must be one of {', '.join(FLOWS)}, got {flow!r}")
    timeout = payload.get("timeout", MAX_TIMEOUT)
    if isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or not 0 < timeout <= MAX_TIMEOUT:
        raise NotificationError(f"timeout must be a number of seconds above 0 and at most {MAX_TIMEOUT:g}")
    password = payload.get("password")
    if password is not None and (not isinstance(password, str) or not 1 <= len(password) <= 255):
        raise NotificationError("password must be a string of 1 to 255 characters")
    fields = _names(payload, "fields", DEFAULT_FIELDS)
    for name in fields:
        if name in SENSITIVE_FIELDS or name in ("pan", "securitycode"):
            raise NotificationError(f"fields: {name} is never sent (card data); maskedpan is")
        if name not in FIELDS and name != REFERENCE_FIELD:
            raise NotificationError(f"fields: {name!r} is not a field of the interface")
    if REFERENCE_FIELD not in fields:
        fields = (REFERENCE_FIELD, *fields)
    return Rule(
        rule_id="nr_" + secrets.token_hex(8),
        sitereference=sitereference,
        created=created.strftime(ISO),
        flow=flow,
        url=checked_url(payload.get("url"), allowed_hosts),
        requesttypes=_names(payload, "requesttypes", ()),
        errorcodes=_names(payload, "errorcodes", ()),
        settlestatuses=_names(payload, "settlestatuses", ()),
        fields=fields,
        password=password,
        timeout=float(timeout),
    )


def _names(payload: Mapping[str, Any], name: str, default: tuple[str, ...]) -> tuple[str, ...]:
    value = payload.get(name)
    if value is None:
        return default
    if (
        not isinstance(value, list)
        or len(value) > 50
        or not all(isinstance(v, str) and 0 < len(v) <= 64 for v in value)
    ):
        raise NotificationError(f"{name} must be a list of at most 50 strings of 1 to 64 characters")
    return tuple(dict.fromkeys(value))


def checked_url(url: Any, allowed_hosts: frozenset[str] | None) -> str:
    """`url` as it is sent (`sendable_url`) if the sandbox may deliver to it: http or https with a
    host; with `allowed_hosts` (a sandbox served by `gwkit sandbox`) only to those hosts."""
    if not isinstance(url, str) or not url or len(url) > MAX_URL_LENGTH:
        raise NotificationError(f"url must be a string of 1 to {MAX_URL_LENGTH} characters")
    if any(ch.isspace() or ord(ch) < 32 or ord(ch) == 127 for ch in url):
        raise NotificationError("url must not hold spaces or control characters")
    try:
        parts = urlsplit(url)
        parts.port  # noqa: B018 - a port that is not a number raises here
    except ValueError as exc:
        raise NotificationError(f"url is not a URL: {exc}") from None
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise NotificationError(f"url must be an http:// or https:// URL with a host, got {url!r}")
    if parts.username or parts.password:
        raise NotificationError("url must not hold credentials: sign with the notification password")
    sent, host = sendable_url(parts)
    if allowed_hosts is not None and not _allowed(host, allowed_hosts):
        shown = ", ".join(sorted(allowed_hosts)) or "none"
        raise NotificationError(
            f"url: this sandbox delivers only to the hosts its operator allows with --notify-host HOST "
            f"(allowed now: {shown}), not to {host}"
        )
    return sent


_PATH_SAFE = "/%:@!$&'()*+,;=-._~"  # what stays as written: the URL's own syntax and escapes


def sendable_url(parts: SplitResult) -> tuple[str, str]:
    """The URL as an HTTP request line can carry it, and its host: a host name in Unicode IDNA-encoded
    (`bücher.example` is `xn--bcher-kva.example`), a path and query in UTF-8 percent-encoded
    (`/hook/été` is `/hook/%C3%A9t%C3%A9`), escapes already there kept; the fragment is never sent."""
    host = parts.hostname or ""
    try:
        ascii_host = host if host.isascii() else host.encode("idna").decode("ascii")
    except UnicodeError as exc:
        raise NotificationError(
            f"url: the host {host!r} is not an international domain name IDNA can encode ({exc})"
        ) from None
    netloc = f"[{ascii_host}]" if ":" in ascii_host else ascii_host
    if parts.port is not None:
        netloc += f":{parts.port}"
    path, query = quote(parts.path, safe=_PATH_SAFE), quote(parts.query, safe=_PATH_SAFE + "?")
    return urlunsplit((parts.scheme, netloc, path, query, "")), ascii_host


def notification_hosts(bound_host: str, team: bool, allowed: Iterable[str]) -> tuple[str, ...]:
    """Where a sandbox served by `gwkit sandbox` may deliver: the hosts its operator allows
    (`--notify-host`), and, on a sandbox bound to loopback with its default account (not a `team`
    one, given an accounts file), loopback listeners too. A sandbox on another address never delivers
    to loopback unless allowed: whoever reaches it would reach the server's own ports through it."""
    allowed = tuple(host.lower() for host in allowed)
    return (*LOOPBACK_HOSTS, *allowed) if not team and _is_loopback(bound_host) else allowed


def _is_loopback(host: str) -> bool:
    if host.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def _allowed(host: str, allowed_hosts: frozenset[str]) -> bool:
    host = host.lower()
    if host in allowed_hosts:
        return True
    try:
        address = ipaddress.ip_address(host)
    except ValueError:
        return False
    return any(_in_network(address, entry) for entry in allowed_hosts)


def _in_network(address: ipaddress.IPv4Address | ipaddress.IPv6Address, entry: str) -> bool:
    try:
        return address in ipaddress.ip_network(entry, strict=False)
    except ValueError:
        return False


def add_rule(conn: Any, rule: Rule) -> None:
    (count,) = conn.execute(
        "SELECT COUNT(*) FROM notification_rules WHERE sitereference = ?", (rule.sitereference,)
    ).fetchone()
    if count >= MAX_RULES_PER_SITE:
        raise NotificationError(f"a site has at most {MAX_RULES_PER_SITE} notification rules")
    conn.execute(
        "INSERT INTO notification_rules (rule_id, sitereference, position, created, flow, url, requesttypes, "
        "errorcodes, settlestatuses, fields, password, timeout) VALUES (?, ?, "
        "(SELECT COALESCE(MAX(position), 0) + 1 FROM notification_rules WHERE sitereference = ?), "
        "?, ?, ?, ?, ?, ?, ?, ?, ?)",
        (
            rule.rule_id,
            rule.sitereference,
            rule.sitereference,
            rule.created,
            rule.flow,
            rule.url,
            json.dumps(rule.requesttypes),
            json.dumps(rule.errorcodes),
            json.dumps(rule.settlestatuses),
            json.dumps(rule.fields),
            rule.password,
            rule.timeout,
        ),
    )


def rules_of(conn: Any, sites: Sequence[str]) -> list[Rule]:
    """The rules of `sites`, in the order they are matched."""
    if not sites:
        return []
    rows = conn.execute(
        "SELECT rule_id, sitereference, created, flow, url, requesttypes, errorcodes, settlestatuses, "
        f"fields, password, timeout FROM notification_rules WHERE sitereference IN ({_marks(sites)}) "
        "ORDER BY sitereference, position",
        tuple(sites),
    ).fetchall()
    return [
        Rule(
            rule_id=row[0],
            sitereference=row[1],
            created=row[2],
            flow=row[3],
            url=row[4],
            requesttypes=tuple(json.loads(row[5])),
            errorcodes=tuple(json.loads(row[6])),
            settlestatuses=tuple(json.loads(row[7])),
            fields=tuple(json.loads(row[8])),
            password=row[9],
            timeout=float(row[10]),
        )
        for row in rows
    ]


def delete_rule(conn: Any, sites: Sequence[str], rule_id: str) -> int:
    """Delete a rule and cancel its deliveries not made yet (their retries included): how many. Those
    delivered or failed stay, as history; an attempt under way still has its answer recorded."""
    found = conn.execute(
        f"DELETE FROM notification_rules WHERE rule_id = ? AND sitereference IN ({_marks(sites)}) "
        "RETURNING rule_id",
        (rule_id, *sites),
    ).fetchall()
    if not found:
        raise NotFound(f"no notification rule {rule_id!r} on your sites")
    cancelled = conn.execute(
        "UPDATE notification_deliveries SET state = 'cancelled', resend = NULL "
        "WHERE rule_id = ? AND state IN ('pending', 'retrying') RETURNING notificationreference",
        (rule_id,),
    ).fetchall()
    return len(cancelled)


def _marks(values: Sequence[Any]) -> str:
    return ", ".join("?" for _ in values)


# what fires, and the form it sends


def firing(rules: Iterable[Rule], record: Mapping[str, Any], event: str) -> list[Rule]:
    """The rules that fire for `record`: the first matching online (or failover) rule, every
    matching offline rule. Rules of other sites never fire."""
    site = record.get("sitereference")
    fired: list[Rule] = []
    online_taken = False
    for rule in rules:
        if rule.sitereference != site or not rule.matches(record, event):
            continue
        if rule.flow in ONLINE_FLOWS:
            if online_taken:
                continue
            online_taken = True
        fired.append(rule)
    return fired


def form_of(
    record: Mapping[str, Any], names: Sequence[str], password: str | None, reference: str
) -> list[tuple[str, str]]:
    """The fields a delivery sends: each chosen field (empty when the record has no value), the
    notificationreference always, and `responsesitesecurity` with a password."""
    fields = {name: _value(record.get(name)) for name in names if name != REFERENCE_FIELD}
    form = [(REFERENCE_FIELD, reference), *fields.items()]
    if password is not None:
        form.append((SIGNATURE_FIELD, signature(fields, password)))
    return form


def _value(value: Any) -> str:
    if value is None:
        return ""
    text = value if isinstance(value, str) else json.dumps(value)
    return PAN_PATTERN.sub(lambda m: mask_pan(m.group()), text)  # never a card number in clear


def new_reference() -> str:
    return "nt" + secrets.token_hex(10)


def add_delivery(
    conn: Any,
    rule: Rule,
    record: Mapping[str, Any],
    event: str,
    now: datetime,
    *,
    flow: str | None = None,
    answer_of: str | None = None,
    lease: float = 0.0,
) -> str | None:
    """Keep a delivery of `record` by `rule` to be sent now (the outbox: in the caller's transaction,
    committed with what it notifies or not at all); its notificationreference, or None when this rule
    already notified this event of this transaction (another worker, a move run again).

    `flow`: the rule's unless given (a clock move's are offline). `answer_of`: the worker whose answer
    waits to send this one (an online delivery): it is claimed for that answer for `lease` seconds, so
    no sender takes it meanwhile; if that worker dies first, a sender sends it late (`release_dead`)."""
    reference = new_reference()
    form = form_of(record, rule.fields, rule.password, reference)
    stamp = now.strftime(ISO)
    owner = None if answer_of is None else ANSWER_OWNER + answer_of
    made = conn.execute(
        "INSERT INTO notification_deliveries (notificationreference, sitereference, rule_id, event, "
        "transactionreference, flow, url, timeout, form, state, created, made, next_at, attempts, "
        "claimed_by, claimed_until) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, 'pending', ?, ?, ?, 0, ?, ?) "
        "ON CONFLICT (rule_id, transactionreference, event) DO NOTHING RETURNING notificationreference",
        (
            reference,
            rule.sitereference,
            rule.rule_id,
            event,
            str(record.get("transactionreference")),
            flow or rule.flow,
            rule.url,
            rule.timeout,
            json.dumps(form),
            stamp,
            time.time(),
            stamp,
            owner,
            None if owner is None else time.time() + lease,
        ),
    ).fetchall()
    return reference if made else None


# attempts


@dataclass(frozen=True)
class Claimed:
    """A delivery taken by one worker for one attempt, recorded before it is sent."""

    reference: str
    sitereference: str
    url: str
    form: list[tuple[str, str]]
    timeout: float
    flow: str
    created: datetime
    number: int
    at: datetime  # the site's clock when the attempt was made: its retry is scheduled from it


def claim(
    conn: Any,
    reference: str,
    worker: str,
    wall_now: float,
    lease: float,
    now: datetime,
    *,
    for_answer: bool = False,
) -> Claimed | None:
    """Take an open delivery due at `now` (its site's clock) for one attempt and record the attempt
    (before it is sent); None when another worker has it, or had it and it is not due any more.

    `for_answer`: the attempt an answer waits for, of a delivery kept claimed for it (`add_delivery`).
    A sender that takes such a delivery after its claim ran out (the answer's process died) marks it
    late: sent after the answer, not before."""
    row = conn.execute(
        "UPDATE notification_deliveries SET claimed_by = ?, claimed_until = ?, attempts = attempts + 1, "
        "late = CASE WHEN claimed_by LIKE ? AND claimed_by <> ? THEN 1 ELSE late END "
        "WHERE notificationreference = ? AND state IN ('pending', 'retrying') AND next_at <= ? "
        "AND (claimed_until IS NULL OR claimed_until < ? OR claimed_by = ?) "
        "RETURNING sitereference, url, form, timeout, flow, created, attempts",
        (
            worker,
            wall_now + lease,
            ANSWER_OWNER + "%",
            ANSWER_OWNER + worker,
            reference,
            now.strftime(ISO),
            wall_now,
            ANSWER_OWNER + worker if for_answer else None,
        ),
    ).fetchone()
    if row is None:
        return None
    conn.execute(
        "INSERT INTO notification_attempts (notificationreference, number, sitereference, at, worker) "
        "VALUES (?, ?, ?, ?, ?)",
        (reference, row[6], row[0], now.strftime(ISO), worker),
    )
    form = [(name, value) for name, value in json.loads(row[2])]
    return Claimed(
        reference, row[0], row[1], form, float(row[3]), row[4], datetime.strptime(row[5], ISO), row[6], now
    )


def next_retry(created: datetime, attempts: int, now: datetime) -> datetime | None:
    """When an offline delivery that failed `attempts` times is tried again (sandbox clock): 5
    minutes, then twice as long each time, at most 8 hours apart; None after 48 hours."""
    wait = min(FIRST_RETRY * 2 ** max(0, attempts - 1), LONGEST_WAIT)
    due = now + wait
    return due if due <= created + RETRY_FOR else None


def finish(
    conn: Any, claimed: Claimed, status: int | None, latency_ms: float, error: str | None, worker: str
) -> str:
    """Record how an attempt went and what the delivery does next; the delivery's state after it.

    A retry is scheduled from the clock the attempt was made at, not the clock now: a clock move made
    while the listener was answering (by any worker) must not push the retry past the move. An
    attempt whose claim was lost meanwhile (its lease ran out and another worker took the delivery
    over) is recorded as an attempt only: the state is the one the other worker left."""
    conn.execute(
        "UPDATE notification_attempts SET status = ?, latency_ms = ?, error = ? "
        "WHERE notificationreference = ? AND number = ?",
        (status, round(latency_ms, 1), error, claimed.reference, claimed.number),
    )
    next_at = None
    if status is not None and 200 <= status < 300:
        state = "delivered"
    elif claimed.flow == "online":
        state = "failed"
    else:
        next_at = next_retry(claimed.created, claimed.number, claimed.at)
        state = "retrying" if next_at is not None else "failed"
    # A resend asked during the attempt (`reopen`) is sent after it: the delivery is pending again.
    kept = conn.execute(
        "UPDATE notification_deliveries SET state = CASE WHEN resend = 1 THEN 'pending' ELSE ? END, "
        "next_at = CASE WHEN resend = 1 THEN next_at ELSE COALESCE(?, next_at) END, resend = NULL, "
        "claimed_by = NULL, claimed_until = NULL "
        "WHERE notificationreference = ? AND claimed_by = ? AND state IN ('pending', 'retrying') "
        "RETURNING state",
        (state, next_at.strftime(ISO) if next_at else None, claimed.reference, worker),
    ).fetchone()
    if kept is not None:
        return state
    current = conn.execute(
        "SELECT state FROM notification_deliveries WHERE notificationreference = ?", (claimed.reference,)
    ).fetchone()
    return current[0] if current is not None else state  # None: a reset deleted it meanwhile


def due(conn: Any, clocks: Mapping[str, datetime], wall_now: float) -> list[tuple[str, str]]:
    """(notificationreference, site) of the open deliveries of these sites due on their clocks and
    taken by no live worker, oldest first."""
    sites = list(clocks)
    if not sites:
        return []
    rows = conn.execute(
        "SELECT notificationreference, sitereference, next_at FROM notification_deliveries "
        f"WHERE state IN ('pending', 'retrying') AND sitereference IN ({_marks(sites)}) "
        "AND (claimed_until IS NULL OR claimed_until < ?) ORDER BY next_at, created",
        (*sites, wall_now),
    ).fetchall()
    return [(row[0], row[1]) for row in rows if row[2] <= clocks[row[1]].strftime(ISO)]


def open_sites(conn: Any) -> set[str]:
    rows = conn.execute(
        "SELECT DISTINCT sitereference FROM notification_deliveries WHERE state IN ('pending', 'retrying')"
    ).fetchall()
    return {row[0] for row in rows}


def reopen(conn: Any, sites: Sequence[str], reference: str, now: datetime) -> str:
    """A resend: the delivery is sent again now, with the same notificationreference; its site. While
    an attempt is under way (claimed), the resend is noted and made after it (`finish`): never lost."""
    found = conn.execute(
        "UPDATE notification_deliveries SET state = 'pending', next_at = ?, "
        "resend = CASE WHEN claimed_by IS NULL THEN NULL ELSE 1 END "
        f"WHERE notificationreference = ? AND sitereference IN ({_marks(sites)}) RETURNING sitereference",
        (now.strftime(ISO), reference, *sites),
    ).fetchall()
    if not found:
        raise NotFound(f"no notification delivery {reference!r} on your sites")
    return str(found[0][0])


def site_of(conn: Any, sites: Sequence[str], reference: str) -> str:
    """The site of a delivery of `sites` (NotFound for another's, as for one that does not exist)."""
    row = conn.execute(
        "SELECT sitereference FROM notification_deliveries WHERE notificationreference = ? "
        f"AND sitereference IN ({_marks(sites)})",
        (reference, *sites),
    ).fetchone()
    if row is None:
        raise NotFound(f"no notification delivery {reference!r} on your sites")
    return str(row[0])


def release_dead(conn: Any, host: str, alive: Callable[[int], bool]) -> int:
    """Free the claims of this host's processes that died (a crash, SIGKILL) at once rather than after
    their lease: their deliveries are sent by this process's senders (an online one marked late when
    sent, `claim`). How many were freed."""
    rows = conn.execute(
        "SELECT DISTINCT claimed_by FROM notification_deliveries "
        "WHERE state IN ('pending', 'retrying') AND claimed_by IS NOT NULL"
    ).fetchall()
    dead = [owner for (owner,) in rows if _died_here(owner, host, alive)]
    freed = 0
    for owner in dead:
        freed += len(
            conn.execute(
                "UPDATE notification_deliveries SET claimed_until = NULL WHERE claimed_by = ? "
                "AND state IN ('pending', 'retrying') RETURNING notificationreference",
                (owner,),
            ).fetchall()
        )
    return freed


def _died_here(owner: str, host: str, alive: Callable[[int], bool]) -> bool:
    """Whether a worker name (`host:pid:object`, maybe after ANSWER_OWNER) is a dead process of `host`."""
    parts = owner.removeprefix(ANSWER_OWNER).rsplit(":", 2)
    return len(parts) == 3 and parts[0] == host and parts[1].isdigit() and not alive(int(parts[1]))


def delivery_of(conn: Any, site: str, reference: str) -> dict[str, Any]:
    found = deliveries_of(conn, [site], notificationreference=reference)
    if not found:
        raise NotFound(f"no notification delivery {reference!r} on your sites")
    return found[0]


def count_of(conn: Any, sites: Sequence[str], transactionreference: str | None = None) -> int:
    """How many deliveries `deliveries_of` could list (every page)."""
    if not sites:
        return 0
    where, params = _deliveries_where(sites, transactionreference, None)
    (count,) = conn.execute(f"SELECT COUNT(*) FROM notification_deliveries WHERE {where}", params).fetchone()
    return int(count)


def _deliveries_where(
    sites: Sequence[str], transactionreference: str | None, notificationreference: str | None
) -> tuple[str, list[Any]]:
    where = f"sitereference IN ({_marks(sites)})"
    params: list[Any] = list(sites)
    for column, value in (
        ("transactionreference", transactionreference),
        ("notificationreference", notificationreference),
    ):
        if value is not None:
            where += f" AND {column} = ?"
            params.append(value)
    return where, params


def deliveries_of(
    conn: Any,
    sites: Sequence[str],
    *,
    transactionreference: str | None = None,
    notificationreference: str | None = None,
    limit: int | None = None,
    offset: int = 0,
) -> list[dict[str, Any]]:
    """The deliveries of `sites`, newest first, each with its attempts: `limit` of them (None: all)
    from `offset` on."""
    if not sites:
        return []
    where, params = _deliveries_where(sites, transactionreference, notificationreference)
    rows = conn.execute(
        "SELECT notificationreference, sitereference, rule_id, event, transactionreference, flow, url, form, "
        f"state, created, next_at, attempts, late FROM notification_deliveries WHERE {where} "
        "ORDER BY created DESC, made DESC, notificationreference LIMIT ? OFFSET ?",
        (*params, 2**62 if limit is None else limit, offset),
    ).fetchall()
    references = [row[0] for row in rows]
    attempts: dict[str, list[dict[str, Any]]] = {reference: [] for reference in references}
    if references:
        for a in conn.execute(
            "SELECT notificationreference, number, at, status, latency_ms, error FROM notification_attempts "
            f"WHERE notificationreference IN ({_marks(references)}) ORDER BY notificationreference, number",
            tuple(references),
        ).fetchall():
            attempts[a[0]].append(
                {"number": a[1], "at": a[2], "status": a[3], "latency_ms": a[4], "error": a[5]}
            )
    return [
        {
            "id": row[0],
            "notificationreference": row[0],
            "sitereference": row[1],
            "rule": row[2],
            "event": row[3],
            "transactionreference": row[4],
            "flow": row[5],
            "url": row[6],
            "fields": dict(json.loads(row[7])),
            "state": row[8],
            "created": row[9],
            "next_at": row[10] if row[8] in OPEN_STATES else None,
            "late": bool(row[12]),
            "attempts": attempts[row[0]],
        }
        for row in rows
    ]
