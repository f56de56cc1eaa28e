"""The `gwkit` command: its arguments; `gwkit sandbox` runs the embedded gateway in the foreground
(several worker processes: `sandbox/supervisor.py`); `gwkit proxy` runs the validating proxy
(docs/proxy.md); `gwkit checklist` the checklist on it (docs/checklist.md, `checklist/command.py`)."""

from __future__ import annotations

import argparse
import logging
import os
import signal
import socket
import sqlite3
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .cassette import Cassette
from .errors import GwkitError
from .journal import Journal
from .journal import default_path as journal_path

if TYPE_CHECKING:  # the proxy needs the [sandbox] extra: imported only to run it
    from .proxy import Upstream

SANDBOX_HELP = """Run the sandbox gateway on a loopback port until Ctrl-C.

It prints the base URL, the user name, password and site reference to use (with --accounts, the
user names and sites only: a password from the file is never printed). Data is kept in
--db (SQLite, WAL) with the card encryption key beside it, and survives restarts. With a
postgresql:// URL as --db (the team sandbox, docs/team-sandbox.md) it is kept in PostgreSQL,
and --workers N serves the one port from N processes."""


def _positive(kind):
    def parse(text: str):
        try:
            value = kind(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
        if not value > 0:
            raise argparse.ArgumentTypeError(f"must be more than 0, not {text}")
        return value

    return parse


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="gwkit", description="gwkit: a payment gateway toolkit")
    commands = parser.add_subparsers(dest="command", required=True)
    sandbox = commands.add_parser("sandbox", help="run the sandbox gateway", description=SANDBOX_HELP)
    sandbox.add_argument("--host", default="127.0.0.1", help="address to listen on (default 127.0.0.1)")
    sandbox.add_argument("--port", type=int, default=8765, help="port (default 8765; 0 picks a free one)")
    sandbox.add_argument(
        "--db",
        default=None,
        help="database file, or postgresql://user@host/dbname "
        "(default $GWKIT_SANDBOX_DB or .gwkit/sandbox.db)",
    )
    sandbox.add_argument(
        "--workers",
        type=_positive(int),
        default=1,
        metavar="N",
        help="server processes sharing the port (default 1; more need a postgresql:// --db)",
    )
    sandbox.add_argument(
        "--ready-fd", type=int, default=None, help=argparse.SUPPRESS
    )  # a worker: say when serving
    sandbox.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)  # one of --workers N
    sandbox.add_argument(
        "--accounts",
        type=Path,
        default=None,
        help="TOML file of web services users and their site references",
    )
    sandbox.add_argument(
        "--notify-host",
        action="append",
        default=None,
        metavar="HOST",
        help="a host or network (127.0.0.1, 10.0.0.0/8, hooks.example.test) URL notifications may go to; "
        "repeat for more (default: loopback listeners on a sandbox bound to loopback without --accounts, "
        "none on a team sandbox; docs/notifications.md)",
    )
    sandbox.add_argument(
        "--move-lease",
        type=_positive_seconds,
        default=None,
        metavar="SECONDS",
        help="a team sandbox's clock moves are held on a lease this long: another host takes over the move "
        "of one silent for longer (default: $GWKIT_SANDBOX_MOVE_LEASE, else 30; docs/team-sandbox.md)",
    )
    limits = sandbox.add_argument_group("limits (see docs/sandbox.md)")
    limits.add_argument(
        "--max-connections",
        type=_positive(int),
        default=None,
        metavar="N",
        help="open connections served at once; beyond, 503 (default 200)",
    )
    limits.add_argument(
        "--keep-alive",
        type=_positive(float),
        default=None,
        metavar="SECONDS",
        help="an idle connection is closed after this (default 15)",
    )
    limits.add_argument(
        "--header-timeout",
        type=_positive(float),
        default=None,
        metavar="SECONDS",
        help="a request head must arrive within this, or the connection is closed (default 10)",
    )
    limits.add_argument(
        "--delayed-per-site",
        type=_positive(int),
        default=None,
        metavar="N",
        help="requests of one site waiting out an injected latency at once; beyond, 429 (default 20)",
    )
    limits.add_argument(
        "--threads",
        type=_positive(int),
        default=None,
        metavar="N",
        help="threads for queries and large requests (default 4)",
    )
    _add_proxy_command(commands)
    _add_checklist_command(commands)
    args = parser.parse_args(argv)
    if args.command == "sandbox":
        return run_sandbox(args)
    if args.command == "proxy":
        return run_proxy(args)
    if args.command == "checklist":
        sb, px, cl = _server_modules()
        return cl.command.run(args, sb, px, _upstream)
    return 2  # pragma: no cover - argparse requires a command


