"""What the official client's own integration tests send, over raw HTTP (real-gateway-facts.md):
the expiry as expirymonth + expiryyear, the singular requesttypedescription, chained request types
in one object and across objects, refused combinations, and 60018 ["None"] for an empty object."""

from __future__ import annotations

import httpx
import pytest

from support.sandbox import CLOCK, SITE, all_rows, card_auth, kept_rows, store_request

pytestmark = pytest.mark.both_stores  # each test on SQLite and on PostgreSQL

PAIR = {"expirymonth": "11", "expiryyear": "2031"}
# The name the official tests put in customerfirstname: punctuation, quotes, CR, LF, tab, non-ASCII.
UNI = "T\r\xc2\xa3S'T(|]><[\\xG %s %% \"+N\\\\&\\M\xc8.?\nTAB\t12}34{56789,:;#END"


def with_pair(request):
    request = {k: v for k, v in request.items() if k != "expirydate"}
    return {
        **request,
        **PAIR,
        "paymenttypedescription": "VISA",
        "customerfirstname": UNI,
        "field_that_wont_be_passed": "HERE",
    }


def accountcheck(**fields):
    return {
        "requesttypedescriptions": ["ACCOUNTCHECK"],
        "sitereference": SITE,
        "accounttypedescription": "ECOM",
        "currencyiso3a": "GBP",
        "baseamount": "0",
        "pan": "4111111111111111",
        **PAIR,
        "securitycode": "123",
        **fields,
    }


def threedquery(pan, **fields):
    return {
        "requesttypedescriptions": ["THREEDQUERY"],
        "sitereference": SITE,
        "accounttypedescription": "ECOM",
        "currencyiso3a": "GBP",
        "baseamount": "100",
        "termurl": "https://www.termurl.com",
        "pan": pan,
        **PAIR,
        "securitycode": "123",
        **fields,
    }


SUBSCRIPTION = {
    "subscriptiontype": "RECURRING",
    "subscriptionunit": "MONTH",
    "subscriptionfrequency": "1",
    "subscriptionfinalnumber": "3",
    "subscriptionnumber": "1",
}


def kept(gateway, reference):
    (record,) = gateway.query(transactionreference=reference)
    return record


# -- expirymonth + expiryyear ---------------------------------------------------------------------


@pytest.mark.parametrize(
    "request_object",
    [
        card_auth(),
        store_request(pan="4111111111111111"),
        threedquery("4000000000000721"),
        accountcheck(),
        {
            **card_auth(),
            "requesttypedescriptions": ["AUTH", "SUBSCRIPTION"],
            "orderreference": "pair-sub",
            **SUBSCRIPTION,
            "subscriptionbegindate": "2026-02-15",
            "credentialsonfile": "1",
        },
    ],
    ids=["AUTH", "STORE", "THREEDQUERY", "ACCOUNTCHECK", "AUTH+SUBSCRIPTION"],
)
def test_the_expiry_pair_is_taken_wherever_expirydate_is(gateway, request_object):
    records = gateway.records(with_pair(request_object))
    assert [r["errorcode"] for r in records] == ["0"] * len(records), records
    assert records[0]["maskedpan"].startswith("4")
    if records[0]["requesttypedescription"] == "STORE":
        assert kept(gateway, records[0]["transactionreference"])["expirydate"] == "11/2031"


def test_an_auth_sent_with_the_pair_is_the_same_card_as_with_expirydate(gateway):
    stored = gateway.one(with_pair(store_request(pan="4111111111111111")))["transactionreference"]
    child = gateway.one(
        {
            "requesttypedescriptions": ["AUTH"],
            "sitereference": SITE,
            "baseamount": "100",
            "accounttypedescription": "ECOM",
            "currencyiso3a": "GBP",
            "parenttransactionreference": stored,
        }
    )
    assert (child["errorcode"], child["maskedpan"]) == ("0", "411111######1111")


