"""Forms generated from the spec tables, driven through `.value` and `.click()`."""

from __future__ import annotations

import json
from dataclasses import replace
from datetime import date

import httpx
import ipywidgets as widgets
import pytest

import gwkit
from gwkit.interface import FIELDS, FILTER_FIELDS, REQUEST_TYPES, UPDATABLE_FIELDS, Field, check_value
from gwkit.interface import types as t
from gwkit.interface.fields import BILLING_FIELDS
from gwkit.widgets import RequestForm, ResponseView, guarded
from gwkit.widgets.guard import RAISE_ENV
from support.widget_tree import all_html, descendants

ALL_VARIANTS = [(key, v.name) for key, rt in REQUEST_TYPES.items() for v in rt.variants]


class FakeGateway:
    """An httpx.MockTransport handler that keeps every request body and answers 0 Ok."""

    def __init__(self):
        self.bodies: list[dict] = []

    def __call__(self, request: httpx.Request) -> httpx.Response:
        body = json.loads(request.content)
        self.bodies.append(body)
        records = [
            {
                "requesttypedescription": "+".join(o["requesttypedescriptions"]),
                "errorcode": "0",
                "errormessage": "Ok",
                "transactionreference": "1-9-1",
            }
            for o in body["request"]
        ]
        return httpx.Response(
            200,
            json={
                "requestreference": body["request"][0]["requestreference"],
                "version": "1.00",
                "response": records,
                "secrand": "ab",
            },
        )


@pytest.fixture
def mocked():
    gateway = FakeGateway()
    client = gwkit.Client(
        "http://gateway.test",
        "user",
        "pw",
        sitereference="test_site1",
        currencyiso3a="GBP",
        transport=httpx.MockTransport(gateway),
    )
    yield client, gateway
    client.close()


# -- generated from the tables --------------------------------------------------------------------


@pytest.mark.parametrize("key, variant", ALL_VARIANTS)
def test_every_variant_gets_one_input_per_field(key, variant):
    spec = REQUEST_TYPES[key].variant(variant)
    form = RequestForm(key, variant)
    expected = {n for n in spec.allowed if n not in ("filter", "updates")}
    if "filter" in spec.allowed:
        expected |= {f"filter.{n}" for n in FILTER_FIELDS}
    if "updates" in spec.allowed:
        expected |= {f"updates.{n}" for n in UPDATABLE_FIELDS}
    assert set(form.fields) == expected
    assert form.request()["requesttypedescriptions"] == list(REQUEST_TYPES[key].types)


def test_required_fields_come_first_and_are_marked():
    form = RequestForm("AUTH", "card")
    required = REQUEST_TYPES["AUTH"].variant("card").required
    assert list(form.inputs)[: len(required)] == list(required)
    for name in required:
        assert "*" in form.inputs[name].label.value
    assert "*" not in form.inputs["orderreference"].label.value


def test_widget_kinds_follow_the_field_table():
    form = RequestForm("AUTH+SUBSCRIPTION", "card")
    assert isinstance(form.fields["subscriptionbegindate"], widgets.Text)  # ISO, not the browser's locale
    assert form.fields["subscriptionbegindate"].placeholder == "YYYY-MM-DD"
    assert isinstance(form.fields["securitycode"], widgets.Password)
    assert isinstance(form.fields["expirydate"], widgets.Text)
    assert form.fields["expirydate"].placeholder == "MM/YYYY"
    assert isinstance(form.fields["subscriptionunit"], widgets.Dropdown)
    assert form.inputs["orderreference"].hint.value.count("max 255 chars") == 1
    assert "12-19 chars" in form.inputs["pan"].hint.value


def test_per_variant_choices_override_the_field_choices():
    def options(form):
        return [o[1] if isinstance(o, tuple) else o for o in form.fields["accounttypedescription"].options]

    assert options(RequestForm("STORE")) == ["CARDSTORE"]
    assert options(RequestForm("THREEDQUERY")) == ["ECOM"]
    assert options(RequestForm("AUTH", "card")) == ["ECOM", "MOTO", "RECUR"]
    assert options(RequestForm("AUTH+SUBSCRIPTION")) == ["ECOM", "MOTO"]
    # an optional field with choices can be left out
    assert options(RequestForm("AUTH", "parent"))[0] == ""


