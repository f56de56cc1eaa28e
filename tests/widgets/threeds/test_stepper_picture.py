"""The stepper draws who talks to whom, with the current step highlighted, and shows full labels."""

from __future__ import annotations

import re

from gwkit.interface import testcards
from gwkit.widgets.threeds_stepper import MESSAGES, ThreeDSecureStepper, card_choices, sequence_svg


def highlighted(svg: str) -> list[str]:
    return re.findall(r"font-weight='bold' style='[^']*'>([^<]+)</text>", svg.split("</text>", 4)[-1])


def test_the_picture_highlights_the_messages_of_the_current_step_only():
    svg = sequence_svg({"THREEDQUERY": "done", "ACS": "current", "TERMURL": "waiting", "AUTH": "waiting"})
    assert svg.count("<rect") == 2 and "PaReq, TermUrl, MD" in svg
    assert [m for m in MESSAGES if m[0] == "ACS"] and highlighted(svg) == [
        "page that posts to acsurl",
        "PaReq, TermUrl, MD",
    ]
    skipped = sequence_svg({"THREEDQUERY": "done", "ACS": "skipped", "TERMURL": "skipped", "AUTH": "current"})
    assert skipped.count("stroke-dasharray='5,4'") == 4  # the redirect and the way back are not needed
    assert highlighted(skipped)[0].startswith("AUTH")


def test_the_3ds_cards_come_first_in_the_list():
    enrolment = {c.pan: c.enrolled for c in testcards.test_cards().values()}
    order = [enrolment[pan] for _, pan in card_choices()]
    assert order[0] == "Y" and order == sorted(order, key=lambda e: {"Y": 0, "N": 1, "U": 2}.get(e, 3))


def test_the_stepper_moves_its_highlight_as_the_payment_moves(client, receiver):
    stepper = ThreeDSecureStepper(client, receiver=receiver)
    assert "THREEDQUERY (card, amount, termurl)" in highlighted(stepper.diagram.value)
    stepper.send_query()
    assert "PaReq, TermUrl, MD" in highlighted(stepper.diagram.value)
    assert stepper.securitycode.style.description_width == "initial"  # "Security code", not "Security c..."
    assert stepper.auto_auth.layout.width == "auto"  # the whole label, not "as soon as the customer..."


def test_the_v1_stepper_offers_no_emv_3ds_card():
    cards = testcards.test_cards()
    offered = [cards[pan] for _, pan in card_choices()]
    assert offered and not any(c.threedversion.startswith("2.") for c in offered)
    assert "4900490000000147" not in {c.pan for c in offered}  # an EMV 3-D Secure challenge card
