"""The Gateway: one envelope in, one envelope out; the sites' clocks, settle and reset (the daily jobs
a clock move runs: daily.py).

Each request object is validated with the spec tables (the same code as the client), then each
of its request types is answered, in order, by the handler the handler modules list for it; a
request type chained after another takes that record as its parent, within an object and from
one object to the next (chains.py). A
request object is processed in one write transaction (one that only queries, in a read
transaction, so it never holds up a payment); a refused request type (a `Refusal`) is rolled
back, so nothing of a rejected request is kept: the first of an object with its whole
transaction (nothing was written before it), a later one to a savepoint taken before it.
"""

from __future__ import annotations

import json
import logging
import os
import signal
import threading
from collections.abc import Callable, Iterable, Mapping
from datetime import date, datetime
from pathlib import Path
from types import ModuleType
from typing import Any

from ...interface.errors import GwkitError
from ...interface.masking import mask_data, mask_pan
from ...interface.requests import SINGLE_TYPES
from ...interface.validation import (
    chained_entries,
    errordata,
    normalised,
    request_types_of,
    validate_request,
    with_full_expiry_year,
)
from ...interface.wire import PAN_PATTERN, TIMESTAMP, VERSION
from . import (
    accountcheck,
    auth,
    bypass,
    cachetokens,
    cardstore,
    chains,
    clock,
    engine,
    notifications,
    payments,
    query,
    refunds,
    riskdec,
    settlement,
    subscriptions,
    threeds,
    threeds_v2,
    update,
)
from .accounts import DEFAULT_ACCOUNT, Account, account_for_site, control_sites
from .clock import CLOCK_TABLES, ISO, Clock
from .context import Context, Tables
from .daily import DailyRunner, Progress
from .delivery import Notifier
from .envelopes import (
    answer_reference,
    answered_record,
    envelope,
    error_record,
    request_error,
    too_many_objects,
    usable_reference,
    uses_reference,
)
from .moves import Move, MoveKeeper, UnderWay, lease_seconds
from .refusal import Refusal, unknown_error
from .sitedata import Expression, SiteTables, delete_sites
from .sql import Statement
from .store import open_store
from .store.snapshots import resume_restores

# Every part of the gateway, each listing what it serves in plain constants (see context.Tables).
HANDLER_MODULES: tuple[ModuleType, ...] = (
    payments,
    auth,
    accountcheck,
    cardstore,
    query,
    update,
    settlement,
    threeds,
    threeds_v2,
    subscriptions,
    engine,
    cachetokens,
    refunds,
    riskdec,
)
log = logging.getLogger("gwkit.sandbox")


