"""`ThreeDSecureV2Flow` against the sandbox over HTTP: EMV 3-D Secure, frictionless and challenge,
for each scheme, walked as the makers' browser library walks it.

The facts (docs/threeds.md, "EMV 3-D Secure (v2)"; real-gateway-facts.md, "3-D Secure v2"):
- THREEDLOOKUP answers `threedversion` 2.x, `threedstransactionid` and a `cachetoken`; a
  `threedmethodurl` for the "method URL" cards (V3 `ThreeDSecureVerificationService.ts`).
- Frictionless: `enrolled` Y, no `acsurl`, the AUTH answered in the same envelope with `status` Y,
  `eci` 05 (Visa) or 02 (Mastercard), a `cavv` and `authmethod` FINAL (captured: Mastercard
  5200000000001005 -> Y/02, V3 `tests/wiremock/__files/`, Nov 2020).
- Challenge: `acsurl` and `threedpayload` (a base64url CReq: messageType CReq, messageVersion,
  threeDSServerTransID, acsTransID, challengeWindowSize 02); the envelope stops after the
  THREEDQUERY; the AUTH after it, with `threedresponse`, is Y/05 with a `cavv` (captured: Visa
  4000000000001091 -> Y/05).
- Attempted: A/06 (captured: Visa 4000000000001026). Unavailable: authorised, U, eci 07 for Visa and
  Amex, 00 for Mastercard, no cavv (derived). Failed, rejected or not enrolled: 60022, status N (R
  for rejected), settlestatus 3 (chosen, as v1's unauthenticated AUTH).
"""

from __future__ import annotations

import logging
import threading

import httpx
import pytest

import gwkit
from gwkit.cassette import Cassette
from gwkit.interface import testcards
from gwkit.journal import Journal
from gwkit.threeds import (
    CHALLENGE,
    METHOD,
    QUERY,
    SEND_AUTH,
    ThreeDSecureError,
    ThreeDSecureV2Flow,
)
from gwkit.threeds.messages import read_jwt
from support.threeds import START

EXPIRY = f"12/{START.year + 3}"
ECI = {"VISA": "05", "DELTA": "05", "AMEX": "05", "MASTERCARD": "02"}


def card(case: str, scheme: str = "DELTA", version: str = "2.1.0") -> dict:
    """The test card for `case` (data/test_cards.csv, column threedscase), picked by its version."""
    pan = next(
        c.pan
        for c in testcards.test_cards().values()
        if (c.threedscase, c.paymenttypedescription, c.threedversion) == (case, scheme, version)
    )
    code = "1234" if scheme == "AMEX" else "123"
    return {"pan": pan, "expirydate": EXPIRY, "securitycode": code, "baseamount": "1050"}


@pytest.fixture
def new_flow(client, receiver):
    flows: list[ThreeDSecureV2Flow] = []

    def make(**options) -> ThreeDSecureV2Flow:
        flow = ThreeDSecureV2Flow(client, receiver=receiver, method_timeout=0, **options)
        flows.append(flow)
        return flow

    yield make
    for flow in flows:
        flow.close()


@pytest.mark.parametrize("scheme", ["DELTA", "MASTERCARD", "AMEX"])
@pytest.mark.parametrize("version", ["2.1.0", "2.2.0"])
def test_frictionless_cards_are_authorised_in_the_same_envelope(new_flow, scheme, version):
    flow = new_flow()
    lookup = flow.lookup(**card("frictionless-success", scheme, version))
    assert lookup["errorcode"] == "0" and lookup["threedversion"] == version
    assert lookup["threedstransactionid"] and flow.next_step == QUERY
    query = flow.query()
    assert (query["enrolled"], query["threedversion"]) == ("Y", version) and "acsurl" not in query
    assert flow.frictionless and not flow.challenged and flow.next_step is None
    auth = flow.auth_record
    assert (auth["errorcode"], auth["status"], auth["eci"]) == ("0", "Y", ECI[scheme]) and auth["cavv"]
    assert (
        auth["authmethod"] == "FINAL" and auth["parenttransactionreference"] == query["transactionreference"]
    )
    assert flow.verdict.tone == "success" and "liability" in flow.verdict.detail
    assert [s.name for s in flow.steps] == ["THREEDLOOKUP", "THREEDQUERY", "AUTH"]


