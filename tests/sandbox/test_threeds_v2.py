"""EMV 3-D Secure (v2) in the sandbox over HTTP: THREEDLOOKUP, the 3DS method, THREEDQUERY per test
card, the ACS challenge pages and the AUTH after them. The browser's part is posted with httpx here
(tests/browser/test_threeds_v2.py drives it in Chromium, with the makers' own library too).

Captures cited below (real-gateway-facts.md, "3-D Secure v2"):
V3 = penfold/trustpayments-public-stjs-js-payments-v3, commit 337c1617: the test cards
  (`tests/utils/enums/card.py`, `tests/features/e2e_tests/e2e_3ds_sdk/*.feature`), the captured
  answers (`tests/wiremock/__files/ccTDQEnrolledY.json` and the other cc*.json), the library's API
  (`src/application/core/services/three-d-verification/implementations/trust-payments/`);
PYT = SecureTrading/py-payments-testing, `features/e2e_tests/e2e_cardinal_commerce_v2_tests.feature`;
HC = help.trustpayments.com articles 6744090512529, 6744076808721, 6744062639121.
"""

from __future__ import annotations

import re

import httpx
import pytest

import gwkit.sandbox
from gwkit.interface import testcards
from support.sandbox import CLOCK, SITE, Gateway
from support.threeds_v2 import (
    SUBSCRIPTION_FIELDS,
    TERMURL,
    after_challenge,
    b64,
    cards_of,
    decoded,
    error_text,
    form_value,
    library_jwt,
    lookup,
    shown_code,
    threedquery,
    unsigned_jwt,
)

pytestmark = pytest.mark.both_stores  # each test on SQLite and on PostgreSQL

FRICTIONLESS_CASES = {
    # case: (AUTH errorcode, status, settlestatus, cavv expected)
    "frictionless-success": ("0", "Y", "0", True),
    "frictionless-method-url": ("0", "Y", "0", True),
    "method-not-completed": ("0", "Y", "0", True),
    "attempted": ("0", "A", "0", True),
    "unavailable": ("0", "U", "0", False),
    "ds-unavailable": ("0", "U", "0", False),
    "improper-ares": ("0", "U", "0", False),
    "frictionless-failed": ("60022", "N", "3", False),
    "rejected": ("60022", "R", "3", False),
    "not-enrolled": ("60022", "N", "3", False),
}
CHALLENGE_CASES = ("challenge-success", "challenge-method-url", "challenge-failed", "challenge-error")
# eci by status and scheme: Visa (and Visa Debit) and Amex 05/06/07, Mastercard 02/01/00.
ECI = {"Y": {"visa": "05", "mc": "02"}, "A": {"visa": "06", "mc": "01"}, "U": {"visa": "07", "mc": "00"}}


def family(pan: str) -> str:
    return "mc" if pan.startswith("5") else "visa"


@pytest.fixture(scope="module")
def sandbox(module_db_path):
    handle = gwkit.sandbox.start(module_db_path, clock_start=CLOCK)
    yield handle
    handle.stop()


@pytest.fixture(scope="module")
def gateway(sandbox):
    client = Gateway(sandbox.base_url)
    yield client
    client.close()


@pytest.fixture(scope="module")
def browser():
    """The customer's browser, posting forms as a browser does."""
    with httpx.Client(timeout=30) as http:
        yield http


def by_token(cachetoken: str, *types: str) -> dict:
    """A THREEDQUERY carrying the look-up's cachetoken in place of the card."""
    request = threedquery("", *types, cachetoken=cachetoken)
    return {k: v for k, v in request.items() if k not in ("pan", "expirydate", "securitycode")}


def parent_only(parent: str) -> dict:
    """An AUTH naming the THREEDQUERY, without a threedresponse."""
    request = after_challenge(parent, "")
    del request["threedresponse"]
    return request


def challenge(gateway, pan: str, *types: str, **fields) -> dict:
    records = gateway.records(threedquery(pan, *types, **fields))
    assert records[-1]["requesttypedescription"] == "THREEDQUERY", records
    return records[-1]


def answer_challenge(browser, record: dict, outcome: str = "submit", code: str | None = None) -> dict:
    """Post the CReq to the ACS, then the cardholder's answer: the page that posts back to termurl."""
    page = browser.post(
        record["acsurl"], data={"creq": record["threedpayload"], "threeDSSessionData": "c2Vzc2lvbg"}
    )
    assert page.status_code == 200, page.text
    returned = browser.post(
        record["acsurl"] + "/complete",
        data={
            "creq": record["threedpayload"],
            "threeDSSessionData": "c2Vzc2lvbg",
            "otp": shown_code(page.text) if code is None else code,
            "outcome": outcome,
        },
    )
    assert returned.status_code == 200, returned.text
    assert (
        re.search(r"<form method='post' action='([^']*)' id='acs2-return'", returned.text).group(1) == TERMURL
    )
    assert form_value(returned.text, "threeDSSessionData") == "c2Vzc2lvbg"  # returned unchanged
    return {"cres": form_value(returned.text, "cres"), "page": returned.text}


