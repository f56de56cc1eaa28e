"""Interoperability: the official Python client (PyPI `securetrading` 1.0.26) against the sandbox.

It posts to urljoin(datacenterurl, "/json/") with its own headers (REQUESTREFERENCE, VERSIONINFO,
Connection: close), puts `requestreference` and `versioninfo` in each request object and
`libraryversion` in the envelope, and checks that the answer echoes its request reference.
"""

from __future__ import annotations

import pytest
import securetrading  # a dev dependency (with six, which it imports without declaring)

from support.sandbox import SITE


@pytest.fixture
def official(sandbox):
    config = securetrading.Config()
    config.username, config.password = sandbox.username, sandbox.password
    config.datacenterurl = sandbox.base_url + "/any/path/is/lost"  # urljoin keeps only scheme://host:port
    config.acceptcustomeroutput = "2.00"
    return securetrading.Api(config)


def ok(response) -> dict:
    (record,) = response["responses"]
    assert record["errorcode"] == "0", record
    return record


CARD = {"sitereference": SITE, "accounttypedescription": "ECOM", "currencyiso3a": "GBP", "baseamount": "1050",
        "pan": "4111111111111111", "expirydate": "12/2030", "securitycode": "123"}


def test_auth_store_auth_from_stored_card_and_query(official):
    request = securetrading.Request()
    request.update({"requesttypedescriptions": ["AUTH"], "orderreference": "official-1", **CARD})
    response = official.process(request)
    assert response["requestreference"] == request["requestreference"]
    auth = ok(response)
    assert (auth["acquirerresponsecode"], auth["maskedpan"]) == ("00", "411111######1111")
    assert auth["settlestatus"] == "0"

    stored = ok(official.process({
        "requesttypedescriptions": ["STORE"], "sitereference": SITE, "accounttypedescription": "CARDSTORE",
        "pan": "5100000000000008", "expirydate": "12/2030", "billingfirstname": "Ada",
        "orderreference": "official-2"}))
    assert (stored["requesttypedescription"], stored["transactionactive"]) == ("STORE", "1")

    child = ok(official.process({
        "requesttypedescriptions": ["AUTH"], "sitereference": SITE, "parenttransactionreference":
        stored["transactionreference"], "accounttypedescription": "ECOM", "currencyiso3a": "GBP",
        "baseamount": "2000"}))
    assert (child["maskedpan"], child["parenttransactionreference"]) == ("510000######0008",
                                                                        stored["transactionreference"])

    query = ok(official.process({"requesttypedescriptions": ["TRANSACTIONQUERY"], "filter": {
        "transactionreference": [{"value": auth["transactionreference"]},
                                 {"value": child["transactionreference"]}]}}))
    found = [(r["transactionreference"], r["interface"], r["acquirerresponsecode"]) for r in query["records"]]
    assert found == [(child["transactionreference"], "PASS-JSON-JSON", "00"),
                     (auth["transactionreference"], "PASS-JSON-JSON", "00")]


def test_several_request_objects_in_one_envelope(official):
    requests = securetrading.Requests()
    requests["requests"] = []
    for order in ("multi-1", "multi-2"):
        single = securetrading.Request()
        single.update({"requesttypedescriptions": ["AUTH"], "orderreference": order, **CARD})
        requests["requests"].append(single)
    response = official.process(requests)
    assert response["requestreference"] == requests["requestreference"]  # echoed from its HTTP header
    assert [(r["errorcode"], r["orderreference"]) for r in response["responses"]] == [("0", "multi-1"),
                                                                                      ("0", "multi-2")]


def test_declines_and_errors_read_without_error(official):
    declined = official.process({"requesttypedescriptions": ["AUTH"], **CARD, "baseamount": "70000"})
    (record,) = declined["responses"]
    assert (record["errorcode"], record["acquirerresponsecode"], record["settlestatus"]) == ("70000", "05", "3")
    invalid = official.process({"requesttypedescriptions": ["AUTH"], **CARD, "pan": "4111111111111112"})
    (record,) = invalid["responses"]
    assert (record["errorcode"], record["errordata"]) == ("30000", ["pan"])
    unknown = official.process({"requesttypedescriptions": ["NOSUCHTYPE"], "sitereference": SITE})
    (record,) = unknown["responses"]
    assert (record["requesttypedescription"], record["errorcode"]) == ("ERROR", "60018")