@pytest.mark.parametrize("scheme", ["DELTA", "MASTERCARD", "AMEX"])
def test_a_challenge_stops_the_envelope_and_the_auth_with_threedresponse_finishes_it(new_flow, scheme):
    flow = new_flow()
    flow.lookup(**card("challenge-success", scheme))
    query = flow.query()
    assert flow.challenged and flow.next_step == CHALLENGE and flow.auth_record is None
    assert query["acsurl"] and "pareq" not in query and "md" not in query
    creq = flow.creq
    assert creq["messageType"] == "CReq" and creq["challengeWindowSize"] == "02"
    assert creq["messageVersion"] == "2.1.0" and creq["threeDSServerTransID"] and creq["acsTransID"]
    with pytest.raises(ThreeDSecureError, match="not returned from the ACS"):
        flow.auth()
    flow.complete_challenge("Y")
    assert flow.returned and flow.trans_status == "Y" and flow.action_code == "SUCCESS"
    assert flow.next_step == SEND_AUTH
    auth = flow.auth()
    assert (auth["errorcode"], auth["status"], auth["eci"]) == ("0", "Y", ECI[scheme]) and auth["cavv"]
    assert auth["parenttransactionreference"] == query["transactionreference"]
    assert flow.verdict.headline == "Authenticated and authorised"
    assert [s.name for s in flow.steps] == ["THREEDLOOKUP", "THREEDQUERY", "ACS", "TERMURL", "AUTH"]


def test_the_auth_after_a_challenge_carries_the_libraries_jwt(new_flow):
    flow = new_flow()
    flow.lookup(**card("challenge-success"))
    flow.query()
    flow.complete_challenge("Y")
    sent: list[dict] = []
    original = flow.client.send

    def spy(requests, **kw):
        sent.append(dict(requests))
        return original(requests, **kw)

    flow.client.send = spy
    try:
        flow.auth()
    finally:
        del flow.client.send
    (request,) = sent
    assert request["requesttypedescriptions"] == ["AUTH"]
    assert "pan" not in request and "cachetoken" not in request  # inherited from the THREEDQUERY
    payload = read_jwt(request["threedresponse"])["Payload"]
    assert payload["Validated"] is True and payload["ActionCode"] == "SUCCESS"
    assert payload["Payment"]["ExtendedData"]["PAResStatus"] == "Y" and payload["CRes"]


def test_a_failed_challenge_is_not_authenticated(new_flow):
    flow = new_flow()
    flow.lookup(**card("challenge-failed"))
    flow.query()
    flow.complete_challenge("Y")  # the right code typed: this card fails all the same
    assert (flow.trans_status, flow.action_code) == ("N", "FAILURE")
    assert "50003" in flow.advice  # the browser library stops here
    auth = flow.auth()
    assert (auth["errorcode"], auth["settlestatus"]) == ("60022", "3")
    assert flow.verdict.tone == "failure" and flow.verdict.headline == "Not authenticated: no payment"


@pytest.mark.parametrize("answer", ["N", "cancel"])
def test_the_cardholder_fails_or_cancels_the_challenge(new_flow, answer):
    flow = new_flow()
    flow.lookup(**card("challenge-success"))
    flow.query()
    flow.complete_challenge(answer)
    assert (flow.trans_status, flow.action_code) == ("N", "FAILURE")
    assert flow.auth()["errorcode"] == "60022"


def test_a_challenge_error_posts_no_cres(new_flow):
    flow = new_flow()
    flow.lookup(**card("challenge-error"))
    flow.query()
    flow.complete_challenge("Y")
    assert flow.returned and flow.cres is None and flow.challenge_error
    assert flow.action_code == "ERROR" and flow.steps[-1].name == "TERMURL"
    auth = flow.auth()
    assert auth["errorcode"] != "0"


