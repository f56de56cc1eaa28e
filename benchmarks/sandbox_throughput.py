"""AUTH requests per second of the sandbox over loopback HTTP, against a minimal JSON endpoint.

Both servers run in their own process with the same uvicorn settings (`gwkit.sandbox.web.server.
uvicorn_config`): the sandbox answering real AUTH requests in its worker threads (validation, test
acquirer, card encryption, an SQLite write per request), and a minimal Starlette app whose one route parses
the body and answers a fixed JSON record. The load comes from this process: at each concurrency
level, that many threads each post over one keep-alive httpx connection until the bounded
number of requests is done. Rounds alternate which server goes first; the median is reported.

    python benchmarks/sandbox_throughput.py [--requests 2000] [--levels 1,32] [--rounds 3] [--before DIR]

Besides requests per second it reports each server's CPU time per request (its process's user +
system time over the run, from /proc): on a 2-core machine the load generator shares the cores, so
at concurrency 32 req/s is bounded by the client as much as by the server, and wanders with
whatever else runs; CPU per request is the server's own cost and much steadier.

`loop` is the same sandbox with every request answered on the server's event loop, as it was
before it had worker threads: what the threads (and their group commit) cost or gain.

Two floors show what is left for the sandbox's own HTTP side to win, each a bare Starlette endpoint
on the same settings answering on its event loop:

- `gateway`: parses the body and answers what `Gateway.process` answers (the whole AUTH: validation,
  test acquirer, record, the SQLite write) with no Basic authentication, routing, limits or fault
  injection: the sandbox with an HTTP side that cost nothing beyond bare Starlette's;
- `write`: parses the body and makes only the SQLite write of an AUTH through gwkit's store (the
  site's clock, a reference, the card's row, the transaction row, the commit) with a fixed record:
  any sandbox that keeps each payment before answering pays at least this.

`--before DIR` also serves the sandbox of another checkout (e.g. `git worktree add /tmp/before
d90ab1e`) in the same run, so a change to the server is compared with the code before it.

Target (issue 3): the sandbox reaches at least half of the minimal endpoint's throughput.
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import httpx

ROOT = Path(
    os.environ.get("GWKIT_BENCH_ROOT") or Path(__file__).resolve().parents[1]
)  # --before: another checkout
sys.path.insert(0, str(ROOT))

USERNAME, PASSWORD, SITE = "gwkit_sandbox", "gwkit-sandbox-password", "test_gwkit12345"
AUTH_BODY = json.dumps(
    {
        "alias": USERNAME,
        "version": "1.00",
        "request": [
            {
                "requesttypedescriptions": ["AUTH"],
                "sitereference": SITE,
                "accounttypedescription": "ECOM",
                "currencyiso3a": "GBP",
                "baseamount": "1050",
                "orderreference": "bench",
                "pan": "4111111111111111",
                "expirydate": "12/2030",
                "securitycode": "123",
            }
        ],
    }
).encode()
READY = "READY "
GOAL = 0.90  # sandbox / bare Starlette, at every concurrency (issue 16 asks it at concurrency 1)


# servers (run in child processes)


def minimal_app():
    from starlette.applications import Starlette
    from starlette.requests import Request
    from starlette.responses import JSONResponse
    from starlette.routing import Route

    answer = {
        "requestreference": "W10-bench000",
        "version": "1.00",
        "secrand": "x1",
        "response": [{"errorcode": "0", "errormessage": "Ok", "requesttypedescription": "AUTH"}],
    }

    async def gateway(request: Request) -> JSONResponse:
        json.loads(await request.body())
        return JSONResponse(answer)

    return Starlette(routes=[Route("/json/", gateway, methods=["POST"])])


def floor_app(kind: str, db: str):
    """A bare Starlette endpoint doing the gateway's work (`gateway`) or only its SQLite write (`write`)."""
    from starlette.applications import Starlette
    from starlette.requests import Request
    from starlette.responses import JSONResponse
    from starlette.routing import Route

    from gwkit.interface.wire import TIMESTAMP
    from gwkit.sandbox.gateway.core import Gateway

    gateway = Gateway(db)
    account = gateway.default_account
    store, clock = gateway.store, gateway.clock
    record = {
        "errorcode": "0",
        "errormessage": "Ok",
        "requesttypedescription": "AUTH",
        "sitereference": SITE,
        "accounttypedescription": "ECOM",
        "currencyiso3a": "GBP",
        "baseamount": "1050",
        "settlestatus": "0",
        "paymenttypedescription": "VISA",
        "maskedpan": "411111######1111",
        "orderreference": "bench",
    }

    def write_only(body: dict) -> dict:
        request = body["request"][0]
        with store.write() as conn:
            timestamp = clock.now(SITE).strftime(TIMESTAMP)
            (reference,) = store.reserve_references(conn, 1)
            card_id = store.card_for(conn, request["pan"], request["expirydate"], "VISA")
            kept = {**record, "transactionreference": reference, "transactionstartedtimestamp": timestamp}
            store.add_transaction(conn, kept, card_id=card_id)
        return {"requestreference": "W10-bench000", "version": "1.00", "response": [kept]}

    def whole_auth(body: dict) -> dict:
        return gateway.process(body, account)

    work = write_only if kind == "write" else whole_auth

    async def endpoint(request: Request) -> JSONResponse:
        return JSONResponse(work(json.loads(await request.body())))

    return Starlette(routes=[Route("/json/", endpoint, methods=["POST"])])


