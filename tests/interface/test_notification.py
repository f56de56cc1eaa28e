"""`responsesitesecurity`: the worked example of docs/notifications.md, and what the construction
leaves out, keeps empty and is sensitive to."""

from __future__ import annotations

import hashlib

from hypothesis import given
from hypothesis import strategies as st

from gwkit.interface.notification import signature, signature_ok, signed_text

EXAMPLE = {
    "notificationreference": "nt4f1c2d",
    "transactionreference": "75-9-1",
    "errorcode": "0",
    "baseamount": "1050",
    "currencyiso3a": "GBP",
    "parenttransactionreference": "",
}
EXAMPLE_SIGNATURE = "b4be00e37ea1e7aa76bcfe475abe28067485a4cce4b12802f63d12fb3399b0f9"


def test_the_worked_example_of_the_docs():
    # names in ASCII order: baseamount, currencyiso3a, errorcode, parenttransactionreference,
    # transactionreference; the empty parent signed as empty; then the password
    assert signed_text(EXAMPLE, "mypassword") == "1050GBP075-9-1mypassword"
    assert signature(EXAMPLE, "mypassword") == EXAMPLE_SIGNATURE
    assert hashlib.sha256(b"1050GBP075-9-1mypassword").hexdigest() == EXAMPLE_SIGNATURE


def test_the_reference_and_the_signature_itself_are_not_signed():
    sent = {**EXAMPLE, "notificationreference": "another", "responsesitesecurity": "x"}
    assert signature(sent, "mypassword") == EXAMPLE_SIGNATURE


def test_names_are_ordered_by_ascii_not_as_sent():
    assert signature(dict(reversed(list(EXAMPLE.items()))), "mypassword") == EXAMPLE_SIGNATURE
    assert signed_text({"b": "1", "B": "2", "a": "3"}, "") == "231"  # upper case sorts first in ASCII


def test_a_check_passes_only_with_the_fields_and_password_it_was_made_with():
    sent = {**EXAMPLE, "responsesitesecurity": EXAMPLE_SIGNATURE}
    assert signature_ok(sent, "mypassword")
    assert signature_ok({**sent, "responsesitesecurity": EXAMPLE_SIGNATURE.upper()}, "mypassword")
    assert not signature_ok(sent, "other")
    assert not signature_ok({**sent, "baseamount": "1051"}, "mypassword")
    assert not signature_ok(EXAMPLE, "mypassword")  # not signed at all


@given(st.dictionaries(st.from_regex(r"[a-z]{1,12}", fullmatch=True), st.text(max_size=20), max_size=8))
def test_any_changed_value_changes_the_signature(fields):
    for name in fields:
        if name in ("notificationreference", "responsesitesecurity"):
            continue
        assert signature({**fields, name: fields[name] + "x"}, "pw") != signature(fields, "pw")