@pytest.mark.parametrize(
    "case,status,eci,code",
    [
        ("attempted", "A", "06", "0"),
        ("unavailable", "U", "07", "0"),
        ("frictionless-failed", "N", None, "60022"),
        ("rejected", "R", None, "60022"),
    ],
)
def test_frictionless_outcomes_in_the_same_vocabulary_as_v1(new_flow, case, status, eci, code):
    flow = new_flow()
    auth = flow.run(**card(case))
    assert (auth["errorcode"], auth.get("status")) == (code, status)
    if eci:
        assert auth["eci"] == eci
    if code == "60022":
        assert auth["settlestatus"] == "3" and flow.verdict.tone == "failure"
    if status == "U":
        assert "cavv" not in auth and flow.verdict.tone == "warning"


def test_unavailable_on_mastercard_has_eci_00(new_flow):
    auth = new_flow().run(**card("unavailable", "MASTERCARD"))
    assert (auth["errorcode"], auth["status"], auth["eci"]) == ("0", "U", "00")


def test_the_method_runs_between_the_lookup_and_the_query(new_flow):
    flow = new_flow()
    lookup = flow.lookup(**card("challenge-method-url"))
    assert lookup["threedmethodurl"] and flow.next_step == METHOD
    assert flow.run_method() == "SUCCESS" and flow.method_result == "SUCCESS"
    assert flow.next_step == QUERY
    flow.query()
    flow.complete_challenge("Y")
    assert flow.auth()["status"] == "Y"
    assert [s.name for s in flow.steps][:3] == ["THREEDLOOKUP", "METHOD", "THREEDQUERY"]


def test_a_method_that_never_reports_back_is_uncompleted_after_the_wait(new_flow):
    flow = new_flow()
    flow.lookup(**card("method-not-completed"))
    assert flow.method_url
    assert flow.run_method() == "UNCOMPLETED"  # method_timeout=0: the test never sits through 10 s
    assert flow.next_step == QUERY
    flow.query()
    assert flow.auth_record["errorcode"] == "0"


def test_the_method_wait_is_ended_by_the_browser_page_report(new_flow, receiver):
    flow = new_flow()
    flow.lookup(**card("frictionless-method-url"))
    flow.method_timeout = 60
    page = flow.method_page()
    done = threading.Thread(target=lambda: httpx.post(page + "/done", json={}, timeout=5))
    done.start()
    assert flow.wait_for_method() == "SUCCESS"
    done.join()


def test_a_multi_request_envelope_stops_at_the_challenge_and_finishes_after_it(new_flow):
    subscription = {
        "subscriptiontype": "RECURRING",
        "subscriptionunit": "MONTH",
        "subscriptionfrequency": "1",
        "subscriptionnumber": "1",
        "subscriptionfinalnumber": "12",
        "subscriptionbegindate": f"{START.year}-04-02",
        "credentialsonfile": "1",
        "orderreference": "v2-subscription",
    }
    flow = new_flow()
    flow.lookup(**card("challenge-success"))
    query = flow.query(requesttypes=("ACCOUNTCHECK", "THREEDQUERY", "AUTH", "SUBSCRIPTION"), **subscription)
    assert [r["requesttypedescription"] for r in flow.records] == ["ACCOUNTCHECK", "THREEDQUERY"]
    assert flow.next_step == CHALLENGE and query["acsurl"]
    flow.complete_challenge("Y")
    auth = flow.auth()
    types = [r["requesttypedescription"] for r in flow.records]
    assert types == ["ACCOUNTCHECK", "THREEDQUERY", "AUTH", "SUBSCRIPTION"]
    sub = flow.records[-1]
    assert auth["status"] == "Y" and sub["errorcode"] == "0"
    assert sub["parenttransactionreference"] == auth["transactionreference"]


def test_a_v1_card_has_no_version_and_says_to_walk_v1(new_flow):
    flow = new_flow()
    lookup = flow.lookup(pan="4111110000000211", expirydate=EXPIRY, securitycode="123", baseamount="1050")
    assert "threedversion" not in lookup and flow.threedversion is None
    assert "ThreeDSecureFlow" in flow.advice


