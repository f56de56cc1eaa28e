"""The 3-D Secure stepper driven through its widgets (.value and .click()) against a sandbox on
127.0.0.1; the ACS is completed headlessly through the stepper's own controls."""

from __future__ import annotations

import re

import pytest

pytest.importorskip("ipywidgets")

from gwkit.widgets import checks
from gwkit.widgets.threeds_stepper import ThreeDSecureStepper
from support.widget_tree import all_html, shown_beside

ALL_DONE = {"THREEDQUERY": "done", "ACS": "done", "TERMURL": "done", "AUTH": "done"}


@pytest.fixture
def stepper(client, receiver):
    s = ThreeDSecureStepper(client, receiver=receiver)
    yield s
    s.flow.close()


def shown_text(stepper) -> str:
    return (
        " ".join(v.value for v in stepper.step_views.values())
        + stepper.acs_view.value
        + stepper.message.value
    )


def test_starts_at_the_query_with_only_the_query_button_enabled(stepper):
    assert stepper.step_states() == {
        "THREEDQUERY": "current",
        "ACS": "waiting",
        "TERMURL": "waiting",
        "AUTH": "waiting",
    }
    assert not stepper.query_button.disabled
    assert (
        stepper.requery_button.disabled and stepper.complete_button.disabled and stepper.auth_button.disabled
    )
    labels = " ".join(label for label, _ in stepper.card.options)  # what the browser is sent
    assert "411111######0211" in labels and "4111110000000211" not in labels


def test_starts_with_the_card_and_expiry_notebook_03_pays_with(stepper):
    """One story: notebook 03's intro names the enrolled card 4111110000000211 with expiry 12/2049,
    its walkthrough pays with them (DEFAULT_PAN, DEFAULT_EXPIRY) and the stepper starts with them."""
    from gwkit.interface import testcards
    from gwkit.widgets.threeds_stepper import DEFAULT_EXPIRY, DEFAULT_PAN

    assert (stepper.card.value, stepper.expirydate.value) == (DEFAULT_PAN, DEFAULT_EXPIRY)
    card = testcards.test_card(DEFAULT_PAN)
    assert (card.enrolled, card.outcome, card.threedversion) == ("Y", "authorised", "1.0.2")
    stepper.query_button.click()  # the expiry accepted: the enrolment check answered for that card
    record = stepper.flow.query_record
    assert (record["errorcode"], record["enrolled"], record["maskedpan"]) == ("0", "Y", "411111######0211")


def test_enrolled_card_authenticated_moves_on_by_itself(stepper):
    stepper.card.value = "4111110000000211"
    stepper.query_button.click()
    assert stepper.step_states()["ACS"] == "current"
    assert "<iframe" in stepper.acs_view.value and stepper.flow.start_url in stepper.acs_view.value
    # the issuer's page opens right under the buttons the reader just pressed, before the picture
    inputs, first_below = stepper.children[:2]
    assert stepper.query_button in inputs.children[-1].children
    assert first_below is stepper.issuer_box and first_below.children[0] is stepper.acs_view
    assert "under the <i>Send THREEDQUERY</i> button" in stepper.step_views["ACS"].value
    assert not stepper.complete_button.disabled and stepper.auth_button.disabled
    assert "send the customer&#x27;s browser to the ACS" in stepper.step_views["THREEDQUERY"].value
    stepper.outcome.value = "Y"
    stepper.complete_button.click()
    assert stepper.step_states() == ALL_DONE  # the AUTH went as soon as the customer returned
    record = stepper.flow.auth_record
    assert (record["errorcode"], record["status"], record["eci"]) == ("0", "Y", "05")
    auth_view = stepper.step_views["AUTH"].value
    assert "3-D Secure status Y" in auth_view and "eci 05" in auth_view and "cavv present" in auth_view
    text = shown_text(stepper)
    assert "411111######0211" in text and "4111110000000211" not in text
    assert stepper.flow.md not in text and stepper.flow.pares not in text
    assert stepper.auth_button.disabled and stepper.complete_button.disabled
    assert "[&quot;AUTH&quot;]" in auth_view and "[&#x27;" not in text  # lists as on the wire, never a repr


