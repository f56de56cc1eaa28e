"""How a run goes: steps ended by the next payment or a signal, claimed by name, judged on the
exchanges of their payment (by orderreference, else a fingerprint, else advisory)."""

from __future__ import annotations

import httpx
import pytest

from gwkit import Client, checklist
from gwkit.checklist import STEP_HEADER
from gwkit.sandbox import SandboxTransport

NOT_ENROLLED = "4000000000000721"  # authorised, not enrolled in 3-D Secure
CREDENTIALS = ("shop@example.com", "any-password")


def auth(order: str | None = "order-1", **fields: str) -> dict:
    request = {
        "sitereference": "test_shop12345",
        "requesttypedescriptions": ["AUTH"],
        "accounttypedescription": "ECOM",
        "pan": NOT_ENROLLED,
        "expirydate": "12/2030",
        "securitycode": "123",
        "baseamount": "1050",
        "currencyiso3a": "GBP",
        **({"orderreference": order} if order else {}),
        **fields,
    }
    return {k: v for k, v in request.items() if v != ""}


def post(handle, *objects: dict, headers: dict | None = None) -> httpx.Response:
    envelope = {"alias": CREDENTIALS[0], "version": "1.00", "request": list(objects)}
    return httpx.post(
        f"{handle.base_url}/json/", json=envelope, auth=CREDENTIALS, headers=headers, timeout=10
    )


def query(order: str) -> dict:
    return {"requesttypedescriptions": ["TRANSACTIONQUERY"], "filter": {"orderreference": [{"value": order}]}}


def test_a_step_that_sees_no_payment_says_so_when_the_person_moves_on_and_when_the_run_ends(run):
    started = run(None, steps=["decline", "soft-decline", "validation"])
    moved_on = started.handle.next()
    result = started.handle.finish()

    assert moved_on is not None and moved_on.status == "no payment seen"
    assert moved_on.reason == "no payment seen: make one payment in your shop: it will be declined (70000)"
    assert [v.status for v in result.verdicts] == ["no payment seen"] * 3
    assert not result.passed and result.summary() == "FAILED: 3 steps (3 no payment seen)"
    assert "Decline (70000): NO PAYMENT SEEN: no payment seen: make one payment" in "\n".join(started.lines)


def test_a_step_ends_at_the_next_payment_and_its_later_requests_stay_its_own(run):
    started = run(None, steps=["decline", "bank-error-not-made"])
    assert post(started.handle, auth("order-a")).json()["response"][0]["errorcode"] == "70000"
    assert post(started.handle, auth("order-b")).json()["response"][0]["errorcode"] == "60034"
    post(started.handle, query("order-a"))  # the first payment's, although the second step runs now
    post(started.handle, query("order-b"))
    result = started.handle.finish()

    decline, unknown = result.verdicts
    assert decline.status == "pass" and [e.number for e in decline.evidence] == [1]
    assert unknown.status == "pass" and [e.request_types for e in unknown.evidence] == [
        ("AUTH",),
        ("TRANSACTIONQUERY",),
    ]
    assert unknown.reason == "queried the order before anything else, and did not pay again"


def test_a_cancel_after_the_query_passes_and_doing_nothing_is_a_warning(run):
    started = run(None, steps=["bank-error-made", "dropped-answer"])
    made = post(started.handle, auth("order-c")).json()["response"][0]
    found = post(started.handle, query("order-c")).json()["response"][0]["records"]
    cancel = {
        "requesttypedescriptions": ["TRANSACTIONUPDATE"],
        "filter": {"transactionreference": [{"value": found[0]["transactionreference"]}]},
        "updates": {"settlestatus": "3"},
    }
    assert post(started.handle, cancel).json()["response"][0]["errorcode"] == "0"
    with pytest.raises(httpx.RemoteProtocolError):  # the dropped answer: the next step's payment
        post(started.handle, auth("order-d"))
    result = started.handle.finish()

    assert made["errorcode"] == "60010"
    assert [(v.status, v.reason) for v in result.verdicts] == [
        ("pass", "queried and cancelled: nothing is left unknown"),
        ("warning", "neither a query nor a retry: the order's outcome stays unknown to the shop"),
    ]
    assert result.passed  # a warning is not a failure
    assert [e.request_types for e in result.verdicts[0].evidence] == [
        ("AUTH",),
        ("TRANSACTIONQUERY",),
        ("TRANSACTIONUPDATE",),
    ]