def test_steps_out_of_order_are_refused(new_flow):
    flow = new_flow()
    with pytest.raises(ThreeDSecureError, match="THREEDLOOKUP first"):
        flow.query()
    with pytest.raises(ThreeDSecureError, match="THREEDQUERY first"):
        flow.auth()
    flow.lookup(**card("frictionless-success"))
    with pytest.raises(ThreeDSecureError, match="only when the look-up answered a threedmethodurl"):
        flow.run_method()
    with pytest.raises(ThreeDSecureError, match="only a THREEDQUERY that answered a challenge"):
        flow.complete_challenge("Y")
    flow.query()
    with pytest.raises(ThreeDSecureError, match="already sent its AUTH"):
        flow.auth()
    with pytest.raises(ThreeDSecureError, match="cannot be sent"):
        flow.lookup(**card("frictionless-success"))


def test_listeners_run_for_every_step_and_from_the_receiver_thread(new_flow):
    flow = new_flow()
    seen: list[tuple[str, str]] = []
    flow.on_change(lambda f: seen.append((f.stage, threading.current_thread().name)))
    flow.run("Y", **card("challenge-success"))
    assert [stage for stage, _ in seen] == ["looked up", "queried", "at_acs", "returned", "authorised"]
    assert seen[3][1] != threading.current_thread().name


def test_steps_and_repr_never_show_card_data_or_the_challenge_messages(new_flow):
    flow = new_flow()
    flow.run("Y", **card("challenge-success"))
    shown = repr([(s.sent, s.received) for s in flow.steps]) + repr(flow)
    assert card("challenge-success")["pan"] not in shown and "490049######0147" in shown
    assert flow.query_record["threedpayload"] not in shown
    assert "[redacted]" in shown


def test_the_journal_the_cassette_and_the_debug_log_never_keep_the_challenge_messages(
    gateway, receiver, tmp_path, caplog
):
    """threedpayload, cres and threedresponse are redacted wherever pares is (issue 41)."""
    cassette = Cassette(tmp_path / "v2.jsonl")
    with (
        Journal(tmp_path / "journal.db") as journal,
        gwkit.Client(
            gateway.base_url,
            gateway.username,
            gateway.password,
            sitereference=gateway.sitereference,
            currencyiso3a="GBP",
        ) as client,
        caplog.at_level(logging.DEBUG, logger="gwkit"),
    ):
        client.add_exchange_hook(journal.hook(kind="sandbox"))
        client.add_exchange_hook(cassette.recorder())
        flow = ThreeDSecureV2Flow(client, receiver=receiver, method_timeout=0)
        sent: list[str] = []
        original = client.send

        def send(requests, **options):
            sent.append(str(requests.get("threedresponse")))
            return original(requests, **options)

        client.send = send
        flow.run("Y", **card("challenge-success"))
        secrets = {flow.query_record["threedpayload"], flow._answer["cres"], sent[-1]}
    kept = (tmp_path / "journal.db").read_bytes() + (tmp_path / "v2.jsonl").read_bytes()
    logged = caplog.text + repr(flow.steps) + repr(flow.records)
    for secret in secrets:
        assert len(secret) > 20
        assert secret.encode() not in kept and secret not in logged
    assert b"[redacted]" in kept and '"threedresponse": "[redacted]"' in caplog.text


def test_the_merchant_page_for_the_challenge_posts_the_creq_and_the_session_data(new_flow):
    flow = new_flow()
    flow.lookup(**card("challenge-success"))
    with pytest.raises(ThreeDSecureError, match="only a THREEDQUERY that answered a challenge"):
        flow.challenge_form_html()
    flow.query()
    page = flow.challenge_form_html(autosubmit=False)
    assert f"action='{flow.query_record['acsurl']}'" in page and "name='creq'" in page
    assert "name='threeDSSessionData'" in page and ".submit()" not in page
