"""AsyncClient's connection pool (gwkit.pooling): an httpcore pool with httpx's settings and TLS, on
httpx's and httpcore's public interfaces, whose check of idle connections polls the socket instead
of rebuilding anyio's attribute table."""

from __future__ import annotations

import asyncio
import contextlib
import json
import socket
import ssl
from collections.abc import AsyncIterator

import httpcore
import httpx
import pytest

import gwkit
import gwkit.sandbox
from gwkit.pooling import (
    DEFAULT_LIMITS,
    AsyncPoolTransport,
    _readable,
    default_ssl_context,
    httpx_error,
    plain_http_ssl_context,
)
from support.upstream import self_signed

CARD = {
    "accounttypedescription": "ECOM",
    "currencyiso3a": "GBP",
    "baseamount": "1050",
    "pan": "4111111111111111",
    "expirydate": "12/2030",
    "securitycode": "123",
}


def test_async_client_uses_the_pool_with_httpx_default_settings():
    client = gwkit.AsyncClient("http://127.0.0.1:9", "user", "pw")
    transport = client._transport
    assert isinstance(transport, AsyncPoolTransport)
    assert isinstance(transport.pool, httpcore.AsyncConnectionPool)
    # httpx's documented defaults: 100 connections, 20 kept alive, each for httpx.Limits()' 5 s
    assert transport.limits == DEFAULT_LIMITS
    assert httpx.Limits(max_connections=100, max_keepalive_connections=20) == DEFAULT_LIMITS
    assert DEFAULT_LIMITS.keepalive_expiry == httpx.Limits().keepalive_expiry == 5.0
    assert transport.ssl_context.verify_mode == ssl.CERT_REQUIRED  # certificates still checked
    asyncio.run(client.aclose())


def test_verify_is_read_as_httpx_reads_it():
    trusted = ssl.create_default_context()
    assert AsyncPoolTransport(verify=trusted).ssl_context is trusted
    assert AsyncPoolTransport().ssl_context is default_ssl_context()
    assert AsyncPoolTransport(verify=True).ssl_context is default_ssl_context()
    unchecked = AsyncPoolTransport(verify=False).ssl_context
    assert unchecked.verify_mode == ssl.CERT_NONE and not unchecked.check_hostname
    with pytest.raises(TypeError, match=r"verify must be an ssl\.SSLContext, True or False"):
        AsyncPoolTransport(verify="/etc/ssl/certs")  # type: ignore[arg-type]


def test_the_https_clients_gwkit_makes_share_one_tls_context_that_checks_certificates():
    clients = [
        gwkit.Client("https://127.0.0.1:9", "user", "pw"),
        gwkit.Client("https://127.0.0.2:9", "u", "p"),
        gwkit.AsyncClient("https://127.0.0.1:9", "user", "pw"),
    ]
    contexts = {id(client._transport._pool._ssl_context) for client in clients[:2]}  # httpx's own transport
    contexts.add(id(clients[2]._transport.ssl_context))
    shared = default_ssl_context()
    assert contexts == {id(shared)}
    assert shared.verify_mode == ssl.CERT_REQUIRED and shared.check_hostname
    assert shared.cert_store_stats()["x509_ca"] > 0
    clients[0].close()
    clients[1].close()
    asyncio.run(clients[2].aclose())


def test_a_plain_http_client_loads_no_authorities_and_its_context_would_fail_closed():
    clients = [
        gwkit.Client("http://127.0.0.1:9", "u", "p"),
        gwkit.AsyncClient("http://127.0.0.1:9", "u", "p"),
    ]
    contexts = {id(clients[0]._transport._pool._ssl_context), id(clients[1]._transport.ssl_context)}
    assert contexts == {id(plain_http_ssl_context())}
    context = plain_http_ssl_context()
    assert context.verify_mode == ssl.CERT_REQUIRED and context.check_hostname
    assert context.cert_store_stats()["x509_ca"] == 0  # trusts no one: a TLS connection would be refused
    clients[0].close()
    asyncio.run(clients[1].aclose())


