"""The team sandbox on PostgreSQL: AUTH throughput of several tenants with 1, 2 and 4 workers
against the single-process SQLite sandbox, the time their writes waited for their locks, and the
subscription engine against its insert floor.

Each server is `gwkit sandbox` in its own process tree (`--workers N` on PostgreSQL, in a fresh
schema of the database scripts/pg-up starts, or of $GWKIT_PG_URL; without one it says so and
skips), serving `--tenants` users of one site each (an accounts file). The load comes from this
process: `--concurrency` threads, thread i paying as tenant i modulo their number, each posting AUTH
requests over one keep-alive connection, until the bounded number of requests is done; the median
of `--rounds` rounds, servers taking turns.

Lock waiting, two ways, per request: each server process logs at exit how long its write
transactions took from asking for their turn to holding it (their advisory locks on PostgreSQL,
SQLite's one writer; one round trip included, so it grows with the machine's load too), summed here
over the processes; and PostgreSQL itself is asked every 2 ms how many of the server's sessions
wait for an advisory lock (`LockWaits`: summed over time, the time spent waiting for locks and
nothing else). With a lock per site, a tenant's write waits only for writes of the same tenant: with
one client per tenant (`--tenants 32` at concurrency 32) waiting should not grow with the workers;
with several clients per tenant, a tenant's own payments take turns. Two cores cannot show a
speed-up (they also run PostgreSQL and the load). CPU per request is each part's CPU time over the
requests served.

The engine: `--subscriptions` monthly subscriptions (10,000 by default) moved on 12 months on
PostgreSQL, against its insert floor: one transaction inserting as many rows of the same shape as
the engine made payments (one `transactions` row and one `subscription_payments` row each). The
statements the move sent to PostgreSQL are counted (each `execute` of psycopg's cursors, and each
row of an `executemany`), with the commonest shown: where the round trips go.

    python benchmarks/team_sandbox.py [--requests 2000] [--concurrency 32] [--workers 1,2,4]
                                      [--tenants 32] [--rounds 3] [--subscriptions 10000]
                                      [--engine-only] [--database gwkit_bench]

Machine-readable lines: `ratio <name> <value>`, `seconds <name> <value>` and `ms <name> <value>`.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import secrets
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime
from pathlib import Path
from urllib.parse import quote

from sandbox_throughput import AUTH_BODY, SITE, run_level  # the same AUTH load as the single-process one

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def postgres_server(database: str = "gwkit_bench") -> str | None:
    """The database scripts/pg-up starts (or $GWKIT_PG_URL), or None, saying why, where there is none.

    A database of its own: a long transaction of another session in the same database (a test run
    beside the benchmark) keeps PostgreSQL from dropping the row versions the engine's updates leave,
    and every later read of what is due walks them."""
    done = subprocess.run([str(ROOT / "scripts" / "pg-up"), database], capture_output=True, text=True)
    if done.returncode != 0:
        print(f"team_sandbox: skipped, no PostgreSQL ({done.stderr.strip()})")
        return None
    return done.stdout.strip().splitlines()[-1]


def fresh_schema(server: str) -> tuple[str, str]:
    import psycopg

    name = f"bench_{secrets.token_hex(4)}"
    with psycopg.connect(server, autocommit=True) as conn:
        conn.execute(f"CREATE SCHEMA {name}")
    return name, f"{server}{'&' if '?' in server else '?'}options={quote(f'-csearch_path={name}')}"


def drop_schema(server: str, name: str) -> None:
    import psycopg

    with psycopg.connect(server, autocommit=True) as conn:
        conn.execute(f"DROP SCHEMA {name} CASCADE")


class Server:
    """`gwkit sandbox` on a free port; its base URL read from its first line, ready once it says so."""

    def __init__(self, db: str, workers: int, accounts: Path, log: Path):
        self.log = log
        command = [
            sys.executable,
            "-m",
            "gwkit.cli",
            "sandbox",
            "--db",
            db,
            "--port",
            "0",
            "--workers",
            str(workers),
            "--accounts",
            str(accounts),
        ]
        with log.open("w") as stderr:
            self.process = subprocess.Popen(
                command, stdout=subprocess.PIPE, stderr=stderr, text=True, cwd=ROOT
            )
        first = self.process.stdout.readline()
        if " on http" not in first:
            self.process.kill()
            raise RuntimeError(f"the sandbox did not start: {first!r}")
        self.base_url = first.split(" on ")[1].strip()
        ready = "  worker processes:" if workers > 1 else "Press Ctrl-C"
        for line in self.process.stdout:
            if line.startswith(ready):
                break

    def stop(self) -> dict[str, float]:
        """Stop it; what its processes logged of their write transactions' waiting, summed."""
        self.process.terminate()
        self.process.wait(timeout=60)
        turns = {"transactions": 0.0, "seconds": 0.0, "longest": 0.0}
        for match in WAITED.finditer(self.log.read_text()):
            turns["transactions"] += int(match["transactions"])
            turns["seconds"] += float(match["seconds"])
            turns["longest"] = max(turns["longest"], float(match["longest"]) / 1000)
        return turns