# -- THREEDLOOKUP ------------------------------------------------------------------------------


def test_lookup_answers_the_transaction_id_version_and_a_cachetoken(gateway, sandbox):
    """HC 6744090512529 shows the look-up of 4900490000000501: DELTA, 2.2.0, a cachetoken of base64
    JSON {"datacenterurl", "cachetoken"}; no method URL for this card (V3 card.py)."""
    record = gateway.one(lookup("4900490000000501", securitycode="123"))
    assert record["requesttypedescription"] == "THREEDLOOKUP" and record["errorcode"] == "0"
    assert re.fullmatch(
        r"[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[0-9a-f]{4}-[0-9a-f]{12}", record["threedstransactionid"]
    )
    assert (record["threedversion"], record["paymenttypedescription"]) == ("2.2.0", "DELTA")
    assert record["maskedpan"] == "490049######0501"
    assert "threedmethodurl" not in record and "threednotificationurl" not in record
    assert "transactionreference" not in record  # nothing is kept as a transaction
    token = decoded(record["cachetoken"])
    assert set(token) == {"datacenterurl", "cachetoken"} and token["datacenterurl"] == sandbox.base_url


def test_lookup_of_a_method_card_answers_the_method_and_notification_urls(gateway, sandbox):
    """V3 e2e_3ds_sdk features: the "frictionless with method URL" cards run the 3DS method."""
    record = gateway.one(lookup("5591390000000108"))
    assert record["threedversion"] == "2.1.0" and record["paymenttypedescription"] == "MASTERCARD"
    assert record["threedmethodurl"] == sandbox.base_url + "/acs/v2/method"
    assert record["threednotificationurl"] == sandbox.base_url + "/acs/v2/method/notify"


@pytest.mark.parametrize("pan", ["4111110000000211", "4111111111111111", "4000000000000002"])
def test_lookup_of_a_version_1_or_unknown_card_answers_no_version(gateway, pan):
    """real-gateway-facts.md: `threedversion` is absent for a v1 card."""
    record = gateway.one(lookup(pan))
    assert record["errorcode"] == "0" and "threedversion" not in record and record["threedstransactionid"]


@pytest.mark.parametrize(
    "fields, errorcode, errordata",
    [
        ({"expirydate": "12/2025"}, "30000", ["expirydate"]),
        ({"pan": "36000000000008"}, "60031", ["pan"]),  # Diners: no 3-D Secure
        ({"pan": "4900490000000007"}, "30000", ["pan"]),  # fails the Luhn check
        ({"requesttypedescriptions": ["THREEDLOOKUP", "AUTH"]}, "30000", ["requesttypedescriptions"]),
    ],
)
def test_lookup_refusals_name_the_field(gateway, fields, errorcode, errordata):
    """Real-gateway-facts.md's error table (30000 naming the field, 60031 for a scheme without 3-D
    Secure); THREEDLOOKUP alone in its object (V3 ThreeDLookupRequest.ts sends it alone)."""
    record = gateway.one({**lookup("4900490000000501"), **fields})
    assert (record["errorcode"], record["errordata"]) == (errorcode, errordata)


# -- THREEDQUERY: frictionless -----------------------------------------------------------------


