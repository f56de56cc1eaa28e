"""How long a payment waits while a long clock move runs, against the same payment on an idle sandbox.

The subscription engine makes a year of payments for `--subscriptions` monthly subscriptions
(`gwkit sandbox` in this process, the move through the Python handle in a thread) while another
thread sends one AUTH over loopback HTTP every `--every` seconds. Each AUTH's time is compared
with the median of the same AUTH on the same sandbox before the move.

    python benchmarks/payment_during_clock_move.py [--subscriptions 10000] [--every 0.05]

Prints the median and the longest time of the AUTHs sent during the move, and
`ratio payment_during_move_p50_vs_idle` and `ratio payment_during_move_max_vs_1s` (issue 12's
bound: a long clock move delays a small AUTH by no more than 1 s).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import threading
import time
from datetime import datetime
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from subscription_engine import create_subscriptions  # noqa: E402  (the engine benchmark's subscriptions)

import gwkit.sandbox  # noqa: E402
from gwkit.sandbox.gateway.accounts import DEFAULT_SITEREFERENCE  # noqa: E402

AUTH = {
    "requesttypedescriptions": ["AUTH"],
    "sitereference": DEFAULT_SITEREFERENCE,
    "accounttypedescription": "ECOM",
    "currencyiso3a": "GBP",
    "baseamount": "1050",
    "pan": "4111111111111111",
    "expirydate": "12/2099",
    "securitycode": "123",
}


def timed_auth(http: httpx.Client) -> float:
    started = time.perf_counter()
    answer = http.post("/json/", json={"request": [AUTH]})
    answer.raise_for_status()
    assert answer.json()["response"][0]["errorcode"] == "0", answer.text
    return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--subscriptions", type=int, default=10_000)
    parser.add_argument("--every", type=float, default=0.05, help="seconds between two AUTHs during the move")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="gwkit-bench-") as tmp:
        handle = gwkit.sandbox.start(Path(tmp) / "sandbox.db", clock_start=datetime(2026, 1, 1, 9, 0))
        try:
            create_subscriptions(handle.sandbox, args.subscriptions)
            with httpx.Client(
                base_url=handle.base_url, auth=(handle.username, handle.password), timeout=60
            ) as http:
                idle = statistics.median(timed_auth(http) for _ in range(50))
                moving = threading.Event()
                waits: list[float] = []

                def move() -> None:
                    moving.set()
                    handle.sandbox.advance(by="P12M")

                mover = threading.Thread(target=move)
                mover.start()
                moving.wait()
                while mover.is_alive():
                    waits.append(timed_auth(http))
                    time.sleep(args.every)
                mover.join()
        finally:
            handle.stop()
    p50, longest = statistics.median(waits), max(waits)
    print(f"AUTH on an idle sandbox: median {idle * 1000:.1f} ms")
    print(
        f"{len(waits)} AUTHs during a 12-month move of {args.subscriptions:,} subscriptions: "
        f"median {p50 * 1000:.1f} ms, longest {longest * 1000:.1f} ms"
    )
    print(f"ratio payment_during_move_p50_vs_idle {p50 / idle:.2f}")
    print(f"ratio payment_during_move_max_vs_1s {longest:.3f}")


if __name__ == "__main__":
    main()