PROXY_HELP = """Run the validating proxy on a loopback port until Ctrl-C: point an application's gateway base
URL at it. It forwards POST /json/ (and a sandbox upstream's /_sandbox/ control API), checks every
request against the interface (each problem shown as it is met, naming the object, the field and
the rule), records every exchange masked to the journal (and --cassette), and injects --faults. The default upstream is the embedded sandbox: the
application's credentials and site reference are mapped to a sandbox account and site. With an
https:// upstream (a real test site) credentials pass through. Credentials are never logged or
recorded."""


def _add_proxy_command(commands) -> None:
    proxy = commands.add_parser("proxy", help="run the validating proxy", description=PROXY_HELP)
    proxy.add_argument(
        "--upstream",
        default="sandbox",
        metavar="URL|sandbox|cassette:FILE",
        help="where to forward: a gateway base URL, the embedded sandbox (default), or a cassette to replay",
    )
    proxy.add_argument(
        "--port", type=int, default=8766, help="loopback port (default 8766; 0 picks a free one)"
    )
    proxy.add_argument(
        "--cassette", type=Path, default=None, metavar="FILE", help="also record to this cassette"
    )
    proxy.add_argument(
        "--strict",
        action="store_true",
        help="answer an invalid request here (30000, errordata naming the fields) and never forward it",
    )
    proxy.add_argument(
        "--faults", type=Path, default=None, metavar="FILE", help="faults to inject: the sandbox's fault JSON"
    )
    proxy.add_argument(
        "--ca", type=Path, default=None, metavar="FILE", help="PEM certificates to trust upstream"
    )
    proxy.add_argument(
        "--db", default=None, help="the sandbox's database (default $GWKIT_SANDBOX_DB or .gwkit/sandbox.db)"
    )
    proxy.add_argument(
        "--no-drift",
        action="store_true",
        help="with an http(s) upstream, do not also play the session against a shadow sandbox",
    )
    proxy.add_argument(
        "--journal",
        type=Path,
        default=None,
        metavar="FILE",
        help="journal (default $GWKIT_JOURNAL or .gwkit/journal.db)",
    )
    proxy.add_argument(
        "--show-drift",
        nargs="?",
        const="all",
        default=None,
        metavar="ID",
        help="print the drift the journal keeps (every line of it) and exit: of journal entry ID, or of every entry",
    )


CHECKLIST_HELP = """Your shop under test: a validating proxy (never strict) that leads you through the outcomes
every integration must handle, one payment at a time. Point your shop's gateway base URL at it; it
says the next step ("make one payment in your shop: it will be declined"), arms that outcome for
the next payment, watches the exchanges that follow and gives a verdict with them as evidence. A
step ends at the next step's first payment or when you press Enter (q: finish). With --auto your
own end-to-end tests make the payments (or claim steps by name), and the run ends when the
command after -- exits or on POST /_checklist/finish; it writes --junit and --html and exits 1
when an outcome was mishandled or never exercised (docs/checklist.md)."""