@pytest.mark.parametrize("case", sorted(FRICTIONLESS_CASES))
def test_each_frictionless_case_of_every_scheme_answers_its_auth_in_the_same_answer(gateway, case):
    """V3 card.py and e2e_3ds_sdk/*.feature (outcome of THREEDQUERY AUTH per card); V3 wiremock
    ccTdqAuth.json: a frictionless THREEDQUERY has no acsurl and the AUTH follows in the same
    answer, with `authmethod` FINAL and no `xid`; Mastercard frictionless 5200000000001005 -> Y/02
    (PYT Cardinal feature); attempts 4000000000001026 -> A/06. Unavailable U with eci 07/00 is derived
    from the schemes' values; failed, rejected and not enrolled answering 60022 is chosen (as v1)."""
    errorcode, status, settlestatus, with_cavv = FRICTIONLESS_CASES[case]
    for pan in cards_of(case):
        query, auth = gateway.records(threedquery(pan))
        card = testcards.test_card(pan)
        assert query["requesttypedescription"] == "THREEDQUERY" and query["errorcode"] == "0", (pan, query)
        assert (query["enrolled"], query["threedversion"]) == (card.enrolled, card.threedversion)
        assert (query["acquirerresponsecode"], query["dccenabled"], query["settlestatus"]) == ("0", "0", "0")
        assert query["settleduedate"] and query["issuer"] and query["issuercountryiso2a"] and query["tid"]
        for absent in (
            "acsurl",
            "threedpayload",
            "pareq",
            "md",
            "xid",
            "status",
            "baseamount",
            "currencyiso3a",
        ):
            assert absent not in query, (pan, absent)
        assert auth["requesttypedescription"] == "AUTH", (pan, auth)
        assert auth["parenttransactionreference"] == query["transactionreference"]
        assert (auth["errorcode"], auth["status"], auth["settlestatus"]) == (
            errorcode,
            status,
            settlestatus,
        ), pan
        assert (auth["threedversion"], auth["authmethod"], auth["enrolled"]) == (
            card.threedversion,
            "FINAL",
            card.enrolled,
        )
        assert "xid" not in auth
        assert auth.get("eci") == ECI.get(status, {}).get(family(pan)), (pan, auth.get("eci"))
        assert bool(auth.get("cavv")) == with_cavv, pan


def test_a_declining_amount_after_frictionless_authentication_keeps_status_and_eci(gateway):
    """V3 wiremock (amount 70000 after v2): 70000 Decline with `status`/`eci` kept."""
    _, auth = gateway.records(threedquery("4900490000000006", baseamount="70000"))
    assert (auth["errorcode"], auth["errormessage"], auth["settlestatus"]) == ("70000", "Decline", "3")
    assert (auth["status"], auth["eci"]) == ("Y", "05") and auth["cavv"]


@pytest.mark.parametrize("case", ["ds-unavailable", "improper-ares"])
def test_directory_server_down_with_accountcheck_threedquery_is_a_bank_system_error(gateway, case):
    """V3 e2e_3ds_sdk features: DS unavailable (and improper ARes) -> Bank System Error with
    ACCOUNTCHECK THREEDQUERY, authorised with THREEDQUERY AUTH."""
    check, query = gateway.records(threedquery(cards_of(case)[0], "ACCOUNTCHECK", "THREEDQUERY"))
    assert check["errorcode"] == "0"
    assert (query["errorcode"], query["errormessage"]) == ("60010", "Bank System Error")
    assert query["parenttransactionreference"] == check["transactionreference"]


@pytest.mark.parametrize("case", ["frictionless-failed", "rejected", "not-enrolled"])
def test_unauthenticated_cards_with_accountcheck_threedquery_end_without_error(gateway, case):
    """V3 e2e_3ds_sdk features: with ACCOUNTCHECK THREEDQUERY the failed, rejected and not-enrolled
    cards end without error."""
    records = gateway.records(threedquery(cards_of(case)[0], "ACCOUNTCHECK", "THREEDQUERY"))
    assert [r["errorcode"] for r in records] == ["0", "0"]


def test_an_auth_sent_later_names_the_frictionless_threedquery(gateway):
    """The remaining request types may come in a request of their own, naming the THREEDQUERY."""
    (query,) = gateway.records(threedquery("340000000004001", "THREEDQUERY"))
    auth = gateway.one(parent_only(query["transactionreference"]))
    assert (auth["errorcode"], auth["status"], auth["eci"], auth["threedversion"]) == (
        "0",
        "Y",
        "05",
        "2.2.0",
    )
    again = gateway.one(parent_only(query["transactionreference"]))
    assert (again["errorcode"], again["errordata"]) == ("30000", ["parenttransactionreference"])  # used once


def test_a_threedresponse_after_a_frictionless_threedquery_is_refused(gateway):
    """V3 ThreeDSecureVerificationService: without an acsurl the library sends no threedresponse; one
    that claims a challenge nobody made is refused (chosen, docs/threeds.md)."""
    (query,) = gateway.records(threedquery("4900490000000006", "THREEDQUERY"))
    auth = gateway.one(
        after_challenge(query["transactionreference"], library_jwt("SUCCESS", pares_status="Y"))
    )
    assert (auth["errorcode"], auth["errordata"]) == ("30000", ["threedresponse"])