class LockWaits:
    """PostgreSQL's own count of the server's sessions waiting for an advisory lock, sampled every
    few milliseconds while a round runs: their sum over time is the time requests spent waiting for
    locks (Little's law), whatever the processes' scheduling on a busy machine adds to a round trip."""

    def __init__(self, server_url: str, application: str | None):
        import psycopg

        self._conn = psycopg.connect(server_url, autocommit=True)
        self._application = application  # None: a SQLite server, nothing to sample
        self.seconds = 0.0  # session-seconds spent waiting
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._sample)

    def __enter__(self) -> LockWaits:
        if self._application is not None:
            self._thread.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join()
        self._conn.close()

    def _sample(self) -> None:
        last = time.perf_counter()
        while not self._stop.wait(SAMPLE_SECONDS):
            (waiting,) = self._conn.execute(
                "SELECT count(*) FROM pg_stat_activity WHERE application_name = %s "
                "AND wait_event_type = 'Lock' AND wait_event = 'advisory'",
                (self._application,),
            ).fetchone()
            now = time.perf_counter()
            self.seconds += waiting * (now - last)
            last = now


SAMPLE_SECONDS = 0.002  # how often LockWaits asks PostgreSQL

WAITED = re.compile(
    r"(?P<transactions>\d+) write transactions waited (?P<seconds>[\d.]+) s in all for their turn "
    r"\(longest (?P<longest>[\d.]+) ms\)"
)


def application_of(db: str) -> str | None:
    """The application name a PostgreSQL server's sessions carry (its schema's), None for SQLite."""
    return db.rpartition("application_name=")[2] if "application_name=" in db else None


def tenants(count: int) -> tuple[str, list[tuple[tuple[str, str], bytes]]]:
    """An accounts file of `count` users with a site each, and each one's credentials and AUTH body."""
    lines, callers = [], []
    for number in range(count):
        user, password, site = (
            f"tenant{number}@example.test",
            f"tenant-{number}-password",
            f"test_tenant{number:05d}",
        )
        lines += [
            "[[account]]",
            f'username = "{user}"',
            f'password = "{password}"',
            f'sitereferences = ["{site}"]',
            "",
        ]
        body = json.loads(AUTH_BODY)
        body["alias"], body["request"][0]["sitereference"] = user, site
        callers.append(((user, password), json.dumps(body).encode()))
    return "\n".join(lines), callers


