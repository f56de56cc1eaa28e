"""The Gateway: one envelope in, one envelope out; the clock, its daily jobs, settle and reset.

Each request object is validated with the spec tables (the same code as the client), then each
of its request types is answered, in order, by the handler the handler modules list for it. A
request object is processed in one write transaction (one that only queries, in a read
transaction, so it never holds up a payment); a refused request type (a `Fault`) is rolled
back to a savepoint, so nothing of a rejected request is kept.
"""

from __future__ import annotations

import json
import logging
import threading
import traceback
from datetime import date, datetime, timedelta
from pathlib import Path
from types import ModuleType
from typing import Any, Callable, Iterable, Mapping

from ...interface.requests import SINGLE_TYPES
from ...interface.validation import errordata, request_types_of, validate_request
from ...interface.wire import VERSION
from . import auth, cachetokens, cardstore, engine, payments, query, settlement, subscriptions, threeds, update
from .accounts import DEFAULT_ACCOUNT, Account, account_for_site
from .clock import ISO, Clock
from .context import Context, JobContext, Tables
from .envelopes import answer_reference, envelope, error_record, request_error, usable_reference
from .fault import Fault
from .store import Store

# Every part of the gateway, each listing what it serves in plain constants (see context.Tables).
HANDLER_MODULES: tuple[ModuleType, ...] = (
    payments, auth, cardstore, query, update, settlement, threeds, subscriptions, engine, cachetokens)
Progress = Callable[[str, int, int], None]
log = logging.getLogger("gwkit.sandbox")