def test_version_1_cards_keep_their_answers(gateway):
    """A card the v2 table does not know keeps today's answer; v1's flow is unchanged."""
    (query,) = gateway.records(threedquery("4111110000000211"))  # v1 enrolled: stops for the ACS
    assert (query["threedversion"], query["enrolled"]) == ("1.0.2", "Y")
    assert query["pareq"] and query["md"] and query["xid"] and query["acsurl"].endswith("/acs/v1")
    query, auth = gateway.records(threedquery("4000000000000002"))  # not in the table: not enrolled
    assert (query["threedversion"], query["enrolled"], auth["errorcode"]) == ("1.0.2", "N", "0")


# -- THREEDQUERY: challenge --------------------------------------------------------------------


@pytest.mark.parametrize("pan", cards_of("challenge-success", "challenge-method-url"))
def test_challenge_cards_of_each_scheme_stop_and_authorise_after_the_challenge(gateway, browser, pan):
    """V3 wiremock ccTDQEnrolledY.json (4000000000001091, 2.1.0): `acsurl`, `threedpayload` a base64url
    CReq {messageType, messageVersion, threeDSServerTransID, acsTransID, challengeWindowSize 02}, no
    pareq, md, xid, status, baseamount or currencyiso3a, and the AUTH after it Y/05 with a cavv."""
    record = challenge(gateway, pan)
    card = testcards.test_card(pan)
    assert (record["enrolled"], record["threedversion"], record["errorcode"]) == (
        "Y",
        card.threedversion,
        "0",
    )
    assert record["acsurl"].endswith("/acs/v2")
    for absent in ("pareq", "md", "xid", "status", "baseamount", "currencyiso3a"):
        assert absent not in record
    creq = decoded(record["threedpayload"])
    assert set(creq) == {
        "messageType",
        "messageVersion",
        "threeDSServerTransID",
        "acsTransID",
        "challengeWindowSize",
    }
    assert (creq["messageType"], creq["messageVersion"], creq["challengeWindowSize"]) == (
        "CReq",
        card.threedversion,
        "02",
    )
    assert not re.search(r"[-_=+/]", record["threedpayload"])  # base64url that is plain base64 too (atob)
    cres = answer_challenge(browser, record)["cres"]
    message = decoded(cres)
    assert message == {
        "messageType": "CRes",
        "messageVersion": card.threedversion,
        "threeDSServerTransID": creq["threeDSServerTransID"],
        "acsTransID": creq["acsTransID"],
        "transStatus": "Y",
        "challengeCompletionInd": "Y",
    }
    auth = gateway.one(after_challenge(record["transactionreference"], library_jwt("SUCCESS", cres=cres)))
    assert (auth["errorcode"], auth["status"], auth["eci"], auth["settlestatus"]) == (
        "0",
        "Y",
        ECI["Y"][family(pan)],
        "0",
    )
    assert auth["cavv"] and auth["threedversion"] == card.threedversion and "xid" not in auth
    assert auth["parenttransactionreference"] == record["transactionreference"]


@pytest.mark.parametrize(
    "pan, outcome, code",
    [
        ("4900490000000071", "submit", None),  # challenge failed: N whatever is entered
        ("5591390000000173", "submit", "000000"),  # a wrong code
        ("340000000003128", "fail", None),
        ("4000000000001091", "cancel", None),
    ],
)
def test_a_failed_challenge_answers_n_and_its_auth_is_unauthenticated(gateway, browser, pan, outcome, code):
    """V3 e2e_3ds_sdk features: a failed challenge ends in the browser with error 50003 and no AUTH;
    an AUTH sent anyway answers 60022 (chosen, as v1's unauthenticated AUTH)."""
    record = challenge(gateway, pan)
    if code == "000000" and code == shown_code(
        browser.post(record["acsurl"], data={"creq": record["threedpayload"]}).text
    ):
        code = "999999"
    cres = answer_challenge(browser, record, outcome, code)["cres"]
    message = decoded(cres)
    assert (message["messageType"], message["transStatus"]) == ("CRes", "N")
    assert ("challengeCancel" in message) == (outcome == "cancel")
    auth = gateway.one(after_challenge(record["transactionreference"], library_jwt("FAILURE", cres=cres)))
    assert (auth["errorcode"], auth["errormessage"], auth["status"], auth["settlestatus"]) == (
        "60022",
        "Unauthenticated",
        "N",
        "3",
    )
    assert "eci" not in auth and "cavv" not in auth


