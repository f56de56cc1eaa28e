"""The sandbox ACS pages and gwkit's term URL receiver, over HTTP with httpx (no browser)."""

from __future__ import annotations

import re
from html import unescape

import httpx
import pytest

import gwkit
import gwkit.sandbox
from gwkit.threeds import ThreeDSecureError, ThreeDSecureFlow
from support.threeds import CARD, START

pytestmark = pytest.mark.both_stores  # each test on SQLite and on PostgreSQL


@pytest.fixture
def http():
    with httpx.Client(timeout=30) as h:
        yield h


@pytest.fixture
def flow(client, receiver):
    f = ThreeDSecureFlow(client, receiver=receiver)
    f.query(**CARD)
    yield f
    f.close()


def acs_form(flow) -> dict[str, str]:
    record = flow.query_record
    return {"PaReq": record["pareq"], "TermUrl": flow.receiver.term_url, "MD": record["md"]}


def hidden(page: str, name: str) -> str:
    return unescape(re.search(rf"name='{name}' value='([^']*)'", page).group(1))


def error_text(page: str) -> str:
    return unescape(re.search(r"id='acs-error'>([^<]*)<", page).group(1))


def test_acs_page_shows_merchant_amount_masked_card_and_date(flow, http):
    page = http.post(flow.query_record["acsurl"], data=acs_form(flow))
    assert page.status_code == 200 and page.headers["content-type"].startswith("text/html")
    text = page.text
    assert "gwkit sandbox merchant" in text and "GBP 10.50" in text and "411111######0211" in text
    assert "02 March 2026" in text and "Verified by Visa" in text
    assert CARD["pan"] not in text
    assert re.findall(r"name='outcome' value='([^']+)'", text) == ["Y", "N", "A", "U", "cancel"]


def test_amount_of_a_zero_decimal_currency(client, receiver, http):
    f = ThreeDSecureFlow(client, receiver=receiver)
    f.query(**{**CARD, "currencyiso3a": "JPY", "baseamount": "1050"})
    assert "JPY 1050" in http.post(f.query_record["acsurl"], data=acs_form(f)).text


@pytest.mark.parametrize("drop", ["PaReq", "TermUrl", "MD"])
def test_missing_field_is_a_clear_400(flow, http, drop):
    form = {k: v for k, v in acs_form(flow).items() if k != drop}
    page = http.post(flow.query_record["acsurl"], data=form)
    assert page.status_code == 400
    assert f"Missing: {drop}" in error_text(page.text)


def test_field_names_are_case_sensitive(flow, http):
    form = {k.lower(): v for k, v in acs_form(flow).items()}
    page = http.post(flow.query_record["acsurl"], data=form)
    assert page.status_code == 400
    message = error_text(page.text)
    assert "Missing: PaReq, TermUrl, MD" in message and "case-sensitive" in message and "'pareq'" in message


@pytest.mark.parametrize(
    "field, change, words",
    [
        ("PaReq", lambda v: v[:-2] + "zz", "PaReq"),
        ("MD", lambda v: v + "x", "MD does not belong"),
        ("TermUrl", lambda v: v + "/elsewhere", "TermUrl is not the 'termurl'"),
    ],
)
def test_tampered_values_are_refused(flow, http, field, change, words):
    form = acs_form(flow)
    form[field] = change(form[field])
    for path in ("", "/complete"):
        page = http.post(flow.query_record["acsurl"] + path, data={**form, "outcome": "Y"})
        assert page.status_code == 400 and words in error_text(page.text)
    assert not flow.returned


def test_pareq_and_md_of_different_sessions(client, receiver, flow, http):
    other = ThreeDSecureFlow(client, receiver=receiver)
    other.query(**CARD)
    form = {**acs_form(flow), "MD": other.md}
    page = http.post(flow.query_record["acsurl"], data=form)
    assert page.status_code == 400 and "different THREEDQUERY" in error_text(page.text)


def test_unknown_outcome_and_get_are_refused(flow, http):
    page = http.post(flow.query_record["acsurl"] + "/complete", data={**acs_form(flow), "outcome": "maybe"})
    assert page.status_code == 400 and "Choose an outcome" in error_text(page.text)
    assert http.get(flow.query_record["acsurl"]).status_code == 405


def test_completion_posts_pares_and_md_back_to_the_term_url(flow, http):
    page = http.post(flow.query_record["acsurl"] + "/complete", data={**acs_form(flow), "outcome": "Y"})
    assert page.status_code == 200
    text = page.text
    assert re.search(r"<form method='post' action='([^']*)'", text).group(1) == flow.receiver.term_url
    assert hidden(text, "MD") == flow.md and hidden(text, "PaRes").count(".") == 1
    assert "<noscript>" in text and "id='acs-continue'" in text and ".submit()" in text
    back = http.post(flow.receiver.term_url, data={"PaRes": hidden(text, "PaRes"), "MD": hidden(text, "MD")})
    assert back.status_code == 200 and "return to the notebook" in back.text
    assert flow.returned and flow.pares == hidden(text, "PaRes")


def test_used_and_expired_sessions_are_refused_at_the_acs(client, receiver, http, db_path):
    f = ThreeDSecureFlow(client, receiver=receiver)
    f.query(**CARD)
    f.complete_acs("Y")
    f.auth()
    page = http.post(f.query_record["acsurl"], data=acs_form(f))
    assert page.status_code == 400 and "already completed a payment" in error_text(page.text)
    with (
        gwkit.sandbox.start(db_path, clock_start=START) as handle,
        gwkit.Client(
            handle.base_url,
            handle.username,
            handle.password,
            sitereference=handle.sitereference,
            currencyiso3a="GBP",
        ) as other_client,
    ):
        old = ThreeDSecureFlow(other_client, receiver=receiver)
        old.query(**CARD)
        handle.advance(by="PT2H1M")
        page = http.post(old.query_record["acsurl"], data=acs_form(old))
        assert page.status_code == 400 and "more than two hours" in error_text(page.text)
        with pytest.raises(ThreeDSecureError, match="more than two hours"):
            old.complete_acs("Y")
        old.close()


# -- the term URL receiver -------------------------------------------------------------------------


def test_receiver_start_page_posts_the_three_fields_to_the_acs(flow, http):
    page = http.get(flow.start_url)
    assert page.status_code == 200
    text = page.text
    assert re.search(r"action='([^']*)'", text).group(1) == flow.query_record["acsurl"]
    assert {hidden(text, "PaReq"), hidden(text, "TermUrl"), hidden(text, "MD")} == set(
        acs_form(flow).values()
    )
    assert "<noscript>" in text and ".submit()" in text
    assert flow.stage == "at_acs"


def test_receiver_refuses_unknown_and_incomplete_post_backs(flow, http, receiver):
    assert http.get(receiver.base_url + "/start/nothing-here").status_code == 404
    assert http.post(receiver.term_url, data={"PaRes": "x"}).status_code == 400
    unknown = http.post(receiver.term_url, data={"PaRes": "x", "MD": "not-waiting"})
    assert unknown.status_code == 400 and "No 3-D Secure authentication" in unknown.text
    assert http.post(receiver.base_url + "/elsewhere", data={}).status_code == 404
    assert not flow.returned


def test_receiver_forgets_a_flow_after_its_auth(flow, http):
    flow.complete_acs("Y")
    flow.auth()
    late = http.post(flow.receiver.term_url, data={"PaRes": flow.pares, "MD": flow.md})
    assert late.status_code == 400
