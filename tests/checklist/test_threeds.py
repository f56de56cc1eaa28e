"""The EMV 3-D Secure step: a challenge armed for the next THREEDQUERY (the `threeds` fault), the
browser's part judged from the sandbox's ACS session (`GET /_sandbox/threeds/{reference}`)."""

from __future__ import annotations

import httpx
import pytest

from gwkit import checklist
from gwkit.checklist.threeds import ThreeDSecureV2
from gwkit.proxy import ProxyFaults
from gwkit.sandbox import SandboxTransport

CREDENTIALS = ("shop@example.com", "any-password")


def auth(order: str, **fields: str) -> dict:
    return {
        "sitereference": "test_shop12345",
        "requesttypedescriptions": ["AUTH"],
        "accounttypedescription": "ECOM",
        "pan": "4000000000000721",
        "expirydate": "12/2030",
        "securitycode": "123",
        "baseamount": "1050",
        "currencyiso3a": "GBP",
        "orderreference": order,
        **fields,
    }


def post(handle, *objects: dict) -> httpx.Response:
    envelope = {"alias": CREDENTIALS[0], "version": "1.00", "request": list(objects)}
    return httpx.post(f"{handle.base_url}/json/", json=envelope, auth=CREDENTIALS, timeout=10)


def threedquery(order: str) -> dict:
    return auth(
        order,
        requesttypedescriptions=["THREEDQUERY", "AUTH"],
        termurl="https://shop.example/pay/return",
        useragent="Mozilla/5.0",
        accept="text/html",
    )


def returned(order: str, parent: str, threedresponse: str = "eyJhbGciOiJub25lIn0.e30.") -> dict:
    return {
        "sitereference": "test_shop12345",
        "requesttypedescriptions": ["AUTH"],
        "orderreference": order,
        "parenttransactionreference": parent,
        "threedresponse": threedresponse,
    }


def test_the_shop_done_right_is_challenged_answers_at_the_acs_and_pays_with_the_threedresponse(run):
    shop = run("right", steps=["3ds-v2"])
    did = shop.pay_with_3ds("order-v2")
    verdict = shop.handle.finish().verdict("3ds-v2")

    assert did == ["THREEDQUERY+AUTH", "AUTH+threedresponse"]
    assert verdict.status == "pass", verdict.explain()
    assert verdict.reason == (
        "the challenge was opened at the acsurl with the creq and answered (transStatus Y), and the "
        f"AUTH came with the threedresponse (#{verdict.evidence[1].number})"
    )
    query, paid = verdict.evidence
    assert query.fault == "threeds" and paid.fault is None
    assert query.records[0]["acsurl"].endswith("/acs/v2")
    assert query.records[0]["maskedpan"] == "490049######0147"  # the outcome's test card answered
    assert paid.records[0]["errorcode"] == "0"


def test_the_naive_shop_pays_without_the_challenge(run):
    shop = run("naive", steps=["3ds-v2"])
    did = shop.pay_with_3ds("order-naive")
    verdict = shop.handle.finish().verdict("3ds-v2")

    assert did == ["THREEDQUERY+AUTH", "AUTH"]
    assert verdict.status == "fail"
    reference = verdict.evidence[0].records[0]["transactionreference"]
    assert verdict.reason == (
        f"paid without the challenge (#{verdict.evidence[1].number}): an AUTH without the "
        f"threedresponse of THREEDQUERY {reference}: no liability shift"
    )


def test_a_threedresponse_the_acs_never_saw_answered_fails(run):
    """The proxy sees a threedresponse either way: only the ACS session tells the customer went there."""
    handle = run(None, steps=["3ds-v2"]).handle
    query = post(handle, threedquery("order-forged")).json()["response"][-1]
    post(handle, returned("order-forged", query["transactionreference"]))
    verdict = handle.finish().verdict("3ds-v2")

    assert verdict.status == "fail"
    assert "the issuer's ACS never had the challenge answered" in verdict.reason


def test_a_payment_stopped_at_the_challenge_or_without_3ds_fails(run):
    started = run(None, steps=["3ds-v2"])
    post(started.handle, threedquery("order-stopped"))
    stopped = started.handle.finish().verdict("3ds-v2")
    plain_run = run(None, steps=["3ds-v2"])
    post(plain_run.handle, auth("order-plain-2"))
    plain = plain_run.handle.finish().verdict("3ds-v2")

    assert stopped.status == "fail" and stopped.reason.startswith("the payment stopped at the challenge")
    assert plain.status == "fail"
    assert plain.reason == (
        f"paid without 3-D Secure (#{plain.evidence[0].number}): no THREEDQUERY, so no authentication "
        "and no liability shift"
    )