def _add_checklist_command(commands) -> None:
    checklist = commands.add_parser("checklist", help="your shop under test", description=CHECKLIST_HELP)
    checklist.add_argument(
        "--upstream",
        default="sandbox",
        metavar="URL|sandbox|cassette:FILE",
        help="where to forward: a gateway base URL, the embedded sandbox (default), or a cassette to replay",
    )
    checklist.add_argument(
        "--port", type=int, default=8766, help="loopback port (default 8766; 0 picks a free one)"
    )
    checklist.add_argument(
        "--cassette", type=Path, default=None, metavar="FILE", help="also record to this cassette"
    )
    checklist.add_argument(
        "--steps", default=None, metavar="NAME,NAME", help="the steps to run, by name (default: all)"
    )
    checklist.add_argument(
        "--auto", action="store_true", help="unattended (CI): tests make the payments, no terminal"
    )
    checklist.add_argument(
        "--listener",
        default=None,
        metavar="URL",
        help="your shop's URL notification listener: adds the notification steps (the sandbox as upstream)",
    )
    checklist.add_argument(
        "--listener-password",
        default=None,
        metavar="PASSWORD",
        help="the notification password your listener checks signatures with (default: unsigned)",
    )
    checklist.add_argument(
        "--junit", type=Path, default=None, metavar="FILE", help="write a JUnit XML report"
    )
    checklist.add_argument("--html", type=Path, default=None, metavar="FILE", help="write an HTML report")
    checklist.add_argument(
        "--ca", type=Path, default=None, metavar="FILE", help="PEM certificates to trust upstream"
    )
    checklist.add_argument(
        "--db", default=None, help="the sandbox's database (default $GWKIT_SANDBOX_DB or .gwkit/sandbox.db)"
    )
    checklist.add_argument(
        "--journal",
        type=Path,
        default=None,
        metavar="FILE",
        help="journal (default $GWKIT_JOURNAL or .gwkit/journal.db)",
    )
    checklist.add_argument(
        "tests",
        nargs=argparse.REMAINDER,
        metavar="-- COMMAND",
        help="with --auto: after --, the command that runs your tests (GWKIT_CHECKLIST_URL is set for it)",
    )


def run_proxy(args: argparse.Namespace) -> int:
    sb, px, _ = _server_modules()
    if args.show_drift is not None:
        return show_drift(px, args)

    try:
        faults = px.ProxyFaults.from_file(args.faults) if args.faults else px.ProxyFaults()
        box, upstream = _upstream(sb, px, args)
    except (px.FaultsError, ValueError, OSError, sqlite3.Error) as exc:
        print(f"gwkit proxy: {exc}", file=sys.stderr)
        return 2
    shadow = None
    if isinstance(upstream, px.GatewayUpstream) and not args.no_drift:  # the shadow lives for this run only
        shadow = px.Shadow.temporary()
    journal = Journal(args.journal) if args.journal else Journal()
    cassette = Cassette(args.cassette) if args.cassette else None
    proxy = px.Proxy(
        upstream,
        strict=args.strict,
        faults=faults,
        journal=journal,
        cassette=cassette,
        echo=_say,
        shadow=shadow,
    )
    try:
        sock = px.app.bind("127.0.0.1", args.port)
    except OSError as exc:
        print(f"gwkit proxy: cannot listen on 127.0.0.1:{args.port}: {exc.strerror}", file=sys.stderr)
        return 1
    host, port = sock.getsockname()[:2]
    controls = isinstance(upstream, (px.SandboxUpstream, px.SandboxOverHttp))
    forwarded = "POST /json/ and the sandbox's /_sandbox/ control API" if controls else "POST /json/ only"
    print(f"gwkit proxy listening on http://{host}:{port} (it forwards {forwarded})")
    print(f"  upstream:  {upstream.name} {'' if box else upstream.url}".rstrip())
    if box is not None:
        print(f"  sandbox:   {box.store.path} (any credentials and site reference are mapped to it)")
    print(f"  journal:   {journal.path}")
    if cassette is not None:
        print(f"  cassette:  {cassette.path}")
    print(f"  strict:    {'yes: invalid requests are answered here' if args.strict else 'no'}")
    print(f"  faults:    {len(faults.active())}")
    if shadow is not None:
        print(
            f"  drift:     each answer compared with a shadow sandbox's ({shadow.sandbox.sandbox.store.path})"
        )
    print("Press Ctrl-C to stop.", flush=True)
    server = px.app.server_for(proxy)
    previous_sigterm = signal.signal(signal.SIGTERM, _stop_on_sigterm)
    try:
        server.run(sockets=[sock])
    except (KeyboardInterrupt, _Stopped):
        pass
    finally:
        signal.signal(signal.SIGTERM, previous_sigterm)
        sock.close()
        proxy.close()  # every exchange answered is journalled and recorded before the process ends
        for opened in (box, shadow):
            if opened is not None:
                opened.close()  # the shadow's folder goes with it
    print("gwkit proxy stopped.", flush=True)
    return 0


