"""URL notifications on the payment path: what a site's rules cost an in-process AUTH.

Three ways of answering the same AUTH envelope with `Gateway.process`, taking turns round by round
on one sandbox:

- `no_rules`: the site has no rule (every payment of every sandbox without notifications): the
  cost is one read of the site's rules on the request's own write connection;
- `check_skipped`: the same, with that read replaced by nothing (the baseline);
- `offline_rule`: the site has an offline rule to a listener on loopback: each payment also keeps
  a delivery row (in its own transaction, under a savepoint) and wakes the tenant's sender (the POST itself is made by the sender's thread,
  alongside: on 2 cores it competes for them; the round ends when every delivery was made).

    python benchmarks/notifications.py [--requests 300] [--rounds 9]

Prints microseconds per AUTH (the median of the rounds) and `ratio no_rules_vs_skipped` and
`ratio offline_rule_vs_skipped`.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from gwkit.notifications import NotificationListener
from gwkit.sandbox import Sandbox

CARD = {
    "requesttypedescriptions": ["AUTH"],
    "accounttypedescription": "ECOM",
    "currencyiso3a": "GBP",
    "baseamount": "1050",
    "pan": "4111111111111111",
    "expirydate": "12/2030",
    "securitycode": "123",
}


def per_auth(sandbox: Sandbox, site: str, requests: int) -> float:
    account = sandbox.default_account
    body = {"alias": account.username, "version": "1.00", "request": [{**CARD, "sitereference": site}]}
    started = time.perf_counter()
    for _ in range(requests):
        sandbox.gateway.process(body, account)
    return (time.perf_counter() - started) / requests * 1e6


def open_deliveries(store: Any) -> int:
    query = "SELECT COUNT(*) FROM notification_deliveries WHERE state IN ('pending', 'retrying')"
    return store.connection().execute(query).fetchone()[0]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--requests", type=int, default=300)
    parser.add_argument("--rounds", type=int, default=9)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder, NotificationListener() as listener:
        sandbox = Sandbox(Path(folder) / "sandbox.db")
        notifier = sandbox.gateway.notifier
        site = sandbox.default_account.sitereferences[0]
        reading = notifier.rules_in
        rule: dict[str, Any] | None = None
        times: dict[str, list[float]] = {"no_rules": [], "check_skipped": [], "offline_rule": []}
        per_auth(sandbox, site, args.requests)  # warm up
        for number in range(args.rounds):
            ways = list(times) if number % 2 == 0 else list(reversed(times))  # neither always goes first
            for way in ways:
                notifier.rules_in = (lambda conn, site: []) if way == "check_skipped" else reading  # type: ignore[method-assign]
                if way == "offline_rule":
                    rule = notifier.add_rule({"url": listener.url, "flow": "offline"}, site)
                times[way].append(per_auth(sandbox, site, args.requests))
                if rule is not None:  # the sender's POSTs done before the next round is timed
                    notifier.delete_rule([site], rule["id"])
                    rule = None
                    notifier.wait_for(lambda: not open_deliveries(notifier.store), timeout=120)
        notifier.rules_in = reading  # type: ignore[method-assign]
        sandbox.close()
    medians = {way: statistics.median(values) for way, values in times.items()}
    for way, value in medians.items():
        print(f"{way:>14}: {value:7.1f} us per AUTH")
    print(f"ratio no_rules_vs_skipped {medians['no_rules'] / medians['check_skipped']:.3f}")
    print(f"ratio offline_rule_vs_skipped {medians['offline_rule'] / medians['check_skipped']:.3f}")


if __name__ == "__main__":
    main()