def test_a_given_transport_is_kept():
    mock = httpx.MockTransport(lambda request: httpx.Response(200))
    client = gwkit.AsyncClient("http://127.0.0.1:9", "user", "pw", transport=mock)
    assert client._transport is mock


def test_an_idle_socket_is_not_readable_until_its_peer_closes_it():
    ours, theirs = socket.socketpair()
    try:
        assert _readable(ours) is False
        theirs.close()
        assert _readable(ours) is True  # the next read would return b"": the connection is over
    finally:
        ours.close()
    assert _readable(ours) is True  # a closed socket is never reused


def test_concurrent_auths_share_a_bounded_set_of_kept_connections(tmp_path):
    handle = gwkit.sandbox.start(tmp_path / "sandbox.db")

    async def main() -> tuple[list[str], int]:
        gate = asyncio.Semaphore(8)
        async with gwkit.AsyncClient(
            handle.base_url, handle.username, handle.password, sitereference=handle.sitereference
        ) as client:

            async def one(i: int) -> str:
                async with gate:
                    return (await client.auth(orderreference=f"pool-{i}", **CARD)).record["errorcode"]

            codes = await asyncio.gather(*(one(i) for i in range(64)))
            return codes, len(client._transport.pool.connections)

    try:
        codes, connections = asyncio.run(main())
    finally:
        handle.stop()
    assert codes == ["0"] * 64
    assert 1 <= connections <= 8


