"""One AUTH through `SandboxTransport`, in-process (no server, no socket): microseconds per AUTH.

`gwkit.Client.auth` with the sandbox's `SandboxTransport` does everything a real AUTH does except
the socket: client-side validation and envelope, the sandbox's HTTP-shaped request, Basic
authentication, gateway validation, the test acquirer, card encryption and the SQLite write. The
gateway core alone (`Gateway.process` of the same parsed envelope) is timed in the same run, and
the baseline is the client over a canned in-process answer (`httpx.MockTransport`): what is left
when the sandbox does nothing.

    python benchmarks/inprocess_auth.py [--requests 3000] [--rounds 5]

Goal (issue 16): <= 250 us per AUTH through SandboxTransport.

The sum of the two parts timed alone (the client over a canned answer, and `Gateway.process`) is
the floor of any in-process transport: what is left above it is the HTTP shape the transport keeps
(an httpx request and response, the body as JSON bytes both ways, the sandbox's Basic
authentication, limits and routing) and the larger working set of the whole path. The two parts
are also timed taking turns call by call, each timed on its own, as they run in a real AUTH
(`floor_taking_turns_vs_alone`): each runs slower after the other than after itself.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import gwkit
from gwkit.sandbox import Sandbox
from gwkit.sandbox.web.transport import SandboxTransport

GOAL_US = 250.0
SITE = "test_gwkit12345"
FIELDS = {
    "accounttypedescription": "ECOM",
    "baseamount": 1050,
    "orderreference": "bench",
    "pan": "4111111111111111",
    "expirydate": "12/2030",
    "securitycode": "123",
}


def canned_transport() -> httpx.MockTransport:
    """Answers an AUTH echoing the request reference, as the gateway does, without doing anything."""

    def answer(request: httpx.Request) -> httpx.Response:
        sent = json.loads(request.content)
        return httpx.Response(
            200,
            json={
                "requestreference": sent["request"][0]["requestreference"],
                "version": "1.00",
                "secrand": "x",
                "response": [
                    {
                        "errorcode": "0",
                        "errormessage": "Ok",
                        "requesttypedescription": "AUTH",
                        "settlestatus": "0",
                        "transactionreference": "1-2-3",
                        "baseamount": "1050",
                    }
                ],
            },
        )

    return httpx.MockTransport(answer)


def per_auth_us(run, n: int) -> float:
    started = time.perf_counter()
    for _ in range(n):
        run()
    return (time.perf_counter() - started) / n * 1e6


def interleaved_us(first, second, n: int) -> tuple[float, float]:
    """`first` and `second` called in turn, n times each; each one's own time per call."""
    spent = [0.0, 0.0]
    clock = time.perf_counter
    for _ in range(n):
        started = clock()
        first()
        middle = clock()
        second()
        spent[0] += middle - started
        spent[1] += clock() - middle
    return spent[0] / n * 1e6, spent[1] / n * 1e6


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=3000, help="AUTHs per side and round")
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="gwkit-bench-") as tmp:
        sandbox = Sandbox(Path(tmp) / "bench.db")
        account = sandbox.default_account
        client = gwkit.Client(
            "http://sandbox.local",
            account.username,
            account.password,
            sitereference=SITE,
            currencyiso3a="GBP",
            transport=SandboxTransport(sandbox),
        )
        canned = gwkit.Client(
            "http://sandbox.local",
            account.username,
            account.password,
            sitereference=SITE,
            currencyiso3a="GBP",
            transport=canned_transport(),
        )
        envelope = client.build_envelope([client.build_request("AUTH", FIELDS)])
        assert client.auth(**FIELDS).ok and canned.auth(**FIELDS).ok
        sides = {
            "sandbox_transport": lambda: client.auth(**FIELDS),
            "gateway_core": lambda: sandbox.gateway.process(envelope, account),
            "canned_answer": lambda: canned.auth(**FIELDS),
        }
        for run in sides.values():
            per_auth_us(run, 200)  # warm up
        results: dict[str, list[float]] = {
            name: [] for name in [*sides, "canned_interleaved", "core_interleaved"]
        }
        for _ in range(args.rounds):
            for name, run in sides.items():
                results[name].append(per_auth_us(run, args.requests))
            canned_us, core_us = interleaved_us(sides["canned_answer"], sides["gateway_core"], args.requests)
            results["canned_interleaved"].append(canned_us)
            results["core_interleaved"].append(core_us)
        client.close()
        canned.close()
        sandbox.close()
    us = {name: statistics.median(values) for name, values in results.items()}
    best = {name: min(values) for name, values in results.items()}  # the round least disturbed by other work
    print(f"{args.requests} AUTHs per side, median of {args.rounds} rounds")
    print(
        f"Client.auth through SandboxTransport   {us['sandbox_transport']:7.1f} us/AUTH  (goal <= {GOAL_US:.0f})"
    )
    print(f"  of which Gateway.process alone       {us['gateway_core']:7.1f} us/AUTH")
    print(f"Client.auth over a canned answer       {us['canned_answer']:7.1f} us/AUTH")
    print(
        f"best rounds: {best['sandbox_transport']:.1f} us through SandboxTransport, "
        f"{best['gateway_core']:.1f} us Gateway.process, {best['canned_answer']:.1f} us canned"
    )
    floor = us["canned_answer"] + us["gateway_core"]
    print(
        f"floor: canned answer + Gateway.process  {floor:7.1f} us/AUTH  (transport and HTTP shape: "
        f"{us['sandbox_transport'] - floor:.1f} us above it)"
    )
    taking_turns = us["canned_interleaved"] + us["core_interleaved"]
    print(
        f"the two taking turns, call by call: canned {us['canned_interleaved']:.1f} us + Gateway.process "
        f"{us['core_interleaved']:.1f} us = {taking_turns:.1f} us/AUTH"
    )
    print(f"ratio sandbox_transport_auth_vs_goal {us['sandbox_transport'] / GOAL_US:.3f}")
    print(f"ratio floor_vs_goal {floor / GOAL_US:.3f}")
    print(f"ratio sandbox_transport_vs_floor {us['sandbox_transport'] / floor:.3f}")
    print(f"ratio floor_taking_turns_vs_alone {taking_turns / floor:.3f}")
    print(f"ratio sandbox_transport_vs_canned_answer {us['sandbox_transport'] / us['canned_answer']:.2f}")


if __name__ == "__main__":
    main()