def test_billing_fields_are_grouped_and_collapsed():
    form = RequestForm("STORE")
    groups = [c for c in form.children if isinstance(c, widgets.Accordion)]
    billing = [g for g in groups if g.get_title(0).startswith("Billing")]
    assert len(billing) == 1 and billing[0].selected_index is None
    rows = billing[0].children[0].children
    assert len(rows) == len(BILLING_FIELDS)
    assert {form.inputs[n].row for n in BILLING_FIELDS} == set(rows)


def test_a_field_added_to_the_tables_appears_with_no_widget_code(monkeypatch):
    monkeypatch.setitem(
        FIELDS,
        "giftmessage",
        Field("giftmessage", t.ALPHANUMERIC, 30, label="Gift message", help="Printed on the receipt."),
    )
    monkeypatch.setitem(
        FIELDS, "giftwrap", Field("giftwrap", t.ALPHA, 1, choices=("Y", "N"), label="Gift wrap")
    )
    auth = REQUEST_TYPES["AUTH"]
    card = auth.variant("card")
    new_card = replace(card, optional=card.optional + ("giftmessage", "giftwrap"))
    monkeypatch.setitem(
        REQUEST_TYPES,
        "AUTH",
        replace(auth, variants=tuple(new_card if v.name == "card" else v for v in auth.variants)),
    )

    form = RequestForm("AUTH", "card", values={"sitereference": "test_site1"})
    assert isinstance(form.fields["giftmessage"], widgets.Text)
    assert "Gift message" in form.inputs["giftmessage"].label.value
    assert "max 30 chars" in form.inputs["giftmessage"].hint.value
    assert isinstance(form.fields["giftwrap"], widgets.Dropdown)

    form.fields["giftmessage"].value = "x" * 31
    assert [p.field for p in form.problems] == ["giftmessage"]
    assert "at most 30 characters" in form.inputs["giftmessage"].message.value
    form.fields["giftmessage"].value = "Happy birthday"
    form.fields["giftwrap"].value = "Y"
    assert form.problems == []
    assert form.request()["giftmessage"] == "Happy birthday" and form.request()["giftwrap"] == "Y"


# -- defaults -------------------------------------------------------------------------------------


def test_defaults_make_a_valid_request_from_the_client_and_the_sandbox_clock(gw):
    form = RequestForm("AUTH", client=gw)
    request = form.request()
    assert request["sitereference"] == gw.sitereference
    assert request["currencyiso3a"] == "GBP"
    assert request["pan"] == "4111111111111111"
    assert request["securitycode"] == "123"
    assert request["baseamount"] == "1050"
    month, year = map(int, request["expirydate"].split("/"))
    assert (year, month) > (gw.sandbox.now().year, gw.sandbox.now().month)
    assert form.problems == [] and form.send_button.disabled is False


def test_subscription_defaults_are_valid_and_begin_in_the_future(gw):
    form = RequestForm("AUTH+SUBSCRIPTION", client=gw)
    assert form.problems == []
    begin = date.fromisoformat(form.request()["subscriptionbegindate"])
    assert begin > gw.sandbox.now().date()
    assert form.request()["subscriptiontype"] == "RECURRING"


def test_a_date_is_typed_as_iso_and_a_wrong_one_is_named_inline(gw):
    form = RequestForm("AUTH+SUBSCRIPTION", client=gw)
    form.fields["subscriptionbegindate"].value = "12/01/2030"  # a US-style date is refused, not guessed
    assert "YYYY-MM-DD" in form.inputs["subscriptionbegindate"].message.value
    assert [p.field for p in form.problems] == ["subscriptionbegindate"] and form.send_button.disabled

    form.fields["subscriptionbegindate"].value = "2030-12-01"
    assert form.inputs["subscriptionbegindate"].message.value == "" and form.problems == []
    assert form.request()["subscriptionbegindate"] == "2030-12-01"


def test_the_accountcheck_form_checks_a_card_without_taking_money(gw):
    form = RequestForm("ACCOUNTCHECK", client=gw)
    assert {"pan", "expirydate", "securitycode", "baseamount", "currencyiso3a"} <= set(form.fields)
    assert form.problems == [] and "baseamount" not in form.request()  # absent: no money taken
    form.fields["baseamount"].value = "0"
    assert form.problems == []  # 0 is an ACCOUNTCHECK's amount, as the table says
    assert "no money is taken" in form.inputs["baseamount"].spec.help  # the input shows the type's own rule
    form.send_button.click()
    record = form.last_response.record
    assert (record["requesttypedescription"], record.errorcode, record["baseamount"]) == (
        "ACCOUNTCHECK",
        0,
        "0",
    )
    assert record["settlestatus"] == "0"  # as the real gateway answers; nothing settles
    form.fields["pan"].value = "4000000000000812"
    form.send_button.click()
    assert form.last_response.record.errorcode == 70000


