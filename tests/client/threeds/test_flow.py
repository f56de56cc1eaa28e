"""`ThreeDSecureFlow`: next steps, refusals out of order, listeners (also from the receiver's
thread), masking, and the AUTH SUBSCRIPTION variants through 3-D Secure."""

from __future__ import annotations

import socket
import threading

import httpx
import pytest

from gwkit.threeds import REDIRECT, TermUrlReceiver, ThreeDSecureError, ThreeDSecureFlow
from support.threeds import CARD


@pytest.fixture
def flow(client, receiver):
    f = ThreeDSecureFlow(client, receiver=receiver)
    yield f
    f.close()


def test_steps_out_of_order_are_refused(flow):
    with pytest.raises(ThreeDSecureError, match="THREEDQUERY first"):
        flow.auth()
    with pytest.raises(ThreeDSecureError, match="only an enrolled card"):
        flow.complete_acs("Y")
    flow.query(**CARD)
    with pytest.raises(ThreeDSecureError, match="not returned from the ACS"):
        flow.auth()
    assert flow.wait_for_return(timeout=0) is False
    flow.complete_acs("Y")
    assert flow.wait_for_return(timeout=0) is True
    flow.auth()
    with pytest.raises(ThreeDSecureError, match="already sent its AUTH"):
        flow.auth()
    with pytest.raises(ThreeDSecureError, match="cannot be sent"):
        flow.query(**CARD)


def test_not_enrolled_cards_do_not_go_to_the_acs(flow):
    flow.query(**{**CARD, "pan": "4000000000000721"})
    assert flow.start_url is None
    with pytest.raises(ThreeDSecureError, match="only an enrolled card"):
        flow.acs_form_html()


def test_unknown_outcome_names_what_the_acs_offers(flow):
    flow.query(**CARD)
    with pytest.raises(ThreeDSecureError, match="offers no outcome 'maybe'; it offers A, N, U, Y, cancel"):
        flow.complete_acs("maybe")


def test_acs_form_html_posts_to_the_acs(flow):
    flow.query(**CARD)
    page = flow.acs_form_html(autosubmit=False)
    assert f"action='{flow.query_record['acsurl']}'" in page and "name='PaReq'" in page
    assert "name='TermUrl'" in page and "name='MD'" in page and ".submit()" not in page


def test_listeners_run_for_every_step_and_from_the_receiver_thread(flow):
    seen: list[tuple[str, str]] = []
    flow.on_change(lambda f: seen.append((f.stage, threading.current_thread().name)))
    flow.run("Y", **CARD)
    assert [stage for stage, _ in seen] == ["queried", "at_acs", "returned", "authorised"]
    assert seen[2][1] != threading.current_thread().name  # the post-back arrives on the receiver's thread


def test_a_failing_listener_on_the_receiver_thread_fails_the_caller(flow):
    def broken(f):
        if f.stage == "returned":
            raise RuntimeError("listener broke")

    flow.on_change(broken)
    flow.query(**CARD)
    with pytest.raises(RuntimeError, match="listener broke"):
        flow.complete_acs("Y")


def test_steps_are_masked(flow):
    flow.run("Y", **CARD)
    shown = repr([(s.sent, s.received) for s in flow.steps])
    assert CARD["pan"] not in shown and flow.md not in shown and flow.pares not in shown
    assert "411111######0211" in shown and "[redacted]" in shown
    assert flow.md not in repr(flow) and CARD["pan"] not in repr(flow)


def test_auth_subscription_through_3ds_enrolled_and_not_enrolled(client, receiver):
    subscription = {
        "subscriptiontype": "RECURRING",
        "subscriptionunit": "MONTH",
        "subscriptionfrequency": "1",
        "subscriptionnumber": "1",
        "subscriptionfinalnumber": "12",
        "subscriptionbegindate": "2026-04-02",
        "credentialsonfile": "1",
        "orderreference": "sub-3ds",
    }
    enrolled = ThreeDSecureFlow(client, receiver=receiver)
    enrolled.query(**CARD)
    assert enrolled.next_step == REDIRECT
    enrolled.complete_acs("Y")
    auth, sub = enrolled.auth_subscription(**subscription)
    assert (auth["errorcode"], auth["status"], auth["eci"]) == ("0", "Y", "05") and auth["cavv"]
    assert auth["parenttransactionreference"] == enrolled.query_record["transactionreference"]
    assert sub["errorcode"] == "0" and sub["requesttypedescription"] == "SUBSCRIPTION"
    assert sub["parenttransactionreference"] == auth["transactionreference"]
    assert sub["transactionactive"] == "2" and sub["baseamount"] == "1050"

    not_enrolled = ThreeDSecureFlow(client, receiver=receiver)
    not_enrolled.query(**{**CARD, "pan": "4000000000000721"})
    auth, sub = not_enrolled.auth_subscription(**subscription)
    assert auth["errorcode"] == "0" and auth["enrolled"] == "N"
    assert auth["parenttransactionreference"] == not_enrolled.query_record["transactionreference"]
    assert sub["errorcode"] == "0" and sub["maskedpan"] == "400000######0721"

    unauthenticated = ThreeDSecureFlow(client, receiver=receiver)
    unauthenticated.query(**CARD)
    unauthenticated.complete_acs("N")
    auth, sub = unauthenticated.auth_subscription(**subscription)
    assert (auth["errorcode"], auth["settlestatus"]) == ("60022", "3")


def test_a_receiver_stops_its_thread_and_its_port_and_may_be_stopped_twice():
    receiver = TermUrlReceiver()
    host, port = receiver._server.server_address[:2]
    assert receiver.running
    receiver.stop()
    assert not receiver.running
    with pytest.raises(OSError):
        socket.create_connection((host, port), timeout=5).close()
    receiver.stop()


def test_a_receiver_keeps_serving_after_an_empty_connection(receiver):
    host, port = receiver._server.server_address[:2]
    socket.create_connection((host, port), timeout=5).close()  # what stop() uses to wake the loop
    answer = httpx.get(f"{receiver.base_url}/start/unknown-token", timeout=5)
    assert answer.status_code == 404 and receiver.running
