"""The HTTP side: Basic auth, alias, headers, unknown pages, and dropped answers (fault injection)."""

from __future__ import annotations

import base64
import json

import httpx
import pytest

from gwkit.interface import FIELDS
from gwkit.sandbox.gateway.accounts import DEFAULT_PASSWORD, DEFAULT_USERNAME
from gwkit.sandbox.gateway.threeds import ACS_PATH
from gwkit.sandbox.http import MAX_STRING_CHARS, BodyError, SandboxRequest, read_json
from support.sandbox import CLOCK, all_rows, card_auth, query_request

pytestmark = pytest.mark.both_stores  # each test on SQLite and on PostgreSQL

ENVELOPE = {"alias": DEFAULT_USERNAME, "version": "1.00", "request": [card_auth()]}


@pytest.mark.parametrize(
    "authorization",
    [
        None,
        "Basic " + base64.b64encode(f"{DEFAULT_USERNAME}:wrong".encode()).decode(),
        "Basic " + base64.b64encode(f"nobody:{DEFAULT_PASSWORD}".encode()).decode(),
        "Basic !!!not-base64!!!",
        "Bearer abc",
        "Basic " + base64.b64encode(b"no-colon").decode(),
    ],
)
def test_missing_or_wrong_credentials_get_401_with_a_json_body(sandbox, db_path, authorization):
    before = all_rows(db_path)
    headers = {"authorization": authorization} if authorization else {}
    response = httpx.post(f"{sandbox.base_url}/json/", json=ENVELOPE, headers=headers)
    assert response.status_code == 401
    assert response.headers["content-type"].startswith("application/json")
    assert response.headers["www-authenticate"].startswith("Basic")
    body = response.json()
    assert body["error"] == "unauthorised" and "password" in body["detail"]
    assert all_rows(db_path) == before


def test_malformed_json_without_credentials_is_401(sandbox):
    response = httpx.post(
        f"{sandbox.base_url}/json/", content=b"{not json", headers={"content-type": "application/json"}
    )
    assert response.status_code == 401 and response.json()["error"] == "unauthorised"


def test_alias_must_be_the_authenticated_user(gateway, db_path):
    before = all_rows(db_path)
    answer = gateway.envelope(card_auth(), alias="someone_else")
    assert answer["response"] == [
        {
            "requesttypedescription": "ERROR",
            "transactionstartedtimestamp": CLOCK.strftime("%Y-%m-%d %H:%M:%S"),
            "errorcode": "30000",
            "errormessage": "Invalid field",
            "errordata": ["alias"],
        }
    ]
    assert all_rows(db_path) == before


def test_alias_may_be_left_out(gateway):
    response = gateway.http.post("/json/", json={"version": "1.00", "request": [card_auth()]})
    assert response.json()["response"][0]["errorcode"] == "0"


def test_fields_of_real_clients_are_accepted_and_ignored(gateway):
    answer = gateway.envelope(
        card_auth(requestreference="A7fk2m9qa", versioninfo="Python::3.11::1.0.26::Linux"),
        libraryversion="python_1.0.26",
        acceptcustomeroutput="2.00",
    )
    assert answer["requestreference"] == "A7fk2m9qa"
    assert answer["response"][0]["errorcode"] == "0"


def test_json_path_without_trailing_slash_and_utf8_json_answers(gateway):
    response = gateway.http.post("/json", json={"request": [card_auth()]})
    assert response.status_code == 200
    assert response.headers["content-type"] == "application/json"  # as the real service; JSON is UTF-8
    assert response.content.decode("utf-8") == response.text


def test_unknown_pages_are_404_json(gateway):
    response = gateway.http.get("/nothing/here")
    assert response.status_code == 404 and "no such page" in response.json()["error"]


def test_a_dropped_answer_closes_the_connection_after_the_payment_is_made(sandbox, gateway):
    assert gateway.http.post("/_sandbox/faults", json={"drop_next": 1}).json() == {
        "drop_next": 1,
        "process": True,
    }
    with pytest.raises(httpx.RemoteProtocolError):
        gateway.envelope(card_auth(orderreference="dropped"))
    assert gateway.http.get("/_sandbox/faults").json()["drop_next"] == 0
    (made,) = gateway.query(orderreference="dropped")  # the answer was lost, the payment was not
    assert made["errorcode"] == "0"
    assert gateway.one(card_auth(orderreference="answered"))["errorcode"] == "0"


def test_a_dropped_request_can_be_left_unprocessed(sandbox, gateway, db_path):
    before = all_rows(db_path)
    sandbox.faults.add("drop", count=2, process=False)
    for _ in range(2):
        with pytest.raises(httpx.RemoteProtocolError):
            gateway.envelope(card_auth(orderreference="never"))
    assert all_rows(db_path) == before
    assert gateway.query(orderreference="never") == []


def test_faults_do_not_touch_the_control_api(sandbox, gateway):
    sandbox.faults.add("drop", count=1)
    assert gateway.http.get("/_sandbox/clock").status_code == 200
    assert gateway.http.post("/_sandbox/faults", json={"drop_next": 0}).json()["drop_next"] == 0
    assert gateway.one(card_auth())["errorcode"] == "0"


