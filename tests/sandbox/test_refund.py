"""REFUND over real HTTP: of an AUTH and of a subscription's payment, full and partial, the standalone
CFT refund, and every rule with the real service's code (real-gateway-facts.md)."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import pytest

from gwkit.interface.codes import message_of
from support.databases import Database
from support.sandbox import (
    EXPIRY,
    SITE,
    VISA,
    Gateway,
    all_rows,
    card_auth,
    kept_rows,
    store_request,
    update_request,
)

pytestmark = pytest.mark.both_stores  # each test on SQLite and on PostgreSQL


def refund(parent: str, **fields: str) -> dict:
    return {
        "requesttypedescriptions": ["REFUND"],
        "sitereference": SITE,
        "parenttransactionreference": parent,
        **fields,
    }


def cft_refund(**fields: str) -> dict:
    return {
        "requesttypedescriptions": ["REFUND"],
        "sitereference": SITE,
        "accounttypedescription": "CFT",
        "currencyiso3a": "GBP",
        "baseamount": "700",
        "pan": VISA,
        "expirydate": EXPIRY,
        **fields,
    }


def authorised(gateway, **fields: str) -> str:
    record = gateway.one(card_auth(**fields))
    assert record["errorcode"] == "0", record
    return record["transactionreference"]


@pytest.fixture
def settled(sandbox, gateway) -> str:
    """An AUTH of 1050 GBP, settled (the clock moved one day)."""
    reference = authorised(gateway, orderreference="order-refund")
    sandbox.advance(by="P1D")
    (record,) = gateway.query(transactionreference=reference)
    assert record["settlestatus"] == "100"
    return reference


def refused(gateway, db_path, request: dict, code: int, errordata: list[str]) -> None:
    """`request` is answered `code` with `errordata` and the table's message, and nothing is kept
    (a field refused uses up one transaction reference, which its ERROR record names)."""
    before = kept_rows(db_path)
    record = gateway.one(request)
    assert (record["errorcode"], record["errormessage"], record["errordata"]) == (
        str(code),
        message_of(code),
        errordata,
    ), record
    # a field refused (30000) is one ERROR record, as the real service answers; a refund rule, REFUND
    assert record["requesttypedescription"] == ("ERROR" if code == 30000 else "REFUND")
    assert ("transactionreference" in record) == (code == 30000)
    assert kept_rows(db_path) == before


def test_full_refund_of_a_settled_auth(gateway, settled):
    record = gateway.one(refund(settled))
    assert (record["errorcode"], record["errormessage"], record["acquirerresponsecode"]) == ("0", "Ok", "00")
    assert (record["requesttypedescription"], record["parenttransactionreference"]) == ("REFUND", settled)
    assert (record["baseamount"], record["currencyiso3a"]) == (
        "1050",
        "GBP",
    )  # all of it, in the AUTH's currency
    assert (record["maskedpan"], record["paymenttypedescription"]) == ("411111######1111", "VISA")
    assert (record["accounttypedescription"], record["orderreference"]) == ("ECOM", "order-refund")
    assert (record["settlestatus"], record["settleduedate"]) == ("0", "2026-01-16")  # its own day
    assert record["transactionreference"] != settled
    assert VISA not in str(record)


def test_refunds_appear_in_transactionquery_and_settle_the_next_day(sandbox, gateway, settled):
    reference = gateway.one(refund(settled, baseamount="400"))["transactionreference"]
    by_type = gateway.query(requesttypedescription="REFUND")
    assert [(r["transactionreference"], r["baseamount"], r["interface"]) for r in by_type] == [
        (reference, "400", "PASS-JSON-JSON")
    ]
    children = gateway.query(parenttransactionreference=settled)
    assert [r["transactionreference"] for r in children] == [reference]
    sandbox.advance(by="P1D")
    (record,) = gateway.query(transactionreference=reference)
    assert record["settlestatus"] == "100"


def test_several_partial_refunds_up_to_the_amount(gateway, db_path, settled):
    assert gateway.one(refund(settled, baseamount="300"))["baseamount"] == "300"
    assert gateway.one(refund(settled, baseamount="700"))["baseamount"] == "700"
    refused(gateway, db_path, refund(settled, baseamount="51"), 20007, ["baseamount"])  # 50 is left
    rest = gateway.one(refund(settled))  # without an amount: what is left
    assert (rest["errorcode"], rest["baseamount"]) == ("0", "50")
    refused(gateway, db_path, refund(settled), 20007, ["baseamount"])  # nothing is left
    amounts = sorted(int(r["baseamount"]) for r in gateway.query(parenttransactionreference=settled))
    assert amounts == [50, 300, 700] and sum(amounts) == 1050


def test_a_refund_above_the_amount_is_too_great(gateway, db_path, settled):
    refused(gateway, db_path, refund(settled, baseamount="1051"), 20007, ["baseamount"])


def test_refund_of_a_lowered_settle_amount_is_limited_to_it(sandbox, gateway, db_path):
    reference = authorised(gateway, baseamount="5000")
    assert gateway.one(update_request(reference, settlebaseamount="3000"))["errorcode"] == "0"
    sandbox.advance(by="P1D")
    refused(gateway, db_path, refund(reference, baseamount="3001"), 20007, ["baseamount"])
    assert gateway.one(refund(reference))["baseamount"] == "3000"


def test_missing_parent(gateway, db_path):
    refused(gateway, db_path, refund("1-9-999999"), 20004, ["parenttransactionreference"])


def test_a_site_not_the_accounts_is_refused(gateway, db_path, settled):
    other = refund(settled)
    other["sitereference"] = "test_other00000"  # not the account's: the site itself is refused
    record = gateway.one(other)
    assert (record["errorcode"], record["errordata"]) == ("30000", ["sitereference"])


def test_unsettled_parent_not_due_today(sandbox, gateway, db_path):
    reference = authorised(gateway)  # due today, as the real service answers: moved to tomorrow
    assert gateway.one(update_request(reference, settleduedate="2026-01-16"))["errorcode"] == "0"
    refused(gateway, db_path, refund(reference), 20005, ["parenttransactionreference"])
    sandbox.advance(by="P1D")
    assert gateway.one(refund(reference))["errorcode"] == "0"


def test_a_parent_due_to_settle_today_can_be_refunded(sandbox, gateway):
    reference = authorised(gateway)
    assert (
        gateway.one(update_request(reference, settlestatus="2"))["errorcode"] == "0"
    )  # suspended: not settled
    sandbox.advance(by="P1D")
    record = gateway.one(refund(reference))
    assert (record["errorcode"], record.get("errordata")) == (
        "20005",
        ["parenttransactionreference"],
    )  # suspended: it will not settle today
    assert (
        gateway.one(update_request(reference, settlestatus="1"))["errorcode"] == "0"
    )  # settles at the next run
    (parent,) = gateway.query(transactionreference=reference)
    assert (parent["settlestatus"], parent["settleduedate"]) == (
        "1",
        "2026-01-15",
    )  # due yesterday, not settled yet (it was suspended at that day's end)
    assert gateway.one(refund(reference, baseamount="50"))["errorcode"] == "0"


@pytest.mark.parametrize("make_parent", ["STORE", "REFUND"])
def test_refund_requires_an_authorisation_parent(gateway, db_path, settled, make_parent):
    if make_parent == "STORE":
        parent = gateway.one(store_request())["transactionreference"]
    else:
        parent = gateway.one(refund(settled, baseamount="10"))["transactionreference"]
    refused(gateway, db_path, refund(parent), 20006, ["parenttransactionreference"])


@pytest.mark.parametrize(
    "fields",
    [{"baseamount": "70000"}, {"pan": "4000000000000812"}, {"baseamount": "60010"}],
    ids=["declined-amount", "declined-card", "bank-error"],
)
def test_cannot_refund_a_decline(sandbox, gateway, db_path, fields):
    parent = gateway.one(card_auth(**fields))
    assert parent["errorcode"] != "0" and parent["settlestatus"] == "3"
    sandbox.advance(by="P1D")
    refused(gateway, db_path, refund(parent["transactionreference"]), 20011, ["parenttransactionreference"])


def test_the_currency_is_the_parents(gateway, db_path, settled):
    refused(gateway, db_path, refund(settled, currencyiso3a="EUR"), 20015, ["currencyiso3a"])
    assert gateway.one(refund(settled, currencyiso3a="GBP", baseamount="5"))["errorcode"] == "0"


def test_card_fields_are_refused_in_a_refund_of_an_auth(gateway, db_path, settled):
    refused(gateway, db_path, refund(settled, pan=VISA, expirydate=EXPIRY), 30000, ["pan", "expirydate"])


def test_refund_of_a_subscription_payment(sandbox, gateway):
    first = gateway.records(
        {
            "requesttypedescriptions": ["AUTH", "SUBSCRIPTION"],
            "sitereference": SITE,
            "accounttypedescription": "ECOM",
            "currencyiso3a": "GBP",
            "baseamount": "999",
            "orderreference": "sub-refund",
            "pan": VISA,
            "expirydate": EXPIRY,
            "securitycode": "123",
            "subscriptiontype": "RECURRING",
            "subscriptionunit": "MONTH",
            "subscriptionfrequency": "1",
            "subscriptionnumber": "1",
            "subscriptionfinalnumber": "3",
            "subscriptionbegindate": "2026-02-15",
            "credentialsonfile": "1",
            "transactionactive": "1",
        }
    )
    subscription = first[1]["transactionreference"]
    sandbox.advance(to="2026-02-16T10:00:00")  # payment 2 made on 02-15, settled on 02-16
    (payment,) = gateway.query(parenttransactionreference=subscription, requesttypedescription="AUTH")
    assert (payment["accounttypedescription"], payment["settlestatus"]) == ("RECUR", "100")
    record = gateway.one(refund(payment["transactionreference"], baseamount="333"))
    assert (record["errorcode"], record["accounttypedescription"], record["currencyiso3a"]) == (
        "0",
        "RECUR",
        "GBP",
    )
    assert record["parenttransactionreference"] == payment["transactionreference"]
    refused_record = gateway.one(refund(subscription))  # the SUBSCRIPTION record itself is no AUTH
    assert refused_record["errorcode"] == "20006"


def test_standalone_cft_refund_to_a_card(gateway, db_path):
    record = gateway.one(cft_refund(orderreference="cft-1"))
    assert (record["errorcode"], record["acquirerresponsecode"], record["requesttypedescription"]) == (
        "0",
        "00",
        "REFUND",
    )
    assert (record["accounttypedescription"], record["baseamount"], record["maskedpan"]) == (
        "CFT",
        "700",
        "411111######1111",
    )
    assert "parenttransactionreference" not in record
    (kept,) = gateway.query(accounttypedescription="CFT")
    assert kept["transactionreference"] == record["transactionreference"]
    assert VISA.encode() not in Database(db_path).at_rest()  # kept encrypted, as every card


@pytest.mark.parametrize(
    "fields, errordata",
    [
        ({"accounttypedescription": "ECOM"}, ["accounttypedescription"]),
        ({"pan": None, "expirydate": None}, ["pan", "expirydate"]),
        ({"expirydate": "12/2020"}, ["expirydate"]),
        ({"baseamount": "0"}, ["baseamount"]),
    ],
    ids=["not-cft", "no-card", "expired", "zero"],
)
def test_standalone_refund_rules(gateway, db_path, fields, errordata):
    request = {k: v for k, v in cft_refund(**fields).items() if v is not None}
    refused(gateway, db_path, request, 30000, errordata)


def test_update_refused_then_refund_in_the_same_envelope(gateway, settled):
    """Real-gateway-facts: a TRANSACTIONUPDATE of a settled AUTH answers 60017, a REFUND of it succeeds."""
    update, refunded = gateway.records(update_request(settled, settlestatus="2"), refund(settled))
    assert update["errorcode"] == "60017"
    assert (refunded["errorcode"], refunded["baseamount"]) == ("0", "1050")


def test_an_unsettled_refund_can_be_updated_like_an_auth(sandbox, gateway, settled):
    reference = gateway.one(refund(settled, baseamount="500"))["transactionreference"]
    assert gateway.one(update_request(reference, settlebaseamount="400"))["errorcode"] == "0"
    assert gateway.one(refund(settled))["baseamount"] == "650"  # 1050 less the 400 the first settles for
    sandbox.advance(by="P1D")
    assert gateway.one(update_request(reference, settlestatus="2"))["errorcode"] == "60017"  # settled: final


def test_refunds_at_the_same_time_never_exceed_the_amount(sandbox, settled):
    """Eight clients refund 300 of the 1050 at once: exactly three succeed, the rest are too great."""

    def one_refund(_: int) -> str:
        client = Gateway(sandbox.base_url)
        try:
            return client.one(refund(settled, baseamount="300"))["errorcode"]
        finally:
            client.close()

    with ThreadPoolExecutor(max_workers=8) as pool:
        codes = sorted(pool.map(one_refund, range(8)))
    assert codes == ["0"] * 3 + ["20007"] * 5


def test_a_refund_whose_answer_is_unknown_may_exist_and_counts(sandbox, gateway, settled):
    """Payment-aware faults cover refunds: after a 60010 the refund may exist; query before refunding again."""
    sandbox.faults.add("gateway_error", code=60010, made=True, requesttypes=["REFUND"])
    answered = gateway.one(refund(settled, baseamount="1000"))
    assert answered["errorcode"] == "60010"
    (kept,) = gateway.query(parenttransactionreference=settled)
    assert (kept["transactionreference"], kept["baseamount"]) == (answered["transactionreference"], "1000")
    again = gateway.one(refund(settled, baseamount="1000"))  # the blind retry is too great: it was made
    assert again["errorcode"] == "20007"


def test_an_auth_refunded_from_cannot_be_cancelled_or_lowered_below_its_refunds(sandbox, gateway, db_path):
    reference = authorised(gateway, orderreference="refunded-from")  # 1050
    assert gateway.one(update_request(reference, settleduedate="2026-01-15"))["errorcode"] == "0"  # today
    assert gateway.one(refund(reference, baseamount="1000"))["errorcode"] == "0"
    before = all_rows(db_path)
    for updates, code, field in [
        ({"settlestatus": "3"}, 60017, "settlestatus"),
        ({"settlestatus": "2"}, 60017, "settlestatus"),  # suspended: the refund would settle alone
        ({"settleduedate": "2026-01-16"}, 60017, "settleduedate"),  # after its refund's day
        ({"settlebaseamount": "100"}, 20007, "settlebaseamount"),
        ({"settlebaseamount": "999", "settleduedate": "2026-01-16"}, 20007, "settlebaseamount"),
    ]:
        record = gateway.one(update_request(reference, **updates))
        assert (record["errorcode"], record["errormessage"], record["errordata"]) == (
            str(code),
            message_of(code),
            [field],
        ), updates
    assert all_rows(db_path) == before
    (parent,) = gateway.query(transactionreference=reference)
    assert (parent["settlestatus"], parent.get("settlebaseamount")) == ("0", None)  # nothing changed
    # Down to what was refunded is fine; two days later the money is consistent.
    assert gateway.one(update_request(reference, settlebaseamount="1000"))["errorcode"] == "0"
    sandbox.advance(by="P2D")
    settled = {r["requesttypedescription"]: r for r in gateway.query(orderreference="refunded-from")}
    assert settled["AUTH"]["settlestatus"] == settled["REFUND"]["settlestatus"] == "100"
    assert int(settled["AUTH"]["settlebaseamount"]) >= int(settled["REFUND"]["baseamount"]) == 1000


def test_an_auth_refunded_from_is_never_settled_after_its_refunds(sandbox, gateway):
    """Each day, what has settled of the AUTH covers what has settled of its refunds."""
    reference = authorised(gateway, orderreference="kept-in-step")  # 1050, due tomorrow
    assert gateway.one(update_request(reference, settleduedate="2026-01-15"))["errorcode"] == "0"  # today
    assert gateway.one(refund(reference, baseamount="400"))["errorcode"] == "0"
    refused_updates = [
        gateway.one(update_request(reference, **updates))["errorcode"]
        for updates in ({"settlestatus": "2"}, {"settleduedate": "2026-01-17"}, {"settlestatus": "1"})
    ]
    assert refused_updates == ["60017", "60017", "0"]  # still pending (1) on its refund's day is fine
    for _ in range(3):
        sandbox.advance(by="P1D")
        records = {r["requesttypedescription"]: r for r in gateway.query(orderreference="kept-in-step")}
        parent_paid = records["AUTH"]["settlestatus"] == "100"
        assert parent_paid or records["REFUND"]["settlestatus"] != "100", records


def test_a_suspended_refund_leaves_its_parent_free_again(sandbox, gateway):
    """Only live refunds bind the parent: once its refund is cancelled, the AUTH may be suspended."""
    reference = authorised(gateway)
    assert gateway.one(update_request(reference, settleduedate="2026-01-15"))["errorcode"] == "0"
    refunded = gateway.one(refund(reference, baseamount="400"))["transactionreference"]
    assert gateway.one(update_request(refunded, settlestatus="3"))["errorcode"] == "0"
    assert gateway.one(update_request(reference, settlestatus="2"))["errorcode"] == "0"


def test_an_auth_without_refunds_can_still_be_cancelled(gateway):
    reference = authorised(gateway)
    assert gateway.one(update_request(reference, settlestatus="3"))["errorcode"] == "0"
