"""TRANSACTIONUPDATE over real HTTP: stored cards, settlement instructions of AUTHs, refusals."""

from __future__ import annotations

import json

import pytest

from support.sandbox import SITE, all_rows, card_auth, store_request, update_request

pytestmark = pytest.mark.both_stores  # each test on SQLite and on PostgreSQL


def only(gateway, reference):
    (record,) = gateway.query(transactionreference=reference)
    return record


def test_update_answers_ok_in_the_real_shape(gateway):
    reference = gateway.one(store_request())["transactionreference"]
    record = gateway.one(
        {
            "requesttypedescriptions": ["TRANSACTIONUPDATE"],
            "filter": {"sitereference": [{"value": SITE}], "transactionreference": [{"value": reference}]},
            "updates": {"transactionactive": "0"},
        }
    )
    assert (record["requesttypedescription"], record["errorcode"], record["errormessage"]) == (
        "TRANSACTIONUPDATE",
        "0",
        "Ok",
    )
    assert only(gateway, reference)["transactionactive"] == "0"


def test_filter_without_sitereference_uses_the_accounts_sites(gateway):
    reference = gateway.one(store_request())["transactionreference"]
    record = gateway.one(
        {
            "requesttypedescriptions": ["TRANSACTIONUPDATE"],
            "filter": {"transactionreference": [{"value": reference}]},
            "updates": {"transactionactive": "0"},
        }
    )
    assert record["errorcode"] == "0"


@pytest.mark.parametrize("value", ["0", "1"])
def test_stored_card_transactionactive(gateway, value):
    reference = gateway.one(store_request())["transactionreference"]
    assert gateway.one(update_request(reference, transactionactive=value))["errorcode"] == "0"
    assert only(gateway, reference)["transactionactive"] == value


def test_stored_card_refuses_other_updates(gateway, db_path):
    reference = gateway.one(store_request())["transactionreference"]
    before = all_rows(db_path)
    for updates, invalid in [
        ({"transactionactive": "2"}, "transactionactive"),
        ({"baseamount": "100"}, "baseamount"),
    ]:
        record = gateway.one(update_request(reference, **updates))
        assert (record["errorcode"], record["errordata"]) == ("30000", [invalid])
    assert only(gateway, reference)["transactionactive"] == "1"
    assert all_rows(db_path) == before


@pytest.mark.parametrize("settlestatus", ["0", "1", "2"])
def test_auth_settlestatus_while_not_settled(gateway, settlestatus):
    reference = gateway.one(card_auth())["transactionreference"]
    assert gateway.one(update_request(reference, settlestatus=settlestatus))["errorcode"] == "0"
    assert only(gateway, reference)["settlestatus"] == settlestatus


def test_auth_settlebaseamount_and_settlement_follow_the_updates(sandbox, gateway):
    partial = gateway.one(card_auth(baseamount="5000"))["transactionreference"]
    manual = gateway.one(card_auth())["transactionreference"]
    suspended = gateway.one(card_auth())["transactionreference"]
    assert gateway.one(update_request(partial, settlebaseamount="3000"))["errorcode"] == "0"
    assert gateway.one(update_request(manual, settlestatus="1"))["errorcode"] == "0"
    assert gateway.one(update_request(suspended, settlestatus="2"))["errorcode"] == "0"
    report = sandbox.advance(by="P1D")
    assert sorted(report["settlement"]["settled"]) == sorted([partial, manual])
    settled = only(gateway, partial)
    assert (settled["settlestatus"], settled["settlebaseamount"], settled["baseamount"]) == (
        "100",
        "3000",
        "5000",
    )
    assert only(gateway, manual)["settlestatus"] == "100"
    assert only(gateway, suspended)["settlestatus"] == "2"


def test_settlebaseamount_above_the_amount_is_refused(gateway):
    reference = gateway.one(card_auth(baseamount="1050"))["transactionreference"]
    record = gateway.one(update_request(reference, settlebaseamount="1051"))
    assert (record["errorcode"], record["errordata"]) == ("30000", ["settlebaseamount"])
    assert "settlebaseamount" not in only(gateway, reference)