@pytest.mark.parametrize(
    "pair, named",
    [
        ({"expirymonth": "13", "expiryyear": "2031"}, ["expirymonth"]),
        ({"expirymonth": "1", "expiryyear": "2031"}, ["expirymonth"]),
        ({"expirymonth": "11", "expiryyear": "31"}, ["expiryyear"]),
        ({"expirymonth": "11"}, ["expiryyear"]),
        ({"expiryyear": "2031"}, ["expirymonth"]),
        (
            {"expirymonth": "12", "expiryyear": "2025"},
            ["expirydate"],
        ),  # well formed, but expired by the clock
    ],
)
def test_a_bad_or_lone_half_of_the_pair_is_30000_naming_it(gateway, db_path, pair, named):
    before = kept_rows(db_path)
    request = {k: v for k, v in card_auth().items() if k != "expirydate"}
    record = gateway.one({**request, **pair})
    assert (record["errorcode"], record["errormessage"], record["errordata"]) == (
        "30000",
        "Invalid field",
        named,
    )
    assert kept_rows(db_path) == before


def test_expirydate_wins_when_both_forms_are_sent(gateway):
    record = gateway.one({**card_auth(expirydate="12/2030"), "expirymonth": "99", "expiryyear": "x"})
    assert record["errorcode"] == "0"


# -- requesttypedescription (one string) ---------------------------------------------------------


def test_the_singular_requesttypedescription_is_taken(gateway):
    request = card_auth()
    request["requesttypedescription"] = request.pop("requesttypedescriptions")[0]
    record = gateway.one(request)
    assert (record["requesttypedescription"], record["errorcode"]) == ("AUTH", "0")


def test_an_empty_request_object_is_60018_none(gateway, db_path):
    before = all_rows(db_path)
    assert gateway.one({}) == {
        "requesttypedescription": "ERROR",
        "transactionstartedtimestamp": CLOCK.strftime("%Y-%m-%d %H:%M:%S"),
        "errorcode": "60018",
        "errormessage": "Invalid requesttype",
        "errordata": ["None"],
    }
    assert all_rows(db_path) == before


# -- chained request types in one object ----------------------------------------------------------


def test_threedquery_auth_for_a_card_not_enrolled_runs_the_auth_at_once(gateway):
    query, auth = gateway.records(
        {**threedquery("4000000000000721"), "requesttypedescriptions": ["THREEDQUERY", "AUTH"]}
    )
    assert (query["requesttypedescription"], query["enrolled"], query["errorcode"]) == (
        "THREEDQUERY",
        "N",
        "0",
    )
    assert (auth["requesttypedescription"], auth["errorcode"], auth["acquirerresponsecode"]) == (
        "AUTH",
        "0",
        "00",
    )
    assert auth["parenttransactionreference"] == query["transactionreference"]
    assert (auth["baseamount"], auth["enrolled"], auth["maskedpan"]) == ("100", "N", "400000######0721")


def test_threedquery_auth_for_an_enrolled_card_answers_only_the_query(gateway, db_path):
    records = gateway.records(
        {**threedquery("4111110000000211"), "requesttypedescriptions": ["THREEDQUERY", "AUTH"]}
    )
    (query,) = records
    assert (query["requesttypedescription"], query["enrolled"], query["errorcode"]) == (
        "THREEDQUERY",
        "Y",
        "0",
    )
    assert query["acsurl"] and query["md"]
    assert gateway.query(requesttypedescription="AUTH") == []


def test_accountcheck_subscription_in_one_object(sandbox, gateway):
    request = {
        **accountcheck(baseamount="100", orderreference="ac-sub"),
        **SUBSCRIPTION,
        "requesttypedescriptions": ["ACCOUNTCHECK", "SUBSCRIPTION"],
    }
    check, subscription = gateway.records(request)
    assert (check["requesttypedescription"], check["errorcode"]) == ("ACCOUNTCHECK", "0")
    assert (subscription["requesttypedescription"], subscription["errorcode"]) == ("SUBSCRIPTION", "0")
    assert subscription["parenttransactionreference"] == check["transactionreference"]
    assert (
        subscription["baseamount"],
        subscription["subscriptionnumber"],
        subscription["orderreference"],
    ) == ("100", "1", "ac-sub")
    assert (
        subscription["subscriptionbegindate"] == "2026-01-15"
    )  # no money was taken: the first payment is due now
    assert check["settlestatus"] == "0"  # as the real service answers, though it takes no money
    report = sandbox.advance(by="P1D")
    payments = gateway.query(accounttypedescription="RECUR", requesttypedescription="AUTH")
    assert [(p["baseamount"], p["subscriptionnumber"], p["errorcode"]) for p in payments] == [
        ("100", "1", "0")
    ]
    assert report["days"] == 1


