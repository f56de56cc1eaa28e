"""gwkit.Client against an in-process gateway (httpx.MockTransport, `support.fakes.FakeGateway`)."""

from __future__ import annotations

import base64
import json
from datetime import UTC, datetime

import httpx
import pytest

import gwkit
from gwkit import (
    AuthenticationError,
    ConnectError,
    Exchange,
    GatewayError,
    GwkitError,
    HTTPStatusError,
    Record,
    Response,
    ResponseFormatError,
    TransportError,
    ValidationError,
)
from gwkit.interface import mask_data
from support.fakes import CARD, MASKED, PAN, SECURITYCODE, FakeGateway, make_client

# -- the HTTP request -----------------------------------------------------------------------------


def test_posts_json_with_basic_auth_to_the_path_of_the_base_url(client, gateway):
    client.auth(**CARD)
    [request] = gateway.requests
    assert request.method == "POST"
    assert str(request.url) == "http://gateway.test:8080/stpp/json/"
    expected = base64.b64encode(b"webservices@example.com:s3cret!").decode()
    assert request.headers["authorization"] == f"Basic {expected}"
    assert request.headers["content-type"] == "application/json"
    assert request.headers["accept"] == "application/json"
    assert gateway.envelope()["alias"] == "webservices@example.com"


@pytest.mark.parametrize(
    "base,url",
    [
        ("http://h:1/gw", "http://h:1/gw/json/"),
        ("http://h:1/gw/", "http://h:1/gw/json/"),
        ("https://h", "https://h/json/"),
        ("http://h:1/a/b", "http://h:1/a/b/json/"),
    ],
)
def test_base_url_path_is_kept(base, url):
    gateway = FakeGateway()
    with gwkit.Client(base, "u", "p", transport=httpx.MockTransport(gateway)) as client:
        client.send(
            {
                "requesttypedescriptions": ["TRANSACTIONQUERY"],
                "filter": {"transactionreference": [{"value": "1-2-3"}]},
            }
        )
    assert str(gateway.requests[0].url) == url
    assert client.url == url


def test_alias_defaults_to_the_username_and_can_be_set():
    client, gateway = make_client(alias="merchant-alias")
    client.auth(**CARD)
    assert gateway.envelope()["alias"] == "merchant-alias"


def test_timeouts_reach_the_transport():
    client, gateway = make_client(timeout=5.0)
    client.auth(**CARD)
    assert gateway.requests[0].extensions["timeout"] == {
        "connect": 5.0,
        "read": 5.0,
        "write": 5.0,
        "pool": 5.0,
    }
    client, gateway = make_client(timeout=httpx.Timeout(3.0, connect=1.0))
    client.auth(**CARD)
    assert gateway.requests[0].extensions["timeout"]["connect"] == 1.0


def test_the_request_is_the_one_httpx_would_build(client, gateway):
    client.auth(**CARD)
    [sent] = gateway.requests
    with httpx.Client(headers=gwkit.client.HEADERS, timeout=client.timeout) as http:
        built = http.build_request("POST", client.url, content=sent.content)
    assert [h for h in sent.headers.multi_items() if h[0] != "authorization"] == built.headers.multi_items()
    assert sent.extensions == built.extensions and sent.url == built.url


def test_a_cookie_set_on_the_way_is_sent_back_as_httpx_does():
    seen: list[str | None] = []
    answer = FakeGateway()

    def behind_a_proxy(request: httpx.Request) -> httpx.Response:
        seen.append(request.headers.get("cookie"))
        response = answer(request)
        response.headers["set-cookie"] = "route=b2; Path=/"
        return response

    with gwkit.Client(
        "http://gateway.test", "u", "p", transport=httpx.MockTransport(behind_a_proxy)
    ) as client:
        client.auth(**CARD, sitereference="test_site12345", currencyiso3a="GBP")
        client.auth(**CARD, sitereference="test_site12345", currencyiso3a="GBP")
    assert seen == [None, "route=b2"]


def test_one_transport_for_every_request(client, gateway):
    transport = client._transport
    for _ in range(3):
        client.auth(**CARD)
    assert client._transport is transport and gateway.calls == 3