def serve(kind: str, db: str | None) -> None:
    import uvicorn

    from gwkit.sandbox.web.server import bind, server_for, uvicorn_config

    if kind == "sandbox":
        from gwkit.sandbox import Sandbox

        server = server_for(Sandbox(db))  # gateway work in its worker threads, as `gwkit sandbox` runs it
    elif kind == "loop":  # the same sandbox with every request answered on the event loop: no threads
        from gwkit.sandbox import Sandbox
        from gwkit.sandbox.web.app import create_app
        from gwkit.sandbox.web.workers import Workers

        server = uvicorn.Server(uvicorn_config(create_app(Sandbox(db), workers=Workers(on_event_loop=True))))
    elif kind in ("gateway", "write"):
        server = uvicorn.Server(uvicorn_config(floor_app(kind, db)))
    else:
        server = uvicorn.Server(uvicorn_config(minimal_app()))
    sock = bind("127.0.0.1", 0)
    print(f"{READY}http://127.0.0.1:{sock.getsockname()[1]}", flush=True)
    server.run(sockets=[sock])


class Server:
    """A server child process; its base URL is read from its first line of output."""

    def __init__(self, kind: str, db: str | None = None, root: Path = ROOT):
        args = [sys.executable, __file__, "--serve", kind] + (["--db", db] if db else [])
        self.process = subprocess.Popen(
            args,
            stdout=subprocess.PIPE,
            text=True,
            cwd=root,
            env={**os.environ, "GWKIT_BENCH_ROOT": str(root)},
        )
        line = self.process.stdout.readline()
        if not line.startswith(READY):
            self.process.kill()
            raise RuntimeError(f"{kind} server did not start: {line!r}")
        self.base_url = line[len(READY) :].strip()

    def cpu_seconds(self) -> float:
        return process_cpu_seconds(self.process.pid)

    def stop(self) -> None:
        self.process.terminate()
        self.process.wait(timeout=30)