def test_a_declined_accountcheck_starts_no_subscription(gateway):
    request = {
        **accountcheck(pan="4000000000000812", baseamount="100"),
        **SUBSCRIPTION,
        "requesttypedescriptions": ["ACCOUNTCHECK", "SUBSCRIPTION"],
    }
    check, subscription = gateway.records(request)
    assert (check["errorcode"], check["settlestatus"]) == ("70000", "3")
    assert (
        subscription["requesttypedescription"],
        subscription["errorcode"],
        subscription["errormessage"],
    ) == ("SUBSCRIPTION", "20019", "Subscription requires successful parent")
    assert gateway.query(requesttypedescription="SUBSCRIPTION") == []


def test_accountcheck_auth_in_one_object_takes_the_money_once(gateway):
    check, auth = gateway.records(
        {**accountcheck(baseamount="2500"), "requesttypedescriptions": ["ACCOUNTCHECK", "AUTH"]}
    )
    assert (check["errorcode"], auth["errorcode"]) == ("0", "0")
    assert (auth["parenttransactionreference"], auth["baseamount"], auth["settlestatus"]) == (
        check["transactionreference"],
        "2500",
        "0",
    )
    # the check carries settlestatus 0 too (as the real service answers), but one AUTH takes the money
    pending = gateway.query(settlestatus="0")
    assert sorted(r["requesttypedescription"] for r in pending) == ["ACCOUNTCHECK", "AUTH"]
    assert [r["baseamount"] for r in pending if r["requesttypedescription"] == "AUTH"] == ["2500"]


# -- chained across request objects of one envelope -------------------------------------------------


def test_an_accountcheck_object_then_a_subscription_object(gateway):
    check_object = with_pair(accountcheck(baseamount="100"))
    check_object["requesttypedescription"] = check_object.pop("requesttypedescriptions")[0]
    subscription_object = {
        "requesttypedescription": "SUBSCRIPTION",
        "sitereference": SITE,
        **SUBSCRIPTION,
        "field_that_wont_be_passed": "HERE",
    }
    check, subscription = gateway.records(check_object, subscription_object)
    assert (check["requesttypedescription"], check["errorcode"]) == ("ACCOUNTCHECK", "0")
    assert (subscription["requesttypedescription"], subscription["errorcode"]) == ("SUBSCRIPTION", "0")
    assert subscription["parenttransactionreference"] == check["transactionreference"]
    assert (subscription["baseamount"], subscription["currencyiso3a"]) == ("100", "GBP")  # from the parent


def test_an_auth_object_then_a_subscription_object(gateway):
    auth, subscription = gateway.records(
        card_auth(baseamount="1500"),
        {"requesttypedescriptions": ["SUBSCRIPTION"], "sitereference": SITE, **SUBSCRIPTION},
    )
    assert subscription["errorcode"] == "0"
    assert subscription["parenttransactionreference"] == auth["transactionreference"]
    # the AUTH was payment 1: the next one is 2, one interval later
    assert (subscription["subscriptionnumber"], subscription["subscriptionbegindate"]) == ("2", "2026-02-15")


def test_a_subscription_object_on_its_own_needs_its_parent(gateway, db_path):
    before = kept_rows(db_path)
    record = gateway.one({"requesttypedescriptions": ["SUBSCRIPTION"], "sitereference": SITE, **SUBSCRIPTION})
    assert (record["errorcode"], record["errordata"]) == ("30000", ["parenttransactionreference"])
    record = gateway.one(
        {
            "requesttypedescriptions": ["SUBSCRIPTION"],
            "sitereference": SITE,
            **SUBSCRIPTION,
            "parenttransactionreference": "12-9-999999",
        }
    )
    assert (record["errorcode"], record["errormessage"]) == ("20004", "Missing parent")
    assert kept_rows(db_path) == before  # the 30000 used up a reference only


def test_a_subscription_cannot_be_a_parent(gateway):
    _check, subscription = gateway.records(
        {
            **accountcheck(baseamount="100"),
            **SUBSCRIPTION,
            "requesttypedescriptions": ["ACCOUNTCHECK", "SUBSCRIPTION"],
        }
    )
    record = gateway.one(
        {
            "requesttypedescriptions": ["SUBSCRIPTION"],
            "sitereference": SITE,
            **SUBSCRIPTION,
            "parenttransactionreference": subscription["transactionreference"],
        }
    )
    assert (record["errorcode"], record["errormessage"]) == (
        "20032",
        "Subscription cannot be used as a parent",
    )