@pytest.mark.parametrize("base", ["ftp://h/x", "h:1/gw", "http://user:pw@h/gw"])
def test_bad_base_urls_are_refused(base):
    with pytest.raises(ValueError):
        gwkit.Client(base, "u", "p")


def test_a_closed_client_refuses_to_send(gateway):
    client, _ = make_client(gateway)
    with client:
        client.auth(**CARD)
    with pytest.raises(RuntimeError):
        client.auth(**CARD)
    assert gateway.calls == 1


def test_client_repr_hides_the_password(client):
    text = repr(client)
    assert "s3cret" not in text and "[redacted]" in text and "webservices@example.com" in text


# -- request methods, defaults, values ------------------------------------------------------------


def test_auth_fills_in_the_defaults_and_sends_strings(client, gateway):
    client.auth(**CARD)
    assert gateway.sent() == {
        "requesttypedescriptions": ["AUTH"],
        "accounttypedescription": "ECOM",
        "baseamount": "1050",
        "pan": PAN,
        "expirydate": "12/2030",
        "securitycode": SECURITYCODE,
        "sitereference": "test_site12345",
        "currencyiso3a": "GBP",
        "requestreference": gateway.sent()["requestreference"],
    }


def test_explicit_fields_win_over_defaults(client, gateway):
    client.auth(**CARD, sitereference="test_other1", currencyiso3a="USD")
    assert gateway.sent()["sitereference"] == "test_other1" and gateway.sent()["currencyiso3a"] == "USD"


@pytest.mark.parametrize(
    "call,types,fields,site,currency",
    [
        (
            "store",
            ["STORE"],
            {"accounttypedescription": "CARDSTORE", "pan": PAN, "expirydate": "12/2030"},
            True,
            False,
        ),
        ("auth", ["AUTH"], {"md": "m", "pares": "p"}, True, False),
        ("auth", ["AUTH"], {"parenttransactionreference": "23-9-1"}, True, True),
        ("refund", ["REFUND"], {"parenttransactionreference": "23-9-1", "baseamount": 500}, True, False),
        (
            "refund",
            ["REFUND"],
            {"accounttypedescription": "CFT", "baseamount": 500, "pan": PAN, "expirydate": "12/2030"},
            True,
            True,
        ),
        (
            "cachetokenise",
            ["CACHETOKENISE"],
            {"pan": PAN, "expirymonth": "12", "expiryyear": "2030"},
            True,
            False,
        ),
        (
            "threedquery",
            ["THREEDQUERY"],
            {
                "termurl": "https://m.example/t",
                "accounttypedescription": "ECOM",
                "baseamount": 1050,
                "pan": PAN,
                "expirydate": "12/2030",
            },
            True,
            True,
        ),
        (
            "auth_subscription",
            ["AUTH", "SUBSCRIPTION"],
            {
                "accounttypedescription": "ECOM",
                "baseamount": 1050,
                "orderreference": "s-1",
                "md": "m",
                "pares": "p",
                "subscriptiontype": "RECURRING",
                "subscriptionunit": "MONTH",
                "subscriptionfrequency": 1,
                "subscriptionnumber": 1,
                "subscriptionfinalnumber": 12,
                "subscriptionbegindate": "2030-01-31",
                "credentialsonfile": 1,
            },
            True,
            True,
        ),
    ],
)
def test_defaults_only_where_the_request_type_uses_them(client, gateway, call, types, fields, site, currency):
    response = getattr(client, call)(**fields)
    sent = gateway.sent()
    assert sent["requesttypedescriptions"] == types
    assert ("sitereference" in sent) is site and ("currencyiso3a" in sent) is currency
    assert response.ok


def test_refund_takes_the_parent_as_its_first_argument(client, gateway):
    client.refund("23-9-1")
    assert gateway.sent() == {
        "requesttypedescriptions": ["REFUND"],
        "parenttransactionreference": "23-9-1",
        "sitereference": "test_site12345",
        "requestreference": gateway.sent()["requestreference"],
    }
    with pytest.raises(
        ValidationError, match="currencyiso3a"
    ):  # a refund of an AUTH is in the AUTH's currency
        client.refund("23-9-1", currencyiso3a="EUR")
    assert gateway.calls == 1


