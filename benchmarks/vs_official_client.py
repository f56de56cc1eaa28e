"""The official `securetrading` client against gwkit's Client and AsyncClient: the same AUTHs, one sandbox.

One `gwkit sandbox` process (the CLI, on a free loopback port, a fresh database) serves every side
in the same run. Each side makes the same number of AUTHs (default 1,000) in each of three rounds,
the sides taking turns, and each side's median round is compared (a machine whose speed wanders
mid-run would otherwise favour whichever side ran at its fast moment):

- official: `securetrading.Api.process`, sequential (it opens a new connection per request);
- gwkit Client: `Client.auth`, sequential, one keep-alive connection;
- gwkit AsyncClient: `AsyncClient.auth` at its natural concurrency (`--concurrency`, default 4
  requests in flight over its connection pool), and again at 16 for comparison;
- plain httpx, for comparison: a raw `httpx.Client` (sequential) and `httpx.AsyncClient` (the same
  concurrency) posting a pre-encoded AUTH envelope, with no validation, no envelope building and
  no reading of the answer beyond its JSON. gwkit's clients take no more time than these
  (`ratio gwkit_*_vs_raw_httpx*` 0.82-0.98 here: they skip httpx's per-request merging of settings
  and cookie parsing), so what is left of a gwkit AUTH over a socket is httpcore, h11 and the sandbox.

Why 4: on this 2-core machine the client and the sandbox share the cores, and the sandbox commits
the AUTHs that arrive together in one transaction, so 4 in flight keep both busy. More costs the
client more per request than it gains: httpcore's pool walks every connection (polling each idle
socket) each time a request starts or ends, and the event loop juggles more tasks. At 16 in flight
AsyncClient spends about 1.7 ms of CPU per AUTH, at 4 about 0.9 ms (measured from its own
`getrusage`), so it made fewer AUTHs per second than at 4.

    python benchmarks/vs_official_client.py [--requests 1000] [--concurrency 4] [--rounds 3]

Each side's line also gives the sandbox's CPU time per AUTH (its process's user + system time, from
/proc): the official client opens a connection per request, which costs the sandbox more than a
request on a kept-alive connection, so part of its time is the sandbox's, not its own.

Prints each side's time and `ratio <name> <value>` lines (official time / gwkit time: higher is
better for gwkit). Goals (issue 16): >= 2x sequential, >= 5x with AsyncClient.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import httpx
import securetrading  # a dev dependency
from sandbox_throughput import process_cpu_seconds  # benchmarks/ is on the path of a script run from it

import gwkit

ROOT = Path(__file__).resolve().parents[1]
USERNAME, PASSWORD, SITE = "gwkit_sandbox", "gwkit-sandbox-password", "test_gwkit12345"
CARD = {
    "accounttypedescription": "ECOM",
    "currencyiso3a": "GBP",
    "baseamount": "1050",
    "pan": "4111111111111111",
    "expirydate": "12/2030",
    "securitycode": "123",
}
RAW_HEADERS = {"content-type": "application/json", "accept": "application/json"}


class SandboxProcess:
    """`gwkit sandbox --port 0` in a child process; its URL is read from what it prints."""

    def __init__(self, db: Path):
        command = [sys.executable, "-m", "gwkit.cli", "sandbox", "--port", "0", "--db", str(db)]
        self.process = subprocess.Popen(
            command, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, cwd=ROOT
        )
        for line in self.process.stdout:
            if "listening on" in line:
                self.base_url = line.rsplit(" ", 1)[-1].strip()
                return
        raise RuntimeError("the sandbox did not start")

    def cpu_seconds(self) -> float:
        return process_cpu_seconds(self.process.pid)

    def stop(self) -> None:
        self.process.terminate()
        self.process.wait(timeout=60)


def official(base_url: str, n: int) -> float:
    config = securetrading.Config()
    config.username, config.password, config.datacenterurl = USERNAME, PASSWORD, base_url
    api = securetrading.Api(config)
    started = time.perf_counter()
    for i in range(n):
        response = api.process(
            {
                "requesttypedescriptions": ["AUTH"],
                "sitereference": SITE,
                "orderreference": f"official-{i}",
                **CARD,
            }
        )
        assert response["responses"][0]["errorcode"] == "0", response
    return time.perf_counter() - started


def gwkit_sequential(base_url: str, n: int) -> float:
    with gwkit.Client(base_url, USERNAME, PASSWORD, sitereference=SITE) as client:
        started = time.perf_counter()
        for i in range(n):
            assert client.auth(orderreference=f"gwkit-{i}", **CARD).record.ok
        return time.perf_counter() - started


async def _gwkit_async(base_url: str, n: int, concurrency: int) -> float:
    gate = asyncio.Semaphore(concurrency)
    async with gwkit.AsyncClient(base_url, USERNAME, PASSWORD, sitereference=SITE) as client:

        async def one(i: int) -> None:
            async with gate:
                assert (await client.auth(orderreference=f"async-{i}", **CARD)).record.ok

        started = time.perf_counter()
        await asyncio.gather(*(one(i) for i in range(n)))
        return time.perf_counter() - started


def gwkit_async(base_url: str, n: int, concurrency: int) -> float:
    return asyncio.run(_gwkit_async(base_url, n, concurrency))


def _raw_body(i: int) -> bytes:
    request = {
        "requesttypedescriptions": ["AUTH"],
        "sitereference": SITE,
        "orderreference": f"raw-{i}",
        "requestreference": f"Wraw{i:05d}",
        **CARD,
    }
    return json.dumps({"alias": USERNAME, "version": "1.00", "request": [request]}).encode()


def raw_httpx(base_url: str, n: int) -> float:
    bodies = [_raw_body(i) for i in range(n)]  # encoded before the clock starts
    with httpx.Client(base_url=base_url, auth=(USERNAME, PASSWORD), headers=RAW_HEADERS) as client:
        started = time.perf_counter()
        for body in bodies:
            assert client.post("/json/", content=body).json()["response"][0]["errorcode"] == "0"
        return time.perf_counter() - started


async def _raw_httpx_async(base_url: str, n: int, concurrency: int) -> float:
    bodies = [_raw_body(i) for i in range(n)]
    gate = asyncio.Semaphore(concurrency)
    async with httpx.AsyncClient(base_url=base_url, auth=(USERNAME, PASSWORD), headers=RAW_HEADERS) as client:

        async def one(body: bytes) -> None:
            async with gate:
                answer = await client.post("/json/", content=body)
                assert answer.json()["response"][0]["errorcode"] == "0"

        started = time.perf_counter()
        await asyncio.gather(*(one(body) for body in bodies))
        return time.perf_counter() - started


def raw_httpx_async(base_url: str, n: int, concurrency: int) -> float:
    return asyncio.run(_raw_httpx_async(base_url, n, concurrency))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=1000)
    parser.add_argument("--concurrency", type=int, default=4)
    parser.add_argument(
        "--rounds", type=int, default=3, help="rounds of every side in turn; medians are compared"
    )
    args = parser.parse_args()
    sides: dict[str, Callable[[str, int], float]] = {
        "official": official,
        "gwkit_client": gwkit_sequential,
        "gwkit_async": lambda url, n: gwkit_async(url, n, args.concurrency),
        "gwkit_async_16": lambda url, n: gwkit_async(url, n, 16),
        "raw_httpx": raw_httpx,
        "raw_httpx_async": lambda url, n: raw_httpx_async(url, n, args.concurrency),
    }
    runs: dict[str, list[float]] = {name: [] for name in sides}
    server_cpu: dict[str, list[float]] = {name: [] for name in sides}  # the sandbox's CPU seconds per AUTH
    with tempfile.TemporaryDirectory() as folder:
        server = SandboxProcess(Path(folder) / "bench.db")
        try:
            for side in sides.values():
                side(server.base_url, 20)  # warm up the server and each side's imports
            for _ in range(args.rounds):  # in turn, so a machine that slows down mid-run slows every side
                for name, side in sides.items():
                    used = server.cpu_seconds()
                    runs[name].append(side(server.base_url, args.requests))
                    server_cpu[name].append((server.cpu_seconds() - used) / args.requests)
        finally:
            server.stop()
    times = {name: statistics.median(seconds) for name, seconds in runs.items()}
    print(
        f"{args.requests} AUTHs each against one sandbox over loopback, median of {args.rounds} rounds taken in turn"
    )
    for name, seconds in times.items():
        spread = ", ".join(f"{s:.2f}" for s in runs[name])
        sandbox_us = statistics.median(server_cpu[name]) * 1e6
        print(
            f"{name:<15} {seconds:7.2f} s  {args.requests / seconds:7.0f} AUTH/s  sandbox CPU {sandbox_us:5.0f} us/AUTH"
            f"  (rounds: {spread})"
        )
    print(f"ratio official_vs_gwkit_client {times['official'] / times['gwkit_client']:.2f}")
    print(f"ratio official_vs_gwkit_async {times['official'] / times['gwkit_async']:.2f}")
    print(f"ratio official_vs_gwkit_async_at_16 {times['official'] / times['gwkit_async_16']:.2f}")
    print(f"ratio official_vs_raw_httpx {times['official'] / times['raw_httpx']:.2f}")
    print(f"ratio official_vs_raw_httpx_async {times['official'] / times['raw_httpx_async']:.2f}")
    print(f"ratio gwkit_client_vs_raw_httpx {times['gwkit_client'] / times['raw_httpx']:.2f}")
    print(f"ratio gwkit_async_vs_raw_httpx_async {times['gwkit_async'] / times['raw_httpx_async']:.2f}")


if __name__ == "__main__":
    main()