@pytest.mark.parametrize("pan", cards_of("challenge-error"))
def test_a_challenge_error_posts_back_an_error_message_not_a_cres(gateway, browser, pan):
    """Issue 41: "challenge error" is an error message (Erro), not a CRes; V3 features: browser error
    50003 and no AUTH. An AUTH sent anyway: 60022 without a status (chosen)."""
    record = challenge(gateway, pan)
    returned = answer_challenge(browser, record)
    message = decoded(returned["cres"])
    assert message["messageType"] == "Erro" and "transStatus" not in message
    assert message["threeDSServerTransID"] == decoded(record["threedpayload"])["threeDSServerTransID"]
    told = decoded(re.search(r"data-message='([^']*)'", returned["page"]).group(1))
    assert told["actionCode"] == "ERROR"
    auth = gateway.one(
        after_challenge(record["transactionreference"], library_jwt("ERROR", cres=returned["cres"]))
    )
    assert (auth["errorcode"], auth["settlestatus"]) == ("60022", "3") and "status" not in auth


def test_the_return_page_tells_the_library_what_it_listens_for(gateway, browser):
    """SDK 1.2.73 (its dist/index.js): the challenge frame's parent gets a message of type
    TP_CHALLENGE_RESPONSE whose data is base64 JSON {actionCode, errorDescription,
    threeDSServerTransID, cres}."""
    record = challenge(gateway, "4900490000000147")
    returned = answer_challenge(browser, record)
    assert "data-message-type='TP_CHALLENGE_RESPONSE'" in returned["page"]
    told = decoded(re.search(r"data-message='([^']*)'", returned["page"]).group(1))
    assert told["actionCode"] == "SUCCESS" and told["cres"] == decoded(returned["cres"])
    assert told["threeDSServerTransID"] == told["cres"]["threeDSServerTransID"]


# -- the AUTH with threedresponse ----------------------------------------------------------------


@pytest.fixture
def answered(gateway, browser):
    """A Visa challenge answered Y at the ACS: (THREEDQUERY record, cres)."""
    record = challenge(gateway, "4900490000000667")
    return record, answer_challenge(browser, record)["cres"]


@pytest.mark.parametrize(
    "jwt",
    [
        pytest.param(lambda cres: library_jwt("FAILURE", cres=cres), id="ActionCode-FAILURE"),
        pytest.param(lambda cres: library_jwt("SUCCESS", cres=cres, pares_status="N"), id="PAResStatus-N"),
        pytest.param(
            lambda cres: library_jwt("SUCCESS", cres=b64({**decoded(cres), "transStatus": "N"})), id="CRes-N"
        ),
        pytest.param(
            lambda cres: library_jwt("SUCCESS", cres=b64({**decoded(cres), "acsTransID": "x"})),
            id="CRes-other",
        ),
        pytest.param(
            lambda cres: unsigned_jwt({"Payload": {"ActionCode": "SUCCESS"}}, {"alg": "HS256"}), id="signed"
        ),
        pytest.param(lambda cres: "not-a-jwt", id="garbage"),
        pytest.param(lambda cres: unsigned_jwt({"nothing": 1}), id="no-Payload"),
    ],
)
def test_a_threedresponse_that_contradicts_the_session_is_refused(gateway, answered, jwt):
    """Issue 41: the JWT is unsigned (V3 UnsignedJwtGenerator: alg none), so the outcome is the
    sandbox's own ACS session; a threedresponse that contradicts it gets 30000 naming it. Nothing is
    kept, and the right threedresponse still pays."""
    record, cres = answered
    refused = gateway.one(after_challenge(record["transactionreference"], jwt(cres)))
    assert (refused["errorcode"], refused["errordata"]) == ("30000", ["threedresponse"])
    assert "transactionreference" not in refused
    auth = gateway.one(after_challenge(record["transactionreference"], library_jwt("SUCCESS", cres=cres)))
    assert (auth["errorcode"], auth["status"]) == ("0", "Y")


def test_a_threedresponse_before_the_challenge_is_answered_is_refused(gateway):
    """Issue 41: the outcome is the sandbox's own ACS session; before the ACS has answered there is
    none (chosen, docs/threeds.md). V3 ccTDQEnrolledY.json: the challenge's THREEDQUERY."""
    record = challenge(gateway, "4900490000000147")
    auth = gateway.one(
        after_challenge(record["transactionreference"], library_jwt("SUCCESS", pares_status="Y"))
    )
    assert (auth["errorcode"], auth["errordata"]) == ("30000", ["threedresponse"])
    plain = gateway.one(parent_only(record["transactionreference"]))  # no threedresponse
    assert (plain["errorcode"], plain["errordata"]) == ("30000", ["threedresponse"])


