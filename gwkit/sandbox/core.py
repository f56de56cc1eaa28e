"""The sandbox as a plain object: HTTP-shaped requests in, responses out, no server needed.

`Sandbox.handle(method, path, headers, body)` serves everything the sandbox offers: the gateway
endpoint `POST /json/`, the control API under `/_sandbox/`, and the pages other parts register
(the ACS simulator, st.js, the demo merchant). The Starlette app and the httpx transport are thin
adapters over it.
"""

from __future__ import annotations

import base64
import binascii
import json
import threading
from dataclasses import dataclass, field
from datetime import date, datetime, timedelta
from pathlib import Path
from typing import Any, Callable, Iterable, Mapping

from . import gateway
from .accounts import DEFAULT_ACCOUNT, Account
from .clock import Clock, ClockError
from .registry import DAILY_JOBS, Fault, find_route
from .store import Store

MAX_BODY_BYTES = 1_048_576
GATEWAY_PATHS = ("/json", "/json/")
JSON_HEADERS = {"content-type": "application/json; charset=utf-8"}


@dataclass
class SandboxRequest:
    method: str
    path: str
    headers: dict[str, str]  # lower-case names
    body: bytes = b""
    query: dict[str, str] = field(default_factory=dict)
    base_url: str = ""  # scheme://host:port the client used, for links back to the sandbox

    def json(self) -> Any:
        return json.loads(self.body.decode("utf-8")) if self.body else {}

    def form(self) -> dict[str, str]:
        from urllib.parse import parse_qsl

        return dict(parse_qsl(self.body.decode("utf-8"), keep_blank_values=True))


@dataclass
class SandboxResponse:
    status: int
    headers: dict[str, str]
    body: bytes

    @classmethod
    def json(cls, data: Any, status: int = 200, headers: Mapping[str, str] | None = None) -> "SandboxResponse":
        return cls(status, {**JSON_HEADERS, **(headers or {})}, json.dumps(data).encode("utf-8"))

    @classmethod
    def html(cls, text: str, status: int = 200, headers: Mapping[str, str] | None = None) -> "SandboxResponse":
        return cls(status, {"content-type": "text/html; charset=utf-8", **(headers or {})}, text.encode("utf-8"))

    def json_body(self) -> Any:
        return json.loads(self.body)


@dataclass
class JobContext:
    """What a daily job gets: the sandbox, a way to report progress on long runs, and a cache
    that lasts one run of the daily jobs (the days of one `advance`), so a reset never meets it."""

    sandbox: "Sandbox"
    progress: Callable[[str, int, int], None] | None = None
    cache: dict[str, Any] = field(default_factory=dict)

    @property
    def store(self) -> Store:
        return self.sandbox.store

    @property
    def clock(self) -> Clock:
        return self.sandbox.clock


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


