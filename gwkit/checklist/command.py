"""`gwkit checklist`: the run in the foreground. Interactive, the person presses Enter to move on (q
to finish); with `--auto` the application's tests make the payments, and the run ends when the
command after `--` exits, on `POST /_checklist/finish`, or on Ctrl-C / SIGTERM. The reports are
written then, and the exit status says whether every required outcome was handled.

Exit status: 0 every step passed (warnings included), 1 an outcome mishandled or never exercised
(or the checklist could not listen), 2 bad input (a step, a report path, an upstream that does not
answer), with a message naming it.
"""

from __future__ import annotations

import argparse
import os
import signal
import subprocess
import sys
import threading
from collections.abc import Callable
from typing import Any

import httpx

from ..cassette import Cassette
from ..errors import GwkitError
from ..journal import Journal
from .app import ChecklistHandle, start
from .reports import check_writable, write_reports
from .run import ChecklistResult
from .steps import ChecklistError, steps_named

URL_VARIABLE = "GWKIT_CHECKLIST_URL"  # the checklist's base URL, for the command run under --auto
PROBE_SECONDS = 5.0


def run(args: argparse.Namespace, sb: Any, px: Any, upstream_of: Callable[..., Any]) -> int:
    command = args.tests[1:] if args.tests[:1] == ["--"] else list(args.tests)
    box = None
    try:
        if command and not args.auto:
            raise ChecklistError("a command after -- runs only with --auto")
        named = (
            [name.strip() for name in args.steps.split(",") if name.strip()]
            if args.steps is not None
            else None
        )
        steps = steps_named(named, listener=args.listener, listener_password=args.listener_password)
        reports = {
            name: check_writable(path) for name, path in (("junit", args.junit), ("html", args.html)) if path
        }
        if args.upstream.startswith(("http://", "https://")):
            _check_answers(args.upstream, args.ca)
        box, upstream = upstream_of(sb, px, args)
    except (ChecklistError, ValueError, OSError) as exc:
        print(f"gwkit checklist: {exc}", file=sys.stderr)
        return 2
    done = threading.Event()
    written: dict[str, Any] = {}

    def on_finish(result: ChecklistResult) -> dict[str, Any]:
        written.update(_write(result, reports))
        done.set()
        return {
            "reports": written.get("reports", {}),
            **({"error": written["error"]} if "error" in written else {}),
        }

    echo = _Held()  # the first step's line, shown after the banner
    journal = Journal(args.journal) if args.journal else Journal()
    cassette = Cassette(args.cassette) if args.cassette else None
    try:
        handle = start(
            upstream,
            steps=steps,
            port=args.port,
            journal=journal,
            echo=echo,
            on_finish=on_finish,
            cassette=cassette,
        )
    except OSError as exc:
        print(f"gwkit checklist: cannot listen on 127.0.0.1:{args.port}: {exc.strerror}", file=sys.stderr)
        return 1
    _banner(handle, upstream, args, reports)
    echo.release()
    previous = signal.signal(signal.SIGTERM, _stop_on_sigterm)
    try:
        if command:
            _run_tests(command, handle.base_url)
        elif args.auto:
            done.wait()
        else:
            _lead(handle)
    except (KeyboardInterrupt, _Stopped):
        pass
    finally:
        signal.signal(signal.SIGTERM, previous)
    result = handle.checklist.finish()
    if not done.is_set():
        on_finish(result)
    handle.stop()
    if box is not None:
        box.close()
    for name, path in written.get("reports", {}).items():
        print(f"  {name} report: {path}")
    if "error" in written:
        print(f"gwkit checklist: {written['error']}", file=sys.stderr)
        return 2
    return 0 if result.passed else 1


def _check_answers(url: str, ca: Any) -> None:
    """An upstream that does not answer at all is bad input, said before the run starts."""
    try:
        httpx.get(url, timeout=PROBE_SECONDS, verify=str(ca) if ca else True)
    except httpx.HTTPError as exc:
        raise ChecklistError(
            f"--upstream {url}: does not answer ({type(exc).__name__}: {exc}); start it, or use --upstream sandbox"
        ) from None


def _write(result: ChecklistResult, reports: dict[str, Any]) -> dict[str, Any]:
    try:
        return {"reports": write_reports(result, junit=reports.get("junit"), html=reports.get("html"))}
    except ChecklistError as exc:
        return {"error": str(exc)}


def _banner(
    handle: ChecklistHandle, upstream: Any, args: argparse.Namespace, reports: dict[str, Any]
) -> None:
    print(f"gwkit checklist listening on {handle.base_url}: point your shop's gateway base URL here")
    print(f"  upstream:  {upstream.name} {upstream.url}")
    print(f"  steps:     {', '.join(step.name for step in handle.checklist.steps)}")
    if args.listener:
        print(f"  listener:  {args.listener} (notified of the notification steps' payments)")
    for name, path in reports.items():
        print(f"  {name}:     {path}")
    if args.auto:
        print(
            f"  unattended: payments in order, or claimed by name ({handle.base_url}/_checklist/steps/NAME)"
        )
    else:
        print("  Enter: the next step (the current one is judged); q then Enter: finish.")
    sys.stdout.flush()


def _lead(handle: ChecklistHandle) -> None:
    """Interactive: Enter moves on, q finishes; the run ends when every payment step is judged."""
    for line in sys.stdin:
        if line.strip().lower() in ("q", "quit"):
            return
        handle.next()
        if handle.checklist.current is None:
            return


def _run_tests(command: list[str], base_url: str) -> None:
    environment = {**os.environ, URL_VARIABLE: base_url}
    try:
        finished = subprocess.run(command, env=environment, check=False)
    except OSError as exc:
        print(f"gwkit checklist: cannot run {command[0]}: {exc.strerror}", file=sys.stderr)
        return
    print(f"  the tests ({' '.join(command)}) exited with {finished.returncode}", flush=True)


def _say(line: str) -> None:
    print(line, flush=True)


class _Held:
    """Lines said before `release()` are kept, then said; after it, said at once."""

    def __init__(self) -> None:
        self._kept: list[str] | None = []
        self._lock = threading.Lock()

    def __call__(self, line: str) -> None:
        with self._lock:
            if self._kept is not None:
                self._kept.append(line)
                return
        _say(line)

    def release(self) -> None:
        with self._lock:
            kept, self._kept = self._kept or [], None
        for line in kept:
            _say(line)


class _Stopped(GwkitError):
    """SIGTERM: the run ends, its reports are written."""


def _stop_on_sigterm(signum: int, frame: Any) -> None:
    raise _Stopped()
