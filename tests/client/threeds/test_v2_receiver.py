"""The term URL receiver's EMV 3-D Secure part: the start page that posts creq and
threeDSSessionData to the ACS, the post-back of cres (or an error) found by threeDSSessionData,
and the 3DS method page with its JSON-only report."""

from __future__ import annotations

import threading

import httpx
import pytest

from gwkit.threeds.acs_page import read_page


def test_the_start_page_posts_creq_and_session_data_to_the_acs(receiver):
    url = receiver.expect_challenge(
        "sess-1", "CREQ<'>", "https://acs.example/challenge?x=1&y=2", lambda f: None
    )
    try:
        page = read_page(httpx.get(url, timeout=5))
        (form,) = page.forms
        assert form.action == "https://acs.example/challenge?x=1&y=2"
        assert form.fields == {"creq": "CREQ<'>", "threeDSSessionData": "sess-1"}  # escaped, read back whole
    finally:
        receiver.forget("sess-1")


def test_the_post_back_reaches_the_challenge_by_its_session_data_once(receiver):
    got: list[dict] = []
    arrived = threading.Event()
    receiver.expect_challenge(
        "sess-2", "creq", "https://acs.example/", lambda f: (got.append(f), arrived.set())
    )
    try:
        answer = httpx.post(
            receiver.term_url, data={"cres": "abc", "threeDSSessionData": "sess-2"}, timeout=5
        )
        assert answer.status_code == 200 and "You can close this page" in answer.text
        assert arrived.is_set() and got == [{"cres": "abc", "threeDSSessionData": "sess-2"}]
        other = httpx.post(
            receiver.term_url, data={"cres": "abc", "threeDSSessionData": "changed"}, timeout=5
        )
        assert (
            other.status_code == 400 and "No 3-D Secure challenge with this threeDSSessionData" in other.text
        )
    finally:
        receiver.forget("sess-2")
    gone = httpx.post(receiver.term_url, data={"cres": "abc", "threeDSSessionData": "sess-2"}, timeout=5)
    assert gone.status_code == 400


def test_a_failing_receiver_callback_answers_500_with_words(receiver):
    def broken(form):
        raise RuntimeError("no")

    receiver.expect_challenge("sess-3", "creq", "https://acs.example/", broken)
    try:
        answer = httpx.post(
            receiver.term_url, data={"cres": "abc", "threeDSSessionData": "sess-3"}, timeout=5
        )
        assert answer.status_code == 500 and "could not process it" in answer.text
    finally:
        receiver.forget("sess-3")


def test_the_method_page_posts_the_method_data_in_a_hidden_frame_and_reports_by_json(receiver):
    done = threading.Event()
    url = receiver.expect_method("https://acs.example/method", "DATA", done.set)
    page = httpx.get(url, timeout=5)
    assert page.status_code == 200
    (form,) = read_page(page).forms
    assert form.action == "https://acs.example/method" and form.fields == {"threeDSMethodData": "DATA"}
    assert "target='gwkit-method-frame'" in page.text and "display:none" in page.text
    refused = httpx.post(f"{url}/done", data={"x": "1"}, timeout=5)
    assert refused.status_code == 415 and not done.is_set()  # state changes take JSON only
    reported = httpx.post(f"{url}/done", json={}, timeout=5)
    assert reported.status_code == 200 and done.is_set()
    again = httpx.post(f"{url}/done", json={}, timeout=5)
    assert again.status_code == 404


@pytest.mark.parametrize("path", ["/method/unknown", "/start/unknown"])
def test_unknown_pages_are_404(receiver, path):
    assert httpx.get(receiver.base_url + path, timeout=5).status_code == 404