class Faults:
    """Fault injection for tests of clients (`POST /_sandbox/faults`): HTTP only, not persisted.

    `drop_next` answers of `POST /json/` are never sent: the HTTP app closes the connection
    instead. With `process` the gateway handles the request first (the payment is made and the
    answer lost, as when a connection fails after the request went out); without it the request
    is dropped unread.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.drop_next = 0
        self.process = True

    def set(self, drop_next: int, process: bool = True) -> dict[str, Any]:
        if not isinstance(drop_next, int) or isinstance(drop_next, bool) or drop_next < 0:
            raise ValueError("drop_next must be a whole number, 0 or more")
        with self._lock:
            self.drop_next, self.process = drop_next, bool(process)
        return self.state()

    def state(self) -> dict[str, Any]:
        return {"drop_next": self.drop_next, "process": self.process}

    def take_drop(self) -> bool | None:
        """None: answer normally; otherwise drop this answer (True: after processing the request)."""
        if not self.drop_next:
            return None
        with self._lock:
            if not self.drop_next:
                return None
            self.drop_next -= 1
            return self.process


class Sandbox:
    """The whole gateway: store, clock, accounts, request handling and daily jobs."""

    def __init__(self, db_path: str | Path | None = None, *, accounts: Iterable[Account] | None = None,
                 clock_start: datetime | None = None, max_body_bytes: int = MAX_BODY_BYTES):
        from . import handlers  # noqa: F401  (registers every request handler)

        self.store = Store(db_path)
        self.clock = Clock(self.store, clock_start)
        self.accounts = {a.username: a for a in (accounts or [DEFAULT_ACCOUNT])}
        self.max_body_bytes = max_body_bytes
        self.faults = Faults()
        self._advance_lock = threading.Lock()
        for job in DAILY_JOBS:
            self.store.meta_set_default(f"job:{job.name}:through", self.clock.today().isoformat())
        self.run_due_jobs()  # catch up work a killed run left undone

    def __repr__(self) -> str:
        return f"Sandbox({str(self.store.path)!r}, accounts={sorted(self.accounts)!r})"

    @property
    def default_account(self) -> Account:
        return next(iter(self.accounts.values()))

    def account_for_site(self, sitereference: str) -> Account | None:
        return next((a for a in self.accounts.values() if sitereference in a.sitereferences), None)

    # authentication

    def authenticate(self, headers: Mapping[str, str]) -> Account | None:
        value = headers.get("authorization", "")
        scheme, _, encoded = value.partition(" ")
        if scheme.lower() != "basic":
            return None
        try:
            username, _, password = base64.b64decode(encoded, validate=True).decode("utf-8").partition(":")
        except (binascii.Error, UnicodeDecodeError):
            return None
        account = self.accounts.get(username)
        return account if account and account.password_matches(password) else None

    # requests

    def handle(self, request: SandboxRequest) -> SandboxResponse:
        if len(request.body) > self.max_body_bytes:
            return too_large(self.max_body_bytes)
        if request.path in GATEWAY_PATHS:
            if request.method in ("POST", "OPTIONS"):
                from .tokens import cross_origin  # CORS and the https://localhost rule (interface 5.5)

                return cross_origin(request, self._gateway)
            return SandboxResponse.json({"error": f"method not allowed: {request.method} {request.path}",
                                         "detail": "the gateway endpoint takes POST"}, status=405,
                                        headers={"allow": "POST, OPTIONS"})
        if request.path.startswith("/_sandbox/"):
            from .control import handle_control

            return handle_control(self, request)
        handler = find_route(request.method, request.path)
        if handler is not None:
            return handler(self, request)
        return SandboxResponse.json({"error": f"no such page: {request.method} {request.path}"}, status=404)

    def _gateway(self, request: SandboxRequest) -> SandboxResponse:
        account = self.authenticate(request.headers)
        if account is None and "authorization" in request.headers:
            return unauthorised()
        try:
            body = json.loads(request.body.decode("utf-8"))
        except (UnicodeDecodeError, json.JSONDecodeError) as exc:
            if account is None:  # only an authenticated caller learns more than 401
                return unauthorised()
            # The position only: the message of a JSON error may quote the body (card data).
            if isinstance(exc, json.JSONDecodeError):
                where = f"line {exc.lineno} column {exc.colno}"
            else:
                where = "not UTF-8"
            reference = gateway.usable_reference(request.headers.get("requestreference"))
            return SandboxResponse.json(gateway.request_error(Fault(10205, "Malformed JSON", [where]), reference))
        account = account or self._anonymous_account(body)
        if account is None:
            return unauthorised()
        answer = gateway.process(self, body, account, origin=request.headers.get("origin"),
                                 requestreference=request.headers.get("requestreference"),
                                 base_url=request.base_url)
        return SandboxResponse.json(answer)

    def _anonymous_account(self, body: Any) -> Account | None:
        """Browser tokenisation needs no credentials: the site named in the request decides."""
        objects = body.get("request") if isinstance(body, dict) else None
        if not isinstance(objects, list) or not objects:
            return None
        sites = set()
        for obj in objects:
            if not isinstance(obj, dict) or obj.get("requesttypedescriptions") != ["CACHETOKENISE"]:
                return None
            sites.add(obj.get("sitereference"))
        if len(sites) != 1:
            return None
        site = sites.pop()
        return self.account_for_site(site) if isinstance(site, str) else None

    # the clock and the daily jobs

    def advance(self, by: str | None = None, to: str | datetime | None = None,
                progress: Callable[[str, int, int], None] | None = None) -> dict[str, Any]:
        """Move the clock forward and run every daily job for each day passed; report what ran."""
        with self._advance_lock:
            start = self.clock.now()
            target = self.clock.target(by=by, to=to)
            with self.store.write() as conn:
                self.clock.set(conn, target)
            report = self.run_due_jobs(progress=progress)
        return {"from": start.strftime("%Y-%m-%dT%H:%M:%S"), "to": target.strftime("%Y-%m-%dT%H:%M:%S"),
                "days": (target.date() - start.date()).days, **report}

    def run_due_jobs(self, progress: Callable[[str, int, int], None] | None = None) -> dict[str, Any]:
        """Run each daily job for every day up to today it has not finished yet."""
        report: dict[str, Any] = {}
        today = self.clock.today()
        job_context = JobContext(self, progress)
        marks = {job.name: date.fromisoformat(self.store.meta_get(f"job:{job.name}:through")
                                              or today.isoformat()) for job in DAILY_JOBS}
        day = min(marks.values(), default=today) + timedelta(days=1)
        while day <= today:
            for job in DAILY_JOBS:
                if marks[job.name] < day:
                    _merge(report.setdefault(job.name, {}), job.run(job_context, day) or {})
                    with self.store.write() as conn:
                        self.store.meta_set(conn, f"job:{job.name}:through", day.isoformat())
                    marks[job.name] = day
            day += timedelta(days=1)
        return report

    def settle(self, all_pending: bool = False) -> dict[str, Any]:
        """Settle now what is due today, or with `all_pending` every pending AUTH."""
        from .handlers.settlement import settle_due

        day = date.max if all_pending else self.clock.today()
        with self.store.write() as conn:
            settled = settle_due(conn, day)
        return {"settlement": {"settled": settled}}

    def reset(self) -> None:
        """Delete every transaction, card, subscription and token; the clock stays where it is."""
        self.store.wipe()

    def health(self) -> dict[str, Any]:
        (count,) = self.store.connection().execute("SELECT COUNT(*) FROM transactions").fetchone()
        return {"status": "ok", "now": self.clock.now().strftime("%Y-%m-%dT%H:%M:%S"),
                "transactions": count, "database": str(self.store.path), "faults": self.faults.state()}

    def close(self) -> None:
        self.store.close()


def too_large(limit_bytes: int) -> SandboxResponse:
    return SandboxResponse.json({"error": "request body too large", "limit_bytes": limit_bytes}, status=413)


def unauthorised(detail: str = "missing or wrong web services user name or password") -> SandboxResponse:
    return SandboxResponse.json({"error": "unauthorised", "detail": detail}, status=401,
                                headers={"www-authenticate": 'Basic realm="gwkit sandbox"'})


__all__ = ["ClockError", "Sandbox", "SandboxRequest", "SandboxResponse", "unauthorised"]