@pytest.mark.parametrize(
    "updates, invalid",
    [
        ({"settlestatus": "100"}, "settlestatus"),
        ({"settlestatus": "10"}, "settlestatus"),
        ({"transactionactive": "1"}, "transactionactive"),
        ({"subscriptionfrequency": "2"}, "subscriptionfrequency"),
        ({"billingtown": "Leeds"}, "billingtown"),
        ({"settleduedate": "2026-01-14"}, "settleduedate"),
    ],
)
def test_auth_refuses_other_updates(gateway, updates, invalid):
    reference = gateway.one(card_auth())["transactionreference"]
    record = gateway.one(update_request(reference, **updates))
    assert (record["errorcode"], record["errordata"]) == ("30000", [invalid])
    assert only(gateway, reference)["settlestatus"] == "0"


def test_settled_auth_is_not_updatable(sandbox, gateway):
    reference = gateway.one(card_auth())["transactionreference"]
    sandbox.advance(by="P1D")
    assert only(gateway, reference)["settlestatus"] == "100"
    record = gateway.one(update_request(reference, settlestatus="2"))
    assert (record["errorcode"], record["errormessage"]) == ("60017", "Transaction not updatable")
    assert only(gateway, reference)["settlestatus"] == "100"


@pytest.mark.parametrize("amount", ["70000", "60010"])
def test_cancelled_auth_is_not_updatable(gateway, amount):
    reference = gateway.one(card_auth(baseamount=amount))["transactionreference"]
    record = gateway.one(update_request(reference, settlebaseamount="100"))
    assert (record["errorcode"], record["errormessage"]) == ("60017", "Transaction not updatable")


@pytest.mark.parametrize("updates", [None, {}])
def test_no_usable_updates_is_60013(gateway, db_path, updates):
    reference = gateway.one(store_request())["transactionreference"]
    request = update_request(reference)
    if updates is None:
        del request["updates"]
    else:
        request["updates"] = updates
    before = all_rows(db_path)
    record = gateway.one(request)
    assert (record["errorcode"], record["errormessage"]) == ("60013", "No valid updates specified")
    assert all_rows(db_path) == before


def test_update_without_a_transactionreference_is_60019(gateway):
    record = gateway.one(
        {
            "requesttypedescriptions": ["TRANSACTIONUPDATE"],
            "filter": {"sitereference": [{"value": SITE}]},
            "updates": {"transactionactive": "0"},
        }
    )
    assert record["errorcode"] == "60019"


def test_unknown_reference_is_refused(gateway):
    record = gateway.one(update_request("12-9-987654", transactionactive="0"))
    assert (record["errorcode"], record["errordata"]) == ("30000", ["transactionreference"])


def test_several_references_change_together_or_not_at_all(gateway):
    first = gateway.one(store_request())["transactionreference"]
    second = gateway.one(store_request())["transactionreference"]
    assert gateway.one(update_request([first, second], transactionactive="0"))["errorcode"] == "0"
    assert only(gateway, first)["transactionactive"] == only(gateway, second)["transactionactive"] == "0"
    declined = gateway.one(card_auth(baseamount="70000"))["transactionreference"]
    record = gateway.one(update_request([first, declined], transactionactive="1"))
    assert record["errorcode"] != "0"
    assert only(gateway, first)["transactionactive"] == "0"


@pytest.mark.parametrize(
    "updates, named",
    [
        ({"transactionactive": ""}, "transactionactive"),
        ({"transactionactive": 0}, "transactionactive"),
        ({"pan": "4111111111111111"}, "pan"),
        ("transactionactive=0", "updates"),
    ],
)
def test_malformed_updates_are_30000_naming_the_field(gateway, updates, named):
    reference = gateway.one(store_request())["transactionreference"]
    request = {**update_request(reference), "updates": updates}
    record = gateway.one(request)
    assert (record["errorcode"], record["errordata"]) == ("30000", [named])
    assert "4111111111111111" not in json.dumps(record)
    assert only(gateway, reference)["transactionactive"] == "1"