def process_cpu_seconds(pid: int) -> float:
    """User + system CPU time of a process so far (Linux /proc)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


# load


def run_level(
    base_url: str, concurrency: int, requests: int, callers: list[tuple[tuple[str, str], bytes]] | None = None
) -> float:
    """Requests per second with `concurrency` threads sharing `requests` posts. `callers`: (user name
    and password, AUTH body) of each tenant, thread i posting as tenant i modulo their number
    (benchmarks/team_sandbox.py); by default the one default account."""
    callers = callers or [((USERNAME, PASSWORD), AUTH_BODY)]
    per_thread = [
        requests // concurrency + (1 if i < requests % concurrency else 0) for i in range(concurrency)
    ]
    clients = [
        httpx.Client(
            base_url=base_url,
            auth=callers[i % len(callers)][0],
            timeout=60,
            transport=transport(),
            headers={"content-type": "application/json"},
        )
        for i in range(concurrency)
    ]
    bodies = [callers[i % len(callers)][1] for i in range(concurrency)]
    for client, body in zip(clients, bodies, strict=True):  # open every connection before the clock starts
        check(client.post("/json/", content=body))
    barrier = threading.Barrier(concurrency + 1)
    failures: list[BaseException] = []

    def worker(client: httpx.Client, count: int, body: bytes) -> None:
        barrier.wait()
        try:
            for _ in range(count):
                check(client.post("/json/", content=body))
        except BaseException as exc:  # reported after the run
            failures.append(exc)

    threads = [
        threading.Thread(target=worker, args=(c, n, body))
        for c, n, body in zip(clients, per_thread, bodies, strict=True)
    ]
    for thread in threads:
        thread.start()
    barrier.wait()
    started = time.perf_counter()
    for thread in threads:
        thread.join()
    elapsed = time.perf_counter() - started
    for client in clients:
        client.close()
    if failures:
        raise failures[0]
    return requests / elapsed


def transport() -> httpx.HTTPTransport:
    # httpx writes a request's headers and body separately: without TCP_NODELAY, Nagle's algorithm
    # holds the body back until the server's delayed ACK, ~40 ms per request on loopback.
    return httpx.HTTPTransport(socket_options=[(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)])


def check(response: httpx.Response) -> None:
    response.raise_for_status()
    record = response.json()["response"][0]
    if record["errorcode"] != "0":
        raise RuntimeError(f"AUTH failed: {record}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=2000, help="requests per level and server")
    parser.add_argument("--levels", default="1,32", help="concurrency levels, comma separated")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument(
        "--before", type=Path, help="also serve the sandbox of this checkout (the code before a change)"
    )
    parser.add_argument(
        "--serve", choices=("sandbox", "loop", "minimal", "gateway", "write"), help=argparse.SUPPRESS
    )
    parser.add_argument("--db", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve:
        serve(args.serve, args.db)
        return 0
    levels = [int(level) for level in args.levels.split(",")]
    with tempfile.TemporaryDirectory(prefix="gwkit-bench-") as tmp:
        servers = {
            "minimal": Server("minimal"),
            "sandbox": Server("sandbox", os.path.join(tmp, "bench.db")),
            "loop": Server("loop", os.path.join(tmp, "loop.db")),
            "gateway": Server("gateway", os.path.join(tmp, "gateway.db")),
            "write": Server("write", os.path.join(tmp, "write.db")),
        }
        if args.before:
            servers["before"] = Server("sandbox", os.path.join(tmp, "before.db"), root=args.before.resolve())
        try:
            rates = {(kind, level): [] for kind in servers for level in levels}
            cpu = {(kind, level): [] for kind in servers for level in levels}
            for round_ in range(args.rounds):
                order = list(servers) if round_ % 2 == 0 else list(reversed(servers))
                for level in levels:
                    for kind in order:
                        used = servers[kind].cpu_seconds()
                        rates[kind, level].append(run_level(servers[kind].base_url, level, args.requests))
                        cpu[kind, level].append((servers[kind].cpu_seconds() - used) / args.requests)
        finally:
            for server in servers.values():
                server.stop()
    report(
        args,
        levels,
        list(servers),
        {key: statistics.median(values) for key, values in rates.items()},
        {key: statistics.median(values) for key, values in cpu.items()},
    )
    return 0


def report(
    args: argparse.Namespace,
    levels: list[int],
    kinds: list[str],
    rates: dict[tuple[str, int], float],
    cpu: dict[tuple[str, int], float],
) -> None:
    print(f"AUTH over loopback HTTP, {args.requests} requests per level, median of {args.rounds} rounds")
    print(
        f"{'concurrency':>11} {'server':>8} {'req/s':>8} {'vs minimal':>10} {'CPU us/req':>10} {'vs minimal':>10}"
    )
    for level in levels:
        for kind in kinds:
            print(
                f"{level:>11} {kind:>8} {rates[kind, level]:>8.0f} {rates[kind, level] / rates['minimal', level]:>10.2f}"
                f" {cpu[kind, level] * 1e6:>10.0f} {cpu[kind, level] / cpu['minimal', level]:>10.2f}"
            )
    worst = min(rates["sandbox", level] / rates["minimal", level] for level in levels)
    for level in levels:
        print(f"ratio sandbox_vs_starlette_c{level} {rates['sandbox', level] / rates['minimal', level]:.3f}")
        print(
            f"ratio sandbox_cpu_per_request_vs_starlette_c{level} {cpu['sandbox', level] / cpu['minimal', level]:.3f}"
        )
        print(
            f"ratio sandbox_vs_event_loop_only_c{level} {rates['sandbox', level] / rates['loop', level]:.3f}"
        )
        print(
            f"ratio sandbox_cpu_per_request_vs_event_loop_only_c{level} "
            f"{cpu['sandbox', level] / cpu['loop', level]:.3f}"
        )
        for floor in ("gateway", "write"):
            print(
                f"ratio floor_{floor}_vs_starlette_c{level} {rates[floor, level] / rates['minimal', level]:.3f}"
            )
            print(
                f"ratio floor_{floor}_cpu_per_request_vs_starlette_c{level} "
                f"{cpu[floor, level] / cpu['minimal', level]:.3f}"
            )
        print(
            f"ratio sandbox_vs_floor_gateway_c{level} {rates['sandbox', level] / rates['gateway', level]:.3f}"
        )
        if "before" in kinds:
            print(f"ratio sandbox_vs_before_c{level} {rates['sandbox', level] / rates['before', level]:.3f}")
            print(
                f"ratio sandbox_cpu_per_request_vs_before_c{level} {cpu['sandbox', level] / cpu['before', level]:.3f}"
            )
    verdict = "meets" if worst >= GOAL else "misses"
    print(f"sandbox/minimal {worst:.2f} at worst: {verdict} the goal of {GOAL:.2f} (issue 16)")


if __name__ == "__main__":
    sys.exit(main())