def _upstream(sb: Any, px: Any, args: argparse.Namespace) -> tuple[Any, Upstream]:
    """The upstream `--upstream` names (and the embedded sandbox, when it is the one)."""
    if args.upstream == "sandbox":
        box = sb.Sandbox(sb.web.server.db_location(args.db) if args.db else sb.default_db_path())
        return box, px.SandboxUpstream(box)
    if args.upstream.startswith("cassette:"):
        return None, px.CassetteUpstream(args.upstream.removeprefix("cassette:"))
    if px.is_sandbox(args.upstream, ca=args.ca):  # its control API is proxied too
        return None, px.SandboxOverHttp(args.upstream, ca=args.ca)
    return None, px.GatewayUpstream(args.upstream, ca=args.ca)


def show_drift(px: Any, args: argparse.Namespace) -> int:
    """`gwkit proxy --show-drift [ID]`: the drift the journal keeps, every line of it."""
    path = args.journal or journal_path()
    if not Path(path).exists():
        print(f"gwkit proxy: no journal at {path}", file=sys.stderr)
        return 2
    wanted = None if args.show_drift == "all" else args.show_drift
    if wanted is not None and not wanted.isdigit():
        print(
            f"gwkit proxy: --show-drift takes a journal entry's id (a number), not {wanted!r}",
            file=sys.stderr,
        )
        return 2
    Journal(path)  # its tables, for a journal no proxy has written yet
    notes = px.ProxyNotes(path)
    try:
        entries = notes.drift(int(wanted) if wanted is not None else None)
    finally:
        notes.close()
    for entry in entries:
        print(entry)
    if not entries:
        print(f"no drift in {path}" + (f" for journal entry {wanted}" if wanted else ""))
    return 0


def _server_modules():
    """The sandbox, the proxy and the checklist, which need the [sandbox] extra: imported only to run them."""
    from . import checklist, proxy, sandbox

    return sandbox, proxy, checklist


def _say(line: str) -> None:
    print(line, flush=True)