def throughput(args: argparse.Namespace, server_url: str) -> None:
    schemas: list[str] = []
    served: dict[str, int] = {}  # requests each server answered, its connections' first ones included
    sampled: dict[str, float] = {}  # session-seconds PostgreSQL saw the server's sessions wait for a lock
    turns: dict[str, dict[str, float]] = {}
    with tempfile.TemporaryDirectory(prefix="gwkit-team-bench-") as tmp:
        os.environ["GWKIT_SANDBOX_KEY_FILE"] = str(Path(tmp) / "team.key")
        accounts_text, callers = tenants(args.tenants)
        accounts = Path(tmp) / "accounts.toml"
        accounts.write_text(accounts_text)
        dbs = {"sqlite": (os.path.join(tmp, "bench.db"), 1)}
        for workers in args.workers:
            name, url = fresh_schema(server_url)
            schemas.append(name)
            dbs[f"postgresql_{workers}w"] = (f"{url}&application_name={name}", workers)
        servers = {}
        try:
            for kind, (db, workers) in dbs.items():
                servers[kind] = Server(db, workers, accounts, Path(tmp) / f"{kind}.log")
                served[kind] = 0
                sampled[kind] = 0.0
            results: dict[str, list[float]] = {kind: [] for kind in servers}
            busy: dict[str, list[dict[str, float]]] = {kind: [] for kind in servers}
            for round_ in range(args.rounds):
                order = list(servers) if round_ % 2 == 0 else list(reversed(servers))
                for kind in order:
                    before, started = cpu_seconds(servers[kind].process.pid), time.perf_counter()
                    with LockWaits(server_url, application_of(dbs[kind][0])) as waits:
                        results[kind].append(
                            run_level(servers[kind].base_url, args.concurrency, args.requests, callers)
                        )
                    sampled[kind] += waits.seconds
                    served[kind] += args.requests + args.concurrency
                    after, elapsed = cpu_seconds(servers[kind].process.pid), time.perf_counter() - started
                    busy[kind].append(
                        {part: used_between(before[part], after[part]) / elapsed for part in after}
                    )
        finally:
            for kind, server in servers.items():
                turns[kind] = server.stop()
            for name in schemas:
                drop_schema(server_url, name)
    medians = {kind: statistics.median(values) for kind, values in results.items()}
    print(
        f"AUTH over loopback HTTP of {args.tenants} tenants at concurrency {args.concurrency}, "
        f"{args.requests} requests, median of {args.rounds} rounds"
    )
    cores = os.cpu_count() or 1
    print(
        f"{'':>18} {'req/s':>8}   cores busy (of {cores}): load, sandbox, PostgreSQL, all"
        "   CPU ms/request: sandbox, PostgreSQL"
        "   ms/request: asking for the locks to holding them (longest), waiting for them (sampled)"
    )
    for kind, value in medians.items():
        use = {part: statistics.median(run[part] for run in busy[kind]) for part in busy[kind][0]}
        asked = turns[kind]["seconds"] / served[kind] * 1000
        waited = sampled[kind] / (args.requests * args.rounds) * 1000
        print(
            f"  {kind:>16} {value:8.0f}   {use['load']:.2f} {use['sandbox']:.2f} {use['postgres']:.2f} "
            f"{sum(use.values()):.2f}   {use['sandbox'] / value * 1000:6.3f} {use['postgres'] / value * 1000:6.3f}"
            f"   {asked:7.3f} ({turns[kind]['longest'] * 1000:5.1f})  {waited:7.3f}"
        )
        print(f"ms locks_asked_to_held_per_request_{kind} {asked:.4f}")
        print(f"ms lock_wait_per_request_{kind} {waited:.4f}")
        print(f"ms sandbox_cpu_per_request_{kind} {use['sandbox'] / value * 1000:.4f}")
    for kind, value in medians.items():
        if kind != "sqlite":
            print(f"ratio {kind}_vs_sqlite {value / medians['sqlite']:.3f}")
    one = medians.get("postgresql_1w")
    for workers in args.workers:
        if one and workers != 1:
            print(f"ratio postgresql_{workers}w_vs_1w {medians[f'postgresql_{workers}w'] / one:.3f}")
    for workers in args.workers:
        if "postgresql_1w" in sampled and workers != 1:
            waited = sampled[f"postgresql_{workers}w"] * 1000 / (args.requests * args.rounds)
            print(
                f"ms lock_wait_postgresql_{workers}w_minus_1w {waited - sampled['postgresql_1w'] * 1000 / (args.requests * args.rounds):.4f}"
            )


