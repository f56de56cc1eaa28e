"""AUTHs through `gwkit proxy` against the same AUTHs sent to the sandbox directly, in one run.

Direct: `gwkit.Client` posts each AUTH over loopback HTTP to the sandbox's own server. Through the
proxy: the same client posts to the proxy on loopback, which validates the request, forwards it to
the same sandbox in-process (the default upstream: credentials and site mapped), journals the
exchange (masked, to a SQLite journal, from its writer thread) and answers. The proxy without a
journal is timed too, and the proxy forwarding over loopback HTTP to the sandbox's server (a
second hop, as with a real gateway; no journal). The two take turns, round by round, on one
sandbox database; the ratio is of the medians. CPU per request is the process's CPU time (client,
proxy and sandbox all run in this process) over the AUTHs of a side.

    python benchmarks/proxy.py [--requests 300] [--rounds 5]

Target (issue 34): the proxy's time per AUTH at most 1.5x the direct time.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import gwkit
import gwkit.sandbox
from gwkit import proxy
from gwkit.journal import Journal

TARGET_RATIO = 1.5
FIELDS = {
    "sitereference": "test_gwkit12345",
    "accounttypedescription": "ECOM",
    "baseamount": 1050,
    "currencyiso3a": "GBP",
    "orderreference": "bench",
    "pan": "4111111111111111",
    "expirydate": "12/2030",
    "securitycode": "123",
}


def side(client: gwkit.Client, n: int, handle: proxy.ProxyHandle | None = None) -> tuple[float, float]:
    """(wall ms per AUTH, CPU ms per AUTH) of n AUTHs one after the other; through a proxy, until
    its writer has journalled them all (it writes off the answer's path)."""
    wall, cpu = time.perf_counter(), time.process_time()
    for _ in range(n):
        client.auth(**FIELDS)
    if handle is not None:
        handle.flush()
    return (time.perf_counter() - wall) / n * 1e3, (time.process_time() - cpu) / n * 1e3


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=300, help="AUTHs per side and round")
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="gwkit-bench-") as tmp:
        served = gwkit.sandbox.start(Path(tmp) / "bench.db")
        account = served.account
        journalled = proxy.start(
            proxy.Proxy(proxy.SandboxUpstream(served.sandbox), journal=Journal(Path(tmp) / "journal.db"))
        )
        bare = proxy.start(proxy.Proxy(proxy.SandboxUpstream(served.sandbox)))
        hop = proxy.start(proxy.Proxy(proxy.GatewayUpstream(served.base_url)))
        clients = {
            "direct": (gwkit.Client(served.base_url, account.username, account.password), None),
            "proxy": (gwkit.Client(journalled.base_url, "app@merchant.example", "its-own"), journalled),
            "proxy_without_journal": (gwkit.Client(bare.base_url, "app@merchant.example", "its-own"), bare),
            "proxy_over_http": (gwkit.Client(hop.base_url, account.username, account.password), hop),
        }
        try:
            results: dict[str, list[tuple[float, float]]] = {name: [] for name in clients}
            for client, handle in clients.values():
                side(client, 20, handle)  # warm up: connections, caches, the journal file
            for _ in range(args.rounds):
                for name, (client, handle) in clients.items():
                    results[name].append(side(client, args.requests, handle))
        finally:
            for client, handle in clients.values():
                client.close()
                if handle is not None:
                    handle.stop()
            served.stop()
    wall = {name: statistics.median(r[0] for r in runs) for name, runs in results.items()}
    cpu = {name: statistics.median(r[1] for r in runs) for name, runs in results.items()}
    ratio = wall["proxy"] / wall["direct"]
    print(f"AUTHs: {args.requests} per side, {args.rounds} rounds, medians")
    for name, label in (
        ("direct", "direct to the sandbox"),
        ("proxy", "through the proxy"),
        ("proxy_without_journal", "  the same, no journal"),
        ("proxy_over_http", "  to the sandbox's server"),
    ):
        print(f"{label:<26} {wall[name]:.3f} ms/AUTH wall, {cpu[name]:.3f} ms/AUTH CPU")
    print(f"proxy's own CPU:           {cpu['proxy'] - cpu['direct']:.3f} ms/AUTH more")
    verdict = "meets" if ratio <= TARGET_RATIO else "misses"
    print(f"through the proxy vs direct: {ratio:.2f}x ({verdict} the target of at most {TARGET_RATIO}x)")
    print(f"ratio proxy_vs_direct {ratio:.3f}")
    print(f"ratio proxy_without_journal_vs_direct {wall['proxy_without_journal'] / wall['direct']:.3f}")
    print(f"ratio proxy_over_http_vs_direct {wall['proxy_over_http'] / wall['direct']:.3f}")
    print(f"ratio proxy_cpu_vs_direct_cpu {cpu['proxy'] / cpu['direct']:.3f}")


if __name__ == "__main__":
    main()