def test_a_form_without_client_cannot_send():
    form = RequestForm("AUTH")
    assert form.send_button.disabled
    with pytest.raises(RuntimeError, match="no client"):
        form.send_button.click()
    assert "no client" in form.status.value  # shown in the widget too


# -- validation as the user types -----------------------------------------------------------------


def test_inline_messages_are_the_spec_rules_and_gate_the_send_button(gw):
    form = RequestForm("AUTH", client=gw)
    form.fields["pan"].value = "4111111111111112"
    expected = check_value("pan", "4111111111111112")[0].rule
    assert expected in form.inputs["pan"].message.value
    assert form.send_button.disabled
    assert [p.field for p in form.problems] == ["pan"]

    form.fields["pan"].value = "4111111111111111"
    assert form.inputs["pan"].message.value == ""
    assert not form.send_button.disabled

    form.fields["baseamount"].value = "10.50"
    assert "digits 0-9 only" in form.inputs["baseamount"].message.value
    form.fields["baseamount"].value = ""
    assert "is required in AUTH (card) requests" in form.inputs["baseamount"].message.value
    form.fields["orderreference"].value = "o" * 256
    assert "at most 255 characters" in form.inputs["orderreference"].message.value
    assert {p.field for p in form.problems} == {"baseamount", "orderreference"}


def row_of(form: RequestForm, name: str) -> str:
    """What the user sees in a field's row: its input, its hint and its message under it."""
    row = form.inputs[name].row
    assert row in descendants(form) and form.fields[name] in descendants(row)
    return all_html(row)


def test_a_fields_problem_appears_beside_it_on_change_with_the_field_name(gw):
    form = RequestForm("AUTH", client=gw)
    form.fields["expirydate"].value = "2030-12"
    assert "<code>expirydate</code>: Date MM/YYYY: format MM/YYYY" in row_of(form, "expirydate")
    assert "expirydate" not in form.general.value and "Traceback" not in all_html(form)
    assert form.send_button.disabled
    form.fields["expirydate"].value = "12/2030"
    assert "gwkit-problem" not in row_of(form, "expirydate") and not form.send_button.disabled
    form.send_button.click()
    assert form.last_response.record.errorcode == 0


def test_a_press_racing_a_change_checks_everything_and_sends_nothing(gw, monkeypatch):
    form = RequestForm("AUTH", client=gw)
    sent = []
    monkeypatch.setattr(gw, "send", lambda request: sent.append(request))
    form.fields["baseamount"].value = "10.50"
    form.send_button.click()  # the press the browser sent before the button turned grey
    assert sent == [] and form.last_response is None
    assert "not sent: 1 problem(s) to fix first" in form.status.value
    assert "<code>baseamount</code>: Numeric: digits 0-9 only" in row_of(form, "baseamount")
    assert "Traceback" not in all_html(form)


def test_an_expired_card_is_refused_by_the_sandbox_clock_before_sending(gw):
    today = gw.sandbox.now().date()
    last_month = f"{today.month - 1:02d}/{today.year}" if today.month > 1 else f"12/{today.year - 1}"
    form = RequestForm("AUTH", client=gw)
    form.fields["expirydate"].value = last_month
    message = form.inputs["expirydate"].message.value
    assert f"the card expired at the end of {last_month}" in message
    assert f"the sandbox&#x27;s date is {today.isoformat()}" in message  # html-escaped in the widget
    assert form.send_button.disabled
    form.fields["expirydate"].value = f"{today.month:02d}/{today.year}"  # good through this month
    assert form.inputs["expirydate"].message.value == "" and not form.send_button.disabled