class Gateway:
    """The whole gateway without HTTP: store, clocks, accounts, request handling and daily jobs.

    `schemas` adds the tables of parts outside the gateway (the demo merchant's receipts), and
    `site_expressions` says whose site a row of such a table is when it has no `sitereference`.
    The clock, advance, settle and reset act on `sites` (default: the first account's).
    `notification_hosts`: where URL notifications may go (None: anywhere, the embedded sandbox;
    a team sandbox: the hosts its operator allows)."""

    def __init__(
        self,
        db_path: str | Path | None = None,
        *,
        accounts: Iterable[Account] | None = None,
        clock_start: datetime | None = None,
        modules: Iterable[ModuleType] = HANDLER_MODULES,
        schemas: Iterable[Statement] = (),
        site_expressions: Mapping[str, Expression] | None = None,
        notification_hosts: Iterable[str] | None = None,
        move_lease: float | None = None,
    ):
        self.tables = Tables.of(modules)
        self.daily_jobs = list(self.tables.daily_jobs)
        self.store = open_store(  # a postgresql:// URL: the team sandbox
            db_path,
            schemas=(clock.SCHEMA, notifications.SCHEMA, *self.tables.schemas, *schemas),
            added_columns=(*notifications.ADDED_COLUMNS, *self.tables.added_columns),
        )
        self.accounts = {a.username: a for a in (accounts or [DEFAULT_ACCOUNT])}
        self.site_expressions = dict(site_expressions or {})
        self.clock = Clock(self.store, clock_start, self.default_account.sitereferences)
        # Clock moves, settlement and restores of this process under way; each holds its sites' turn
        # (`store.hold`: across every process serving the database).
        self.advance_lock = UnderWay()
        self._stopping = threading.Event()  # set by stop_work: long runs end at their next day
        # running advances, for GET /_sandbox/clock/progress: a team sandbox's in its database, on a lease
        self.move_lease = lease_seconds(move_lease)
        self.moves = self.store.moves(self.move_lease)
        self._kill_after_days = _test_kill_after_days()
        self._takeovers: list[threading.Thread] = []
        for job in self.daily_jobs:  # where a site without marks of its own stands
            self.store.meta_set_default(f"job:{job.name}:through", self.clock.start().date().isoformat())
        self.daily = DailyRunner(
            self.store, self.clock, self.tables, self.accounts, self.daily_jobs, self._stopping
        )
        self.notifier = Notifier(
            self.store, self.clock.clocks, self.accounts, notification_hosts, self.tables.record_views
        )
        resume_restores(self.store, self.site_expressions)  # a restore cut short is done again first
        self._catch_up()
        self.notifier.wake()  # deliveries a stopped sandbox left open go on
        # Every host of a team sandbox renews its moves' leases and takes over those of a dead one.
        self._keeper = (
            MoveKeeper(self.moves, self._sweep_in_the_background, self.move_lease)
            if self.store.shared_by_workers
            else None
        )

    def __repr__(self) -> str:
        return f"Gateway({str(self.store.path)!r}, accounts={sorted(self.accounts)!r})"

    @property
    def default_account(self) -> Account:
        return next(iter(self.accounts.values()))

    def account_for_site(self, sitereference: str) -> Account | None:
        return account_for_site(self.accounts.values(), sitereference)

    @property
    def every_site(self) -> tuple[str, ...]:
        return tuple(site for account in self.accounts.values() for site in account.sitereferences)

    def sites_of(self, account: Account, sitereference: str | None = None) -> tuple[str, ...]:
        """The sites `account` controls (an operator: every site), or the one it names (SiteNotYours if
        that is not one of them)."""
        return control_sites(account, self.every_site, sitereference)

    def _scope(self, sites: str | Iterable[str] | None) -> tuple[str, ...]:
        if sites is None:
            return self.default_account.sitereferences
        return (sites,) if isinstance(sites, str) else tuple(dict.fromkeys(sites))

    # requests

    def process(
        self,
        body: Any,
        account: Account,
        *,
        origin: str | None = None,
        base_url: str = "",
        requestreference: str | None = None,
    ) -> dict[str, Any]:
        """Answer a parsed envelope from an authenticated account.

        `requestreference` is the HTTP header of that name. The official clients send it, and for an
        envelope of several request objects it is the only reference they check the answer against.
        """

        def refused(fault: Refusal, reference: str | None) -> dict[str, Any]:
            return request_error(fault, reference, self.clock.timestamp(account.sitereferences[0]))

        if not isinstance(body, dict):
            return refused(Refusal(30000, ["request"]), usable_reference(requestreference))
        objects = body.get("request")
        reference = answer_reference(requestreference, objects)
        if body.get("alias") not in (None, account.username):
            return refused(Refusal(30000, ["alias"]), reference)
        if body.get("version", VERSION) != VERSION:
            return refused(Refusal(30000, ["version"]), reference)
        if not isinstance(objects, list) or not objects:
            return refused(Refusal(30000, ["request"]), reference)
        if too_many := too_many_objects(objects):
            return refused(too_many, reference)
        records: list[dict[str, Any]] = []
        answered: list[dict[str, Any]] = []  # the previous object's records: the last may be a parent
        for request in objects:
            answered = self._answer_object(
                request, account, origin, base_url, answered[-1] if answered else None
            )
            records.extend(answered_record(r) for r in self._referenced(answered, account))
        return envelope(records, reference)

    def _answer_object(
        self,
        request: Any,
        account: Account,
        origin: str | None,
        base_url: str,
        previous: Mapping[str, Any] | None = None,
    ) -> list[dict[str, Any]]:
        site = request.get("sitereference") if isinstance(request, dict) else None

        def refused(fault: Refusal) -> list[dict[str, Any]]:
            """One ERROR record for the object, timed on its site's clock (or the account's first)."""
            clock_of = site if site in account.sitereferences else account.sitereferences[0]
            return [error_record("ERROR", fault, self.clock.timestamp(clock_of))]

        if not isinstance(request, dict):
            return refused(Refusal(30000, ["request"]))
        request = chains.with_envelope_parent(with_full_expiry_year(normalised(request)[0]), previous)
        types = request.get("requesttypedescriptions")
        if (
            not isinstance(types, list)
            or not types
            or not all(isinstance(t, str) for t in types)
            or any(t not in SINGLE_TYPES for t in types)
        ):
            return refused(Refusal(60018, _as_sent(types)))
        problems = validate_request(request, strict=False)
        if problems:
            return refused(Refusal(30000, errordata(problems)))
        if site is not None and site not in account.sitereferences:
            return refused(Refusal(30000, ["sitereference"]))
        try:
            return self._run_handlers(request, account, origin, base_url)
        except Exception as exc:  # a sandbox bug: nothing of the request object was kept (rolled back)
            fault = unknown_error(exc)
            return [error_record(t, fault) for t in types]

    def _referenced(self, records: list[dict[str, Any]], account: Account) -> list[dict[str, Any]]:
        """The records, each ERROR record that uses up a reference (envelopes.uses_reference) with one.
        Taken after the refused object's own transaction (rolled back, or never opened); a failure
        here costs the reference, never the answer."""
        needing = [record for record in records if uses_reference(record)]
        if not needing:
            return records
        try:
            with self.store.write(account.sitereferences) as conn:
                references = self.store.reserve_references(conn, len(needing))
        except Exception:
            log.exception("references of refused requests could not be taken")
            return records
        for record, reference in zip(needing, references, strict=True):
            record["transactionreference"] = reference
        return records

    def _run_handlers(
        self, request: dict[str, Any], account: Account, origin: str | None, base_url: str
    ) -> list[dict[str, Any]]:
        records: list[dict[str, Any]] = []
        site = request.get("sitereference")
        request_types = request_types_of(request["requesttypedescriptions"])
        chained = chained_entries(request["requesttypedescriptions"])
        # A query changes nothing: it reads one consistent view while payments go on being written.
        reads_only = all(t.key in self.tables.read_only for t in request_types)
        home = site if isinstance(site, str) and site else account.sitereferences[0]
        made: Any = None
        site_bypass = account.bypassed_types(home)
        skipped = False  # the THREEDQUERY just before was skipped (threedbypasspaymenttypes)
        try:
            with self.store.read() if reads_only else self.store.write(account.sitereferences) as conn:
                now = self.clock.now(home)
                ctx = Context(self.store, self.tables, conn, account, now, origin, base_url)
                for at, (request_type, takes_parent) in enumerate(zip(request_types, chained, strict=True)):
                    handler = self.tables.request_handlers.get(request_type.key)
                    if handler is None:
                        records.extend(error_record(t, Refusal(60018, [t])) for t in request_type.types)
                        break
                    if skipped:
                        takes_parent, skipped = bypass.chains_after_skip(records, request_type), False
                    if takes_parent and not chains.goes_on(records[-1] if records else None):
                        break
                    if request_type.key == "THREEDQUERY" and bypass.skips_threedquery(
                        ctx,
                        chains.child_request(request, records[-1]) if takes_parent else request,
                        site_bypass,
                    ):
                        skipped = True
                        bypassed = bypass.bypass_record(ctx)  # one reference used up, no record kept
                        if len(request_types) == 1:  # alone: answered 22000 Bypass
                            records.append(bypassed)
                        continue
                    if at == 0:  # nothing is written before it: its fault rolls back the whole transaction
                        records.extend(_first(handler, ctx, request))
                        continue
                    conn.execute("SAVEPOINT request_type")
                    try:
                        answered = handler(
                            ctx, chains.child_request(request, records[-1]) if takes_parent else request
                        )
                    except Refusal as fault:
                        conn.execute("ROLLBACK TO request_type")
                        conn.execute("RELEASE request_type")
                        records.extend(_refusal(request_type.types, fault, ctx.timestamp))
                        break  # later request types of the object depend on this one: they are not run
                    conn.execute("RELEASE request_type")
                    records.extend(answered)
                if not reads_only:  # its URL notifications, kept with what it wrote
                    made = self._keep_notifications(conn, records, home, request, now)
        except _FirstRefused as refused:  # no savepoint around the first: two statements fewer per payment
            return _refusal(request_types[0].types, refused.fault, now.strftime(TIMESTAMP))
        if made:  # sent once committed: online ones before the answer goes out, offline ones after
            self._notify(self.notifier.send, made)
        return records

    def _keep_notifications(
        self, conn: Any, records: list[dict[str, Any]], site: str, request: dict[str, Any], now: datetime
    ) -> Any:
        """The request's deliveries, in its transaction (read on the writer's connection: a reader's
        would reload its page cache after every commit). A failure here is logged and rolled back to
        a savepoint: it never costs the payment."""
        rules = self.notifier.rules_in(conn, site)
        if not rules:
            return None
        conn.execute("SAVEPOINT notifications")
        try:
            made = self.notifier.keep(conn, records, site, rules, request, now)
        except Exception:
            conn.execute("ROLLBACK TO notifications")
            conn.execute("RELEASE notifications")
            log.exception("URL notifications of a request could not be kept")
            return None
        conn.execute("RELEASE notifications")
        return made if any(made) else None

    def _notify(self, step: Callable[..., None], *args: Any) -> None:
        try:
            step(*args)
        except Exception:  # a notification never changes an answer or a move: logged, the sandbox goes on
            log.exception("URL notifications failed")

    # the clocks and the daily jobs

    def advance(
        self,
        by: str | None = None,
        to: str | datetime | None = None,
        progress: Progress | None = None,
        sites: str | Iterable[str] | None = None,
    ) -> dict[str, Any]:
        """Move the clocks of `sites` (together) forward and run every daily job for each day passed
        on each site; report what ran. A refused move (ClockError) changes nothing."""
        sites = self._scope(sites)
        # The sites' turn across every process and host: a second move waits for the first, and
        # starts from where the first ended (never both from the same moment).
        with self.advance_lock, self.store.hold(sites):
            mark = self.notifier.mark()
            start = self.clock.now(sites)
            target = self.clock.target(by=by, to=to, sites=sites)
            with self.store.write(sites) as conn:
                self.clock.set(conn, target, sites)
            days = (target.date() - start.date()).days
            running = Move(
                self.moves,
                {
                    "sites": list(sites),
                    "from": start.strftime(ISO),
                    "to": target.strftime(ISO),
                    "day": 0,
                    "days": days,
                    "step": None,
                    "done": 0,
                    "total": 0,
                },
            )
            report = self._run_move(running, progress)
        self._notify(self.notifier.after_move, sites, mark, report.get("settlement", {}).get("settled", []))
        return {"from": start.strftime(ISO), "to": target.strftime(ISO), "days": days, **report}

    def _run_move(self, running: Move, progress: Progress | None = None) -> dict[str, Any]:
        """Run the daily jobs of a move's days (its sites' clocks already at its target), shown on the
        board as it goes. A run stopped early (the sandbox is stopping) leaves its move to another host."""
        start = date.fromisoformat(running["from"][:10])
        days, kill_after = running["days"], self._kill_after_days

        def on_day(day: date) -> None:
            running.update(day=max(0, min(days, (day - start).days)))
            if kill_after is not None and running["day"] > kill_after:  # the tests' host that dies
                os.kill(os.getpid(), signal.SIGKILL)

        try:
            report = self.run_due_jobs(
                progress=_tracked(running, progress), sites=running["sites"], on_day=on_day
            )
        except BaseException:
            running.finish()
            raise
        if "stopped_before" in report:
            running.release()
        else:
            running.finish()
        return report

    def _sweep_in_the_background(self) -> list[str]:
        """The sweeper's round (moves.MoveKeeper): each move taken over finishes in a thread of its own."""
        return self.sweep_moves(wait=False)

    def sweep_moves(self, at: float | None = None, wait: bool = True) -> list[str]:
        """Take over the clock moves whose host died: those whose lease ran out by `at` (seconds of the
        database's clock; None: now) and whose sites no one holds. Each is finished here (with `wait`
        False, in a thread of its own). The keys of the moves taken over."""
        taken = []
        for key, worker, state in self.moves.abandoned(at):
            if wait:
                if self._take_over(key, worker, state["sites"], at):
                    taken.append(key)
                continue
            thread = threading.Thread(
                target=self._take_over, args=(key, worker, state["sites"], at), name="gwkit-move-takeover"
            )
            self._takeovers = [t for t in self._takeovers if t.is_alive()] + [thread]
            thread.start()
            taken.append(key)
        return taken

    def _take_over(self, key: str, worker: str, sites: list[str], at: float | None) -> bool:
        with self.advance_lock, self.store.hold(sites, wait=False) as held:
            if not held:  # its process still holds them (alive), or another host took it over first
                return False
            state = self.moves.take(key, worker, at)
            if state is None:
                return False
            log.warning(
                "taking over the clock move of %s (%s to %s, at day %s of %s)",
                worker,
                state["from"],
                state["to"],
                state["day"],
                state["days"],
            )
            mark = self.notifier.mark()
            report = self._run_move(Move(self.moves, state, key=key))
        self._notify(self.notifier.after_move, sites, mark, report.get("settlement", {}).get("settled", []))
        return True

    def _catch_up(self) -> None:
        """Run the days a stopped (or killed) run left undone, and notify what they paid and settled
        as after any clock move."""
        mark = self.notifier.mark()
        report = self.run_due_jobs()
        if report:
            settled = report.get("settlement", {}).get("settled", [])
            self._notify(self.notifier.after_move, self.every_site, mark, settled)

    def advances_of(self, sites: Iterable[str]) -> list[dict[str, Any]]:
        """The running advances that move any of `sites`: how far each is (day n of N, the job's step).
        Each lists only those of its sites that are among `sites`: a move an operator makes of every
        site shows a user its own sites, never the other tenants'."""
        wanted = set(sites)
        return [
            {**move, "sites": [site for site in move["sites"] if site in wanted]}
            for move in self.moves.of(wanted)
        ]

    def run_due_jobs(
        self,
        progress: Progress | None = None,
        sites: Iterable[str] | None = None,
        on_day: Callable[[date], None] | None = None,
    ) -> dict[str, Any]:
        """Run each daily job for every day its sites' clocks have passed (daily.py)."""
        return self.daily.run(self.every_site, progress=progress, sites=sites, on_day=on_day)

    def settle(self, all_pending: bool = False, sites: str | Iterable[str] | None = None) -> dict[str, Any]:
        """Settle now what is due on each site's today, or with `all_pending` every pending AUTH."""
        sites = self._scope(sites)
        settled: list[str] = []
        mark = self.notifier.mark()
        with self.advance_lock, self.store.hold(sites), self.store.write(sites) as conn:  # after a move
            clocks = self.clock.clocks(sites)
            for site in sites:
                settled += settlement.settle_due(
                    self.store, conn, date.max if all_pending else clocks[site].date(), [site]
                )
        self._notify(self.notifier.after_move, sites, mark, settled)
        return {"settlement": {"settled": settled}}

    def reset(self, sites: str | Iterable[str] | None = None, *, clock: bool = False) -> None:
        """Delete every transaction, card, subscription and token of `sites`; their clocks stay. With
        `clock`, the sites start afresh: their clocks and the daily jobs' marks go too, so each is back
        at the sandbox's start. The clock never moves back while a site has anything dated by it."""
        sites = self._scope(sites)
        whole_sandbox = set(self.every_site) <= set(sites)
        # The whole sandbox's turn even for some sites: the card rows no site uses any more go too,
        # and a writer of another site may be about to use one of them again.
        with self.store.write() as conn:
            tables = SiteTables.of(self.store.catalog(conn), site_expressions=self.site_expressions)
            # Rows of no site (a demo receipt without an AUTH) are nobody's: only a reset of every site takes them.
            keep = () if clock else CLOCK_TABLES
            delete_sites(conn, tables, [*sites, ""] if whole_sandbox else sites, keep=keep)
            if whole_sandbox:
                conn.execute(f"DELETE FROM cards WHERE id NOT IN ({tables.cards_used()})")
        self.store.checkpoint()  # what was deleted (demo receipts, masked cards) lives on in the WAL no more

    def health(self, sites: Iterable[str] | None = None) -> dict[str, Any]:
        """Up, with the clock and transaction count of `sites` (default: the whole sandbox's count
        and the first account's clock)."""
        if sites is None:
            (count,) = self.store.connection().execute("SELECT COUNT(*) FROM transactions").fetchone()
            now = self.clock.now()
        else:
            sites = tuple(sites)
            marks = ", ".join("?" * len(sites))
            (count,) = (
                self.store.connection()
                .execute(f"SELECT COUNT(*) FROM transactions WHERE sitereference IN ({marks})", sites)
                .fetchone()
            )
            now = self.clock.now(sites)
        return {
            "status": "ok",
            "now": now.strftime(ISO),
            "transactions": count,
            "database": str(self.store.path),
            "process": os.getpid(),
        }  # which worker answered

    def stop_work(self) -> None:
        """Make a long run of daily jobs end after the day it is on (the server is stopping)."""
        self._stopping.set()

    def close(self) -> None:
        self.stop_work()
        if self._keeper is not None:
            self._keeper.stop()
        for takeover in self._takeovers:  # each stops at its next day, its move left to another host
            takeover.join()
        self.notifier.close()
        self.store.close()