def test_transaction_query_convenience_filters(client, gateway):
    client.transaction_query(transactionreference="1-2-3")
    assert gateway.sent() == {
        "requesttypedescriptions": ["TRANSACTIONQUERY"],
        "filter": {
            "sitereference": [{"value": "test_site12345"}],
            "transactionreference": [{"value": "1-2-3"}],
        },
        "requestreference": gateway.sent()["requestreference"],
    }
    client.transaction_query(settlestatus=["0", 100], transactionreference=("1-2-3", "1-2-4"))
    assert gateway.sent()["filter"] == {
        "sitereference": [{"value": "test_site12345"}],
        "settlestatus": [{"value": "0"}, {"value": "100"}],
        "transactionreference": [{"value": "1-2-3"}, {"value": "1-2-4"}],
    }


def test_transaction_query_takes_the_real_filter_shape(client, gateway):
    real = {"sitereference": [{"value": "test_other1"}], "transactionreference": [{"value": "23-9-1"}]}
    client.transaction_query(real)
    assert gateway.sent()["filter"] == real
    assert "sitereference" not in {k for k in gateway.sent() if k != "filter"}


def test_transaction_update_filter_and_updates(client, gateway):
    client.transaction_update(
        transactionreference="1-2-3", updates={"transactionactive": 0, "baseamount": 2000}
    )
    sent = gateway.sent()
    assert sent["requesttypedescriptions"] == ["TRANSACTIONUPDATE"]
    assert sent["filter"] == {
        "sitereference": [{"value": "test_site12345"}],
        "transactionreference": [{"value": "1-2-3"}],
    }
    assert sent["updates"] == {"transactionactive": "0", "baseamount": "2000"}
    assert "sitereference" not in sent and "currencyiso3a" not in sent


def test_no_sitereference_filter_without_a_default(gateway):
    client, _ = make_client(gateway, sitereference=None)
    client.transaction_query(transactionreference="1-2-3")
    assert gateway.sent()["filter"] == {"transactionreference": [{"value": "1-2-3"}]}


def test_send_posts_raw_objects_without_defaults(client, gateway):
    raw = {
        "requesttypedescriptions": ["STORE"],
        "sitereference": "test_site12345",
        "accounttypedescription": "CARDSTORE",
        "pan": PAN,
        "expirydate": "12/2030",
        "orderreference": 7,
    }
    client.send(raw)
    sent = gateway.sent()
    assert sent["orderreference"] == "7" and "currencyiso3a" not in sent
    assert "requestreference" not in raw  # the caller's dict is left alone


def test_build_request_and_filter_previews(client):
    assert client.build_request("AUTH", CARD)["currencyiso3a"] == "GBP"
    assert "currencyiso3a" not in client.build_request("STORE", pan=PAN)
    assert client.build_filter(settlestatus="100") == {
        "sitereference": [{"value": "test_site12345"}],
        "settlestatus": [{"value": "100"}],
    }


# -- validation ----------------------------------------------------------------------------------------


def test_invalid_requests_are_refused_with_every_problem_and_nothing_is_sent(client, gateway):
    with pytest.raises(ValidationError) as caught:
        client.auth(
            accounttypedescription="CARDSTORE",
            baseamount="10.50",
            pan="4111111111111112",
            expirydate="13/2030",
            securitycode="1234",
            orderreference="o-" + PAN + "x" * 300,
        )
    assert gateway.calls == 0
    error = caught.value
    assert error.fields == [
        "accounttypedescription",
        "baseamount",
        "pan",
        "expirydate",
        "securitycode",
        "orderreference",
    ]
    assert isinstance(error, GwkitError) and isinstance(error, ValueError)
    text = str(error)
    assert PAN not in text and "4111111111111112" not in text and "1234'" not in text
    assert "411111######1112" in text and "AUTH" in text


def test_validation_can_be_skipped_per_call_or_per_client(gateway):
    client, _ = make_client(gateway)
    client.auth(validate=False, accounttypedescription="X", pan="1")
    assert gateway.sent()["pan"] == "1"
    client, _ = make_client(gateway, validate=False)
    client.store(pan="1")
    assert gateway.calls == 2
    with pytest.raises(ValidationError):
        client.store(pan="1", validate=True)
    assert gateway.calls == 2