def test_the_auth_after_a_challenge_pays_once_and_keeps_the_authenticated_amount(gateway, answered):
    """The cardholder authenticated the THREEDQUERY's amount (V3 ccTDQEnrolledY.json: no amount is
    echoed, the AUTH inherits it); one AUTH per authentication, as v1's md (chosen)."""
    record, cres = answered
    jwt = library_jwt("SUCCESS", cres=cres)
    other_amount = gateway.one(after_challenge(record["transactionreference"], jwt, baseamount="999"))
    assert (other_amount["errorcode"], other_amount["errordata"]) == ("30000", ["baseamount"])
    auth = gateway.one(after_challenge(record["transactionreference"], jwt))
    assert (auth["errorcode"], auth["baseamount"], auth["currencyiso3a"]) == ("0", "1050", "GBP")
    again = gateway.one(after_challenge(record["transactionreference"], jwt))
    assert (again["errorcode"], again["errordata"]) == ("30000", ["parenttransactionreference"])


def test_the_library_may_send_the_card_again_with_the_auth(gateway, answered):
    """The browser library sends the remaining request types with its card data again; the gateway
    takes the card from the THREEDQUERY (the sandbox accepts and ignores the fields)."""
    record, cres = answered
    auth = gateway.one(
        after_challenge(
            record["transactionreference"],
            library_jwt("SUCCESS", cres=cres),
            pan="4111111111111111",
            expirydate="12/2030",
        )
    )
    assert (auth["errorcode"], auth["maskedpan"]) == ("0", "490049######0667")


def test_a_pares_inside_the_jwt_takes_version_1s_path(gateway, browser):
    """V3 PaResToThreeDResponseConverter: for a v1 challenge the library puts MD and PaRes inside the
    threedresponse; the sandbox checks them as v1's md and pares."""
    (query,) = gateway.records(threedquery("4111110000000211"))
    page = browser.post(
        query["acsurl"], data={"PaReq": query["pareq"], "TermUrl": TERMURL, "MD": query["md"]}
    )
    assert page.status_code == 200
    returned = browser.post(
        query["acsurl"] + "/complete",
        data={"PaReq": query["pareq"], "TermUrl": TERMURL, "MD": query["md"], "outcome": "Y"},
    )
    pares = form_value(returned.text, "PaRes")
    jwt = library_jwt("SUCCESS", pares_status="", MD=query["md"], PaRes=pares)
    auth = gateway.one(after_challenge(query["transactionreference"], jwt))
    assert (auth["errorcode"], auth["status"], auth["eci"], auth["threedversion"]) == (
        "0",
        "Y",
        "05",
        "1.0.2",
    )


# -- a multi-request envelope ------------------------------------------------------------------


def test_accountcheck_threedquery_auth_subscription_stops_at_the_challenge_and_finishes_after_it(
    gateway, browser
):
    """V3 wiremock ccAcheckTdqAuthSub.json and the feature files: the envelope stops after the
    challenge's THREEDQUERY; the library sends AUTH, SUBSCRIPTION again with threedresponse. None of
    the first envelope's remaining types is kept."""
    records = gateway.records(
        threedquery(
            "5200000000001096", "ACCOUNTCHECK", "THREEDQUERY", "AUTH", "SUBSCRIPTION", **SUBSCRIPTION_FIELDS
        )
    )
    assert [r["requesttypedescription"] for r in records] == ["ACCOUNTCHECK", "THREEDQUERY"]
    check, query = records
    assert query["parenttransactionreference"] == check["transactionreference"] and query["acsurl"]
    order = gateway.query(orderreference="order-v2", sitereference=SITE)
    assert sorted(r["requesttypedescription"] for r in order) == ["ACCOUNTCHECK", "THREEDQUERY"]
    cres = answer_challenge(browser, query)["cres"]
    auth, subscription = gateway.records(
        after_challenge(
            query["transactionreference"],
            library_jwt("SUCCESS", cres=cres),
            "AUTH",
            "SUBSCRIPTION",
            accounttypedescription="ECOM",
            currencyiso3a="GBP",
            baseamount="1050",
            **SUBSCRIPTION_FIELDS,
        )
    )
    assert (auth["errorcode"], auth["status"], auth["eci"]) == ("0", "Y", "02")
    assert auth["parenttransactionreference"] == query["transactionreference"]
    assert (subscription["requesttypedescription"], subscription["errorcode"]) == ("SUBSCRIPTION", "0")
    assert subscription["parenttransactionreference"] == auth["transactionreference"]


# -- the 3DS method and the cachetoken ---------------------------------------------------------