class _FirstRefused(GwkitError):
    """The fault of an object's first request type, carried out of its transaction to roll it back."""

    def __init__(self, fault: Refusal):
        super().__init__(str(fault))
        self.fault = fault


def _first(
    handler: Callable[..., list[dict[str, Any]]], ctx: Context, request: dict[str, Any]
) -> list[dict[str, Any]]:
    try:
        return handler(ctx, request)
    except Refusal as fault:
        raise _FirstRefused(fault) from None


def _test_kill_after_days() -> int | None:
    """GWKIT_SANDBOX_TEST_KILL_AFTER_DAYS=N: this process SIGKILLs itself once a clock move it runs is
    past day N (the multi-host tests' host that dies at a known point); unset in any real use."""
    text = os.environ.get("GWKIT_SANDBOX_TEST_KILL_AFTER_DAYS")
    return int(text) if text else None


def _tracked(running: dict[str, Any], progress: Progress | None) -> Progress:
    """A job's progress, kept for GET /_sandbox/clock/progress and passed on to the caller's hook."""

    def report(step: str, done: int, total: int) -> None:
        running.update(step=step, done=done, total=total)
        if progress is not None:
            progress(step, done, total)

    return report


def _refusal(types: Iterable[str], fault: Refusal, timestamp: str) -> list[dict[str, Any]]:
    """The records of a refused request type: an invalid field (30000) is one ERROR record with its
    timestamp, as the real service answers; another code is answered by each request type."""
    if fault.errorcode == 30000:
        return [error_record("ERROR", fault, timestamp)]
    return [error_record(t, fault) for t in types]


def _as_sent(types: Any) -> list[str]:
    """`errordata` of a 60018: the request types as sent, or `["None"]` when none was (as the real
    service answers an empty request object).

    Card numbers in them are masked, and each is cut short: errordata is shown and logged."""
    if types is None:
        return ["None"]
    sent = types if isinstance(types, list) else [types]
    texts = [t if isinstance(t, str) else json.dumps(mask_data(t)) for t in sent[:_TYPES_SHOWN]]
    # Every card-number-like run, Luhn or not: no request type has one.
    shown = [PAN_PATTERN.sub(lambda m: mask_pan(m.group()), t) for t in texts]
    return [t if len(t) <= _TYPE_CHARS_SHOWN else t[: _TYPE_CHARS_SHOWN - 3] + "..." for t in shown]


_TYPES_SHOWN = 10
_TYPE_CHARS_SHOWN = 60