def used_between(before: dict[int, float], after: dict[int, float]) -> float:
    """CPU time the processes used between two readings: a process that ended meanwhile is left out
    (its time is gone from /proc), one that started counts whole."""
    return sum(used - before.get(pid, 0.0) for pid, used in after.items())


def cpu_seconds(server_pid: int) -> dict[str, dict[int, float]]:
    """CPU time used so far, process by process, by this process (the load), the sandbox's process
    tree, and PostgreSQL's processes: whether the machine's cores, not the sandbox, bound the throughput."""
    ticks = os.sysconf("SC_CLK_TCK")
    parts: dict[str, dict[int, float]] = {
        "load": {os.getpid(): time.process_time()},
        "sandbox": {},
        "postgres": {},
    }
    tree = {server_pid}
    stats = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                text = (entry / "stat").read_text()
            except OSError:  # gone meanwhile
                continue
            name, fields = text[text.index("(") + 1 : text.rindex(")")], text[text.rindex(")") + 2 :].split()
            stats.append((int(entry.name), name, int(fields[1]), (int(fields[11]) + int(fields[12])) / ticks))
    grown = True
    while grown:  # the server's descendants: its worker processes
        before = len(tree)
        tree.update(pid for pid, _, parent, _ in stats if parent in tree)
        grown = len(tree) > before
    for pid, name, _, used in stats:
        if pid in tree:
            parts["sandbox"][pid] = used
        elif name == "postgres":
            parts["postgres"][pid] = used
    return parts


def engine(args: argparse.Namespace, server_url: str) -> None:
    from gwkit.sandbox import Sandbox
    from gwkit.sandbox.gateway.envelopes import MAX_REQUEST_OBJECTS

    name, url = fresh_schema(server_url)
    try:
        with tempfile.TemporaryDirectory(prefix="gwkit-team-bench-") as tmp:
            os.environ["GWKIT_SANDBOX_KEY_FILE"] = str(Path(tmp) / "engine.key")
            sandbox = Sandbox(url, clock_start=datetime(2026, 1, 1, 8, 0))
            account = sandbox.default_account
            requests = [subscription_request(i) for i in range(args.subscriptions)]
            for start in range(0, len(requests), MAX_REQUEST_OBJECTS):
                sandbox.gateway.process(
                    {"alias": account.username, "request": requests[start : start + MAX_REQUEST_OBJECTS]},
                    account,
                )
            with counted_statements() as statements:
                started, cpu = time.perf_counter(), time.process_time()
                made = sandbox.advance(to="2027-01-01T08:00:00")["subscriptions"]["made"]
                engine_seconds = time.perf_counter() - started
                engine_cpu = time.process_time() - cpu
            floor_seconds = insert_floor(sandbox, made)
            sandbox.close()
    finally:
        drop_schema(server_url, name)
    print(
        f"engine on PostgreSQL: {args.subscriptions} subscriptions x 12 months, {made} payments in "
        f"{engine_seconds:.1f} s ({engine_cpu:.1f} s CPU of this process); insert floor {floor_seconds:.1f} s"
    )
    print(f"statements sent during the move: {statements.total():,}; the commonest:")
    for text, count in statements.most_common(8):
        print(f"  {count:>7,}  {text}")
    print(f"count statements_engine_postgresql {statements.total()}")
    print(f"seconds engine_postgresql {engine_seconds:.2f}")
    print(f"seconds insert_floor_postgresql {floor_seconds:.2f}")
    print(f"ratio engine_vs_insert_floor_postgresql {engine_seconds / floor_seconds:.3f}")


