"""Per-request cost of `gwkit.Client.auth` against a raw `httpx.Client.post` of the same body.

Both go through the same in-process `httpx.MockTransport`, which returns a canned AUTH answer
(echoing the request reference, as the gateway does), so what is measured is client-side work.
gwkit builds the request object with the client's defaults, validates it against the spec tables,
draws a request reference, encodes the envelope, posts it, reads the answer and checks the echoed
reference. The baseline is what a caller writes by hand with httpx: the same httpx configuration
(Basic auth, JSON headers), `post(url, json=envelope)` of the same envelope, and `.json()`.
A stricter baseline (pre-encoded bytes to a pre-parsed `httpx.URL`, the way gwkit calls httpx) is
printed too. Rounds alternate which side runs first.

    python benchmarks/client_overhead.py [--requests 20000] [--rounds 10]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import gwkit

BASE_URL = "http://gateway.bench"
FIELDS = {
    "accounttypedescription": "ECOM",
    "baseamount": 1050,
    "orderreference": "bench-order-1",
    "pan": "4111111111111111",
    "expirydate": "12/2030",
    "securitycode": "123",
}
_MARK = "A00000000"
ANSWER = json.dumps(
    {
        "requestreference": _MARK,
        "version": "1.00",
        "secrand": "k3J9xq",
        "response": [
            {
                "transactionstartedtimestamp": "2026-01-05 10:11:12",
                "livestatus": "0",
                "issuer": "Test Issuer",
                "splitfinalnumber": "1",
                "dccenabled": "0",
                "settleduedate": "2026-01-05",
                "errorcode": "0",
                "errormessage": "Ok",
                "baseamount": "1050",
                "tid": "27882788",
                "merchantnumber": "00000000",
                "merchantcountryiso2a": "GB",
                "merchantname": "Test Merchant",
                "transactionreference": "23-9-80001",
                "paymenttypedescription": "VISA",
                "orderreference": "bench-order-1",
                "accounttypedescription": "ECOM",
                "acquirerresponsecode": "00",
                "requesttypedescription": "AUTH",
                "securityresponsesecuritycode": "2",
                "securityresponsepostcode": "0",
                "securityresponseaddress": "0",
                "currencyiso3a": "GBP",
                "authcode": "TEST56",
                "operatorname": "webservices@example.com",
                "maskedpan": "411111######1111",
                "issuercountryiso2a": "US",
                "settlestatus": "0",
            }
        ],
    }
).encode()
_BEFORE, _AFTER = ANSWER.split(_MARK.encode())
_REFERENCE_KEY = b'"requestreference":"'


def transport() -> httpx.MockTransport:
    headers = {"content-type": "application/json"}

    def answer(request: httpx.Request) -> httpx.Response:
        start = request.content.find(_REFERENCE_KEY) + len(_REFERENCE_KEY)
        reference = request.content[start : start + len(_MARK)]
        return httpx.Response(200, content=_BEFORE + reference + _AFTER, headers=headers)

    return httpx.MockTransport(answer)


def run_gwkit(client: gwkit.Client, n: int) -> float:
    auth = client.auth
    start = time.perf_counter()
    for _ in range(n):
        auth(**FIELDS)
    return time.perf_counter() - start


def run_httpx(http: httpx.Client, url: str, envelope: dict, n: int) -> float:
    post = http.post
    start = time.perf_counter()
    for _ in range(n):
        post(url, json=envelope).json()
    return time.perf_counter() - start


def run_httpx_strict(http: httpx.Client, url: httpx.URL, body: bytes, n: int) -> float:
    post, loads = http.post, json.loads
    start = time.perf_counter()
    for _ in range(n):
        loads(post(url, content=body).content)
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=20_000, help="requests per side (at least 20000)")
    parser.add_argument("--rounds", type=int, default=10)
    args = parser.parse_args()
    per_round = max(1, args.requests // args.rounds)

    mock = transport()
    client = gwkit.Client(
        BASE_URL, "bench", "secret", sitereference="test_site12345", currencyiso3a="GBP", transport=mock
    )
    http = httpx.Client(
        transport=mock,
        auth=("bench", "secret"),
        headers={"Content-Type": "application/json", "Accept": "application/json"},
    )
    envelope = client.build_envelope([client.build_request("AUTH", FIELDS)])
    body = json.dumps(envelope, ensure_ascii=False, separators=(",", ":")).encode()
    url, parsed_url = client.url, httpx.URL(client.url)
    assert client.auth(**FIELDS).ok  # the gwkit side really succeeds
    assert (
        http.post(url, json=envelope).json()["requestreference"] == envelope["request"][0]["requestreference"]
    )

    sides = {
        "gwkit": lambda n: run_gwkit(client, n),
        "httpx": lambda n: run_httpx(http, url, envelope, n),
        "strict": lambda n: run_httpx_strict(http, parsed_url, body, n),
    }
    for run in sides.values():
        run(500)  # warm up
    times: dict[str, list[float]] = {name: [] for name in sides}
    order = list(sides)
    for round_ in range(args.rounds):
        for name in order[round_ % 3 :] + order[: round_ % 3]:  # rotate who goes first
            times[name].append(sides[name](per_round))
    client.close()
    http.close()

    total = per_round * args.rounds
    us = {name: sum(t) / total * 1e6 for name, t in times.items()}
    median = {
        name: statistics.median(g / h for g, h in zip(times["gwkit"], times[name], strict=True))
        for name in ("httpx", "strict")
    }
    print(f"requests per side: {total} in {args.rounds} rounds (order rotated each round)")
    print(f"raw httpx: post(url, json=envelope).json()       {us['httpx']:7.1f} us/request")
    print(f"raw httpx, strict: bytes to a parsed httpx.URL   {us['strict']:7.1f} us/request")
    print(f"gwkit.Client.auth (validated)                    {us['gwkit']:7.1f} us/request")
    print(
        f"gwkit/httpx:  {us['gwkit'] / us['httpx']:.2f}x (median of rounds {median['httpx']:.2f}x; "
        f"target <= 1.10x)"
    )
    print(f"gwkit/strict: {us['gwkit'] / us['strict']:.2f}x (median of rounds {median['strict']:.2f}x)")
    best = {
        name: min(t) for name, t in times.items()
    }  # the round least disturbed by other work on the machine
    print(
        f"best rounds: gwkit/httpx {best['gwkit'] / best['httpx']:.2f}x, gwkit/strict {best['gwkit'] / best['strict']:.2f}x"
    )
    print(f"ratio client_vs_httpx {us['gwkit'] / us['httpx']:.3f}")
    print(f"ratio client_vs_strict_httpx {us['gwkit'] / us['strict']:.3f}")
    print(f"ratio client_vs_httpx_best_round {best['gwkit'] / best['httpx']:.3f}")


if __name__ == "__main__":
    main()
