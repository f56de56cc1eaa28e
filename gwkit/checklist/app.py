"""The checklist over HTTP: the proxy's own app with the checklist's routes in front of it, and the
handle of a running checklist.

    GET  /_checklist               the run: each step with its verdict so far, the current step
    POST /_checklist/next          end the current step (its verdict), arm the next
    POST /_checklist/steps/{name}  claim a step by name (the current one ends)
    POST /_checklist/finish        end the run: every verdict (`--auto` writes its reports then)

The POSTs take a JSON object (`{}`), as every state-changing endpoint of gwkit does.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any, Self

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from ..interface.jsonread import BodyError, read_json
from ..journal import Journal
from ..proxy import ProxyExchange, ProxyHandle, Upstream
from ..proxy import start as start_proxy
from ..proxy.app import create_app
from .run import Checklist, ChecklistProxy, ChecklistResult
from .steps import ChecklistError, Step, Verdict

PREFIX = "/_checklist"


def create_checklist_app(
    proxy: ChecklistProxy, on_finish: Callable[[ChecklistResult], dict[str, Any]] | None = None
) -> Starlette:
    """The proxy's app (`gwkit.proxy.create_app`) with the checklist's routes first. `on_finish`
    (the CLI's: write the reports, stop) adds to the answer of `/finish`."""
    checklist = proxy.checklist

    async def status(request: Request) -> Response:
        return JSONResponse(checklist.status())

    async def next_step(request: Request) -> Response:
        return await _signal(request, lambda: {"ended": _shown(checklist.next())})

    async def claim(request: Request) -> Response:
        def claimed() -> dict[str, Any]:
            checklist.claim(request.path_params["name"])
            return {}

        return await _signal(request, claimed)

    async def finish(request: Request) -> Response:
        def finished() -> dict[str, Any]:
            result = checklist.finish()
            shown = {"passed": result.passed, "summary": result.summary()}
            return shown | (on_finish(result) if on_finish is not None else {})

        return await _signal(request, finished)

    async def _signal(request: Request, act: Callable[[], dict[str, Any]]) -> Response:
        refused = await _json_only(request)
        if refused is not None:
            return refused
        try:
            done = act()
        except ChecklistError as exc:
            return JSONResponse({"error": str(exc)}, status_code=409)
        return JSONResponse(done | checklist.status())

    app = create_app(proxy)
    ours = [
        Route(PREFIX, status, methods=["GET"]),
        Route(f"{PREFIX}/next", next_step, methods=["POST"]),
        Route(f"{PREFIX}/steps/{{name}}", claim, methods=["POST"]),
        Route(f"{PREFIX}/finish", finish, methods=["POST"]),
    ]
    app.router.routes[:0] = ours
    return app


async def _json_only(request: Request) -> Response | None:
    if request.headers.get("content-type", "").split(";")[0].strip() != "application/json":
        return JSONResponse(
            {"error": "content-type: must be application/json (send {})", "field": "content-type"},
            status_code=415,
        )
    try:
        body = read_json(await request.body())
    except BodyError as exc:
        return JSONResponse(
            {"error": f"body: must be a JSON object: {exc}", "field": "body"}, status_code=400
        )
    if not isinstance(body, dict):
        return JSONResponse({"error": "body: must be a JSON object ({})", "field": "body"}, status_code=400)
    return None


def _shown(verdict: Verdict | None) -> dict[str, Any] | None:
    return None if verdict is None else verdict.as_dict()


@dataclass
class ChecklistHandle:
    """A checklist serving on loopback: point the application's gateway base URL at `base_url`."""

    checklist: Checklist
    served: ProxyHandle

    @property
    def base_url(self) -> str:
        return self.served.base_url

    @property
    def exchanges(self) -> list[ProxyExchange]:
        return self.served.exchanges

    def next(self) -> Verdict | None:
        return self.checklist.next()

    def claim(self, name: str) -> None:
        self.checklist.claim(name)

    @contextlib.contextmanager
    def step(self, name: str) -> Iterator[StepInProgress]:
        """Claim step `name`, make its payment in the block; at its end the step is judged:

        with gwkit_checklist.step("decline") as step:
            shop.pay(...)
        assert step.verdict.passed, step.verdict.explain()
        """
        self.checklist.claim(name)
        progress = StepInProgress(name)
        try:
            yield progress
        finally:
            progress.verdict = self.checklist.next()

    def finish(self) -> ChecklistResult:
        return self.checklist.finish()

    def stop(self) -> None:
        self.served.stop()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


@dataclass
class StepInProgress:
    name: str
    verdict: Verdict | None = None


def start(
    upstream: Upstream,
    *,
    steps: list[Step] | None = None,
    port: int = 0,
    journal: Journal | None = None,
    echo: Callable[[str], Any] | None = None,
    on_finish: Callable[[ChecklistResult], dict[str, Any]] | None = None,
    **proxy_options: Any,
) -> ChecklistHandle:
    """Serve a checklist in front of `upstream` on a loopback port (0: a free one): the first step is
    armed. `proxy_options` go to the proxy (`cassette`, ...)."""
    checklist = Checklist(steps, echo=echo)
    proxy = ChecklistProxy(checklist, upstream, journal=journal, echo=echo, **proxy_options)
    served = start_proxy(proxy, port=port, app=create_checklist_app(proxy, on_finish))
    return ChecklistHandle(checklist, served)