def test_the_acs_session_is_read_through_the_control_api_with_the_callers_credentials(box, customer_at_acs):
    account = box.default_account
    with httpx.Client(
        transport=SandboxTransport(box),
        base_url="http://sandbox.invalid",
        auth=(account.username, account.password),
    ) as http:
        site = account.sitereferences[0]
        envelope = {"alias": account.username, "request": [{**threedquery("o-acs"), "sitereference": site}]}
        http.post("/_sandbox/faults", json={"kind": "threeds", "outcome": "challenge"})
        query = http.post("/json/", json=envelope).json()["response"][-1]
        before = http.get(f"/_sandbox/threeds/{query['transactionreference']}")
        customer_at_acs(query["acsurl"], query["threedpayload"])
        after = http.get(f"/_sandbox/threeds/{query['transactionreference']}").json()
        missing = http.get("/_sandbox/threeds/1-2-3")
        stranger = http.get(f"/_sandbox/threeds/{query['transactionreference']}", auth=("nobody", "wrong"))

    assert query["maskedpan"] == "490049######0147"  # the sandbox's own fault book gave the outcome
    assert before.json() == {
        "transactionreference": query["transactionreference"],
        "threedversion": "2.1.0",
        "challenged": True,
        "state": "challenge",
        "transstatus": None,
    }
    assert (after["state"], after["transstatus"]) == ("answered", "Y")
    assert missing.status_code == 404
    assert missing.json()["detail"] == "no EMV 3-D Secure THREEDQUERY 1-2-3 on your sites"
    assert stranger.status_code == 401


@pytest.mark.parametrize(
    ("fault", "message"),
    [
        ({"kind": "threeds"}, "outcome must be one of challenge, enrolled, not-enrolled, failed"),
        (
            {"kind": "threeds", "outcome": "Y"},
            "outcome must be one of challenge, enrolled, not-enrolled, failed",
        ),
        ({"kind": "threeds", "outcome": "challenge", "code": 1}, "unknown field(s) code for kind threeds"),
    ],
)
def test_a_threeds_fault_is_refused_naming_the_field(fault, message):
    with pytest.raises(ValueError, match=message.replace("(", r"\(").replace(")", r"\)")):
        ProxyFaults([fault])


def test_the_step_arms_the_challenge_for_a_threedquery_alone_or_with_its_auth():
    assert ThreeDSecureV2.fault == {
        "kind": "threeds",
        "outcome": "challenge",
        "requesttypes": ["THREEDQUERY", "THREEDQUERY+AUTH"],
        "count": 1,
    }


@pytest.mark.parametrize(
    ("step", "right", "naive"),
    [
        (
            "3ds-v1-enrolled",
            "sent to the acsurl, and back with md and pares in the AUTH (#2)",
            "paid without authentication (#2): an AUTH without md and pares after enrolled Y: no liability shift",
        ),
        ("3ds-v1-not-enrolled", "not enrolled: the AUTH went on in the THREEDQUERY's own request", None),
        (
            "3ds-failed",
            "the failed authentication was final: no AUTH without 3-D Secure",
            "paid without 3-D Secure after the authentication failed (#2): around the issuer's answer, "
            "with no liability shift",
        ),
    ],
)
def test_the_version_1_and_failed_authentication_steps_against_both_shops(run, step, right, naive):
    verdicts = {}
    for behaviour in ("right", "naive"):
        shop = run(behaviour, steps=[step])
        shop.pay_with_3ds(f"{behaviour}-{step}")
        verdicts[behaviour] = shop.handle.finish().verdict(step)

    assert (verdicts["right"].status, verdicts["right"].reason) == ("pass", right)
    if naive is None:  # nothing to get wrong: the AUTH goes on in the same request
        assert verdicts["naive"].status == "pass"
    else:
        assert (verdicts["naive"].status, verdicts["naive"].reason) == ("fail", naive)


def test_a_new_auth_after_not_enrolled_must_name_the_threedquery(run):
    handle = run(None, steps=["3ds-v1-not-enrolled"]).handle
    query = post(
        handle, auth("order-n", requesttypedescriptions=["THREEDQUERY"], termurl="https://s.example/")
    ).json()
    post(handle, auth("order-n"))
    verdict = handle.finish().verdict("3ds-v1-not-enrolled")

    reference = query["response"][-1]["transactionreference"]
    assert (verdict.status, verdict.reason) == (
        "fail",
        f"a new AUTH with the card (#2), not naming the THREEDQUERY {reference} as its parent: the "
        "enrolment check is lost from the payment",
    )


def test_the_version_1_steps_are_off_by_default():
    default = [step.name for step in checklist.steps_named()]

    assert "3ds-v1-enrolled" not in default and "3ds-v1-not-enrolled" not in default
    assert "3ds-v2" in default and "3ds-failed" in default
