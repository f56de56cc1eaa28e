"""gwkit's own send (gwkit/sending.py): what it keeps of `httpx.Client.send`, sync and async."""

from __future__ import annotations

import asyncio
import base64
import http.server
import threading

import httpx
import pytest

import gwkit
from gwkit.sending import basic_authorization, proxy_for
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
        assert "pässwörd" not in repr(vars(client))
    [request] = gateway.requests
    assert request.headers.get_list("authorization") == [
        "Basic " + base64.b64encode("émile:pässwörd".encode()).decode()
    ]
    assert request.headers["content-length"] == str(len(request.content))
    assert request.headers["host"] == "gateway.test"


class _LoopbackProxy:
    """An HTTP proxy on loopback, for plain http:// targets: it answers each request (sent to it in
    absolute form) with the fake gateway, and remembers the request lines it was sent."""

    def __init__(self, gateway: FakeGateway) -> None:
        lines: list[str] = []

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_POST(self) -> None:
                lines.append(self.requestline)
                body = self.rfile.read(int(self.headers["Content-Length"]))
                answer = gateway(httpx.Request("POST", self.path, headers=dict(self.headers), content=body))
                self.send_response(answer.status_code)
                self.send_header("Content-Length", str(len(answer.content)))
                self.send_header("Set-Cookie", "route=b2; Path=/")
                self.end_headers()
                self.wfile.write(answer.content)

            def log_message(self, *args) -> None:
                pass

        self.lines = lines
        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def __enter__(self) -> _LoopbackProxy:
        self.thread.start()
        return self

    def __exit__(self, *exc_info) -> None:
        self.server.shutdown()
        self.server.server_close()
        self.thread.join()


def test_the_proxy_the_environment_names_gets_the_request_and_its_cookie_is_sent_back(monkeypatch):
    """A proxy from HTTP_PROXY, as httpx.Client would use it: requests go to it in absolute form,
    sync and async, and the cookie it sets comes back on the next request."""
    gateway = FakeGateway()
    with _LoopbackProxy(gateway) as proxy:
        monkeypatch.setenv("HTTP_PROXY", proxy.url)
        monkeypatch.delenv("http_proxy", raising=False)
        monkeypatch.delenv("NO_PROXY", raising=False)
        monkeypatch.delenv("no_proxy", raising=False)
        with gwkit.Client("http://gateway.test", "u", "p", retries=0) as client:
            assert client.auth(**CARD, **SITE).ok
            assert client.auth(**CARD, **SITE).ok

        async def scenario() -> None:
            async with gwkit.AsyncClient("http://gateway.test", "u", "p", retries=0) as client:
                assert (await client.auth(**CARD, **SITE)).ok

        asyncio.run(scenario())
    assert proxy.lines == ["POST http://gateway.test/json/ HTTP/1.1"] * 3
    assert [r.headers.get("cookie") for r in gateway.requests] == [None, "route=b2", None]


@pytest.mark.parametrize(
    ("environment", "url", "expected"),
    [
        ({}, "http://gateway.test/json/", None),
        ({"HTTP_PROXY": "http://proxy:3128"}, "http://gateway.test/json/", "http://proxy:3128"),
        ({"HTTP_PROXY": "proxy:3128"}, "http://gateway.test/json/", "http://proxy:3128"),
        ({"HTTP_PROXY": "http://proxy:3128"}, "https://gateway.test/json/", None),
        ({"HTTPS_PROXY": "http://secure:3128"}, "https://gateway.test/json/", "http://secure:3128"),
        ({"ALL_PROXY": "http://any:3128"}, "https://gateway.test/json/", "http://any:3128"),
        ({"HTTP_PROXY": "http://proxy:3128", "NO_PROXY": "gateway.test"}, "http://gateway.test/json/", None),
        (
            {"HTTP_PROXY": "http://proxy:3128", "NO_PROXY": "other.test"},
            "http://gateway.test/",
            "http://proxy:3128",
        ),
        ({"HTTP_PROXY": "http://proxy:3128", "NO_PROXY": "*"}, "http://gateway.test/json/", None),
    ],
)
def test_the_proxy_for_a_url_is_the_environments(monkeypatch, environment, url, expected):
    for name in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "NO_PROXY"):
        monkeypatch.delenv(name, raising=False)
        monkeypatch.delenv(name.lower(), raising=False)
    for name, value in environment.items():
        monkeypatch.setenv(name, value)
    assert proxy_for(httpx.URL(url)) == expected


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