# -- the full updatable set (issue 17) ------------------------------------------------------------


def test_settlestatus_3_cancels_a_pending_auth_for_good(sandbox, gateway):
    reference = gateway.one(card_auth())["transactionreference"]
    assert gateway.one(update_request(reference, settlestatus="3"))["errorcode"] == "0"
    sandbox.advance(by="P2D")
    assert only(gateway, reference)["settlestatus"] == "3"  # never settles
    record = gateway.one(update_request(reference, settlestatus="0"))
    assert (record["errorcode"], record["errormessage"]) == ("60017", "Transaction not updatable")


def test_settleduedate_moves_settlement_to_that_day(sandbox, gateway):
    reference = gateway.one(card_auth())["transactionreference"]
    assert only(gateway, reference)["settleduedate"] == "2026-01-15"  # its own day
    assert gateway.one(update_request(reference, settleduedate="2026-01-20"))["errorcode"] == "0"
    assert only(gateway, reference)["settleduedate"] == "2026-01-20"
    sandbox.advance(by="P5D")  # 2026-01-20: not yet, it settles at that day's end
    assert only(gateway, reference)["settlestatus"] == "0"
    sandbox.advance(by="P1D")
    assert only(gateway, reference)["settlestatus"] == "100"


def test_settleduedate_today_is_taken_but_not_a_past_or_impossible_day(gateway):
    reference = gateway.one(card_auth())["transactionreference"]
    assert gateway.one(update_request(reference, settleduedate="2026-01-15"))["errorcode"] == "0"
    for bad in ("2026-01-14", "2026-02-30", "15/01/2026"):
        record = gateway.one(update_request(reference, settleduedate=bad))
        assert (record["errorcode"], record["errordata"]) == ("30000", ["settleduedate"]), bad
    assert only(gateway, reference)["settleduedate"] == "2026-01-15"


def test_settlebaseamount_is_never_above_the_authorised_amount(gateway):
    """As the official client's module tests expect of the real site: 35, then 50, of 100."""
    reference = gateway.one(card_auth(baseamount="5000"))["transactionreference"]
    assert gateway.one(update_request(reference, settlebaseamount="4000"))["errorcode"] == "0"
    assert gateway.one(update_request(reference, settlebaseamount="4500"))["errorcode"] == "0"  # back up
    record = gateway.one(update_request(reference, settlebaseamount="5001"))  # above the AUTH: refused
    assert (record["errorcode"], record["errordata"]) == ("30000", ["settlebaseamount"])
    assert gateway.one(update_request(reference, settlebaseamount="3000"))["errorcode"] == "0"
    assert only(gateway, reference)["settlebaseamount"] == "3000"


def test_suspended_auth_can_still_be_updated_and_released(sandbox, gateway):
    reference = gateway.one(card_auth())["transactionreference"]
    assert gateway.one(update_request(reference, settlestatus="2"))["errorcode"] == "0"
    sandbox.advance(by="P2D")
    assert only(gateway, reference)["settlestatus"] == "2"
    assert (
        gateway.one(update_request(reference, settlestatus="0", settleduedate="2026-01-18"))["errorcode"]
        == "0"
    )
    sandbox.advance(by="P1D")  # 2026-01-18: settled at its end
    assert only(gateway, reference)["settlestatus"] == "0"
    sandbox.advance(by="P1D")
    assert only(gateway, reference)["settlestatus"] == "100"