def test_an_accountcheck_of_no_amount_lends_no_amount_to_a_subscription(gateway):
    check = gateway.one(accountcheck())
    record = gateway.one(
        {
            "requesttypedescriptions": ["SUBSCRIPTION"],
            "sitereference": SITE,
            **SUBSCRIPTION,
            "parenttransactionreference": check["transactionreference"],
        }
    )
    assert (record["errorcode"], record["errordata"]) == ("30000", ["baseamount"])
    record = gateway.one(
        {
            "requesttypedescriptions": ["SUBSCRIPTION"],
            "sitereference": SITE,
            **SUBSCRIPTION,
            "parenttransactionreference": check["transactionreference"],
            "baseamount": "999",
        }
    )
    assert (record["errorcode"], record["baseamount"], record["accounttypedescription"]) == (
        "0",
        "999",
        "RECUR",
    )


# -- refused combinations ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "types",
    [
        ["TRANSACTIONUPDATE", "AUTH"],
        ["AUTH", "CACHETOKENISE"],
        ["SUBSCRIPTION", "AUTH"],
        ["STORE", "SUBSCRIPTION"],
    ],
)
def test_a_combination_the_service_does_not_offer_is_30000(gateway, db_path, types):
    before = all_rows(db_path)
    records = gateway.records(
        {
            **card_auth(),
            "requesttypedescriptions": types,
            **SUBSCRIPTION,
            "filter": {"transactionreference": [{"value": "1-9-1"}]},
            "updates": {"settlestatus": "1"},
        }
    )
    assert {(r["errorcode"], r["errormessage"], tuple(r["errordata"])) for r in records} == {
        ("30000", "Invalid field", ("requesttypedescriptions",))
    }
    assert all_rows(db_path) == before


def test_in_one_envelope_an_update_of_a_settled_auth_is_60017_and_the_next_object_still_runs(
    sandbox, gateway
):
    reference = gateway.one(card_auth())["transactionreference"]
    sandbox.advance(by="P1D")
    update, auth = gateway.records(
        {
            "requesttypedescription": "TRANSACTIONUPDATE",
            "filter": {"transactionreference": [{"value": reference}]},
            "updates": {"settlebaseamount": "80"},
        },
        card_auth(),
    )
    assert (update["errorcode"], update["errormessage"]) == ("60017", "Transaction not updatable")
    assert auth["errorcode"] == "0"


def test_installment_subscriptions_are_scheduled_and_must_end(sandbox, gateway):
    request = {
        **accountcheck(baseamount="2000"),
        **SUBSCRIPTION,
        "subscriptiontype": "INSTALLMENT",
        "subscriptionfinalnumber": "2",
        "requesttypedescriptions": ["ACCOUNTCHECK", "SUBSCRIPTION"],
    }
    _check, subscription = gateway.records(request)
    assert (subscription["errorcode"], subscription["subscriptiontype"]) == ("0", "INSTALLMENT")
    refused = gateway.one(
        {
            "requesttypedescriptions": ["TRANSACTIONUPDATE"],
            "filter": {"transactionreference": [{"value": subscription["transactionreference"]}]},
            "updates": {"subscriptionfinalnumber": "0"},
        }
    )
    assert (refused["errorcode"], refused["errordata"]) == ("30000", ["subscriptionfinalnumber"])
    sandbox.advance(to="2026-04-01T10:00:00")
    payments = gateway.query(parenttransactionreference=subscription["transactionreference"])
    assert [p["subscriptionnumber"] for p in payments] == ["2", "1"]  # two instalments, then it stops
    endless = gateway.records({**request, "subscriptionfinalnumber": "0"})
    assert (endless[-1]["errorcode"], endless[-1]["errordata"]) == ("30000", ["subscriptionfinalnumber"])