def test_dropped_answers_in_process_raise_as_httpx_does(sandbox):
    sandbox.faults.add("drop", count=1)
    with httpx.Client(
        transport=sandbox.transport(),
        base_url="http://sandbox.test",
        auth=(sandbox.username, sandbox.password),
    ) as client:
        with pytest.raises(httpx.RemoteProtocolError):
            client.post("/json/", json={"request": [card_auth(orderreference="in-process")]})
        answer = client.post("/json/", json={"request": [query_request(orderreference="in-process")]}).json()
    assert len(answer["response"][0]["records"]) == 1


@pytest.mark.parametrize(
    "payload",
    [
        {"drop_next": -1},
        {"drop_next": "1"},
        {"drop_next": True},
        {},
        {"drop_next": 1, "process": "yes"},
        {"drop_next": 1, "other": 2},
    ],
)
def test_bad_fault_settings_are_400(gateway, payload):
    response = gateway.http.post("/_sandbox/faults", json=payload)
    assert response.status_code == 400 and response.json()["detail"]


@pytest.mark.parametrize(
    "header, expected", [("Ahdr12345", "Ahdr12345"), ("bad reference!", "Aobj12345"), (None, "Aobj12345")]
)
def test_requestreference_header_is_echoed_before_the_objects_one(gateway, header, expected):
    headers = {"requestreference": header} if header else {}
    response = gateway.http.post(
        "/json/", headers=headers, json={"request": [card_auth(requestreference="Aobj12345"), card_auth()]}
    )
    assert response.json()["requestreference"] == expected


def test_a_header_sent_twice_is_read_alike_over_http_and_in_process(sandbox, gateway):
    """The last of the values counts, as the server's app reads headers (not httpx's comma-joined list)."""
    headers = [("requestreference", "Afirst123"), ("requestreference", "Asecond12")]
    body = {"request": [card_auth(requestreference="Aobj12345")]}
    over_http = gateway.http.post("/json/", headers=headers, json=body)
    with httpx.Client(
        transport=sandbox.transport(),
        base_url="http://sandbox.test",
        auth=(sandbox.username, sandbox.password),
    ) as client:
        in_process = client.post("/json/", headers=headers, json=body)
    assert over_http.json()["requestreference"] == in_process.json()["requestreference"] == "Asecond12"
    assert in_process.headers["content-length"] == str(len(in_process.content))


def test_other_methods_on_the_gateway_endpoint_are_405_json(gateway):
    response = gateway.http.get("/json/")
    assert response.status_code == 405 and response.headers["allow"] == "POST, OPTIONS"
    assert "POST" in response.json()["detail"]


@pytest.mark.parametrize(
    "body", [b"PaReq=\xff\xfe&MD=x", b"a=" + b"\xc3\x28", b"&".join(b"f%d=1" % i for i in range(101))]
)
def test_a_form_the_sandbox_cannot_read_is_a_clear_body_error(body):
    with pytest.raises(BodyError) as caught:
        SandboxRequest("POST", "/acs", {}, body).form()
    assert "UTF-8" in caught.value.detail or caught.value.limit == "form fields"


def test_a_utf8_form_is_read_with_blank_values():
    form = SandboxRequest("POST", "/acs", {}, "a=%C3%A9&b=&c=ü".encode()).form()
    assert form == {"a": "é", "b": "", "c": "ü"}


@pytest.mark.parametrize("path", [ACS_PATH, "/_sandbox/faults"])
def test_pages_answer_an_unreadable_form_or_body_with_400_and_keep_serving(sandbox, path):
    with httpx.Client(base_url=sandbox.base_url, auth=(DEFAULT_USERNAME, DEFAULT_PASSWORD)) as client:
        response = client.post(
            path,
            content=b"PaReq=\xff\xfe&MD=" + b"[" * 50_000,
            headers={
                "content-type": "application/x-www-form-urlencoded"
                if path == ACS_PATH
                else "application/json"
            },
        )
        assert 400 <= response.status_code < 500
        assert client.get("/_sandbox/health").status_code == 200


def test_read_json_limits_hold_for_the_longest_field_of_the_interface():
    assert max(f.max_length or 0 for f in FIELDS.values()) <= MAX_STRING_CHARS
    assert read_json(json.dumps({"md": "m" * MAX_STRING_CHARS}).encode()) == {"md": "m" * MAX_STRING_CHARS}
    with pytest.raises(BodyError) as caught:
        read_json(
            json.dumps(
                {"4111111111111111": [[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]}
            ).encode()
        )
    assert caught.value.limit == "nesting depth" and "4111111111111111" not in caught.value.detail


def test_answer_header_names_are_in_canonical_case_as_the_real_service_sends_them(gateway):
    response = gateway.http.post("/json/", json={"request": [card_auth()]})
    names = [name for name, _ in response.headers.raw]  # as they came over the wire
    assert b"Content-Type" in names and b"Content-Length" in names
    assert all(name == b"-".join(w.capitalize() for w in name.split(b"-")) for name in names), names
    assert dict(response.headers.raw)[b"Content-Type"] == b"application/json"