def test_stored_card_billing_details_are_updated_and_lent_to_later_payments(gateway):
    reference = gateway.one(
        store_request(billingfirstname="Ada", billingcountryiso2a="GB", billingpostcode="SW1A 1AA")
    )["transactionreference"]
    record = gateway.one(update_request(reference, billingtown="Leeds", billingpostcode="LS1 4AP"))
    assert record["errorcode"] == "0"
    stored = only(gateway, reference)
    assert (stored["billingfirstname"], stored["billingtown"], stored["billingpostcode"]) == (
        "Ada",
        "Leeds",
        "LS1 4AP",
    )
    child = gateway.one(
        {
            "requesttypedescriptions": ["AUTH"],
            "sitereference": SITE,
            "accounttypedescription": "ECOM",
            "currencyiso3a": "GBP",
            "baseamount": "1000",
            "parenttransactionreference": reference,
        }
    )
    assert only(gateway, child["transactionreference"])["billingtown"] == "Leeds"


def test_stored_card_billing_update_is_checked_against_the_kept_country(gateway, db_path):
    reference = gateway.one(store_request(billingcountryiso2a="US", billingpostcode="90210"))[
        "transactionreference"
    ]
    before = all_rows(db_path)
    record = gateway.one(update_request(reference, billingpostcode="SW1A 1AA"))  # not a US ZIP code
    assert (record["errorcode"], record["errordata"]) == ("30000", ["billingpostcode"])
    assert only(gateway, reference)["billingpostcode"] == "90210"
    assert all_rows(db_path) == before


@pytest.mark.parametrize(
    "updates, named",
    [
        ({"orderreference": "x"}, "orderreference"),
        ({"currencyiso3a": "USD"}, "currencyiso3a"),
        ({"expirydate": "12/2031"}, "expirydate"),
    ],
)
def test_fields_outside_the_updatable_set_are_refused_by_name(gateway, updates, named):
    reference = gateway.one(card_auth())["transactionreference"]
    record = gateway.one(update_request(reference, **updates))
    assert (record["errorcode"], record["errormessage"], record["errordata"]) == (
        "30000",
        "Invalid field",
        [named],
    )


def test_records_of_other_types_are_not_updatable(gateway):
    check = gateway.one(
        {
            "requesttypedescriptions": ["ACCOUNTCHECK"],
            "sitereference": SITE,
            "accounttypedescription": "ECOM",
            "currencyiso3a": "GBP",
            "pan": "4111111111111111",
            "expirydate": "12/2030",
        }
    )
    record = gateway.one(update_request(check["transactionreference"], settlestatus="1"))
    assert record["errorcode"] == "60017"


def test_subscriptionfrequency_applies_from_the_next_payment_on(sandbox, gateway):
    _auth, subscription = gateway.records(
        {
            **card_auth(orderreference="freq"),
            "requesttypedescriptions": ["AUTH", "SUBSCRIPTION"],
            "subscriptiontype": "RECURRING",
            "subscriptionunit": "MONTH",
            "subscriptionfrequency": "1",
            "subscriptionnumber": "1",
            "subscriptionfinalnumber": "4",
            "subscriptionbegindate": "2026-02-01",
            "credentialsonfile": "1",
            "transactionactive": "1",
        }
    )
    reference = subscription["transactionreference"]
    sandbox.advance(to="2026-02-02T10:00:00")  # payment 2 made on 2026-02-01
    assert gateway.one(update_request(reference, subscriptionfrequency="3"))["errorcode"] == "0"
    assert only(gateway, reference)["subscriptionfrequency"] == "3"
    sandbox.advance(to="2026-09-01T10:00:00")
    payments = gateway.query(parenttransactionreference=reference)
    # payment 3 stays due on 2026-03-01, payment 4 comes three months later
    assert [(p["subscriptionnumber"], p["transactionstartedtimestamp"][:10]) for p in payments] == [
        ("4", "2026-06-01"),
        ("3", "2026-03-01"),
        ("2", "2026-02-01"),
    ]
    record = gateway.one(update_request(reference, subscriptionfrequency="0"))
    assert (record["errorcode"], record["errordata"]) == ("30000", ["subscriptionfrequency"])