def run_method(browser, record: dict) -> httpx.Response:
    data = b64(
        {
            "threeDSServerTransID": record["threedstransactionid"],
            "threeDSMethodNotificationURL": record["threednotificationurl"],
        }
    )
    return browser.post(record["threedmethodurl"], data={"threeDSMethodData": data})


def test_the_method_page_tells_the_notification_url_which_records_it(gateway, browser, sandbox):
    """SDK 1.2.73: the library posts threeDSMethodData (base64 JSON threeDSServerTransID,
    threeDSMethodNotificationURL) to the method URL in a hidden frame, and waits for a
    TP_METHOD_URL_RESPONSE message; V3 ThreeDSecureVerificationService: then the THREEDQUERY."""
    record = gateway.one(lookup("4900490000000105"))
    page = run_method(browser, record)
    assert page.status_code == 200
    assert (
        re.search(r"action='([^']*)' id='threeds-method-form'", page.text).group(1)
        == record["threednotificationurl"]
    )
    notified = browser.post(
        record["threednotificationurl"],
        data={"threeDSMethodData": form_value(page.text, "threeDSMethodData")},
    )
    assert notified.status_code == 200 and "data-message-type='TP_METHOD_URL_RESPONSE'" in notified.text
    told = decoded(re.search(r"data-message='([^']*)'", notified.text).group(1))
    assert told == {
        "threeDSServerTransID": record["threedstransactionid"],
        "actionCode": "SUCCESS",
        "errorDescription": "3DS method completed",
    }
    query, auth = gateway.records(by_token(record["cachetoken"]))
    assert (query["threedversion"], query["maskedpan"], auth["status"], auth["errorcode"]) == (
        "2.1.0",
        "490049######0105",
        "Y",
        "0",
    )


def test_the_method_page_of_a_method_not_completed_card_never_notifies(gateway, browser):
    """V3 card.py: "3DS method not completed" cards; SDK: the library resolves UNCOMPLETED after its
    timeout (10 s by default) and goes on; the AUTH is authorised."""
    record = gateway.one(lookup("4900490000000139"))
    page = run_method(browser, record)
    assert page.status_code == 200 and "threeds-method-silent" in page.text
    assert "<form" not in page.text and record["threednotificationurl"] not in page.text
    _, auth = gateway.records(by_token(record["cachetoken"]))
    assert (auth["errorcode"], auth["status"]) == ("0", "Y")


def test_a_cachetoken_serves_one_threedquery(gateway):
    """HC 6744090512529: the look-up's cachetoken stands for the card in the THREEDQUERY; one
    THREEDQUERY per look-up, and a token the sandbox did not make is refused (chosen)."""
    record = gateway.one(lookup("5591390000000504"))
    card_free = by_token(record["cachetoken"], "THREEDQUERY")
    (query,) = gateway.records(card_free)
    assert (query["errorcode"], query["paymenttypedescription"], query["threedversion"]) == (
        "0",
        "MASTERCARD",
        "2.2.0",
    )
    again = gateway.one(card_free)
    assert (again["errorcode"], again["errordata"]) == ("30000", ["cachetoken"])
    forged = gateway.one({**card_free, "cachetoken": b64({"datacenterurl": "x", "cachetoken": "forged"})})
    assert (forged["errorcode"], forged["errordata"]) == ("30000", ["cachetoken"])


def test_a_version_1_card_looked_up_takes_version_1s_threedquery(gateway):
    """real-gateway-facts.md: the look-up of a v1 card answers no threedversion; its THREEDQUERY keeps
    version 1's answer (issue 41: a card the v2 table does not know keeps today's answer)."""
    record = gateway.one(lookup("4111110000000211"))
    card_free = by_token(record["cachetoken"])
    (query,) = gateway.records(card_free)
    assert (query["threedversion"], query["enrolled"]) == ("1.0.2", "Y") and query["pareq"] and query["md"]


@pytest.mark.parametrize(
    "path, form, words",
    [
        ("/acs/v2/method", {"threeDSMethodData": ""}, "needs threeDSMethodData"),
        (
            "/acs/v2/method",
            {"threeDSMethodData": b64({"threeDSServerTransID": "nope"})},
            "names no THREEDLOOKUP",
        ),
        ("/acs/v2/method/notify", {"threeDSMethodData": "%%%"}, "needs threeDSMethodData"),
        ("/acs/v2", {"creq": "x"}, "needs the form field creq"),
        (
            "/acs/v2",
            {"creq": b64({"messageType": "CReq", "threeDSServerTransID": "a", "acsTransID": "b"})},
            "names no challenge",
        ),
        ("/acs/v2/complete", {"outcome": "maybe"}, "Choose an outcome"),
    ],
)
def test_bad_posts_get_a_page_saying_what_is_wrong(sandbox, browser, path, form, words):
    """As v1's ACS (docs/threeds.md): a refused post is a 400 page saying what is wrong, with the
    security headers; the field names are EMVCo's and the SDK's (SDK 1.2.73 dist/index.js)."""
    page = browser.post(sandbox.base_url + path, data=form)
    assert page.status_code == 400 and words in error_text(page.text)
    assert (
        page.headers["x-content-type-options"] == "nosniff"
        and "nonce-" in page.headers["content-security-policy"]
    )


