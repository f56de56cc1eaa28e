"""The request explorer: type and variant pickers, the form, the response, the session history."""

from __future__ import annotations

import pytest

from gwkit.interface import REQUEST_TYPES
from gwkit.widgets import RequestExplorer, RequestForm, ResponseView


@pytest.fixture
def explorer(gw):
    panel = RequestExplorer(gw)
    yield panel
    panel.close()


def test_the_pickers_offer_every_request_type_and_its_variants(explorer):
    assert [value for _label, value in explorer.type_picker.options] == list(REQUEST_TYPES)
    assert (explorer.form.request_type.key, explorer.form.variant.name) == ("AUTH", "card")
    assert [v for _l, v in explorer.variant_picker.options] == [
        v.name for v in REQUEST_TYPES["AUTH"].variants
    ]

    explorer.type_picker.value = "STORE"
    assert explorer.form.request_type.key == "STORE"
    assert [v for _l, v in explorer.variant_picker.options] == ["card"]
    assert explorer.form_box.children == (explorer.form,)

    explorer.type_picker.value = "AUTH"
    explorer.variant_picker.value = "parent"
    assert explorer.form.variant.name == "parent"
    assert "parenttransactionreference" in explorer.form.fields
    assert "pan" not in explorer.form.fields


def test_sending_from_the_form_shows_the_response_and_a_history_entry(explorer):
    explorer.form.fields["baseamount"].value = "70000"
    explorer.form.send_button.click()
    [view] = explorer.response_box.children
    assert isinstance(view, ResponseView) and "70000 · Decline" in view.table.value
    assert explorer.form.response_box.children == ()  # shown once, in the panel
    label, index = explorer.history.options[0]
    assert index == len(explorer.exchanges) - 1
    assert "AUTH error: 70000 Decline" in label
    # the history as a table, newest first, the code in words
    assert "<td>70000 · Decline</td>" in explorer.history_table.value


def test_a_new_request_type_starts_clean(explorer):
    explorer.form.fields["baseamount"].value = "70000"
    explorer.form.send_button.click()
    assert explorer.response_box.children  # the AUTH's decline is shown
    explorer.type_picker.value = "STORE"
    [placeholder] = explorer.response_box.children  # an empty area says what will appear there
    assert "its answer appears here" in placeholder.value and explorer.errors.value == ""
    assert "baseamount" not in explorer.form.fields and explorer.form.last_response is None


def test_exchanges_made_in_code_join_the_history(explorer, gw):
    before = len(explorer.history.options)
    stored = gw.store(
        accounttypedescription="CARDSTORE",
        pan="4111111111111111",
        expirydate=f"12/{gw.sandbox.now().year + 2}",
    )
    assert len(explorer.history.options) == before + 1
    assert stored.record["transactionreference"] in explorer.history.options[0][0]


def test_selecting_a_history_entry_shows_that_exchange_again(explorer, gw):
    first = gw.auth(
        accounttypedescription="ECOM",
        baseamount=1050,
        pan="4111111111111111",
        expirydate=f"12/{gw.sandbox.now().year + 2}",
        securitycode="123",
    )
    gw.auth(
        accounttypedescription="ECOM",
        baseamount=60010,
        pan="4111111111111111",
        expirydate=f"12/{gw.sandbox.now().year + 2}",
        securitycode="123",
    )
    reference = first.record["transactionreference"]
    index = next(i for label, i in explorer.history.options if reference in label)
    explorer.history.value = index
    [view] = explorer.response_box.children
    assert reference in view.table.value and "gwkit-ok" in view.summary.value
    assert f"#{index + 1}" in view.summary.value


def test_history_starts_with_the_connection_session(gw):
    gw.auth(
        accounttypedescription="ECOM",
        baseamount=1050,
        pan="4111111111111111",
        expirydate=f"12/{gw.sandbox.now().year + 2}",
        securitycode="123",
    )
    panel = RequestExplorer(gw, request_type="TRANSACTIONQUERY")
    try:
        assert len(panel.history.options) == len(gw.exchanges) >= 1
        assert isinstance(panel.form, RequestForm) and panel.form.request_type.key == "TRANSACTIONQUERY"
    finally:
        panel.close()


def test_close_stops_listening(gw):
    panel = RequestExplorer(gw)
    panel.close()
    assert panel._exchange_made not in gw.exchange_hooks
    gw.auth(
        accounttypedescription="ECOM",
        baseamount=1050,
        pan="4111111111111111",
        expirydate=f"12/{gw.sandbox.now().year + 2}",
        securitycode="123",
    )
    assert len(panel.exchanges) == len(gw.exchanges) - 1


def test_a_plain_client_works_too():
    import json

    import httpx

    import gwkit

    def answer(request):
        body = json.loads(request.content)
        return httpx.Response(
            200,
            json={
                "requestreference": body["request"][0]["requestreference"],
                "version": "1.00",
                "response": [
                    {
                        "requesttypedescription": "STORE",
                        "errorcode": "0",
                        "errormessage": "Ok",
                        "transactionreference": "1-9-7",
                    }
                ],
            },
        )

    with gwkit.Client(
        "http://gateway.test",
        "u",
        "p",
        sitereference="test_s",
        currencyiso3a="GBP",
        transport=httpx.MockTransport(answer),
    ) as client:
        panel = RequestExplorer(client, request_type="STORE")
        try:
            assert panel.history.options == ()
            assert "No exchange yet" in panel.history_table.value
            panel.form.send_button.click()
            [view] = panel.response_box.children
            assert [b.description for b in view.action_buttons] == [
                "Query this stored card (1-9-7)",
                "Use this stored card (1-9-7)",
            ]
            assert "STORE ok: 0 Ok 1-9-7" in panel.history.options[0][0]
        finally:
            panel.close()


def test_the_explorer_offers_emv_3ds_types_variants_and_fields(explorer):
    labels = {value: label for label, value in explorer.type_picker.options}
    assert labels["THREEDLOOKUP"] == "EMV 3-D Secure (v2) look-up (THREEDLOOKUP)"
    explorer.type_picker.value = "THREEDLOOKUP"
    form = explorer.form
    assert form.request()["pan"] == "4900490000000006"  # an EMV 3-D Secure card, not a v1 one
    assert form.problems == [] and not form.send_button.disabled
    explorer.type_picker.value = "THREEDQUERY"
    explorer.variant_picker.value = "cachetoken"
    fields = explorer.form.fields
    assert {"cachetoken", "browserjavaenabled", "browsertz", "customerip", "useragent"} <= set(fields)
    assert "pan" not in fields
    assert [v for _l, v in fields["browserjavaenabled"].options] == ["", "true", "false"]
    explorer.type_picker.value = "AUTH"
    explorer.variant_picker.value = "threedresponse"
    assert {"parenttransactionreference", "threedresponse"} <= set(explorer.form.fields)
    assert "pan" not in explorer.form.fields and "md" not in explorer.form.fields


def test_the_threedresponse_field_is_a_secret_and_copied_code_redacts_it(gw):
    form = RequestForm("AUTH", "threedresponse", client=gw)
    form.set_values(parenttransactionreference="1-2-3", threedresponse="eyJhbGciOiJub25lIn0.e30.")
    assert form.fields["threedresponse"].__class__.__name__ == "Password"
    form.code_button.click()
    assert "eyJhbGciOiJub25lIn0" not in form.code.value and "[redacted]" in form.code.value
