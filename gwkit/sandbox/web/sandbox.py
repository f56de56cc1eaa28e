"""The Sandbox: the Gateway served over HTTP-shaped requests, without a server or a socket.

`Sandbox.answer(request)` is the one way in to everything the sandbox offers (routes.py): the
gateway endpoint `POST /json/`, the control API under `/_sandbox/`, the ACS pages, st.js and the
demo merchant. Each request is size-checked, routed and type-checked once; a gateway POST meeting
an armed fault is read and authenticated once (`endpoint.caller_of`) for both the fault selection
and the answer; every answer is `secured` once. The Starlette app and the httpx transports are
thin adapters over it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from datetime import datetime
from pathlib import Path
from typing import Any

from ..gateway import faultlog, receipts
from ..gateway.accounts import Account
from ..gateway.clock import Clock
from ..gateway.core import Gateway
from ..gateway.refusal import log_internal_error, storage_failure
from ..gateway.store import Store
from ..gateway.store.snapshots import Snapshots
from ..http import BodyError, SandboxRequest, SandboxResponse
from .endpoint import Caller, caller_of, gateway_endpoint
from .fault_controls import FaultControls
from .faults import FaultBook
from .injection import Answer, serve
from .latency import LatencyBudget
from .pages import secured
from .routes import Route, find_route, unsupported_body

MAX_BODY_BYTES = 1_048_576


class Sandbox:
    """A Gateway, its pages and fault injection (`faults`: every site's)."""

    def __init__(
        self,
        db_path: str | Path | None = None,
        *,
        accounts: Iterable[Account] | None = None,
        clock_start: datetime | None = None,
        max_body_bytes: int = MAX_BODY_BYTES,
        notification_hosts: Iterable[str] | None = None,
        move_lease: float | None = None,
    ):
        self.gateway = Gateway(
            db_path,
            accounts=accounts,
            clock_start=clock_start,
            schemas=(receipts.SCHEMA, faultlog.SCHEMA),
            site_expressions=receipts.SITE_EXPRESSIONS,
            notification_hosts=notification_hosts,
            move_lease=move_lease,
        )
        self.max_body_bytes = max_body_bytes
        # faults shared by a team sandbox's workers; in memory for one process
        self.fault_book = FaultBook(self.store.fault_rows())
        self.latency = LatencyBudget()  # each site's requests waiting out an injected latency
        self.faults = FaultControls(
            self.fault_book,
            self.gateway,
            [site for account in self.accounts.values() for site in account.sitereferences],
        )
        self.snapshots = self.snapshots_of(self.default_account)
        self._listeners: list[Callable[[str], Any]] = []

    def __repr__(self) -> str:
        return f"Sandbox({str(self.store.path)!r}, accounts={sorted(self.accounts)!r})"

    @property
    def store(self) -> Store:
        return self.gateway.store

    @property
    def clock(self) -> Clock:
        return self.gateway.clock

    @property
    def accounts(self) -> dict[str, Account]:
        return self.gateway.accounts

    @property
    def default_account(self) -> Account:
        return self.gateway.default_account

    def answer(self, request: SandboxRequest) -> Answer:
        """The answer to a request, with fault injection: the answer, or none, and how long to wait
        (injection.py)."""
        outcome = self._answer(request, faults=True)
        if outcome.response is not None:  # an injected fault's page too
            secured(outcome.response)
        return outcome

    def answer_without_faults(self, request: SandboxRequest) -> SandboxResponse:
        """The answer to a request as if no fault were armed."""
        response = self._answer(request, faults=False).response
        assert response is not None  # only a fault leaves a request unanswered
        return secured(response)

    def oversized(self, size: int) -> SandboxResponse | None:
        """The one rule of body size: a 413 naming the limit for a body of `size` bytes over it (the
        server asks it too, of a declared Content-Length, so as not to read such a body at all)."""
        return too_large(self.max_body_bytes) if size > self.max_body_bytes else None

    def _answer(self, request: SandboxRequest, *, faults: bool) -> Answer:
        refused = self.oversized(len(request.body))
        if refused is not None:
            return Answer(refused)
        route = find_route(request.method, request.path)
        if route is None:
            return Answer(
                SandboxResponse.json({"error": f"no such page: {request.method} {request.path}"}, status=404)
            )
        refused = unsupported_body(route, request)
        if refused is not None:
            return Answer(refused)
        if faults and request.method == "POST" and route.page is gateway_endpoint and self._faults_armed():
            caller = caller_of(self.gateway, request)
            return serve(self, request, caller, lambda given=caller: self._page(route, request, given))
        return Answer(self._page(route, request))

    def _faults_armed(self) -> bool:
        """Whether a fault is armed anywhere. When the store cannot tell (it fails: a lost connection,
        a full disk), none is: the gateway then answers 99999 in a 200 if the store still fails."""
        try:
            return bool(self.fault_book)
        except Exception as exc:
            if not storage_failure(exc):
                raise
            log_internal_error(exc, "answered without faults: the store could not tell the armed faults")
            return False

    def _page(self, route: Route, request: SandboxRequest, caller: Caller | None = None) -> SandboxResponse:
        try:
            if caller is not None:
                return gateway_endpoint(self, request, caller)
            return route.page(self, request)
        except BodyError as error:  # a page read a body that cannot or may not be read
            return SandboxResponse.bad_body(error)
        except Exception as exc:  # a sandbox bug: an answer the caller can report, and the connection stays
            return internal_error(exc, f"{request.method} {request.path}")

    def snapshots_of(self, account: Account) -> Snapshots:
        """The snapshots an account saved, covering its sites (an operator's: every site;
        `Sandbox.snapshots`: the first account's)."""
        return self.store.snapshots(
            self.gateway, account, receipts.SITE_EXPRESSIONS, sites=self.gateway.sites_of(account)
        )

    def now(self, sitereference: str | None = None) -> datetime:
        """The clock of a site (default: the latest of the first account's sites)."""
        return self.gateway.clock.now(sitereference)

    # -- the one control API of the clock, settlement and reset (SandboxHandle's too) --------------
    def on_change(self, listener: Callable[[str], Any]) -> Callable[[str], Any]:
        """Call `listener(kind)` after `advance` ("clock"), `settle` ("settle") or `reset` ("reset")."""
        self._listeners.append(listener)
        return listener

    def advance(
        self,
        by: str | None = None,
        to: str | datetime | None = None,
        progress: Callable[[str, int, int], None] | None = None,
        sitereference: str | None = None,
        *,
        account: Account | None = None,
    ) -> dict[str, Any]:
        """Move the clocks of an account's sites (together; default: the first account's), or of one
        site, forward and run every daily job for each day passed; report what ran."""
        report = self.gateway.advance(
            by=by, to=to, progress=progress, sites=self._sites(account, sitereference)
        )
        self._changed("clock")
        return report

    def settle(
        self, all_pending: bool = False, sitereference: str | None = None, *, account: Account | None = None
    ) -> dict[str, Any]:
        """Settle now what is due today (an account's sites, or one site), or with `all_pending`
        every pending AUTH."""
        report = self.gateway.settle(all_pending=all_pending, sites=self._sites(account, sitereference))
        self._changed("settle")
        return report

    def reset(
        self, sitereference: str | None = None, *, account: Account | None = None, clock: bool = False
    ) -> None:
        """Delete every transaction, card, subscription and token of an account's sites (or of one
        site); the clocks stay where they are, unless `clock`: then the sites start afresh, their
        clocks back at the sandbox's start."""
        self.gateway.reset(self._sites(account, sitereference), clock=clock)
        self._changed("reset")

    def _sites(self, account: Account | None, sitereference: str | None) -> Any:
        """The sites an account names (one of them, or all); without an account, as the gateway takes them."""
        return sitereference if account is None else self.gateway.sites_of(account, sitereference)

    def _changed(self, kind: str) -> None:
        for listener in tuple(self._listeners):
            listener(kind)

    def health(self) -> dict[str, Any]:
        return {**self.gateway.health(), "faults": self.faults.state()}

    def close(self) -> None:
        self.gateway.close()


def internal_error(exc: BaseException, where: str = "") -> SandboxResponse:
    """The one answer to a sandbox bug over HTTP: a JSON 500 with the reference its traceback is
    logged under (`refusal.log_internal_error`, the same reference format as the gateway's 99999). The
    exception's message is left out of both: it may quote request values such as card data."""
    reference = log_internal_error(exc, f"answered HTTP 500{' to ' + where if where else ''}")
    return SandboxResponse.json(
        {
            "error": "internal error",
            "reference": reference,
            "detail": "a bug of the sandbox; its log has the details under this reference",
        },
        status=500,
    )


def too_large(limit_bytes: int) -> SandboxResponse:
    return SandboxResponse.json({"error": "request body too large", "limit_bytes": limit_bytes}, status=413)