def test_problems_of_several_objects_name_the_object(client, gateway):
    with pytest.raises(ValidationError) as caught:
        client.send([{"requesttypedescriptions": ["STORE"]}, {"requesttypedescriptions": ["FOO"]}])
    assert "request[0].sitereference" in caught.value.fields
    assert "request[1].requesttypedescriptions" in caught.value.fields
    with pytest.raises(ValidationError):
        client.send([])
    for not_an_object in (["AUTH"], "AUTH"):
        with pytest.raises(ValidationError, match="JSON object"):
            client.send(not_an_object, validate=False)
    assert gateway.calls == 0


def test_floats_are_refused_before_anything_is_sent(client, gateway):
    with pytest.raises(ValidationError) as caught:
        client.auth(**{**CARD, "baseamount": 10.5})
    assert caught.value.fields == ["baseamount"] and gateway.calls == 0


# -- responses ------------------------------------------------------------------------------------------

AUTH_RECORD = {
    "requesttypedescription": "AUTH",
    "errorcode": "0",
    "errormessage": "Ok",
    "maskedpan": MASKED,
    "transactionreference": "23-9-80001",
    "settlestatus": "0",
    "baseamount": "1050",
}


def test_response_and_record(gateway):
    gateway.records = [
        AUTH_RECORD,
        {
            "requesttypedescription": "SUBSCRIPTION",
            "errorcode": "0",
            "errormessage": "Ok",
            "transactionreference": "23-9-80002",
        },
    ]
    client, _ = make_client(gateway)
    response = client.auth(**CARD)
    assert isinstance(response, Response) and isinstance(response.record, Record)
    assert response.requestreference == gateway.sent()["requestreference"]
    assert response.version == "1.00" and response.secrand == "x7Rq"
    assert len(response) == 2 and response[1]["transactionreference"] == "23-9-80002"
    assert [r.requesttype for r in response] == ["AUTH", "SUBSCRIPTION"]
    assert response.record is response.records[0] and response.ok
    assert response.raw["response"][0] == AUTH_RECORD
    assert response.request == mask_data(gateway.envelope())
    assert response.elapsed >= 0 and response.status_code == 200
    record = response.record
    assert record["maskedpan"] == MASKED and record.get("missing") is None and "baseamount" in record
    assert record.errorcode == 0 and record.errormessage == "Ok" and record.errordata == []
    assert dict(record) == AUTH_RECORD and record == AUTH_RECORD
    assert response.raise_for_errors() is response


def test_the_request_kept_on_the_response_is_masked(client):
    response = client.auth(**CARD)
    sent = response.request["request"][0]
    assert sent["pan"] == MASKED and sent["securitycode"] == "[redacted]"  # no card data kept on a response
    assert sent["expirydate"] == CARD["expirydate"]
    for text in (repr(response.request), str(response.request), repr(response), repr(response.record)):
        assert PAN not in text and f'"{SECURITYCODE}"' not in text and f"'{SECURITYCODE}'" not in text
    assert MASKED in repr(response.request)


@pytest.mark.parametrize(
    "record,ok",
    [
        ({"errorcode": "0"}, True),
        ({"errorcode": "0", "settlestatus": "100"}, True),
        ({"errorcode": "0", "settlestatus": "3"}, False),
        ({"errorcode": "70000", "settlestatus": "3"}, False),
        ({"errorcode": "30000"}, False),
        ({"errorcode": 0}, True),
    ],
)
def test_record_ok_from_errorcode_and_settlestatus(record, ok):
    assert Record(record).ok is ok


def test_errordata_is_always_a_list():
    assert Record({"errorcode": "30000", "errordata": ["pan"]}).errordata == ["pan"]
    assert Record({"errorcode": "30000", "errordata": "pan"}).errordata == ["pan"]
    assert Record({"errorcode": "0"}).errordata == []


