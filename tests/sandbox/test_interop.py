"""Interoperability: the official Python client (PyPI `securetrading` 1.0.26) against the sandbox.

It posts to urljoin(datacenterurl, "/json/") with its own headers (REQUESTREFERENCE, VERSIONINFO,
Connection: close), puts `requestreference` and `versioninfo` in each request object and
`libraryversion` in the envelope, and checks that the answer echoes its request reference.
"""

from __future__ import annotations

from datetime import timedelta

import pytest
import securetrading  # a dev dependency (with six, which it imports without declaring)

from support.sandbox import SITE

pytestmark = pytest.mark.both_stores  # each test on SQLite and on PostgreSQL


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


CARD = {
    "sitereference": SITE,
    "accounttypedescription": "ECOM",
    "currencyiso3a": "GBP",
    "baseamount": "1050",
    "pan": "4111111111111111",
    "expirydate": "12/2030",
    "securitycode": "123",
}


def test_auth_store_auth_from_stored_card_and_query(official):
    request = securetrading.Request()
    request.update({"requesttypedescriptions": ["AUTH"], "orderreference": "official-1", **CARD})
    response = official.process(request)
    assert response["requestreference"] == request["requestreference"]
    auth = ok(response)
    assert (auth["acquirerresponsecode"], auth["maskedpan"]) == ("00", "411111######1111")
    assert auth["settlestatus"] == "0"

    stored = ok(
        official.process(
            {
                "requesttypedescriptions": ["STORE"],
                "sitereference": SITE,
                "accounttypedescription": "CARDSTORE",
                "pan": "5100000000000008",
                "expirydate": "12/2030",
                "billingfirstname": "Ada",
                "orderreference": "official-2",
            }
        )
    )
    assert (stored["requesttypedescription"], stored["transactionactive"]) == ("STORE", "1")

    child = ok(
        official.process(
            {
                "requesttypedescriptions": ["AUTH"],
                "sitereference": SITE,
                "parenttransactionreference": stored["transactionreference"],
                "accounttypedescription": "ECOM",
                "currencyiso3a": "GBP",
                "baseamount": "2000",
            }
        )
    )
    assert (child["maskedpan"], child["parenttransactionreference"]) == (
        "510000######0008",
        stored["transactionreference"],
    )

    query = ok(
        official.process(
            {
                "requesttypedescriptions": ["TRANSACTIONQUERY"],
                "filter": {
                    "transactionreference": [
                        {"value": auth["transactionreference"]},
                        {"value": child["transactionreference"]},
                    ]
                },
            }
        )
    )
    found = [(r["transactionreference"], r["interface"], r["acquirerresponsecode"]) for r in query["records"]]
    assert found == [
        (child["transactionreference"], "PASS-JSON-JSON", "00"),
        (auth["transactionreference"], "PASS-JSON-JSON", "00"),
    ]


def test_several_request_objects_in_one_envelope(official):
    requests = securetrading.Requests()
    requests["requests"] = []
    for order in ("multi-1", "multi-2"):
        single = securetrading.Request()
        single.update({"requesttypedescriptions": ["AUTH"], "orderreference": order, **CARD})
        requests["requests"].append(single)
    response = official.process(requests)
    assert response["requestreference"] == requests["requestreference"]  # echoed from its HTTP header
    assert [(r["errorcode"], r["orderreference"]) for r in response["responses"]] == [
        ("0", "multi-1"),
        ("0", "multi-2"),
    ]


def test_declines_and_errors_read_without_error(official):
    declined = official.process({"requesttypedescriptions": ["AUTH"], **CARD, "baseamount": "70000"})
    (record,) = declined["responses"]
    assert (record["errorcode"], record["acquirerresponsecode"], record["settlestatus"]) == (
        "70000",
        "05",
        "3",
    )
    invalid = official.process({"requesttypedescriptions": ["AUTH"], **CARD, "pan": "4111111111111112"})
    (record,) = invalid["responses"]
    assert (record["errorcode"], record["errordata"]) == ("30000", ["pan"])
    unknown = official.process({"requesttypedescriptions": ["PAYOUT"], "sitereference": SITE})
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
    sandbox.faults.add(
        "drop", count=1
    )  # the first attempt is processed, then its connection is closed unanswered
    record = ok(
        official.process({"requesttypedescriptions": ["AUTH"], "orderreference": "lost-answer", **CARD})
    )
    query = ok(
        official.process(
            {
                "requesttypedescriptions": ["TRANSACTIONQUERY"],
                "filter": {"orderreference": [{"value": "lost-answer"}]},
            }
        )
    )
    assert len(query["records"]) == 2  # one payment asked for, two made
    assert record["transactionreference"] == query["records"][0]["transactionreference"]


def test_refund_of_a_settled_auth_and_a_standalone_refund(sandbox, official):
    auth = ok(
        official.process({"requesttypedescriptions": ["AUTH"], "orderreference": "official-refund", **CARD})
    )
    moved = official.process(  # due today, as the real service answers: moved to tomorrow
        {
            "requesttypedescriptions": ["TRANSACTIONUPDATE"],
            "filter": {
                "sitereference": [{"value": SITE}],
                "transactionreference": [{"value": auth["transactionreference"]}],
            },
            "updates": {"settleduedate": (sandbox.now() + timedelta(days=1)).strftime("%Y-%m-%d")},
        }
    )
    assert moved["responses"][0]["errorcode"] == "0"
    too_early = official.process(
        {
            "requesttypedescriptions": ["REFUND"],
            "sitereference": SITE,
            "parenttransactionreference": auth["transactionreference"],
        }
    )
    (record,) = too_early["responses"]
    assert record["errorcode"] == "20005"  # not settled, not due today
    sandbox.advance(by="P2D")
    request = securetrading.Request()
    request.update(
        {
            "requesttypedescriptions": ["REFUND"],
            "sitereference": SITE,
            "parenttransactionreference": auth["transactionreference"],
            "baseamount": "50",
        }
    )
    response = official.process(request)
    assert response["requestreference"] == request["requestreference"]
    refund = ok(response)
    assert (refund["requesttypedescription"], refund["baseamount"], refund["parenttransactionreference"]) == (
        "REFUND",
        "50",
        auth["transactionreference"],
    )
    standalone = ok(
        official.process(
            {
                "requesttypedescriptions": ["REFUND"],
                "sitereference": SITE,
                "accounttypedescription": "CFT",
                "currencyiso3a": "GBP",
                "baseamount": "700",
                "pan": "4111111111111111",
                "expirydate": "12/2030",
            }
        )
    )
    assert (standalone["acquirerresponsecode"], standalone["accounttypedescription"]) == ("00", "CFT")