def test_manual_auth_after_the_return(stepper):
    stepper.auto_auth.value = False
    stepper.query_button.click()
    stepper.complete_acs("N")
    assert stepper.step_states() == {
        "THREEDQUERY": "done",
        "ACS": "done",
        "TERMURL": "done",
        "AUTH": "current",
    }
    assert "PaRes has arrived" in stepper.step_views["TERMURL"].value
    assert not stepper.auth_button.disabled
    stepper.auth_button.click()
    record = stepper.flow.auth_record
    assert (record["errorcode"], record["settlestatus"]) == ("60022", "3")
    assert "errorcode 60022 Unauthenticated" in stepper.step_views["AUTH"].value


def test_not_enrolled_card_skips_the_acs(stepper):
    stepper.card.value = "4000000000000721"
    stepper.query_button.click()
    assert stepper.step_states() == {
        "THREEDQUERY": "done",
        "ACS": "skipped",
        "TERMURL": "skipped",
        "AUTH": "current",
    }
    assert stepper.acs_view.value == "" and stepper.complete_button.disabled
    stepper.auth_button.click()
    assert stepper.flow.auth_record["errorcode"] == "0"
    assert (
        stepper.flow.auth_record["parenttransactionreference"]
        == stepper.flow.query_record["transactionreference"]
    )


def test_unknown_enrolment_can_be_resent(stepper):
    stepper.card.value = "4000000000000101"
    stepper.query_button.click()
    assert not stepper.requery_button.disabled
    stepper.requery_button.click()
    assert "Sent 2 times" in stepper.step_views["THREEDQUERY"].value
    stepper.auth_button.click()
    assert (stepper.flow.auth_record["errorcode"], stepper.flow.auth_record["enrolled"]) == ("0", "U")


def test_unsupported_scheme_offers_a_standard_auth(stepper):
    stepper.card.value = "36000000000008"
    stepper.query_button.click()
    assert "60031" in stepper.step_views["THREEDQUERY"].value
    assert "standard AUTH without 3-D Secure" in stepper.step_views["THREEDQUERY"].value
    stepper.auth_button.click()
    assert stepper.flow.auth_record["errorcode"] == "0"


def test_bank_decline_after_authentication(stepper):
    stepper.baseamount.value = "70000"
    stepper.query_button.click()
    stepper.complete_acs("Y")
    assert stepper.flow.auth_record["errorcode"] == "70000"
    assert "errorcode 70000 Decline" in stepper.step_views["AUTH"].value


@pytest.mark.parametrize(
    "wrong, rule",
    [
        ("2030-12", "expirydate</code>: Date MM/YYYY: format MM/YYYY"),
        ("12/20", "expirydate</code>: must be at least 7 characters"),
        ("01/2020", "expirydate</code>: the card expired at the end of 01/2020"),
    ],
)
def test_a_wrong_expiry_disables_send_and_is_shown_beside_the_expiry(stepper, wrong, rule):
    stepper.expirydate.value = wrong  # checked as it changes, before any press
    assert stepper.query_button.disabled
    assert rule in shown_beside(stepper, stepper.expirydate)
    assert "Traceback" not in all_html(stepper) and stepper.message.value == ""
    stepper.query_button.click()  # pressed anyway (a click racing the change): nothing is sent
    assert stepper.flow.query_record is None and stepper.flow.steps == []
    stepper.expirydate.value = "12/2030"
    assert not stepper.query_button.disabled and shown_beside(stepper, stepper.expirydate) == ""
    stepper.query_button.click()
    assert stepper.flow.query_record["errorcode"] == "0"


def test_each_field_is_checked_by_the_interfaces_rules_beside_it(stepper):
    stepper.baseamount.value = "10.50"
    stepper.currency.value = "gbp"
    assert "baseamount</code>: Numeric: digits 0-9 only" in shown_beside(stepper, stepper.baseamount)
    assert "currencyiso3a</code>: must be upper case" in shown_beside(stepper, stepper.currency)
    assert stepper.query_button.disabled
    stepper.baseamount.value, stepper.currency.value = "1050", "GBP"
    stepper.securitycode.value = "1234"  # the rule reads the card: 3 digits for a Visa
    assert "must have 4 digits for American Express" in shown_beside(stepper, stepper.securitycode)
    assert "1234" not in all_html(stepper)  # a security code is never shown
    stepper.securitycode.value = ""  # optional: a blank code is not sent
    assert not stepper.query_button.disabled and all_html(stepper).count("gwkit-problem") == 0