@contextmanager
def counted_statements() -> Iterator[Counter]:
    """Count the statements psycopg sends meanwhile, by the start of their text (this benchmark's own
    measurement: psycopg's cursor methods wrapped while it runs, put back after)."""
    import psycopg

    counts: Counter = Counter()
    execute, executemany = psycopg.Cursor.execute, psycopg.Cursor.executemany

    def counted_execute(self, query, params=None, **kwargs):
        counts[" ".join(str(query).split())[:90]] += 1
        return execute(self, query, params, **kwargs)

    def counted_executemany(self, query, params_seq, **kwargs):
        rows = list(params_seq)
        counts[" ".join(str(query).split())[:90]] += len(rows)
        return executemany(self, query, rows, **kwargs)

    psycopg.Cursor.execute, psycopg.Cursor.executemany = counted_execute, counted_executemany
    try:
        yield counts
    finally:
        psycopg.Cursor.execute, psycopg.Cursor.executemany = execute, executemany


def insert_floor(sandbox, payments: int) -> float:
    """One transaction inserting, for each payment, a `transactions` row and a `subscription_payments`
    row shaped as the engine's (into copies of those tables, dropped after)."""
    store = sandbox.store
    with store.write() as conn:
        sample = conn.execute(
            "SELECT * FROM transactions WHERE accounttypedescription = 'RECUR' LIMIT 1"
        ).fetchone()
        # The store's Row is a tuple: iterating it gives values, its keys() the column names.
        columns = [c for c in sample.keys() if c != "id"]  # noqa: SIM118
        conn.raw.execute("CREATE TABLE floor_transactions (LIKE transactions INCLUDING ALL)")
        conn.raw.execute("CREATE TABLE floor_payments (LIKE subscription_payments INCLUDING ALL)")
    rows = [
        [f"floor-{i}" if c == "transactionreference" else sample[c] for c in columns] for i in range(payments)
    ]
    claims = [(i + 1, 1, "2026-02-01", "2026-02-01", f"floor-{i}", "0", "1050") for i in range(payments)]
    started = time.perf_counter()
    with store.write() as conn:
        conn.executemany(
            f"INSERT INTO floor_transactions ({', '.join(columns)}) VALUES ({', '.join('?' * len(columns))})",
            rows,
        )
        conn.executemany(
            "INSERT INTO floor_payments (number, subscription_id, duedate, madedate, "
            "transactionreference, errorcode, baseamount) VALUES (?, ?, ?, ?, ?, ?, ?)",
            claims,
        )
    elapsed = time.perf_counter() - started
    with store.write() as conn:
        conn.raw.execute("DROP TABLE floor_transactions, floor_payments")
    return elapsed


def subscription_request(index: int) -> dict[str, str]:
    return {
        "requesttypedescriptions": ["AUTH", "SUBSCRIPTION"],
        "sitereference": SITE,
        "accounttypedescription": "ECOM",
        "currencyiso3a": "GBP",
        "baseamount": str(1000 + index % 500),
        "orderreference": f"bench-{index}",
        "pan": "4111111111111111",
        "expirydate": "12/2030",
        "securitycode": "123",
        "subscriptiontype": "RECURRING",
        "subscriptionunit": "MONTH",
        "subscriptionfrequency": "1",
        "subscriptionnumber": "1",
        "subscriptionfinalnumber": "0",
        "subscriptionbegindate": f"2026-01-{1 + index % 28:02d}",
        "credentialsonfile": "1",
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=2000, help="AUTH requests per round and server")
    parser.add_argument("--concurrency", type=int, default=32)
    parser.add_argument("--workers", default="1,2,4", help="worker counts on PostgreSQL, comma separated")
    parser.add_argument("--tenants", type=int, default=32, help="users paying at once, a site each")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--subscriptions", type=int, default=10_000, help="0 skips the engine")
    parser.add_argument(
        "--database", default="gwkit_bench", help="the database scripts/pg-up makes and starts"
    )
    parser.add_argument("--engine-only", action="store_true", help="only the engine, not the AUTH throughput")
    args = parser.parse_args()
    args.workers = [int(w) for w in args.workers.split(",")]
    server_url = postgres_server(args.database)
    if server_url is None:
        return 0
    if not args.engine_only:
        throughput(args, server_url)
    if args.subscriptions:
        engine(args, server_url)
    return 0


if __name__ == "__main__":
    sys.exit(main())