def test_a_record_without_errorcode_is_a_format_error_not_a_key_error(gateway):
    gateway.records = [{"requesttypedescription": "AUTH", "errormessage": "Ok"}]
    client, _ = make_client(gateway)
    response = client.auth(**CARD)  # reading the envelope works
    with pytest.raises(ResponseFormatError, match="without errorcode"):
        _ = response.record.errorcode
    with pytest.raises(ResponseFormatError):
        _ = response.ok
    with pytest.raises(ResponseFormatError, match="not a number"):
        _ = Record({"errorcode": "zero"}).errorcode


def test_gateway_errors_do_not_raise_until_asked(gateway):
    gateway.records = [
        {
            "requesttypedescription": "AUTH",
            "errorcode": "70000",
            "errormessage": "Decline",
            "settlestatus": "3",
            "acquirerresponsecode": "05",
        }
    ]
    client, _ = make_client(gateway)
    response = client.auth(**CARD)
    assert not response.ok and response.record.errorcode == 70000
    with pytest.raises(GatewayError) as caught:
        response.raise_for_errors()
    error = caught.value
    assert (error.errorcode, error.errormessage, error.requesttype) == (70000, "Decline", "AUTH")
    assert error.requestreference == response.requestreference
    assert "70000" in str(error) and response.requestreference in str(error)


def test_gateway_error_carries_errordata():
    response = Response(
        {
            "requestreference": "W1-abc",
            "response": [
                {
                    "requesttypedescription": "ERROR",
                    "errorcode": "30000",
                    "errormessage": "Invalid field",
                    "errordata": ["pan", "expirydate"],
                }
            ],
        }
    )
    with pytest.raises(GatewayError) as caught:
        response.raise_for_errors()
    assert caught.value.errordata == ["pan", "expirydate"] and caught.value.requestreference == "W1-abc"


def test_ok_code_with_a_cancelled_transaction_still_raises():
    response = Response({"response": [{"errorcode": "0", "errormessage": "Ok", "settlestatus": "3"}]})
    with pytest.raises(GatewayError, match="cancelled"):
        response.raise_for_errors()


def test_transaction_query_records(gateway):
    inner = [
        {
            "transactionreference": "23-9-1",
            "requesttypedescription": "AUTH",
            "errorcode": "0",
            "maskedpan": MASKED,
            "settlestatus": "100",
        },
        {"transactionreference": "23-9-2", "requesttypedescription": "STORE", "errorcode": "0"},
    ]
    gateway.records = [
        {
            "requesttypedescription": "TRANSACTIONQUERY",
            "errorcode": "0",
            "errormessage": "Ok",
            "found": "2",
            "records": inner,
        }
    ]
    client, _ = make_client(gateway)
    response = client.transaction_query(transactionreference=["23-9-1", "23-9-2"])
    assert response.records == [response.record] and response.record.get("records") == inner
    assert [r["transactionreference"] for r in response.query_records] == ["23-9-1", "23-9-2"]
    assert all(isinstance(r, Record) and r.ok for r in response.query_records)
    assert Record({"errorcode": "0"}).query_records == []
    with pytest.raises(ResponseFormatError):
        _ = Record({"errorcode": "0", "records": "none"}).query_records


# -- the error hierarchy --------------------------------------------------------------------------------


def test_401_is_an_authentication_error(gateway):
    gateway.status, gateway.body = 401, b"Unauthorized"
    client, _ = make_client(gateway)
    with pytest.raises(AuthenticationError) as caught:
        client.auth(**CARD)
    assert isinstance(caught.value, TransportError) and isinstance(caught.value, GwkitError)
    assert "401" in str(caught.value) and "s3cret" not in str(caught.value)
    assert gateway.calls == 1


@pytest.mark.parametrize("status", [500, 502, 403, 404, 302])
def test_other_statuses_are_http_status_errors_with_an_excerpt(gateway, status):
    gateway.status, gateway.body = status, b"<html>Bad gateway " + PAN.encode() + b"</html>"
    client, _ = make_client(gateway)
    with pytest.raises(HTTPStatusError) as caught:
        client.auth(**CARD)
    error = caught.value
    assert error.status_code == status and isinstance(error, ResponseFormatError)
    assert "Bad gateway" in error.excerpt and PAN not in str(error) and MASKED in error.excerpt
    assert gateway.calls == 1