def test_a_problem_only_the_clients_check_finds_is_shown_beside_its_field(stepper, monkeypatch):
    monkeypatch.setattr(stepper.checks, "check", list)  # the field checks miss it
    stepper.expirydate.value = "2030-12"
    assert not stepper.query_button.disabled
    stepper.query_button.click()  # the client validates the whole request: ValidationError, caught
    assert "expirydate</code>: Date MM/YYYY: format MM/YYYY" in shown_beside(stepper, stepper.expirydate)
    assert stepper.query_button.disabled and stepper.flow.query_record is None
    assert "Traceback" not in all_html(stepper)


def test_an_exception_in_the_field_check_fails_loudly(stepper, monkeypatch):
    def broken(*args, **kwargs):
        raise RuntimeError("a broken rule")

    monkeypatch.setattr(checks, "check_value", broken)
    with pytest.raises(RuntimeError, match="a broken rule"):  # re-raised under tests, after showing it
        stepper.expirydate.value = "12/2031"
    assert "a broken rule" in stepper.checks.general.value


def test_start_again(stepper):
    stepper.query_button.click()
    first = stepper.flow
    stepper.restart_button.click()
    assert stepper.flow is not first and stepper.flow.query_record is None
    assert stepper.step_states()["THREEDQUERY"] == "current" and not stepper.query_button.disabled
    assert re.search(r"<iframe", stepper.acs_view.value) is None


def banner(stepper) -> str:
    return stepper.outcome_banner.value


@pytest.mark.parametrize(
    "outcome, tone, headline, acs_state, auth_state",
    [
        ("Y", "success", "Authenticated and authorised", "done", "done"),
        ("A", "success", "Authentication attempted, authorised", "done", "done"),
        ("U", "warning", "Authentication unavailable, authorised", "unavailable", "done"),
        ("N", "failure", "Failed: 60022 Unauthenticated", "not authenticated", "failed"),
        ("cancel", "failure", "Failed: 60022 Unauthenticated", "not authenticated", "failed"),
    ],
)
def test_enrolled_card_ends_with_an_outcome_banner_for_each_acs_answer(
    stepper, outcome, tone, headline, acs_state, auth_state
):
    stepper.query_button.click()
    assert banner(stepper) == ""  # nothing has ended yet
    stepper.complete_acs(outcome)
    assert f"gwkit-outcome-{tone}" in banner(stepper) and headline in banner(stepper)
    states = stepper.step_states()
    assert (states["ACS"], states["AUTH"]) == (acs_state, auth_state)
    if auth_state == "failed":  # a failed step is never shown as done, in green
        assert (
            ">failed</span>" in stepper.step_views["AUTH"].value
            and "#b3261e" in stepper.step_views["AUTH"].value
        )
        # in the words of the one error-code table: what happened and what to do
        assert "the cardholder was not authenticated" in banner(stepper)
        assert "Ask the customer to try again or use another card." in banner(stepper)


@pytest.mark.parametrize(
    "card, headline",
    [
        ("4000000000000721", "Not enrolled: paid without 3-D Secure"),
        ("4000000000000101", "Enrolment unknown: paid without 3-D Secure"),
        ("36000000000008", "Paid without 3-D Secure (the THREEDQUERY failed)"),
    ],
)
def test_paths_without_the_acs_end_with_a_warning_banner(stepper, card, headline):
    stepper.card.value = card
    stepper.query_button.click()
    stepper.auth_button.click()
    assert "gwkit-outcome-warning" in banner(stepper) and headline in banner(stepper)
    assert stepper.step_states()["AUTH"] == "done"


def test_a_refused_threedquery_is_shown_failed_not_done(stepper):
    stepper.card.value = "36000000000008"  # Diners: no 3-D Secure, 60031
    stepper.query_button.click()
    assert stepper.step_states()["THREEDQUERY"] == "failed"
    assert ">failed</span>" in stepper.step_views["THREEDQUERY"].value


def test_bank_decline_banner_says_declined(stepper):
    stepper.baseamount.value = "70000"
    stepper.query_button.click()
    stepper.complete_acs("Y")
    assert "gwkit-outcome-failure" in banner(stepper) and "Declined by the bank" in banner(stepper)
    assert stepper.step_states()["ACS"] == "done" and stepper.step_states()["AUTH"] == "failed"


def test_start_again_clears_the_banner(stepper):
    stepper.query_button.click()
    stepper.complete_acs("Y")
    assert banner(stepper)
    stepper.restart_button.click()
    assert banner(stepper) == ""