def run_sandbox(args: argparse.Namespace) -> int:
    sb, _, _ = _server_modules()

    try:
        accounts = sb.load_accounts(args.accounts) if args.accounts else None
    except (sb.AccountsError, OSError) as exc:
        print(f"gwkit sandbox: {exc}", file=sys.stderr)
        return 2
    db = sb.web.server.db_location(args.db) if args.db else sb.default_db_path()
    if args.workers > 1 and not sb.gateway.store.serves_workers(db):
        print(
            "gwkit sandbox: --workers needs a postgresql:// --db (SQLite has one writer: serve it from one "
            "process)",
            file=sys.stderr,
        )
        return 2
    try:  # workers each listen on the port (SO_REUSEPORT); their parent only holds it
        sock = sb.web.server.bind(
            args.host, args.port, shared=args.worker or args.workers > 1, listen=args.workers == 1
        )
    except OSError as exc:
        print(f"gwkit sandbox: cannot listen on {args.host}:{args.port}: {exc.strerror}", file=sys.stderr)
        return 1
    _log_to_stderr()  # from here: opening runs the days a stopped clock move left undone, and says so
    try:
        hosts = sb.gateway.notifications.notification_hosts(
            args.host, team=args.accounts is not None, allowed=args.notify_host or ()
        )
        sandbox = sb.Sandbox(db, accounts=accounts, notification_hosts=hosts, move_lease=args.move_lease)
    except (OSError, sqlite3.Error, sb.gateway.store.StoreError) as exc:
        sock.close()
        print(f"gwkit sandbox: cannot open the database {sb.gateway.store.shown(db)}: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:  # Ctrl-C while catching up: the days run so far are kept
        sock.close()
        print("gwkit sandbox stopped before serving.", flush=True)
        return 130
    if not args.worker:
        _print_banner(sandbox, sock, args.workers, args.accounts)
    if args.workers > 1:
        sandbox.close()  # the workers open their own; this process only watches them
        try:
            return sb.supervisor.supervise(_worker_command(args, sock), args.workers, db)
        finally:
            sock.close()
    if args.ready_fd is not None:
        os.write(args.ready_fd, b"1")
        os.close(args.ready_fd)
    return _serve(sb, sandbox, sock, args)


def _print_banner(sandbox, sock: socket.socket, workers: int, accounts_file: str | None) -> None:
    """What to connect with. A password from an accounts file is never shown (the output may go to a
    system journal); only the generated default account's, which docs/sandbox.md publishes anyway."""
    host, port = sock.getsockname()[:2]
    shown = f"[{host}]" if ":" in host else host
    print(f"gwkit sandbox listening on http://{shown}:{port}")
    print(f"  gateway endpoint: http://{shown}:{port}/json/")
    print(f"  control API:      http://{shown}:{port}/_sandbox/ (same credentials)")
    print(f"  database:         {sandbox.store.path}")
    print(f"  clock:            {sandbox.clock.now():%Y-%m-%dT%H:%M:%S}")
    for account in sandbox.accounts.values():
        print(f"  user name:        {account.username}")
        shown = f"(as in {accounts_file})" if accounts_file else account.password
        print(f"  password:         {shown}")
        print(f"  site references:  {', '.join(account.sitereferences)}")
    if workers > 1:
        print(f"  workers:          {workers} processes on this port, one database")
    print("Press Ctrl-C to stop.", flush=True)


def _serve(sb, sandbox, sock: socket.socket, args: argparse.Namespace) -> int:
    server = sb.web.server.server_for(sandbox, log_level="info", limits=_limits(sb.ServerLimits, args))
    previous_sigterm = signal.signal(signal.SIGTERM, _stop_on_sigterm)
    try:
        server.run(sockets=[sock])  # uvicorn stops on SIGINT and SIGTERM, then re-raises the signal
    except (KeyboardInterrupt, _Stopped):
        pass
    finally:
        signal.signal(signal.SIGTERM, previous_sigterm)
        _log_write_turns(sandbox.store)
        sandbox.close()
        sock.close()
    if not args.worker:
        print("gwkit sandbox stopped.", flush=True)
    return 0


def _log_write_turns(store) -> None:
    """How long this process's writes waited for their turn (their locks, on PostgreSQL): whether
    the workers, or a long clock move, hold one another up (docs/team-sandbox.md)."""
    turns = store.write_turns()
    if turns["transactions"]:
        logging.getLogger("gwkit.sandbox").info(
            "process %d: %d write transactions waited %.3f s in all for their turn (longest %.1f ms)",
            os.getpid(),
            turns["transactions"],
            turns["seconds"],
            turns["longest"] * 1000,
        )


def _positive_seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = 0.0
    if not value > 0 or value == float("inf"):
        raise argparse.ArgumentTypeError(f"{text!r} is not a positive number of seconds")
    return value


def _worker_command(args: argparse.Namespace, sock: socket.socket) -> list[str]:
    """How a worker is started: this command on the port `sock` holds, one worker each."""
    host, port = sock.getsockname()[:2]
    command = [sys.executable, "-m", "gwkit.cli", "sandbox", "--worker", "--host", host, "--port", str(port)]
    for flag, value in (
        ("--accounts", args.accounts),
        ("--max-connections", args.max_connections),
        ("--keep-alive", args.keep_alive),
        ("--header-timeout", args.header_timeout),
        ("--threads", args.threads),
        ("--delayed-per-site", args.delayed_per_site),
        ("--move-lease", args.move_lease),
    ):
        if value is not None:
            command += [flag, str(value)]
    for host in args.notify_host or ():
        command += ["--notify-host", host]
    return command


def _limits(limits_class, args: argparse.Namespace):
    given = {
        "max_connections": args.max_connections,
        "keep_alive_seconds": args.keep_alive,
        "header_read_seconds": args.header_timeout,
        "threads": args.threads,
        "delayed_per_site": args.delayed_per_site,
    }
    return limits_class(**{name: value for name, value in given.items() if value is not None})


def _log_to_stderr() -> None:
    """The sandbox's own log (internal errors with their reference, long clock moves) on stderr."""
    logger = logging.getLogger("gwkit.sandbox")
    logger.setLevel(logging.INFO)
    if any(h.get_name() == _STDERR_HANDLER for h in logger.handlers):
        return  # a second run in the same process
    handler = logging.StreamHandler(sys.stderr)
    handler.set_name(_STDERR_HANDLER)
    handler.setFormatter(logging.Formatter("%(levelname)s:  gwkit.sandbox: %(message)s"))
    logger.addHandler(handler)


_STDERR_HANDLER = "gwkit sandbox stderr"


class _Stopped(GwkitError):
    """SIGTERM, after uvicorn's graceful shutdown."""


def _stop_on_sigterm(signum, frame) -> None:
    raise _Stopped()


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