def test_a_body_that_is_not_json_is_a_format_error_with_a_masked_excerpt(gateway):
    gateway.body = b'Service unavailable {"pan": "' + PAN.encode() + b'", "securitycode": "737"}' + b"." * 500
    client, _ = make_client(gateway)
    with pytest.raises(ResponseFormatError) as caught:
        client.auth(**CARD)
    error = caught.value
    assert type(error) is ResponseFormatError and error.status_code == 200
    assert error.excerpt.startswith("Service unavailable") and len(error.excerpt) <= 200
    assert PAN not in str(error) and '"737"' not in str(error) and MASKED in str(error)


@pytest.mark.parametrize(
    "body",
    [
        b"[]",
        b'{"version": "1.00"}',
        b'{"response": "Ok"}',
        b'{"response": []}',
        b'{"response": ["Ok"]}',
        b"null",
    ],
)
def test_json_that_is_not_an_envelope_is_a_format_error(gateway, body):
    gateway.body = body
    client, _ = make_client(gateway)
    with pytest.raises(ResponseFormatError):
        client.auth(**CARD)


def test_a_different_request_reference_is_a_format_error(gateway):
    gateway.reference = "Aother0000"
    client, _ = make_client(gateway)
    with pytest.raises(ResponseFormatError, match="Aother0000"):
        client.auth(**CARD)


def test_several_objects_answered_under_one_gateway_reference_are_fine(gateway):
    gateway.reference = "W23-5rd2wbjv"
    client, _ = make_client(gateway)
    response = client.send(
        [
            {
                "requesttypedescriptions": ["TRANSACTIONQUERY"],
                "filter": {"transactionreference": [{"value": "1-2-3"}]},
            }
        ]
        * 2
    )
    assert response.requestreference == "W23-5rd2wbjv" and len(response) == 2


@pytest.mark.parametrize("exc", [httpx.RemoteProtocolError, httpx.ReadError, httpx.WriteError])
def test_a_request_that_may_have_reached_the_gateway_is_never_sent_again(gateway, exc):
    gateway.errors = [exc("connection dropped")]
    client, _ = make_client(gateway, retries=5)
    with pytest.raises(TransportError) as caught:
        client.auth(**CARD)
    assert gateway.calls == 1
    error = caught.value
    assert not isinstance(error, ConnectError) and error.sent is True
    assert isinstance(error.__cause__, exc) and "not sent again" in str(error)


def test_a_read_timeout_is_a_timeout_and_not_retried(gateway):
    gateway.errors = [httpx.ReadTimeout("slow")]
    client, _ = make_client(gateway)
    with pytest.raises(gwkit.RequestTimeoutError) as caught:
        client.auth(**CARD)
    assert gateway.calls == 1 and caught.value.sent is True
    assert isinstance(caught.value, TransportError)


@pytest.mark.parametrize("exc", [httpx.ConnectError, httpx.ConnectTimeout, httpx.PoolTimeout])
def test_failures_before_sending_are_retried(gateway, exc):
    gateway.errors = [exc("refused"), exc("refused")]
    client, _ = make_client(gateway, retries=2)
    response = client.auth(**CARD)
    assert gateway.calls == 3 and response.ok
    references = {json.loads(r.content)["request"][0]["requestreference"] for r in gateway.requests}
    assert len(references) == 1  # the same request, which never arrived


def test_connect_errors_give_up_after_the_retries(gateway):
    gateway.errors = [httpx.ConnectError("refused")] * 10
    client, _ = make_client(gateway, retries=2)
    with pytest.raises(ConnectError) as caught:
        client.auth(**CARD)
    assert gateway.calls == 3 and caught.value.sent is False
    client, _ = make_client(gateway, retries=0)
    with pytest.raises(ConnectError):
        client.auth(**CARD)
    assert gateway.calls == 4


def test_connect_timeouts_are_timeouts_that_sent_nothing(gateway):
    gateway.errors = [httpx.ConnectTimeout("slow")] * 3
    client, _ = make_client(gateway, retries=2)
    with pytest.raises(gwkit.RequestTimeoutError) as caught:
        client.auth(**CARD)
    assert caught.value.sent is False and gateway.calls == 3


