"""The EMV 3-D Secure stepper driven through its widgets (.value and .click()) against a sandbox
on 127.0.0.1; the challenge is answered headlessly through the stepper's own controls. Its picture
(no sandbox needed) draws the browser's part: the hidden 3DS method frame and the challenge."""

from __future__ import annotations

import re

import pytest

pytest.importorskip("ipywidgets")

from gwkit.interface import testcards
from gwkit.widgets.threeds_v2_stepper import (
    LANES,
    MESSAGES,
    ThreeDSecureV2Stepper,
    sequence_svg,
    v2_card_choices,
)
from support.widget_tree import all_html, shown_beside


def highlighted(svg: str) -> list[str]:
    return re.findall(r"font-weight='bold' style='[^']*'>([^<]+)</text>", svg)


def test_the_picture_draws_the_browsers_part_and_highlights_the_current_step():
    drawn = sequence_svg({"METHOD": "current"}, lanes=LANES, messages=MESSAGES)
    assert highlighted(drawn) == ["hidden frame: the 3DS method", "threeDSMethodData (device check)"]
    assert "Gateway (3DS server)" in drawn and "creq, threeDSSessionData" in drawn
    frictionless = sequence_svg(
        {
            "THREEDLOOKUP": "done",
            "METHOD": "skipped",
            "THREEDQUERY": "done",
            "ACS": "skipped",
            "TERMURL": "skipped",
        },
        lanes=LANES,
        messages=MESSAGES,
    )
    assert frictionless.count("stroke-dasharray='5,4'") == 6  # no method frame, no challenge


def test_the_cards_are_the_emv_3ds_ones_with_their_story():
    choices = v2_card_choices()
    cards = testcards.test_cards()
    assert choices and all(cards[pan].threedversion.startswith("2.") for _, pan in choices)
    label = {pan: label for label, pan in choices}["4900490000000147"]
    assert label == "490049######0147 DELTA 2.1.0: challenge" and "4900490000000147" not in label


@pytest.fixture
def stepper(client, receiver):
    s = ThreeDSecureV2Stepper(client, receiver=receiver, method_timeout=0)
    yield s
    s.flow.close()


def test_starts_at_the_lookup_with_only_its_button_enabled(stepper):
    assert stepper.step_states()["THREEDLOOKUP"] == "current"
    assert not stepper.lookup_button.disabled
    assert all(b.disabled for b in (stepper.method_button, stepper.query_button, stepper.complete_button))
    assert stepper.auth_button.disabled


@pytest.mark.parametrize(
    "wrong, rule",
    [
        ("13/2030", "expirydate</code>: Date MM/YYYY: format MM/YYYY"),
        ("01/2020", "expirydate</code>: the card expired at the end of 01/2020"),
    ],
)
def test_a_wrong_expiry_disables_send_and_is_shown_beside_the_expiry(stepper, wrong, rule):
    stepper.expirydate.value = wrong
    assert stepper.lookup_button.disabled
    assert rule in shown_beside(stepper, stepper.expirydate)
    assert "Traceback" not in all_html(stepper) and stepper.message.value == ""
    stepper.lookup_button.click()  # pressed anyway: checked again, nothing is sent
    assert stepper.flow.lookup_record is None and stepper.flow.steps == []
    stepper.expirydate.value = "12/2030"
    assert not stepper.lookup_button.disabled and shown_beside(stepper, stepper.expirydate) == ""
    stepper.lookup_button.click()
    assert stepper.flow.lookup_record["errorcode"] == "0"


def test_changing_the_card_rechecks_the_security_code_beside_it(stepper):
    amex = next(pan for _, pan in v2_card_choices() if pan[:2] in ("34", "37"))
    stepper.card.value = amex  # the stepper puts in a test code of the right length
    assert stepper.securitycode.value == "1234" and not stepper.lookup_button.disabled
    stepper.securitycode.value = "123"
    assert "must have 4 digits for American Express" in shown_beside(stepper, stepper.securitycode)
    assert stepper.lookup_button.disabled


def test_a_challenge_card_walks_all_six_steps_and_moves_on_by_itself(stepper):
    stepper.card.value = "4900490000000147"
    stepper.lookup_button.click()
    assert stepper.step_states()["METHOD"] == "skipped" and not stepper.query_button.disabled
    stepper.query_button.click()
    assert stepper.step_states()["ACS"] == "current"
    assert "<iframe" in stepper.acs_view.value and stepper.flow.start_url in stepper.acs_view.value
    assert "creq, threeDSSessionData" in highlighted(stepper.diagram.value)
    stepper.complete_challenge("Y")
    assert stepper.step_states() == dict.fromkeys(
        ("THREEDLOOKUP", "THREEDQUERY", "ACS", "TERMURL", "AUTH"), "done"
    ) | {"METHOD": "skipped"}
    assert "Authenticated and authorised" in stepper.outcome_banner.value
    assert stepper.flow.auth_record["status"] == "Y"
    assert stepper.flow.query_record["threedpayload"] not in stepper.step_views["THREEDQUERY"].value


def test_a_frictionless_card_skips_the_challenge(stepper):
    stepper.card.value = "4900490000000006"
    stepper.lookup_button.click()
    stepper.query_button.click()
    states = stepper.step_states()
    assert (states["ACS"], states["TERMURL"], states["AUTH"]) == ("skipped", "skipped", "done")
    assert stepper.auth_button.disabled and stepper.acs_view.value == ""


def test_a_method_card_runs_the_method_first(stepper):
    stepper.card.value = "4900490000000063"  # challenge with method URL
    stepper.lookup_button.click()
    assert stepper.step_states()["METHOD"] == "current" and not stepper.method_button.disabled
    stepper.method_button.click()
    assert stepper.step_states()["METHOD"] == "done" and stepper.flow.method_result == "SUCCESS"


def test_a_failed_challenge_ends_not_authenticated(stepper):
    stepper.card.value = "4900490000000071"
    stepper.lookup_button.click()
    stepper.query_button.click()
    stepper.complete_challenge("N")
    assert stepper.step_states()["ACS"] == "not authenticated"
    assert "Not authenticated" in stepper.outcome_banner.value


def test_start_again_clears_everything(stepper):
    stepper.lookup_button.click()
    stepper.restart_button.click()
    assert stepper.step_states()["THREEDLOOKUP"] == "current" and stepper.outcome_banner.value == ""


def test_an_amex_card_gets_a_four_digit_code_and_its_challenge_passes(stepper):
    stepper.card.value = "340000000003128"  # Amex 2.1.0: challenge
    assert stepper.securitycode.value == "1234"
    stepper.lookup_button.click()
    stepper.query_button.click()
    stepper.complete_challenge("Y")
    assert (stepper.flow.auth_record["status"], stepper.flow.auth_record["eci"]) == ("Y", "05")
    stepper.restart_button.click()
    stepper.securitycode.value = "999"  # typed by the user: kept
    stepper.card.value = "4900490000000006"
    assert stepper.securitycode.value == "999"