def test_wrong_credentials_are_the_clients_bad_credentials_error(sandbox):
    config = securetrading.Config()
    config.username, config.password, config.datacenterurl = sandbox.username, "wrong", sandbox.base_url
    (record,) = securetrading.Api(config).process({"requesttypedescriptions": ["AUTH"], **CARD})["responses"]
    assert record["errorcode"] == "6"  # the official client's own code for HTTP 401


def test_the_official_client_resends_after_a_lost_answer_and_pays_twice(sandbox, official):
    """Why gwkit's own client never re-sends: the sandbox's fault injection shows the double payment."""
    official.config.http_retry_sleep = 0  # its retry loop sleeps between attempts
    sandbox.drop_next(1)  # the first attempt is processed, then its connection is closed unanswered
    record = ok(official.process({"requesttypedescriptions": ["AUTH"], "orderreference": "lost-answer", **CARD}))
    query = ok(official.process({"requesttypedescriptions": ["TRANSACTIONQUERY"],
                                 "filter": {"orderreference": [{"value": "lost-answer"}]}}))
    assert len(query["records"]) == 2  # one payment asked for, two made
    assert record["transactionreference"] == query["records"][0]["transactionreference"]


# -- what the official client's own module tests send (module_test_api.py), against the sandbox --

UNI = "T\r\xc2\xa3S'T(|]><[\\xG %s %% \"+N\\\\&\\M\xc8.?\nTAB\t12}34{56789,:;#END"
PAIR_CARD = {"pan": "4111111111111111", "expirymonth": "11", "expiryyear": "2031", "securitycode": "123",
             "paymenttypedescription": "VISA"}


def values(requesttype: str, **updates) -> dict:
    """`get_request_values` of the official module tests."""
    base = {"sitereference": SITE, "requesttypedescriptions": [requesttype]}
    base.update({
        "AUTH": {"accounttypedescription": "ECOM", "currencyiso3a": "GBP", "baseamount": "100",
                 "customerfirstname": UNI},
        "STORE": {"accounttypedescription": "CARDSTORE"},
        "ACCOUNTCHECK": {"accounttypedescription": "ECOM", "currencyiso3a": "GBP", "baseamount": "0",
                         "customerfirstname": UNI},
        "THREEDQUERY": {"accounttypedescription": "ECOM", "currencyiso3a": "GBP", "termurl": "https://www.termurl.com",
                        "baseamount": "100", "customerfirstname": UNI},
        "SUBSCRIPTION": {"subscriptionunit": "DAY", "subscriptiontype": "INSTALLMENT", "subscriptionfrequency": "1",
                         "subscriptionfinalnumber": "1", "subscriptionnumber": "1"},
    }.get(requesttype, {}))
    base.update(updates)
    base["field_that_wont_be_passed"] = "HERE"
    return base


def process_single(official, data: dict) -> list[dict]:
    request = securetrading.Request()
    request.update(data)
    return official.process(request)["responses"]


def process_multiple(official, objects: list[dict]) -> list[dict]:
    requests = securetrading.Requests()
    requests["requests"] = []
    for data in objects:
        request = securetrading.Request()
        request.update(data)
        requests["requests"].append(request)
    return official.process(requests)["responses"]


@pytest.mark.parametrize("requesttype", ["AUTH", "STORE", "CACHETOKENISE", "THREEDQUERY", "ACCOUNTCHECK"])
def test_the_expiry_pair_as_the_official_tests_send_it(official, requesttype):
    card = dict(PAIR_CARD)
    if requesttype == "STORE":  # the official test sends one; interface 2.2 forbids it (the interface wins)
        del card["securitycode"]
    (record,) = process_single(official, values(requesttype, **card))
    assert (record["errorcode"], record["errormessage"]) == ("0", "Ok"), record
    if requesttype in ("AUTH", "ACCOUNTCHECK"):
        assert record["acquirerresponsecode"] == "00"


def test_auth_from_a_token_as_the_official_tests_make_it(official):
    (token,) = process_single(official, values("CACHETOKENISE", **PAIR_CARD))
    (record,) = process_single(official, values("AUTH", cachetoken=token["cachetoken"]))
    assert (record["errorcode"], record["acquirerresponsecode"]) == ("0", "00")