class Gateway:
    """The whole gateway without HTTP: store, clock, accounts, request handling and daily jobs.

    `schemas` adds the tables of parts outside the gateway (the demo merchant's receipts)."""

    def __init__(self, db_path: str | Path | None = None, *, accounts: Iterable[Account] | None = None,
                 clock_start: datetime | None = None, modules: Iterable[ModuleType] = HANDLER_MODULES,
                 schemas: Iterable[str] = ()):
        self.tables = Tables.of(modules)
        self.daily_jobs = list(self.tables.daily_jobs)
        self.store = Store(db_path, schemas=(*self.tables.schemas, *schemas))
        self.clock = Clock(self.store, clock_start)
        self.accounts = {a.username: a for a in (accounts or [DEFAULT_ACCOUNT])}
        self.advance_lock = threading.Lock()  # held by advance and by snapshot restores
        self._stopping = threading.Event()  # set by stop_work: long runs end at their next day
        for job in self.daily_jobs:
            self.store.meta_set_default(f"job:{job.name}:through", self.clock.today().isoformat())
        self.run_due_jobs()  # catch up work a killed run left undone

    def __repr__(self) -> str:
        return f"Gateway({str(self.store.path)!r}, accounts={sorted(self.accounts)!r})"

    @property
    def default_account(self) -> Account:
        return next(iter(self.accounts.values()))

    def account_for_site(self, sitereference: str) -> Account | None:
        return account_for_site(self.accounts.values(), sitereference)

    # requests

    def process(self, body: Any, account: Account, *, origin: str | None = None, base_url: str = "",
                requestreference: str | None = None) -> dict[str, Any]:
        """Answer a parsed envelope from an authenticated account.

        `requestreference` is the HTTP header of that name. The official clients send it, and for an
        envelope of several request objects it is the only reference they check the answer against.
        """
        if not isinstance(body, dict):
            return request_error(Fault(30000, ["request"]), usable_reference(requestreference))
        objects = body.get("request")
        reference = answer_reference(requestreference, objects)
        if body.get("alias") not in (None, account.username):
            return request_error(Fault(30000, ["alias"]), reference)
        if body.get("version", VERSION) != VERSION:
            return request_error(Fault(30000, ["version"]), reference)
        if not isinstance(objects, list) or not objects:
            return request_error(Fault(30000, ["request"]), reference)
        records: list[dict[str, Any]] = []
        for request in objects:
            records.extend(self._answer_object(request, account, origin, base_url))
        return envelope(records, reference)

    def _answer_object(self, request: Any, account: Account, origin: str | None,
                       base_url: str) -> list[dict[str, Any]]:
        if not isinstance(request, dict):
            return [error_record("ERROR", Fault(30000, ["request"]))]
        types = request.get("requesttypedescriptions")
        if (not isinstance(types, list) or not types or not all(isinstance(t, str) for t in types)
                or any(t not in SINGLE_TYPES for t in types)
                or ("SUBSCRIPTION" in types and "AUTH" not in types)):
            return [error_record("ERROR", Fault(60018, _as_sent(types)))]
        problems = validate_request(request, strict=False)
        if problems:
            fault = Fault(30000, errordata(problems))
            return [error_record(t, fault) for t in types]
        site = request.get("sitereference")
        if site is not None and site not in account.sitereferences:
            fault = Fault(30000, ["sitereference"])
            return [error_record(t, fault) for t in types]
        try:
            return self._run_handlers(request, account, origin, base_url)
        except Exception as exc:  # a sandbox bug: nothing of the request object was kept (rolled back)
            # Where and what, but not the message: it may quote request values such as card data.
            log.error("request object failed with %s; answered 99999\n%s", type(exc).__name__,
                      "".join(traceback.format_tb(exc.__traceback__)))
            return [error_record(t, Fault(99999, [type(exc).__name__])) for t in types]

    def _run_handlers(self, request: dict[str, Any], account: Account, origin: str | None,
                      base_url: str) -> list[dict[str, Any]]:
        records: list[dict[str, Any]] = []
        request_types = request_types_of(request["requesttypedescriptions"])
        # A query changes nothing: it reads one consistent view while payments go on being written.
        reads_only = all(t.key in self.tables.read_only for t in request_types)
        with self.store.read() if reads_only else self.store.write() as conn:
            ctx = Context(self.store, self.tables, conn, account, self.clock.now(), origin, base_url)
            for request_type in request_types:
                handler = self.tables.request_handlers.get(request_type.key)
                if handler is None:
                    records.extend(error_record(t, Fault(60018, [t])) for t in request_type.types)
                    break
                conn.execute("SAVEPOINT request_type")
                try:
                    answered = handler(ctx, request)
                except Fault as fault:
                    conn.execute("ROLLBACK TO request_type")
                    conn.execute("RELEASE request_type")
                    records.extend(error_record(t, fault) for t in request_type.types)
                    break  # later request types of the object depend on this one: they are not run
                conn.execute("RELEASE request_type")
                records.extend(answered)
        return records

    # the clock and the daily jobs

    def advance(self, by: str | None = None, to: str | datetime | None = None,
                progress: Progress | None = None) -> dict[str, Any]:
        """Move the clock forward and run every daily job for each day passed; report what ran."""
        with self.advance_lock:
            start = self.clock.now()
            target = self.clock.target(by=by, to=to)
            with self.store.write() as conn:
                self.clock.set(conn, target)
            report = self.run_due_jobs(progress=progress)
        return {"from": start.strftime(ISO), "to": target.strftime(ISO),
                "days": (target.date() - start.date()).days, **report}

    def run_due_jobs(self, progress: Progress | None = None) -> dict[str, Any]:
        """Run each daily job for every day up to today it has not finished yet."""
        report: dict[str, Any] = {}
        today = self.clock.today()
        job_context = JobContext(self.store, self.clock, self.tables, self.accounts, progress)
        marks = {job.name: date.fromisoformat(self.store.meta_get(f"job:{job.name}:through")
                                              or today.isoformat()) for job in self.daily_jobs}
        day = min(marks.values(), default=today) + timedelta(days=1)
        if day < today:
            log.info("running the daily jobs for %d days, %s to %s", (today - day).days + 1, day, today)
        while day <= today:
            if self._stopping.is_set():  # what ran is committed; the rest runs at the next start
                log.info("daily jobs stopped before %s: the sandbox is stopping", day)
                report["stopped_before"] = day.isoformat()
                break
            for job in self.daily_jobs:
                if marks[job.name] < day:
                    _merge(report.setdefault(job.name, {}), job.run(job_context, day) or {})
                    with self.store.write() as conn:
                        self.store.meta_set(conn, f"job:{job.name}:through", day.isoformat())
                    marks[job.name] = day
            day += timedelta(days=1)
        return report

    def settle(self, all_pending: bool = False) -> dict[str, Any]:
        """Settle now what is due today, or with `all_pending` every pending AUTH."""
        day = date.max if all_pending else self.clock.today()
        with self.store.write() as conn:
            settled = settlement.settle_due(conn, day)
        return {"settlement": {"settled": settled}}

    def reset(self) -> None:
        """Delete every transaction, card, subscription and token; the clock stays where it is."""
        self.store.wipe()

    def health(self) -> dict[str, Any]:
        (count,) = self.store.connection().execute("SELECT COUNT(*) FROM transactions").fetchone()
        return {"status": "ok", "now": self.clock.now().strftime(ISO), "transactions": count,
                "database": str(self.store.path)}

    def stop_work(self) -> None:
        """Make a long run of daily jobs end after the day it is on (the server is stopping)."""
        self._stopping.set()

    def close(self) -> None:
        self.stop_work()
        self.store.close()


def _as_sent(types: Any) -> list[str]:
    """`errordata` of a 60018: the request types as sent, or the field's name when none was."""
    if types is None:
        return ["requesttypedescriptions"]
    sent = types if isinstance(types, list) else [types]
    return [t if isinstance(t, str) else json.dumps(t) for t in sent]


def _merge(into: dict[str, Any], part: Mapping[str, Any]) -> None:
    for key, value in part.items():
        if isinstance(value, list):
            into.setdefault(key, []).extend(value)
        elif isinstance(value, (int, float)) and not isinstance(value, bool):
            into[key] = into.get(key, 0) + value
        elif isinstance(value, Mapping):
            _merge(into.setdefault(key, {}), value)
        else:
            into[key] = value
