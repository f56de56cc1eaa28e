"""The response view: masked records, errors explained, raw JSON, follow-up actions that work."""

from __future__ import annotations

import html
import json

import pytest

from gwkit import sandbox as sandbox_module
from gwkit.config import Target
from gwkit.connect import Connection
from gwkit.interface.codes import ERROR_CODES
from gwkit.journal import Journal
from gwkit.widgets import RequestForm, ResponseView, follow_ups
from gwkit.widgets.actions import AUTH_AFTER, QUERY, USE_CARD
from gwkit.widgets.form import form_opener

PAN = "4111111111111111"


@pytest.fixture(scope="module")
def sandbox(tmp_path_factory):
    handle = sandbox_module.start(tmp_path_factory.mktemp("view") / "sandbox.db")
    yield handle
    handle.stop()


@pytest.fixture
def gw(sandbox, tmp_path):
    target = Target("sandbox", sandbox.base_url, sandbox.username, sandbox.sitereference, "GBP", "test")
    with Connection(
        target, sandbox.password, sandbox=sandbox, journal=Journal(tmp_path / "j.db")
    ) as connection:
        yield connection


def expiry(gw) -> str:
    return f"12/{gw.sandbox.now().year + 2}"


def pay(gw, amount=1050, pan=PAN):
    return gw.auth(
        accounttypedescription="ECOM", baseamount=amount, pan=pan, expirydate=expiry(gw), securitycode="123"
    )


def envelope(*records):
    return {"requestreference": "Aabc12345", "version": "1.00", "response": list(records), "secrand": "x"}


def test_a_successful_auth_reads_as_a_masked_table(gw):
    view = ResponseView(pay(gw), client=gw)
    assert "gwkit-ok" in view.summary.value and "Success" in view.summary.value
    assert "gwkit-record-ok" in view.table.value
    assert "411111######1111" in view.table.value
    assert "£10.50 · 1050 in base units" in view.table.value
    assert "0 · pending settlement" in view.table.value  # codes in words, from the vocabulary
    assert "Transaction reference" in view.table.value  # labels from the field table


@pytest.mark.parametrize("code", sorted(c for c in ERROR_CODES if c != 0))
def test_every_known_error_code_is_explained(code):
    meaning = ERROR_CODES[code]
    view = ResponseView(
        envelope({"requesttypedescription": "AUTH", "errorcode": str(code), "errormessage": meaning.message})
    )
    assert "gwkit-error" in view.summary.value
    assert "gwkit-record-error" in view.table.value
    # what the code means and what to do, said once: in the headline, not again in the table
    assert html.escape(meaning.meaning) in view.headline.value
    assert html.escape(meaning.action) in view.headline.value
    assert html.escape(meaning.action) not in view.table.value
    assert f"{code} · {html.escape(meaning.message)}" in view.table.value


def test_an_unknown_code_says_to_investigate():
    view = ResponseView(
        envelope({"requesttypedescription": "AUTH", "errorcode": "12345", "errormessage": "?"})
    )
    assert "Needs further investigation" in view.headline.value


def test_errorcode_zero_but_cancelled_is_an_error():
    view = ResponseView(
        envelope(
            {"requesttypedescription": "AUTH", "errorcode": "0", "errormessage": "Ok", "settlestatus": "3"}
        )
    )
    assert "gwkit-record-error" in view.table.value and "cancelled: no money moves" in view.table.value
    assert "Cancelled" in view.headline.value


def test_sandbox_decline_and_bank_error_are_highlighted(gw):
    declined = ResponseView(pay(gw, 70000), client=gw)
    assert "70000 · Decline" in declined.table.value and "gwkit-record-error" in declined.table.value
    bank = ResponseView(pay(gw, 60010), client=gw)
    assert "60010 · Bank System Error" in bank.table.value
    assert html.escape(ERROR_CODES[60010].meaning) in bank.headline.value


def test_raw_json_is_one_click_away_and_masked():
    raw = envelope(
        {
            "requesttypedescription": "AUTH",
            "errorcode": "0",
            "errormessage": "Ok",
            "pan": PAN,
            "securitycode": "123",
            "orderreference": f"card {PAN}",
        }
    )
    view = ResponseView(raw)
    assert view.raw.selected_index is None  # collapsed
    assert view.raw.get_title(0) == "Raw JSON response (masked)"
    shown = view.raw.children[0].value
    assert PAN not in shown and PAN not in view.table.value
    assert "411111######1111" in shown
    assert "&quot;securitycode&quot;: &quot;[redacted]&quot;" in shown
    view.raw.selected_index = 0  # the click
    assert json.loads(html.unescape(shown.split(">", 1)[1].rsplit("</pre>", 1)[0]))["secrand"] == "x"