def test_the_expiry_check_follows_the_sandbox_clock_not_the_wall_clock(gw):
    now = gw.sandbox.now().date()
    this_month = f"{now.month:02d}/{now.year}"
    form = RequestForm("AUTH", client=gw)
    form.fields["expirydate"].value = this_month
    assert not form.send_button.disabled
    gw.sandbox.advance(by="P1M")
    form.fields["expirydate"].value = this_month  # re-checked as the user edits: the card has expired
    form.fields["baseamount"].value = "1051"
    assert "the card expired" in form.inputs["expirydate"].message.value
    assert form.send_button.disabled


def test_a_test_card_says_what_it_will_do_and_is_not_a_problem(gw):
    form = RequestForm("AUTH", client=gw)
    form.fields["pan"].value = "4000 0000 0000 0812"
    note = form.inputs["pan"].note.value
    assert "VISA, a test card of the real test environment: The bank declines it (70000)." in note
    assert "4000000000000812" not in note
    form.fields["pan"].value = "4111110000000211"
    assert "3-D Secure v1 enrolled (Y)" in form.inputs["pan"].note.value
    assert not form.send_button.disabled
    form.fields["pan"].value = "340000000000017"
    assert (
        "AMEX, a gwkit sandbox test card (a real test site may answer otherwise)"
        in form.inputs["pan"].note.value
    )
    form.fields["pan"].value = "5555555555554444"
    assert form.inputs["pan"].note.value == ""


def test_messages_mask_sensitive_values(gw):
    form = RequestForm("AUTH", client=gw)
    form.fields["securitycode"].value = "12a"
    assert "digits 0-9 only" in form.inputs["securitycode"].message.value
    problem = next(p for p in form.problems if p.field == "securitycode")
    assert problem.value == "[redacted]"


@pytest.mark.parametrize(
    "currency, shown, small",
    [
        ("GBP", "= 10.50 GBP", "= 0.12 GBP"),
        ("JPY", "= 1050 JPY", "= 12 JPY"),
        ("BHD", "= 1.050 BHD", "= 0.012 BHD"),
        ("KWD", "= 1.050 KWD", "= 0.012 KWD"),
    ],
)
def test_amounts_show_the_major_unit_value_beside_them(gw, currency, shown, small):
    form = RequestForm("AUTH", client=gw)
    form.fields["currencyiso3a"].value = currency
    assert shown in form.inputs["baseamount"].hint.value
    form.fields["baseamount"].value = "12"
    assert small in form.inputs["baseamount"].hint.value
    form.fields["baseamount"].value = "12x"
    assert "gwkit-major'></b>" in form.inputs["baseamount"].hint.value


# -- sending --------------------------------------------------------------------------------------


def test_send_button_sends_exactly_the_form_request(mocked):
    client, gateway = mocked
    form = RequestForm("AUTH", client=client)
    form.fields["baseamount"].value = "2599"
    form.fields["orderreference"].value = "order-42"
    form.send_button.click()
    assert len(gateway.bodies) == 1
    sent = dict(gateway.bodies[0]["request"][0])
    assert sent.pop("requestreference")
    assert sent == form.request()
    assert sent["baseamount"] == "2599" and sent["orderreference"] == "order-42"
    assert form.last_response.record["transactionreference"] == "1-9-1"
    view = form.response_box.children[0]
    assert isinstance(view, ResponseView) and "gwkit-ok" in view.summary.value


def test_send_to_the_sandbox_shows_a_decline_with_its_meaning(gw):
    form = RequestForm("AUTH", client=gw)
    form.fields["baseamount"].value = "70000"
    form.send_button.click()
    assert form.last_response.record.errorcode == 70000
    view = form.response_box.children[0]
    assert "gwkit-record-error" in view.table.value
    assert "bank declined" in view.headline.value
    assert "gwkit-error" in form.status.value


def test_transactionquery_form_builds_the_filter_shape(gw):
    paid = [
        gw.auth(
            accounttypedescription="ECOM",
            baseamount=amount,
            pan="4111111111111111",
            expirydate=f"12/{gw.sandbox.now().year + 2}",
            securitycode="123",
        )
        for amount in (1050, 70000)
    ]
    references = [r.record["transactionreference"] for r in paid]
    form = RequestForm("TRANSACTIONQUERY", client=gw)
    assert form.request()["filter"] == {"sitereference": [{"value": gw.sitereference}]}
    form.fields["filter.transactionreference"].value = ", ".join(references)
    form.fields["filter.errorcode"].value = "0, 70000"
    assert form.request()["filter"]["transactionreference"] == [{"value": r} for r in references]
    form.send_button.click()
    found = {r["transactionreference"] for r in form.last_response.query_records}
    assert found == set(references)