def test_the_official_client_makes_an_accountcheck(official):
    (record,) = process_single(official, values("ACCOUNTCHECK", **PAIR_CARD))
    assert (record["requesttypedescription"], record["errorcode"], record["baseamount"]) == ("ACCOUNTCHECK", "0", "0")
    assert record["maskedpan"] == "411111######1111" and "settlestatus" not in record
    (declined,) = process_single(official, values("ACCOUNTCHECK", **{**PAIR_CARD, "pan": "4000000000000812"}))
    assert (declined["errorcode"], declined["settlestatus"]) == ("70000", "3")


@pytest.mark.parametrize("pan", ["4000000000000812", "4242424242424242"])
def test_auth_decline_as_the_official_tests_expect(official, pan):
    (record,) = process_single(official, values("AUTH", **{**PAIR_CARD, "pan": pan}))
    assert record["errorcode"] == "70000"


def test_an_empty_request_is_60018_none(official):
    (record,) = process_single(official, {})
    assert (record["errorcode"], record["errordata"], record["requesttypedescription"]) == (
        "60018", ["None"], "ERROR")


def test_multi_threedquery_auth(official):
    (enrolled,) = process_single(official, values("THREEDQUERY", **{**PAIR_CARD, "pan": "4111110000000211"},
                                                  requesttypedescriptions=["THREEDQUERY", "AUTH"]))
    assert (enrolled["errorcode"], enrolled["enrolled"]) == ("0", "Y")  # the AUTH waits for the customer
    query, auth = process_single(official, values("THREEDQUERY", **{**PAIR_CARD, "pan": "4000000000000721"},
                                                  requesttypedescriptions=["THREEDQUERY", "AUTH"]))
    assert (query["errorcode"], auth["errorcode"], auth["acquirerresponsecode"]) == ("0", "0", "00")


def test_multi_accountcheck_subscription(official):
    data = values("ACCOUNTCHECK", **PAIR_CARD, baseamount="100",
                  requesttypedescriptions=["ACCOUNTCHECK", "SUBSCRIPTION"])
    data = values("SUBSCRIPTION", **data)
    check, subscription = process_single(official, data)
    assert (check["requesttypedescription"], check["errorcode"]) == ("ACCOUNTCHECK", "0")
    assert (subscription["requesttypedescription"], subscription["errorcode"]) == ("SUBSCRIPTION", "0")


def test_separate_accountcheck_subscription(official):
    check_data = values("ACCOUNTCHECK", **PAIR_CARD, baseamount="100")
    check_data["requesttypedescription"] = check_data.pop("requesttypedescriptions")[0]
    subscription_data = values("SUBSCRIPTION")
    subscription_data["requesttypedescription"] = subscription_data.pop("requesttypedescriptions")[0]
    check, subscription = process_multiple(official, [check_data, subscription_data])
    assert (check["requesttypedescription"], check["errorcode"]) == ("ACCOUNTCHECK", "0")
    assert (subscription["requesttypedescription"], subscription["errorcode"]) == ("SUBSCRIPTION", "0")
    assert subscription["parenttransactionreference"] == check["transactionreference"]


def test_transactionquery_and_update_of_a_pending_auth(official):
    (auth,) = process_single(official, values("AUTH", **PAIR_CARD))
    (query,) = process_single(official, {"requesttypedescriptions": ["TRANSACTIONQUERY"],
                                         "filter": {"transactionreference": [{"value": auth["transactionreference"]}]}})
    (found,) = query["records"]
    assert (found["requesttypedescription"], found["interface"], found["acquirerresponsecode"]) == (
        "AUTH", "PASS-JSON-JSON", "00")
    (update,) = process_single(official, {"requesttypedescriptions": ["TRANSACTIONUPDATE"],
                                          "filter": {"transactionreference": [{"value": auth["transactionreference"]}]},
                                          "updates": {"settlebaseamount": "50"}})
    assert (update["errorcode"], update["errormessage"]) == ("0", "Ok")


def test_multi_transactionupdate_with_another_type_is_refused(official):
    data = values("TRANSACTIONUPDATE", **PAIR_CARD, baseamount="100",
                  requesttypedescriptions=["TRANSACTIONUPDATE", "ACCOUNTCHECK"])
    records = process_single(official, data)
    assert (records[0]["errorcode"], records[0]["errordata"]) == ("30000", ["requesttypedescriptions"])