def test_the_request_sent_is_shown_masked_too(gw):
    view = ResponseView(pay(gw), client=gw)
    titles = [view.raw.get_title(i) for i in range(len(view.raw.children))]
    assert titles == ["Raw JSON response (masked)", "Request sent (masked)"]
    request = view.raw.children[1].value
    assert PAN not in request and "411111######1111" in request and "[redacted]" in request


def test_query_this_transaction_sends_the_query_and_shows_it(gw):
    paid = pay(gw)
    reference = paid.record["transactionreference"]
    view = ResponseView(paid, client=gw)
    [button] = view.action_buttons
    assert button.description == f"Query this transaction ({reference})"
    button.click()
    [shown] = view.follow_up.children
    assert isinstance(shown, ResponseView)
    assert "gwkit-query-records" in shown.table.value and reference in shown.table.value
    assert gw.exchanges[-1].request_types == ("TRANSACTIONQUERY",)


def test_use_this_stored_card_opens_a_prefilled_auth_that_works(gw):
    stored = gw.store(accounttypedescription="CARDSTORE", pan=PAN, expirydate=expiry(gw))
    reference = stored.record["transactionreference"]
    view = ResponseView(stored, client=gw, open_form=form_opener(gw))
    labels = [b.description for b in view.action_buttons]
    assert labels == [f"Query this stored card ({reference})", f"Use this stored card ({reference})"]
    view.action_buttons[1].click()
    [form] = view.follow_up.children
    assert isinstance(form, RequestForm)
    assert (form.request_type.key, form.variant.name) == ("AUTH", "parent")
    assert form.request()["parenttransactionreference"] == reference
    assert form.problems == []
    form.send_button.click()
    record = form.last_response.record
    assert record.errorcode == 0 and record["maskedpan"] == "411111######1111"


def test_follow_ups_as_data():
    assert follow_ups({"errorcode": "0"}) == []
    [query] = follow_ups(
        {"requesttypedescription": "AUTH", "errorcode": "70000", "transactionreference": "1-2-3"}
    )
    assert query.kind == QUERY and query.reference == "1-2-3"
    kinds = [
        a.kind
        for a in follow_ups(
            {"requesttypedescription": "STORE", "errorcode": "0", "transactionreference": "1-2-4"}
        )
    ]
    assert kinds == [QUERY, USE_CARD]
    disabled = follow_ups(
        {
            "requesttypedescription": "STORE",
            "errorcode": "0",
            "transactionreference": "1-2-4",
            "transactionactive": "0",
        }
    )
    assert [a.kind for a in disabled] == [QUERY]
    for enrolled, expected in (("N", [QUERY, AUTH_AFTER]), ("U", [QUERY, AUTH_AFTER]), ("Y", [QUERY])):
        actions = follow_ups(
            {
                "requesttypedescription": "THREEDQUERY",
                "errorcode": "0",
                "transactionreference": "1-2-5",
                "enrolled": enrolled,
            }
        )
        assert [a.kind for a in actions] == expected
    subscription = follow_ups(
        {"requesttypedescription": "SUBSCRIPTION", "errorcode": "0", "transactionreference": "1-2-6"}
    )
    assert subscription[0].label == "Query this subscription (1-2-6)"


def test_without_a_client_the_actions_are_disabled():
    view = ResponseView(
        envelope(
            {
                "requesttypedescription": "AUTH",
                "errorcode": "0",
                "errormessage": "Ok",
                "transactionreference": "1-2-3",
            }
        )
    )
    assert [b.disabled for b in view.action_buttons] == [True]
    with pytest.raises(RuntimeError, match="sends a query: create the view with client="):
        view.run_action(view.actions[0])


def test_an_exchange_and_a_journal_entry_show_the_same_records(gw):
    paid = pay(gw, 70000)
    from_exchange = ResponseView(gw.exchanges[-1], client=gw)
    from_journal = ResponseView(gw.journal.entries(limit=1)[0], client=gw)
    direct = ResponseView(paid, client=gw)
    assert from_exchange.table.value == direct.table.value == from_journal.table.value


