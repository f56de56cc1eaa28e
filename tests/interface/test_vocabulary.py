"""Every code the kit shows has its words, from one vocabulary; advice comes from the cause."""

from __future__ import annotations

import re

import pytest

from gwkit.interface.codes import ERROR_CODES, SETTLE_STATUSES
from gwkit.interface.outcome import in_words
from gwkit.interface.vocabulary import (
    CAUSES,
    SETTLESTATUS_WORDS,
    VALUE_WORDS,
    WORDED_FIELDS,
    applies,
    cause_of,
    labelled,
    settle_status_label,
    words_for,
)

AUTH_DECLINED = {
    "requesttypedescription": "AUTH",
    "errorcode": "70000",
    "settlestatus": "3",
    "settleduedate": "2027-01-02",
    "authcode": "DECLINED",
    "errordata": [],
}


def test_every_settle_status_of_the_gateway_has_its_words():
    assert set(SETTLESTATUS_WORDS) == set(SETTLE_STATUSES)


@pytest.mark.parametrize(
    "field, value, record, shown",
    [
        ("settlestatus", "0", None, "0 · pending settlement"),
        ("settlestatus", 100, None, "100 · settled"),
        ("settlestatus", "3", None, "3 · cancelled"),
        ("errorcode", "70000", None, "70000 · Decline"),
        ("errorcode", 0, None, "0 · Ok"),
        ("enrolled", "U", None, "U · enrolment unknown"),
        ("status", "N", None, "N · not authenticated"),
        ("eci", "05", None, "05 · authenticated (Visa)"),
        ("acquirerresponsecode", "05", None, "05 · declined by the bank"),
        ("securityresponsesecuritycode", "2", None, "2 · matched"),
        ("securityresponsepostcode", "4", None, "4 · not matched"),
        ("transactionactive", "0", {"requesttypedescription": "STORE"}, "0 · disabled"),
        ("transactionactive", "0", {"requesttypedescription": "SUBSCRIPTION"}, "0 · suspended"),
        (
            "transactionactive",
            "2",
            {"requesttypedescription": "SUBSCRIPTION"},
            "2 · pending (starts when the AUTH settles)",
        ),
    ],
)
def test_a_code_is_shown_with_its_words_beside_it(field, value, record, shown):
    assert labelled(field, value, record) == shown


def test_a_value_without_words_is_shown_as_it_came_never_guessed():
    assert labelled("settlestatus", "7") == "7"
    assert labelled("errorcode", "12345") == "12345"
    assert labelled("orderreference", "gym") == "gym"
    assert labelled("settlestatus", None) == "" and labelled("settlestatus", float("nan")) == ""
    assert words_for("eci", "99") is None
    assert settle_status_label("7") == "7 · not documented" and settle_status_label(None) == "unknown"


def test_every_worded_field_has_a_vocabulary_and_every_error_code_its_message():
    assert set(VALUE_WORDS) < set(WORDED_FIELDS)
    for code, entry in ERROR_CODES.items():
        assert words_for("errorcode", str(code)) == entry.message


def test_a_decline_has_no_settle_date_nor_authcode_to_show_but_keeps_its_settlestatus():
    assert not applies("settleduedate", AUTH_DECLINED)
    assert not applies("authcode", AUTH_DECLINED)
    assert applies("settlestatus", AUTH_DECLINED)
    assert not applies("errordata", AUTH_DECLINED)  # empty
    authorised = {**AUTH_DECLINED, "errorcode": "0", "settlestatus": "0", "authcode": "TEST56"}
    assert applies("settleduedate", authorised) and applies("authcode", authorised)
    assert not applies("absent", authorised)


def test_a_used_or_expired_token_gets_token_advice_not_the_generic_one():
    refused = {"requesttypedescription": "AUTH", "errorcode": "30000", "errordata": ["cachetoken"]}
    assert cause_of(refused, token_state="used") is CAUSES["token used"]
    assert cause_of(refused, token_state="expired") is CAUSES["token expired"]
    words = in_words(refused)
    assert "tokenise the card again" in words and "Correct the fields" not in words
    assert words.count("What to do") == 1


def test_a_disabled_stored_card_is_the_cause_when_the_parent_says_so():
    refused = {"errorcode": "30000", "errordata": ["parenttransactionreference"]}
    card = {"requesttypedescription": "STORE", "transactionactive": "0", "maskedpan": "411111######1111"}
    cause = cause_of(refused, parent=card, parent_reference="1-2-3")
    assert cause is not None and cause.name == "stored card disabled"
    assert "The stored card 1-2-3 (411111######1111) is disabled" in cause.words
    assert cause_of(refused, parent={**card, "transactionactive": "1"}) is None  # enabled: not the cause
    missing = cause_of(refused, parent_found=False, parent_reference="9-9-9")
    assert missing is not None and "No transaction 9-9-9 exists" in missing.words


def test_a_luhn_failure_is_named_only_when_the_number_fails_the_check():
    refused = {"errorcode": "30000", "errordata": ["pan"]}
    assert cause_of(refused, pan="4111111111111112") is CAUSES["luhn failure"]
    assert cause_of(refused, pan="4111111111111111") is None
    assert cause_of(refused) is None
    assert cause_of({"errorcode": "70000"}) is None


# -- a request without an answer, in words (never the exception's class name) ----------------------


def _transport_error_kinds() -> list[type[BaseException]]:
    import gwkit.errors as errors

    found, todo = [], [errors.TransportError]
    while todo:
        kind = todo.pop()
        found.append(kind)
        todo += kind.__subclasses__()
    return found


@pytest.mark.parametrize("kind", _transport_error_kinds(), ids=lambda kind: kind.__name__)
def test_every_kind_of_request_without_an_answer_has_its_words(kind):
    from gwkit.interface.vocabulary import NO_ANSWER, no_answer_words

    error = kind("unexpected HTTP status 502 from http://127.0.0.1:1/json/")
    words = no_answer_words(error)
    assert words != NO_ANSWER and kind.__name__ not in words
    assert no_answer_words(f"{kind.__name__}: {error}") == words  # as an exchange and the journal keep it


def test_an_http_status_is_named_and_a_request_never_sent_says_so():
    from gwkit.errors import HTTPStatusError, RequestTimeoutError
    from gwkit.interface.vocabulary import NO_ANSWER, no_answer_words

    assert no_answer_words(HTTPStatusError("unexpected HTTP status 503 from x")).startswith("HTTP 503 ")
    never_sent = RequestTimeoutError("no connection to x in time; nothing was sent")
    never_sent.sent = False
    assert no_answer_words(never_sent) == "no connection could be made, so nothing was sent"
    assert no_answer_words(KeyError("x")) == no_answer_words("something else") == NO_ANSWER


def test_every_test_card_s_note_speaks_to_a_newcomer_without_test_data_hints():
    """The notes show beside a card number in the forms and the steppers: what the card does, not
    where its behaviour was seen ("threedversion 1.0.2 in captured answers")."""
    from gwkit.interface import testcards

    hints = re.compile(r"captured|official client|threedversion|acquirerresponsecode|wiremock", re.I)
    assert [card.pan for card in testcards.test_cards().values() if hints.search(card.notes)] == []