def test_tests_claim_their_steps_by_name_in_any_order_by_header_or_by_a_call(run):
    started = run(None, steps=["decline", "soft-decline", "timeout"])
    handle = started.handle
    claimed = httpx.post(f"{handle.base_url}/_checklist/steps/soft-decline", json={})
    soft = post(handle, auth("order-s")).json()["response"][0]
    declined = post(handle, auth("order-h"), headers={STEP_HEADER: "decline"}).json()["response"][0]
    status = httpx.get(f"{handle.base_url}/_checklist").json()

    assert claimed.status_code == 200 and claimed.json()["current"] == "soft-decline"
    assert (soft["errorcode"], declined["errorcode"]) == ("71000", "70000")
    assert status["current"] == "decline"
    assert [s["status"] for s in status["steps"]] == ["to do", "warning", "to do"]
    again = post(handle, auth("order-x"), headers={STEP_HEADER: "soft-decline"})
    unknown = httpx.post(f"{handle.base_url}/_checklist/steps/refund", json={})
    assert again.status_code == 409
    assert again.json()["error"] == (
        f"{STEP_HEADER}: step soft-decline has been judged already: each step runs once a run"
    )
    assert unknown.status_code == 409
    assert (
        unknown.json()["error"]
        == "no step 'refund' in this run; its payment steps are decline, soft-decline, timeout"
    )
    finished = httpx.post(f"{handle.base_url}/_checklist/finish", json={}).json()
    assert finished["passed"] is False  # timeout never saw a payment
    assert [s["status"] for s in finished["steps"]] == ["pass", "warning", "no payment seen"]


def test_the_checklist_signals_take_json_only(run):
    handle = run(None, steps=["decline"]).handle
    form = httpx.post(f"{handle.base_url}/_checklist/next", data={"a": "b"})
    listed = httpx.post(f"{handle.base_url}/_checklist/next", json=[1])

    assert form.status_code == 415 and form.json()["field"] == "content-type"
    assert listed.status_code == 400 and listed.json()["error"] == "body: must be a JSON object ({})"
    assert handle.checklist.current is not None and handle.checklist.current.step.name == "decline"


def test_validation_names_each_problem_with_its_field_and_rule(run):
    started = run(None, steps=["validation"])  # no outcome armed: the request goes to the gateway
    post(started.handle, auth("order-v", baseamount="10.50"))
    result = started.handle.finish()

    validation = result.verdict("validation")
    assert validation.status == "fail"
    assert validation.reason == "#1 request.0: baseamount: Numeric: digits 0-9 only"
    assert [e.number for e in validation.evidence] == [1]
    assert validation.evidence[0].answered_by == "upstream"  # never strict: the gateway's own answer
    assert validation.evidence[0].errorcodes == ("30000",)


def test_without_an_orderreference_the_payment_is_known_by_a_fingerprint_else_the_verdict_is_advisory(run):
    started = run(None, steps=["decline", "soft-decline"])
    post(started.handle, auth(None))
    post(started.handle, auth(None))  # the same card, amount and currency: the same payment, retried
    keyless = {"requesttypedescriptions": ["AUTH"], "sitereference": "test_shop12345", "baseamount": "1050"}
    post(started.handle, keyless)  # not the same payment? no key to tell: it stays the decline's
    started.handle.next()
    post(started.handle, {**keyless, "parenttransactionreference": "1-2-3"})
    result = started.handle.finish()

    decline, soft = result.verdicts
    assert str(decline.key) == "fingerprint '400000######0721 1050 GBP'"
    assert decline.status == "fail" and not decline.advisory and len(decline.evidence) == 2
    assert soft.key is None and soft.advisory and not soft.required_failed
    assert (
        "payment known no key (no orderreference, nor card, amount and currency): advisory" in soft.explain()
    )


