"""Finance reports against a sandbox on loopback: the settlement reconciliation adds up to the raw
records, declines by code carry the code table's meaning, and the charts are labelled."""

from __future__ import annotations

from collections import defaultdict

import matplotlib
import pandas as pd
import pytest

import gwkit.report as report
from gwkit.interface.codes import explain, record_ok
from support.subscriptions import VISA

matplotlib.use("Agg")

CARD = {"accounttypedescription": "ECOM", "pan": VISA, "expirydate": "12/2030", "securitycode": "123"}


def pay(gw, baseamount: int, **fields) -> str:
    return gw.auth(**CARD, baseamount=baseamount, **fields).record["transactionreference"]


@pytest.fixture
def ledger(gw, sandbox):
    """Three days of money (clock from 2026-01-10): payments, declines, a lowered settle amount, a
    suspended payment, USD, full, partial and standalone refunds. Answers the raw records."""
    a, b = pay(gw, 1000), pay(gw, 2000)
    pay(gw, 70000)  # declined
    pay(gw, 60010)  # bank system error: outcome unknown
    gw.auth(**{**CARD, "pan": "4000000000000812"}, baseamount=1200)  # declined card
    c, d = pay(gw, 5000), pay(gw, 1500)
    assert gw.transaction_update(transactionreference=c, updates={"settlebaseamount": 3000}).ok
    assert gw.transaction_update(transactionreference=d, updates={"settlestatus": 2}).ok  # suspended
    pay(gw, 700, currencyiso3a="USD")
    sandbox.advance(by="P1D")  # 2026-01-11: a, b, c and the USD payment settled at 01-10's end
    assert gw.refund(a).ok and gw.refund(b, baseamount=500).ok
    pay(gw, 2500)
    sandbox.advance(by="P1D")  # 2026-01-12
    assert gw.refund(b, baseamount=300).ok
    assert gw.refund(accounttypedescription="CFT", baseamount=400, pan=VISA, expirydate="12/2030").ok
    return list(gw.transaction_query(startdate="2026-01-01").query_records)


def test_reconciliation_per_day(ledger):
    table = report.settlement_reconciliation(report.query_frame(ledger))
    assert list(table.columns) == report.finance.RECONCILIATION_COLUMNS
    assert all(
        table[c].dtype == "Int64" for c in ("authorised", "settled", "pending", "released", "refunded", "net")
    )
    rows = {
        (r.day.strftime("%m-%d"), r.currencyiso3a): [
            r.authorised,
            r.settled,
            r.pending,
            r.released,
            r.refunded,
            r.net,
        ]
        for r in table.itertuples(index=False)
    }
    # A payment is due on its own day and settles at that day's end (as the real gateway answers).
    #                         authorised settled pending released refunded net
    assert rows[("01-10", "GBP")] == [9500, 6000, 1500, 2000, 0, 6000]
    assert rows[("01-11", "GBP")] == [2500, 2500, 0, 0, 1500, 1000]
    assert rows[("01-12", "GBP")] == [0, 0, 0, 0, 700, -700]
    assert rows[("01-10", "USD")] == [700, 700, 0, 0, 0, 700]
    assert ("01-11", "USD") not in rows


def test_reconciliation_adds_up_to_the_raw_records(ledger):
    """Totals computed here from the raw records, with plain Python, not with the report's code."""
    expected: dict[str, dict[str, int]] = defaultdict(lambda: defaultdict(int))
    for record in ledger:
        if not record_ok(record):
            continue
        money = expected[record["currencyiso3a"]]
        to_settle = int(record.get("settlebaseamount") or record["baseamount"])
        if record["requesttypedescription"] == "AUTH":
            money["authorised"] += int(record["baseamount"])
            money["settled" if record["settlestatus"] == "100" else "pending"] += to_settle
            money["released"] += int(record["baseamount"]) - to_settle
        elif record["requesttypedescription"] == "REFUND":
            money["refunded"] += to_settle
    table = report.settlement_reconciliation(report.query_frame(ledger))
    totals = table.groupby("currencyiso3a", observed=True)[
        ["authorised", "settled", "pending", "released", "refunded", "net"]
    ].sum()
    for currency, money in expected.items():
        got = totals.loc[currency]
        for column in ("authorised", "settled", "pending", "released", "refunded"):
            assert got[column] == money[column], (currency, column)
        assert got["authorised"] == got["settled"] + got["pending"] + got["released"]
        assert got["net"] == money["settled"] - money["refunded"]
    assert expected["GBP"]["refunded"] == 1000 + 500 + 300 + 400


def test_declines_by_code_carry_the_code_tables_meaning(ledger):
    table = report.declines_by_code(report.query_frame(ledger))
    assert table["errorcode"].tolist() == ["70000", "60010"]
    assert table["count"].tolist() == [2, 1]
    payments = sum(1 for r in ledger if r["requesttypedescription"] == "AUTH")
    assert table["share"].tolist() == pytest.approx([2 / payments, 1 / payments])
    bank = table.set_index("errorcode").loc["60010"]
    assert (bank["message"], bank["meaning"], bank["action"]) == (
        explain(60010).message,
        explain(60010).meaning,
        explain(60010).action,
    )
    assert bool(bank["unknown_outcome"]) and not bool(
        table.set_index("errorcode").loc["70000", "unknown_outcome"]
    )


def test_charts_are_labelled(ledger):
    frame = report.query_frame(ledger)
    gbp, usd = report.plot_reconciliation(frame)  # a panel per currency, none left out
    assert "GBP" in gbp.get_title() and "USD" in usd.get_title() and "USD" in usd.get_ylabel()
    ax = report.plot_reconciliation(frame, currency="GBP")
    assert "GBP" in ax.get_title() and "GBP" in ax.get_ylabel() and ax.get_xlabel() == "Day"
    assert [t.get_text() for t in ax.get_xticklabels()] == ["2026-01-10", "2026-01-11", "2026-01-12"]
    assert {t.get_text() for t in ax.get_legend().get_texts()} >= {"settled", "still pending", "refunded"}
    ax = report.plot_declines_by_code(frame)
    assert (
        ax.get_title()
        and ax.get_xlabel()
        and [t.get_text() for t in ax.get_yticklabels()] == ["60010 Bank System Error", "70000 Decline"]
    )


def test_reports_say_which_column_is_missing():
    with pytest.raises(ValueError, match="requesttypedescription"):
        report.settlement_reconciliation(pd.DataFrame({"errorcode": ["0"]}))
    with pytest.raises(ValueError, match="no failed payments"):
        report.plot_declines_by_code(report.records_frame([{"errorcode": "0", "settlestatus": "0"}]))


def test_money_columns_are_shown_as_money(ledger):
    table = report.settlement_reconciliation(report.query_frame(ledger))
    shown = report.for_people(table)
    first = shown.iloc[0]
    assert first["authorised"] == "£95.00" and first["released"] == "£20.00"


def test_no_money_gives_empty_typed_tables():
    declined = report.records_frame(
        [
            {
                "requesttypedescription": "AUTH",
                "errorcode": "70000",
                "settlestatus": "3",
                "baseamount": "1000",
                "currencyiso3a": "GBP",
                "transactionstartedtimestamp": "2026-01-10 10:00:00",
            }
        ]
    )
    table = report.settlement_reconciliation(declined)
    assert table.empty and list(table.columns) == report.finance.RECONCILIATION_COLUMNS
    assert table["authorised"].dtype == "Int64"
    assert report.declines_by_code(declined)["count"].tolist() == [1]