def test_a_failed_exchange_says_there_was_no_answer(gw):
    class Failed:
        request = {"request": [{"requesttypedescriptions": ["AUTH"]}]}
        response = None
        error = "ConnectError: could not connect to http://gateway.test/json/"
        elapsed = 0.01

    view = ResponseView(Failed())
    assert "gwkit-failed" in view.summary.value and "could not connect" in view.summary.value
    assert view.action_buttons == []


def test_a_query_with_no_results_says_so():
    view = ResponseView(
        envelope(
            {
                "requesttypedescription": "TRANSACTIONQUERY",
                "errorcode": "0",
                "errormessage": "Ok",
                "records": [],
            }
        )
    )
    assert "found no records" in view.table.value


def test_a_large_query_is_cut_with_a_note():
    records = [
        {"transactionreference": f"1-2-{i}", "baseamount": "100", "currencyiso3a": "JPY"} for i in range(60)
    ]
    view = ResponseView(
        envelope(
            {
                "requesttypedescription": "TRANSACTIONQUERY",
                "errorcode": "0",
                "errormessage": "Ok",
                "records": records,
            }
        )
    )
    assert "60 transaction record(s) found" in view.table.value
    assert "10 more record(s) not shown" in view.table.value
    assert "<td class='gwkit-num'>¥100</td>" in view.table.value  # the one table style: money right


def test_anything_else_is_refused_clearly():
    with pytest.raises(TypeError, match="ResponseView shows"):
        ResponseView(42)


def test_a_combined_auth_subscription_shows_both_records_side_by_side():
    view = ResponseView(
        envelope(
            {
                "requesttypedescription": "AUTH",
                "errorcode": "0",
                "errormessage": "Ok",
                "transactionreference": "1-2-1",
                "baseamount": "999",
                "currencyiso3a": "GBP",
                "settlestatus": "0",
            },
            {
                "requesttypedescription": "SUBSCRIPTION",
                "errorcode": "0",
                "errormessage": "Ok",
                "transactionreference": "1-2-2",
                "transactionactive": "2",
                "subscriptionnumber": "2",
            },
        )
    )
    assert view.table.value.count("gwkit-record-ok") == 2
    assert "&#10004; AUTH 0 · Ok" in view.table.value and "&#10004; SUBSCRIPTION 0 · Ok" in view.table.value
    assert (
        "2 · pending (starts when the AUTH settles)" in view.table.value
    )  # a subscription's transactionactive
    assert [b.description for b in view.action_buttons] == [
        "Query this transaction (1-2-1)",
        "Query this subscription (1-2-2)",
    ]
    assert "subscriptionnumber" in view.table.value  # the other fields, in the collapsed part
    assert "gwkit-more-fields" in view.table.value


def test_the_view_leads_with_one_line_in_plain_words(gw):
    view = ResponseView(pay(gw, amount=150000), client=gw)
    assert view.children[0] is view.headline
    assert "Authorised: £1,500.00 from 411111######1111" in view.headline.value
    declined = ResponseView(pay(gw, amount=70000), client=gw)
    assert "gwkit-error" in declined.headline.value
    assert (
        "What to do: Ask the customer for another card or to contact their bank." in declined.headline.value
    )


def test_paying_with_a_disabled_stored_card_says_the_card_is_disabled(gw):
    stored = gw.store(accounttypedescription="CARDSTORE", pan=PAN, expirydate=expiry(gw))
    reference = stored.record["transactionreference"]
    gw.transaction_update(
        filter={"transactionreference": [{"value": reference}]}, updates={"transactionactive": "0"}
    )
    refused = gw.auth(accounttypedescription="ECOM", baseamount=1050, parenttransactionreference=reference)
    assert refused.record["errorcode"] == "30000"
    view = ResponseView(refused, client=gw)
    assert (
        f"The stored card {reference} (411111######1111) is disabled (transactionactive 0)"
        in view.headline.value
    )
    assert "setting transactionactive to 1" in view.headline.value
    assert "Correct the fields" not in view.headline.value  # the cause's advice, not the generic one
    assert view.headline.value.count("disabled") == 1  # said once


def test_an_unknown_parent_is_said_plainly(gw):
    refused = gw.auth(accounttypedescription="ECOM", baseamount=1050, parenttransactionreference="9-9-999999")
    view = ResponseView(refused, client=gw)
    assert "No transaction 9-9-999999 exists on this site." in view.headline.value