def test_the_decline_fault_declines_the_next_auth_whatever_the_card_and_is_never_made(box):
    account = box.default_account
    site = account.sitereferences[0]
    box.faults.add("gateway_error", code=70000, requesttypes=["AUTH"], sitereference=site)
    with pytest.raises(ValueError, match="made must be false for code 70000: a decline is never made"):
        box.faults.add("gateway_error", code=70000, made=True, sitereference=site)
    card = {
        k: v
        for k, v in auth("order-sandbox").items()
        if k not in ("requesttypedescriptions", "sitereference")
    }
    transport = SandboxTransport(box)
    with Client(
        "http://sandbox.invalid", account.username, account.password, sitereference=site, transport=transport
    ) as gw:
        declined, authorised = gw.auth(**card).record, gw.auth(**card).record
        found = gw.transaction_query(orderreference="order-sandbox").record["records"]

    assert (declined["errorcode"], declined["errormessage"]) == ("70000", "Decline")
    assert authorised["errorcode"] == "0"  # the next AUTH only
    assert [r["errorcode"] for r in found] == ["0"]  # the decline was never made


def test_paying_again_after_the_query_found_the_payment_made_is_the_double_charge_it_is(run):
    started = run(None, steps=["bank-error-made"])
    post(started.handle, auth("order-twice"))
    post(started.handle, query("order-twice"))
    again = post(started.handle, auth("order-twice"))
    result = started.handle.finish()

    verdict = result.verdict("bank-error-made")
    assert again.json()["response"][0]["errorcode"] == "0"  # the customer is charged twice
    assert verdict.status == "fail"
    assert verdict.reason == (
        "a new AUTH for the same order (#3) although the query found it made: the double-charge risk"
    )


def test_a_payment_that_never_sends_an_auth_of_its_own_is_not_given_the_outcome_and_says_so(run):
    started = run(None, steps=["decline"])
    combined = auth(
        "order-3ds", requesttypedescriptions=["THREEDQUERY", "AUTH"], termurl="https://shop.example/back"
    )
    answered = post(started.handle, combined).json()["response"]
    result = started.handle.finish()

    assert [r["errorcode"] for r in answered] == ["0", "0"]  # not faulted
    verdict = result.verdict("decline")
    assert verdict.status == "no payment seen"
    assert verdict.reason == (
        "no AUTH of its own seen for the payment (THREEDQUERY + AUTH in one object is not armed): "
        "the decline was never given"
    )


def test_a_report_that_cannot_be_written_at_the_end_is_named(run, tmp_path):
    result = run(None, steps=["decline"]).handle.finish()
    gone = tmp_path / "gone"

    with pytest.raises(checklist.ChecklistError, match=f"report path {gone}/r.xml: cannot be written"):
        checklist.write_reports(result, junit=gone / "r.xml")


def test_a_header_claiming_a_step_that_has_its_payment_already_is_refused(run):
    started = run(None, steps=["decline", "soft-decline"])
    first = post(started.handle, auth("order-1"), headers={STEP_HEADER: "decline"})
    second = post(started.handle, auth("order-2"), headers={STEP_HEADER: "decline"})

    assert first.json()["response"][0]["errorcode"] == "70000"
    assert second.status_code == 409
    assert second.json()["error"] == (
        f"{STEP_HEADER}: step decline has its payment already (orderreference 'order-1'): one payment a step"
    )
    assert started.handle.checklist.current.step.name == "decline"