def test_a_connection_the_server_closed_is_replaced_not_reused():
    """The server closes each connection after answering: the pool must see that and open a new one."""
    served = []

    async def main() -> list[int]:
        closed = asyncio.Event()

        async def answer(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            await reader.readuntil(b"\r\n\r\n")
            served.append(1)
            writer.write(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nContent-Type: application/json\r\n\r\n{}")
            await writer.drain()
            writer.close()  # no "Connection: close": only the socket says the connection is over
            await writer.wait_closed()
            closed.set()

        server = await asyncio.start_server(answer, "127.0.0.1", 0)
        port = server.sockets[0].getsockname()[1]
        statuses = []
        transport = AsyncPoolTransport()
        async with httpx.AsyncClient(transport=transport) as client:
            for _ in range(3):
                closed.clear()
                response = await client.get(f"http://127.0.0.1:{port}/")
                statuses.append(response.status_code)
                await closed.wait()  # the server's FIN is in our socket now (loopback delivers at once)
                assert transport.pool.connections == []  # seen as closed, dropped, never reused
        server.close()
        await server.wait_closed()
        return statuses

    assert asyncio.run(main()) == [200, 200, 200]
    assert len(served) == 3


@pytest.fixture
def tls_server(tmp_path):
    """A certificate for 127.0.0.1 signed by its own key, for a loopback HTTPS server: (certificate, key)."""
    return self_signed(tmp_path)


def test_https_through_the_pool_checks_the_certificate(tls_server):
    cert_file, key_file = tls_server
    record = {
        "errorcode": "0",
        "errormessage": "Ok",
        "requesttypedescription": "AUTH",
        "transactionreference": "1-9-1",
    }

    async def main() -> tuple[str, type]:
        server_tls = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        server_tls.load_cert_chain(cert_file, key_file)

        async def answer(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            try:
                while True:
                    head = await reader.readuntil(b"\r\n\r\n")
                    length = int(
                        next(
                            line.split(b":")[1]
                            for line in head.split(b"\r\n")
                            if line.lower().startswith(b"content-length")
                        )
                    )
                    sent = json.loads(await reader.readexactly(length))
                    body = json.dumps(
                        {
                            "requestreference": sent["request"][0]["requestreference"],
                            "version": "1.00",
                            "response": [record],
                        }
                    ).encode()
                    writer.write(
                        b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
                        b"Content-Length: %d\r\n\r\n%s" % (len(body), body)
                    )
                    await writer.drain()
            except (asyncio.IncompleteReadError, asyncio.CancelledError, ConnectionError, ssl.SSLError):
                writer.close()

        server = await asyncio.start_server(answer, "127.0.0.1", 0, ssl=server_tls)
        url = f"https://127.0.0.1:{server.sockets[0].getsockname()[1]}"
        trusted = ssl.create_default_context(cafile=str(cert_file))
        transport = AsyncPoolTransport(verify=trusted)
        async with gwkit.AsyncClient(
            url, "user", "pw", sitereference="test_site12345", transport=transport
        ) as client:
            first = await client.auth(**CARD)
            second = await client.auth(**CARD)  # over the same TLS connection
            assert len(transport.pool.connections) == 1
        async with gwkit.AsyncClient(url, "user", "pw", sitereference="test_site12345") as untrusting:
            with pytest.raises(gwkit.TransportError) as refused:
                await untrusting.auth(**CARD)
        unchecking = AsyncPoolTransport(verify=False)
        async with gwkit.AsyncClient(
            url, "u", "p", sitereference="test_site12345", transport=unchecking
        ) as client:
            third = await client.auth(**CARD)  # verify=False: the self-signed certificate is not checked
        server.close()
        await server.wait_closed()
        codes = first.record["errorcode"] + second.record["errorcode"] + third.record["errorcode"]
        return codes, type(refused.value)

    codes, refused = asyncio.run(main())
    assert codes == "000"
    assert refused is gwkit.ConnectError


def test_the_backend_wraps_every_stream_httpcore_asks_for():
    from gwkit.pooling import _Backend, _Stream

    async def main() -> None:
        server = await asyncio.start_server(lambda r, w: w.close(), "127.0.0.1", 0)
        port = server.sockets[0].getsockname()[1]
        stream = await _Backend().connect_tcp("127.0.0.1", port)
        assert isinstance(stream, _Stream) and isinstance(stream, httpcore.AsyncNetworkStream)
        assert stream.get_extra_info("server_addr") == ("127.0.0.1", port)
        await stream.aclose()
        server.close()
        await server.wait_closed()

    asyncio.run(main())


# -- httpx's behaviour over loopback: errors, timeouts, streamed bodies ------------------------------


@pytest.fixture
def refusing_port():
    """A loopback port bound but not listening: a connection to it is refused at once."""
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    yield sock.getsockname()[1]
    sock.close()


def test_a_refused_connection_is_httpx_connect_error_knowing_its_request(refusing_port):
    async def main() -> tuple[httpx.Request, httpx.ConnectError]:
        request = httpx.Request("POST", f"http://127.0.0.1:{refusing_port}/json/", content=b"{}")
        async with AsyncPoolTransport() as transport:
            with pytest.raises(httpx.ConnectError) as refused:
                await transport.handle_async_request(request)
            assert transport.pool.connections == []
        return request, refused.value

    request, error = asyncio.run(main())
    assert error.request is request
    assert isinstance(error.__cause__, httpcore.ConnectError)


async def failed_auth(port: int, expected: type[gwkit.TransportError], **options) -> tuple[Exception, int]:
    """The error an AsyncClient's AUTH to `port` on loopback raised, and how many attempts it made."""
    attempts: list[gwkit.Exchange] = []
    url = f"http://127.0.0.1:{port}"
    async with gwkit.AsyncClient(url, "user", "pw", sitereference="test_site12345", **options) as client:
        client.add_exchange_hook(attempts.append)
        with pytest.raises(expected) as failed:
            await client.auth(**CARD)
    return failed.value, len(attempts)


def test_a_refused_connection_is_gwkit_connect_error_after_the_retries(refusing_port):
    error, attempts = asyncio.run(failed_auth(refusing_port, gwkit.ConnectError, retries=1))
    assert isinstance(error, gwkit.TransportError)
    assert f"could not connect to http://127.0.0.1:{refusing_port}" in str(error)
    assert "(attempt 2)" in str(error)  # refused before anything was sent, so sent again once
    assert attempts == 2


@pytest.fixture
def silent_server():
    """Run `main(port, accepted)` against a loopback server that accepts connections, reads what
    comes and never answers; `accepted` is set once a connection is in."""

    def run(main):
        async def serve():
            accepted = asyncio.Event()
            held = []

            async def hold(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
                held.append(writer)
                accepted.set()
                await reader.read()  # until the client hangs up

            server = await asyncio.start_server(hold, "127.0.0.1", 0)
            try:
                return await main(server.sockets[0].getsockname()[1], accepted)
            finally:
                for writer in held:
                    writer.close()
                server.close()
                await server.wait_closed()

        return asyncio.run(serve())

    return run


def test_a_server_that_never_answers_is_a_read_timeout(silent_server):
    async def main(port: int, accepted: asyncio.Event) -> httpx.ReadTimeout:
        transport = AsyncPoolTransport()
        async with httpx.AsyncClient(transport=transport, timeout=httpx.Timeout(5.0, read=0.05)) as client:
            with pytest.raises(httpx.ReadTimeout) as timed_out:
                await client.post(f"http://127.0.0.1:{port}/json/", content=b"{}")
            assert accepted.is_set()
            assert transport.pool.connections == []  # a connection left mid-answer is not kept
        return timed_out.value

    error = silent_server(main)
    assert isinstance(error.__cause__, httpcore.ReadTimeout)
    assert error.request.url.path == "/json/"


def test_a_server_that_never_answers_is_a_gwkit_timeout_not_sent_again(silent_server):
    async def main(port: int, accepted: asyncio.Event) -> tuple[Exception, int]:
        return await failed_auth(port, gwkit.RequestTimeoutError, timeout=0.05)

    error, attempts = silent_server(main)
    assert "the request may have been processed, so it was not sent again" in str(error)
    assert attempts == 1


def test_a_request_waiting_for_a_busy_pool_is_a_pool_timeout(silent_server):
    async def main(port: int, accepted: asyncio.Event) -> None:
        transport = AsyncPoolTransport(limits=httpx.Limits(max_connections=1))
        timeout = httpx.Timeout(5.0, pool=0.05)
        async with httpx.AsyncClient(transport=transport, timeout=timeout) as client:
            url = f"http://127.0.0.1:{port}/"
            holding = asyncio.create_task(client.post(url, content=b"first"))
            await accepted.wait()  # the pool's one connection is taken by a request never answered
            with pytest.raises(httpx.PoolTimeout) as waited:
                await client.post(url, content=b"second")
            assert waited.value.request.content == b"second"
            holding.cancel()
            with pytest.raises(asyncio.CancelledError):
                await holding

    silent_server(main)


@contextlib.asynccontextmanager
async def keep_alive_server(answer: bytes) -> AsyncIterator[tuple[str, list[asyncio.StreamWriter]]]:
    """A loopback server giving `answer` to every request on a connection until the client hangs up:
    its URL and the connections it was given."""
    connections = []

    async def serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        connections.append(writer)
        try:
            while True:
                await reader.readuntil(b"\r\n\r\n")
                writer.write(answer)
                await writer.drain()
        except (asyncio.IncompleteReadError, ConnectionError):
            writer.close()

    server = await asyncio.start_server(serve, "127.0.0.1", 0)
    try:
        yield f"http://127.0.0.1:{server.sockets[0].getsockname()[1]}/", connections
    finally:
        server.close()
        await server.wait_closed()


def test_the_limits_given_bound_the_connections_opened():
    async def main() -> tuple[list[int], int]:
        async with keep_alive_server(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok") as (url, connections):
            transport = AsyncPoolTransport(limits=httpx.Limits(max_connections=2))
            async with httpx.AsyncClient(transport=transport) as client:
                responses = await asyncio.gather(*(client.get(url) for _ in range(8)))
        return [response.status_code for response in responses], len(connections)

    statuses, connections = asyncio.run(main())
    assert statuses == [200] * 8
    assert 1 <= connections <= 2  # httpx's default of 100 would have opened one per request


def test_a_streamed_body_is_read_whole_and_its_connection_goes_back_to_the_pool():
    chunks = [b"x" * 1000, b"y" * 70_000, b"z" * 5]
    answer = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
    answer += b"".join(b"%x\r\n%s\r\n" % (len(chunk), chunk) for chunk in chunks) + b"0\r\n\r\n"

    async def main() -> int:
        async with keep_alive_server(answer) as (url, connections):
            transport = AsyncPoolTransport()
            async with httpx.AsyncClient(transport=transport) as client:
                for _ in range(2):
                    async with client.stream("GET", url) as response:
                        [connection] = transport.pool.connections
                        assert not connection.is_idle()  # the body is still coming on it
                        parts = [part async for part in response.aiter_raw()]
                    assert b"".join(parts) == b"".join(chunks)
                    [connection] = transport.pool.connections
                    assert connection.is_idle() and connection.is_available()
        return len(connections)

    assert asyncio.run(main()) == 1  # the second request went over the connection given back


def test_a_body_cut_short_is_an_httpx_remote_protocol_error():
    async def main() -> httpx.RemoteProtocolError:
        async def answer(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            await reader.readuntil(b"\r\n\r\n")
            writer.write(b"HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\nonly ten b")
            await writer.drain()
            writer.close()

        server = await asyncio.start_server(answer, "127.0.0.1", 0)
        url = f"http://127.0.0.1:{server.sockets[0].getsockname()[1]}/"
        transport = AsyncPoolTransport()
        async with httpx.AsyncClient(transport=transport) as client:
            with pytest.raises(httpx.RemoteProtocolError) as cut:
                await client.get(url)
            assert transport.pool.connections == []
        server.close()
        await server.wait_closed()
        return cut.value

    error = asyncio.run(main())
    assert isinstance(error.__cause__, httpcore.RemoteProtocolError)
    assert error.request.method == "GET"


HTTPCORE_TO_HTTPX = [
    (httpcore.ConnectTimeout, httpx.ConnectTimeout),
    (httpcore.ReadTimeout, httpx.ReadTimeout),
    (httpcore.WriteTimeout, httpx.WriteTimeout),
    (httpcore.PoolTimeout, httpx.PoolTimeout),
    (httpcore.TimeoutException, httpx.TimeoutException),
    (httpcore.ConnectError, httpx.ConnectError),
    (httpcore.ReadError, httpx.ReadError),
    (httpcore.WriteError, httpx.WriteError),
    (httpcore.NetworkError, httpx.NetworkError),
    (httpcore.LocalProtocolError, httpx.LocalProtocolError),
    (httpcore.RemoteProtocolError, httpx.RemoteProtocolError),
    (httpcore.ProtocolError, httpx.ProtocolError),
    (httpcore.ProxyError, httpx.ProxyError),
    (httpcore.UnsupportedProtocol, httpx.UnsupportedProtocol),
]


@pytest.mark.parametrize(("raised", "expected"), HTTPCORE_TO_HTTPX, ids=lambda cls: cls.__name__)
def test_each_httpcore_error_becomes_the_nearest_httpx_error_with_its_request(raised, expected):
    request = httpx.Request("POST", "http://127.0.0.1:9/json/")
    error = httpx_error(raised("what happened"), request)
    assert type(error) is expected
    assert str(error) == "what happened"
    assert error.request is request


def test_every_httpcore_error_is_in_the_table():
    """All but ConnectionNotAvailable, which a connection raises to its own pool (it then tries the
    request on another connection) and never leaves the pool, as in httpx's own table."""
    public = {
        value
        for value in vars(httpcore).values()
        if isinstance(value, type)
        and issubclass(value, Exception)
        and value.__module__.startswith("httpcore")
    }
    assert public - {httpcore.ConnectionNotAvailable} == {raised for raised, _ in HTTPCORE_TO_HTTPX}


def test_an_error_not_from_httpcore_is_left_as_it_is():
    request = httpx.Request("GET", "http://127.0.0.1:9/")
    assert httpx_error(ValueError("no"), request) is None

    class Refusing(httpcore.AsyncConnectionPool):
        async def handle_async_request(self, request: httpcore.Request) -> httpcore.Response:
            raise ValueError("not an httpcore error")

    async def main() -> None:
        transport = AsyncPoolTransport()
        transport.pool = Refusing()
        with pytest.raises(ValueError, match="not an httpcore error"):
            await transport.handle_async_request(request)

    asyncio.run(main())