def test_a_real_refused_connection_is_a_connect_error():
    import socket

    with socket.socket() as probe:  # a loopback port with nobody listening
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    with gwkit.Client(f"http://127.0.0.1:{port}", "u", "p", retries=1, timeout=5) as client:
        with pytest.raises(ConnectError):
            client.store(
                sitereference="test_site12345",
                accounttypedescription="CARDSTORE",
                pan=PAN,
                expirydate="12/2030",
            )


# -- exchanges and hooks --------------------------------------------------------------------------------


def test_every_exchange_reaches_the_hooks_masked(gateway):
    seen: list[Exchange] = []
    client, _ = make_client(gateway, on_exchange=[seen.append])
    response = client.auth(**CARD, orderreference="order-9")
    [exchange] = seen
    assert isinstance(exchange.started_at, datetime) and exchange.started_at.tzinfo == UTC
    assert exchange.elapsed >= 0 and exchange.status_code == 200 and exchange.error is None
    assert exchange.target == "http://gateway.test:8080/stpp" and exchange.url == client.url
    assert exchange.alias == "webservices@example.com"
    assert exchange.request_types == ("AUTH",) and exchange.attempt == 1
    assert exchange.requestreference == response.requestreference
    sent = exchange.request["request"][0]
    assert (
        sent["pan"] == MASKED and sent["securitycode"] == "[redacted]" and sent["orderreference"] == "order-9"
    )
    assert exchange.response["response"][0]["errorcode"] == "0" and exchange.ok
    everything = json.dumps(exchange.as_dict())
    assert PAN not in everything and f'"{SECURITYCODE}"' not in everything
    assert exchange.as_dict()["started_at"] == exchange.started_at.isoformat()


def test_failed_exchanges_and_retries_reach_the_hooks(gateway):
    seen: list[Exchange] = []
    gateway.errors = [httpx.ConnectError("refused"), httpx.RemoteProtocolError("dropped")]
    client, _ = make_client(gateway)
    client.add_exchange_hook(seen.append)
    with pytest.raises(TransportError):
        client.auth(**CARD)
    assert [e.attempt for e in seen] == [1, 2]
    assert seen[0].error.startswith("ConnectError: could not connect")
    assert seen[1].error.startswith("TransportError: ") and seen[1].response is None
    assert seen[1].status_code is None and not seen[1].ok
    assert seen[0].requestreference == seen[1].requestreference


def test_format_errors_reach_the_hooks_with_the_status(gateway):
    seen: list[Exchange] = []
    gateway.status, gateway.body = 401, b"no"
    client, _ = make_client(gateway, on_exchange=seen.append)
    with pytest.raises(AuthenticationError):
        client.auth(**CARD)
    assert seen[0].status_code == 401 and seen[0].error.startswith("AuthenticationError")


def test_hook_exceptions_propagate_and_hooks_can_be_removed(gateway):
    def broken(exchange):
        raise RuntimeError("journal is full")

    client, _ = make_client(gateway, on_exchange=[broken])
    with pytest.raises(RuntimeError, match="journal is full"):
        client.auth(**CARD)
    client.remove_exchange_hook(broken)
    assert client.exchange_hooks == ()
    assert client.auth(**CARD).ok


def test_no_exchange_when_nothing_was_sent(gateway):
    seen = []
    client, _ = make_client(gateway, on_exchange=[seen.append])
    with pytest.raises(ValidationError):
        client.auth(pan="1")
    assert seen == [] and gateway.calls == 0


def test_exchanges_mask_whatever_they_are_given():
    exchange = Exchange(
        datetime.now(UTC),
        0.1,
        "http://h",
        "u",
        request={"request": [{"pan": PAN, "cachetoken": "tok"}]},
        response={"response": [{"md": "secret-md"}]},
        error=f"Boom {PAN}",
    )
    text = repr(exchange)
    assert PAN not in text and "tok'" not in text and "secret-md" not in text and MASKED in text


def test_nothing_is_masked_when_nobody_listens(client, monkeypatch):
    calls = []
    import gwkit.client as module

    monkeypatch.setattr(module, "mask_data", lambda data: calls.append(1) or data)
    client.auth(**CARD)
    assert calls == []