def test_a_subscription_of_days_as_the_official_tests_send_it(sandbox, gateway):
    """module_test_api.py: unit DAY, type INSTALLMENT, frequency 1, final number 1, no begin date."""
    official = {
        "subscriptionunit": "DAY",
        "subscriptiontype": "INSTALLMENT",
        "subscriptionfrequency": "1",
        "subscriptionfinalnumber": "1",
        "subscriptionnumber": "1",
    }
    check, subscription = gateway.records(
        {
            **with_pair(accountcheck(baseamount="100")),
            **official,
            "requesttypedescriptions": ["ACCOUNTCHECK", "SUBSCRIPTION"],
        }
    )
    assert (check["errorcode"], subscription["errorcode"], subscription["subscriptionunit"]) == (
        "0",
        "0",
        "DAY",
    )
    sandbox.advance(by="P5D")
    payments = gateway.query(parenttransactionreference=subscription["transactionreference"])
    assert [(p["subscriptionnumber"], p["baseamount"]) for p in payments] == [
        ("1", "100")
    ]  # one, then it ends


def test_days_between_payments_after_an_auth(sandbox, gateway):
    _auth, subscription = gateway.records(
        card_auth(baseamount="700"),
        {
            "requesttypedescriptions": ["SUBSCRIPTION"],
            "sitereference": SITE,
            **SUBSCRIPTION,
            "subscriptionunit": "DAY",
            "subscriptionfrequency": "7",
            "subscriptionfinalnumber": "4",
            "transactionactive": "1",
        },
    )
    assert (subscription["subscriptionnumber"], subscription["subscriptionbegindate"]) == ("2", "2026-01-22")
    sandbox.advance(to="2026-03-01T10:00:00")
    payments = gateway.query(parenttransactionreference=subscription["transactionreference"])
    assert [(p["subscriptionnumber"], p["transactionstartedtimestamp"][:10]) for p in payments] == [
        ("4", "2026-02-05"),
        ("3", "2026-01-29"),
        ("2", "2026-01-22"),
    ]


def test_only_the_object_just_before_lends_its_record(gateway):
    check, refused, subscription = gateway.records(
        accountcheck(baseamount="100"),
        {"requesttypedescriptions": ["NOSUCHTYPE"]},
        {"requesttypedescriptions": ["SUBSCRIPTION"], "sitereference": SITE, **SUBSCRIPTION},
    )
    assert (check["errorcode"], refused["errorcode"]) == ("0", "60018")
    assert (subscription["errorcode"], subscription["errordata"]) == ("30000", ["parenttransactionreference"])


def test_a_maestro_card_can_be_checked_without_3ds(gateway):
    record = gateway.one(accountcheck(pan="6759000000000018"))
    assert (record["errorcode"], record["paymenttypedescription"]) == ("0", "MAESTRO")


def test_a_singular_cachetokenise_needs_no_credentials_like_the_list_form(sandbox):
    body = {
        "version": "1.00",
        "request": [
            {
                "requesttypedescription": "CACHETOKENISE",
                "sitereference": SITE,
                "pan": "4111111111111111",
                **PAIR,
            }
        ],
    }
    (record,) = httpx.post(sandbox.base_url + "/json/", json=body, timeout=30).json()["response"]
    assert (record["errorcode"], record["requesttypedescription"]) == ("0", "CACHETOKENISE")


@pytest.mark.parametrize("types", [[{"a": 1}], [["SUBSCRIPTION"]], [None], "SUBSCRIPTION"])
def test_junk_request_types_after_a_parent_are_60018(gateway, types):
    check, record = gateway.records(accountcheck(), {"requesttypedescriptions": types, "sitereference": SITE})
    assert (check["errorcode"], record["requesttypedescription"], record["errorcode"]) == (
        "0",
        "ERROR",
        "60018",
    )


def test_threedquery_auth_subscription_for_a_card_not_enrolled(gateway):
    query, auth, subscription = gateway.records(
        {
            **threedquery("4000000000000721", orderreference="3ds-sub"),
            **SUBSCRIPTION,
            "requesttypedescriptions": ["THREEDQUERY", "AUTH", "SUBSCRIPTION"],
            "subscriptionbegindate": "2026-02-15",
            "credentialsonfile": "1",
        }
    )
    assert [r["requesttypedescription"] for r in (query, auth, subscription)] == [
        "THREEDQUERY",
        "AUTH",
        "SUBSCRIPTION",
    ]
    assert (auth["errorcode"], auth["parenttransactionreference"]) == ("0", query["transactionreference"])
    assert (subscription["errorcode"], subscription["parenttransactionreference"]) == (
        "0",
        auth["transactionreference"],
    )