@pytest.mark.parametrize("path", ["/acs/v2", "/acs/v2/complete", "/acs/v2/method", "/acs/v2/method/notify"])
def test_the_pages_are_posted_to_not_opened(sandbox, browser, path):
    """SDK 1.2.73: the library reaches every page with a form POST in a frame."""
    page = browser.get(sandbox.base_url + path)
    assert page.status_code == 405 and "HTTP POST" in error_text(page.text)


def test_the_acs_refuses_a_challenge_that_has_paid(gateway, browser, answered):
    """Chosen, as v1's ACS: an authentication completes one payment."""
    record, cres = answered
    assert (
        gateway.one(after_challenge(record["transactionreference"], library_jwt("SUCCESS", cres=cres)))[
            "errorcode"
        ]
        == "0"
    )
    page = browser.post(record["acsurl"], data={"creq": record["threedpayload"]})
    assert page.status_code == 400 and "already completed a payment" in error_text(page.text)


def test_the_challenge_page_escapes_what_the_browser_sent(gateway, browser):
    """The project's rule: HTML rendered with autoescaping, card numbers masked (first 6, last 4)."""
    record = challenge(gateway, "4900490000000147")
    page = browser.post(
        record["acsurl"], data={"creq": record["threedpayload"], "threeDSSessionData": "<b>x'</b>"}
    )
    assert page.status_code == 200 and "<b>x" not in page.text and "&lt;b&gt;x&#39;&lt;/b&gt;" in page.text
    assert "4900490000000147" not in page.text and "490049######0147" in page.text


# -- snapshots ---------------------------------------------------------------------------------


def test_a_snapshot_keeps_the_v2_sessions(gateway, browser, sandbox):
    """Issue 41: v2 sessions are kept on both stores and in snapshots. Saved while the challenge
    waits; after the AUTH, the restore brings the waiting challenge back."""
    record = challenge(gateway, "4900490000000147")
    control = httpx.Client(base_url=sandbox.base_url, auth=(sandbox.username, sandbox.password), timeout=30)
    with control:
        assert control.post("/_sandbox/snapshots", json={"name": "v2-waiting"}).status_code == 200
        cres = answer_challenge(browser, record)["cres"]
        jwt = library_jwt("SUCCESS", cres=cres)
        assert gateway.one(after_challenge(record["transactionreference"], jwt))["errorcode"] == "0"
        assert control.post("/_sandbox/snapshots/restore", json={"name": "v2-waiting"}).status_code == 200
        refused = gateway.one(after_challenge(record["transactionreference"], jwt))
        assert (refused["errorcode"], refused["errordata"]) == ("30000", ["threedresponse"])  # waiting again
        cres = answer_challenge(browser, record)["cres"]
        auth = gateway.one(after_challenge(record["transactionreference"], library_jwt("SUCCESS", cres=cres)))
        assert (auth["errorcode"], auth["status"]) == ("0", "Y")
        control.post("/_sandbox/snapshots/delete", json={"name": "v2-waiting"})


def test_look_ups_and_challenges_last_two_hours_of_the_sites_clock(gateway, browser, sandbox):
    """Chosen, as version 1's sessions (interface 4.4: wait no more than two hours): an old look-up's
    cachetoken is 30000 ["cachetoken"], an old challenge's page is refused. Last in this module: it
    moves the module's clock."""
    found = gateway.one(lookup("4900490000000501"))
    record = challenge(gateway, "4900490000000147")
    with httpx.Client(
        base_url=sandbox.base_url, auth=(sandbox.username, sandbox.password), timeout=30
    ) as control:
        assert control.post("/_sandbox/clock/advance", json={"by": "PT2H1M"}).status_code == 200
    late = gateway.one(by_token(found["cachetoken"], "THREEDQUERY"))
    assert (late["errorcode"], late["errordata"]) == ("30000", ["cachetoken"])
    page = browser.post(record["acsurl"], data={"creq": record["threedpayload"]})
    assert page.status_code == 400 and "more than two hours ago" in error_text(page.text)
