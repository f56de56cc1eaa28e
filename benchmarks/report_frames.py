"""Typed DataFrame from 100,000 TRANSACTIONQUERY records: gwkit.report vs the naive pandas way.

Both sides get the same list of records (dicts of strings, as TRANSACTIONQUERY returns them) and
produce the same typed columns (Int64 amounts plus float major units, datetime64 timestamps and
dates, categories, strings). The naive way is what one writes first: DataFrame.from_records, then
per-column astype / to_numeric / to_datetime without a format, and a row-wise apply for the major
units. Prints both timings (best of a few runs, after a warm-up) and the ratio.

    python benchmarks/report_frames.py [N]
"""

from __future__ import annotations

import random
import sys
import time
from datetime import datetime, timedelta

import pandas as pd

from gwkit.interface.currency import exponent
from gwkit.interface.fields import AMOUNT, CATEGORY, DATE, DATETIME, INTEGER
from gwkit.report import records_frame
from gwkit.report.frames import report_kind

CURRENCIES = ["GBP"] * 6 + ["USD", "EUR", "EUR", "JPY", "BHD"]
CARDS = [("411111######1111", "VISA"), ("545454######5454", "MASTERCARD"), ("340000######0009", "AMEX")]


def generate(n: int, seed: int = 7) -> list[dict[str, str]]:
    """`n` realistic transaction records: AUTHs (some declined or bank errors), STOREs, RECURs."""
    rnd = random.Random(seed)
    start = datetime(2026, 1, 1, 8, 0, 0)
    records = []
    for i in range(n):
        when = start + timedelta(seconds=rnd.randint(0, 90 * 86400))
        maskedpan, scheme = rnd.choice(CARDS)
        record = {
            "transactionreference": f"{rnd.randint(1, 60)}-9-{80000 + i}",
            "transactionstartedtimestamp": when.strftime("%Y-%m-%d %H:%M:%S"),
            "requesttypedescription": "AUTH",
            "accounttypedescription": rnd.choice(["ECOM", "ECOM", "MOTO", "RECUR"]),
            "sitereference": "test_site12345",
            "orderreference": f"order-{rnd.randint(1, 10**6)}",
            "maskedpan": maskedpan,
            "paymenttypedescription": scheme,
            "issuer": "SecureTrading Test Issuer1",
            "issuercountryiso2a": rnd.choice(["GB", "US", "FR"]),
            "merchantname": "Test Merchant",
            "merchantcountryiso2a": "GB",
            "operatorname": "webservices@example.com",
            "interface": "PASS-JSON-JSON",
            "livestatus": "0",
            "dccenabled": "0",
            "tid": "27882788",
        }
        roll = rnd.random()
        if roll < 0.08:  # card store record: no amount, no settlement
            record.update(
                requesttypedescription="STORE",
                accounttypedescription="CARDSTORE",
                transactionactive="1",
                errorcode="0",
                errormessage="Ok",
            )
        else:
            record.update(_auth_outcome(rnd, when))
        if rnd.random() < 0.1:
            record["parenttransactionreference"] = f"{rnd.randint(1, 60)}-9-{rnd.randint(1, 80000)}"
        if record["accounttypedescription"] == "RECUR":
            record["subscriptionnumber"] = str(rnd.randint(2, 12))
        records.append(record)
    return records


def _auth_outcome(rnd: random.Random, when: datetime) -> dict[str, str]:
    currency = rnd.choice(CURRENCIES)
    fields = {
        "baseamount": str(rnd.choice([1050, 2000, 999, 12500, rnd.randint(100, 500000)])),
        "currencyiso3a": currency,
        "settleduedate": (when + timedelta(days=1)).strftime("%Y-%m-%d"),
    }
    roll = rnd.random()
    if roll < 0.06:
        fields.update(
            errorcode="70000",
            errormessage="Decline",
            acquirerresponsecode="05",
            authcode="DECLINED",
            settlestatus="3",
        )
    elif roll < 0.08:
        fields.update(errorcode="60010", errormessage="Bank System Error", settlestatus="3")
    else:
        settled = rnd.random() < 0.7
        fields.update(
            errorcode="0",
            errormessage="Ok",
            acquirerresponsecode="00",
            authcode=f"TEST{rnd.randint(10, 99)}",
            settlestatus="100" if settled else "0",
            securityresponsesecuritycode="2",
            securityresponsepostcode="0",
            securityresponseaddress="0",
        )
        if settled:
            fields["settlebaseamount"] = fields["baseamount"]
    return fields


def naive_frame(records: list[dict[str, str]]) -> pd.DataFrame:
    """What one writes first: from_records, then per-column conversions, apply for major units."""
    frame = pd.DataFrame.from_records(records)
    for name in frame.columns:
        kind = report_kind(name)
        if kind in (AMOUNT, INTEGER):
            frame[name] = pd.to_numeric(frame[name]).astype("Int64")
        elif kind in (DATE, DATETIME):
            frame[name] = pd.to_datetime(frame[name])
        elif kind == CATEGORY:
            frame[name] = frame[name].astype("category")
        else:
            frame[name] = frame[name].astype("string")
    for name in [c for c in frame.columns if report_kind(c) == AMOUNT]:
        frame[name + "_major"] = frame.apply(
            lambda row, name=name: (
                float("nan")
                if pd.isna(row[name])
                else row[name]
                / 10 ** exponent(None if pd.isna(row["currencyiso3a"]) else row["currencyiso3a"])
            ),
            axis=1,
        )
    return frame


def best_of(fn, records, runs: int) -> tuple[float, pd.DataFrame]:
    best, result = float("inf"), None
    for _ in range(runs):
        started = time.perf_counter()
        result = fn(records)
        best = min(best, time.perf_counter() - started)
    return best, result


def check_same(fast: pd.DataFrame, naive: pd.DataFrame) -> None:
    """Both ways must produce the same values, so the comparison is fair."""
    assert sorted(fast.columns) == sorted(naive.columns), (sorted(fast.columns), sorted(naive.columns))
    for name in fast.columns:
        left, right = fast[name], naive[name]
        if name.endswith("_major"):
            pd.testing.assert_series_equal(left, right, check_names=False, rtol=1e-12)
        elif report_kind(name) in (DATE, DATETIME):
            assert (
                left.astype("datetime64[ns]").fillna(pd.Timestamp(0))
                == right.astype("datetime64[ns]").fillna(pd.Timestamp(0))
            ).all(), name
        else:
            assert left.astype("string").fillna("").equals(right.astype("string").fillna("")), name


def main(n: int = 100_000, runs: int = 3) -> None:
    records = generate(n)
    records_frame(records[:1000]), naive_frame(records[:1000])  # warm-up: imports, kernel set-up
    fast_time, fast = best_of(records_frame, records, runs)
    naive_time, naive = best_of(naive_frame, records, runs)
    check_same(fast, naive)
    print(f"records: {n:,} ({len(fast.columns)} columns), best of {runs} runs")
    print(f"gwkit.report.records_frame : {fast_time:8.3f} s")
    print(f"naive from_records + astype: {naive_time:8.3f} s")
    print(f"naive / gwkit              : {naive_time / fast_time:8.1f}x  (target: >= 1.0x)")
    print(f"ratio naive_vs_records_frame {naive_time / fast_time:.2f}")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 100_000)