def test_transactionquery_multiple_choice_filter(mocked):
    client, gateway = mocked
    form = RequestForm("TRANSACTIONQUERY", client=client)
    form.fields["filter.settlestatus"].value = ("0", "100")
    form.fields["filter.startdate"].value = "2026-01-01"  # typed as ISO
    form.send_button.click()
    sent_filter = gateway.bodies[0]["request"][0]["filter"]
    assert sent_filter["settlestatus"] == [{"value": "0"}, {"value": "100"}]
    assert sent_filter["startdate"] == [{"value": "2026-01-01"}]


def test_transactionupdate_form_disables_a_stored_card(gw):
    stored = gw.store(
        accounttypedescription="CARDSTORE",
        pan="4111111111111111",
        expirydate=f"12/{gw.sandbox.now().year + 2}",
    )
    reference = stored.record["transactionreference"]
    form = RequestForm("TRANSACTIONUPDATE", client=gw)
    form.fields["filter.transactionreference"].value = reference
    form.fields["updates.transactionactive"].value = "0"
    assert form.request()["updates"] == {"transactionactive": "0"}
    form.send_button.click()
    assert form.last_response.record.errorcode == 0
    after = gw.transaction_query(transactionreference=reference)
    assert after.query_records[0]["transactionactive"] == "0"


def test_a_transport_failure_is_shown_in_the_form_not_raised():
    def refuse(request):
        raise httpx.ConnectError("connection refused", request=request)

    client = gwkit.Client(
        "http://gateway.test",
        "user",
        "pw",
        sitereference="test_site1",
        currencyiso3a="GBP",
        transport=httpx.MockTransport(refuse),
        retries=0,
    )
    form = RequestForm("AUTH", client=client)
    form.send_button.click()
    assert "could not connect" in form.status.value
    assert (
        "<b>No connection could be made, so nothing was sent</b>" in form.status.value
    )  # words, not a class
    assert form.last_response is None
    assert "4111111111111111" not in form.status.value


def test_set_values_prefills_and_rejects_unknown_fields():
    form = RequestForm("AUTH", "parent", values={"parenttransactionreference": "1-2-3"})
    assert form.request()["parenttransactionreference"] == "1-2-3"
    with pytest.raises(KeyError, match="no input for pan"):
        form.set_values(pan="4111111111111111")
    with pytest.raises(KeyError, match="choose from"):
        RequestForm("PAYOUT")


# -- guarded callbacks ----------------------------------------------------------------------------


def test_guarded_shows_the_error_in_the_widget_and_reraises_under_tests():
    shown = widgets.HTML()
    button = widgets.Button()
    button.on_click(guarded(lambda _b: 1 / 0, shown, context="dividing"))
    with pytest.raises(ZeroDivisionError):
        button.click()
    assert "ZeroDivisionError" in shown.value and "while dividing" in shown.value
    assert "<details>" in shown.value  # the traceback, one click away


def test_guarded_keeps_the_widget_alive_outside_tests(monkeypatch):
    monkeypatch.delenv(RAISE_ENV)
    output = widgets.Output()
    card = "4111111111111111"
    callback = guarded(lambda: (_ for _ in ()).throw(ValueError(f"bad card {card}")), output)
    assert callback() is None
    html = output.outputs[0]["data"]["text/html"]
    assert "ValueError" in html and "411111######1111" in html and card not in html


@pytest.mark.parametrize(
    "style, marker",
    [
        ("gwkit", "gw.auth("),
        ("httpx", "httpx.post("),
        ("curl", "curl -sS"),
        ("securetrading", "securetrading.Api("),
    ],
)
def test_copy_as_code_shows_the_request_the_form_would_send_masked(gw, style, marker):
    form = RequestForm("AUTH", client=gw)
    form.set_values(
        accounttypedescription="ECOM",
        baseamount="1050",
        pan="4111111111111111",
        expirydate="12/2030",
        securitycode="123",
        orderreference="copy-me",
    )
    form.code_style.value = style
    form.code_button.click()
    code = form.code.value
    assert marker in code and "copy-me" in code and gw.base_url in code
    assert "4111111111111111" not in code and "411111######1111" in code and '"123"' not in code
