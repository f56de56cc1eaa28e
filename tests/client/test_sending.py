"""gwkit's own send (gwkit/sending.py): what it keeps of `httpx.Client.send`, sync and async."""

from __future__ import annotations

import asyncio
import base64

import httpx
import pytest

import gwkit
from gwkit.sending import basic_authorization
from support.fakes import CARD, FakeGateway

SITE = {"sitereference": "test_site12345", "currencyiso3a": "GBP"}


def test_basic_authorization_is_the_header_httpx_makes():
    for username, password in [("u", "p"), ("webservices@example.com", "s3cret!:x"), ("émile", "pässwörd€")]:
        request = httpx.Request("GET", "http://h/")
        flow = httpx.BasicAuth(username, password).sync_auth_flow(request)
        assert basic_authorization(username, password) == next(flow).headers["authorization"]


def test_credentials_go_once_and_only_on_the_request():
    gateway = FakeGateway()
    with gwkit.Client(
        "http://gateway.test", "émile", "pässwörd", transport=httpx.MockTransport(gateway)
    ) as client:
        client.auth(**CARD, **SITE)
        assert "pässwörd" not in repr(client._http.headers) and client._http.auth is None
    [request] = gateway.requests
    assert request.headers.get_list("authorization") == [
        "Basic " + base64.b64encode("émile:pässwörd".encode()).decode()
    ]
    assert request.headers["content-length"] == str(len(request.content))
    assert request.headers["host"] == "gateway.test"


def test_a_mounted_transport_gets_the_request_as_httpx_would_route_it():
    """A proxy is a mount: gwkit's send goes where httpx.Client.send would (the default transport
    otherwise)."""
    default, proxied = FakeGateway(), FakeGateway()
    with gwkit.Client("http://gateway.test", "u", "p", transport=httpx.MockTransport(default)) as client:
        client._http._mounts = {httpx._utils.URLPattern("http://gateway.test"): httpx.MockTransport(proxied)}
        assert client.auth(**CARD, **SITE).ok
    assert (default.calls, proxied.calls) == (0, 1)


class _Stream(httpx.SyncByteStream, httpx.AsyncByteStream):
    """An answer's body that fails half-way (the server went away), and says whether it was closed."""

    def __init__(self) -> None:
        self.closed = False

    def __iter__(self):
        yield b'{"requestreference": '
        raise httpx.RemoteProtocolError("peer closed connection without sending complete message body")

    async def __aiter__(self):
        yield b'{"requestreference": '
        raise httpx.RemoteProtocolError("peer closed connection without sending complete message body")

    def close(self) -> None:
        self.closed = True

    async def aclose(self) -> None:
        self.closed = True


def test_an_answer_cut_short_is_a_transport_error_knowing_its_request_and_its_connection_is_given_back():
    stream = _Stream()
    transport = httpx.MockTransport(lambda request: httpx.Response(200, stream=stream))
    with gwkit.Client("http://gateway.test", "u", "p", transport=transport, retries=0) as client:
        with pytest.raises(gwkit.TransportError) as caught:
            client.auth(**CARD, **SITE)
    cause = caught.value.__cause__
    assert isinstance(cause, httpx.RemoteProtocolError)
    assert cause.request.url == "http://gateway.test/json/"
    assert stream.closed


def test_an_error_raised_without_a_request_gets_the_request_sent():
    def refuse(request: httpx.Request) -> httpx.Response:
        raise httpx.ConnectError("connection refused")  # as httpx's transports raise it: no request

    with gwkit.Client(
        "http://gateway.test", "u", "p", transport=httpx.MockTransport(refuse), retries=0
    ) as client:
        with pytest.raises(gwkit.ConnectError) as caught:
            client.auth(**CARD, **SITE)
    assert caught.value.__cause__.request.method == "POST"


def test_the_async_client_sends_the_same_way():
    gateway, stream = FakeGateway(), _Stream()

    async def scenario() -> None:
        async with gwkit.AsyncClient(
            "http://gateway.test", "u", "p", transport=httpx.MockTransport(gateway)
        ) as client:
            assert (await client.auth(**CARD, **SITE)).ok
        with pytest.raises(RuntimeError, match="closed"):
            await client.auth(**CARD, **SITE)
        cut_short = httpx.MockTransport(lambda request: httpx.Response(200, stream=stream))
        async with gwkit.AsyncClient(
            "http://gateway.test", "u", "p", transport=cut_short, retries=0
        ) as client:
            with pytest.raises(gwkit.TransportError) as caught:
                await client.auth(**CARD, **SITE)
        assert caught.value.__cause__.request.url == "http://gateway.test/json/"

    asyncio.run(scenario())
    [request] = gateway.requests
    assert request.headers.get_list("authorization") == ["Basic " + base64.b64encode(b"u:p").decode()]
    assert stream.closed


def test_an_httpx_without_its_transport_choice_sends_through_its_own_send(monkeypatch):
    gateway = FakeGateway()
    monkeypatch.setattr(gwkit.sending, "ROUTE", "_a_method_this_httpx_lacks")
    with gwkit.Client("http://gateway.test", "u", "p", transport=httpx.MockTransport(gateway)) as client:
        assert client.auth(**CARD, **SITE).ok

    async def scenario() -> None:
        async with gwkit.AsyncClient(
            "http://gateway.test", "u", "p", transport=httpx.MockTransport(gateway)
        ) as client:
            assert (await client.auth(**CARD, **SITE)).ok

    asyncio.run(scenario())
    assert [r.headers.get_list("authorization") for r in gateway.requests] == [
        ["Basic " + base64.b64encode(b"u:p").decode()]
    ] * 2
