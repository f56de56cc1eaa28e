"""AsyncClient's connection pool (gwkit.pooling): httpx's pool, settings and TLS unchanged, whose
check of idle connections polls the socket instead of rebuilding anyio's attribute table."""

from __future__ import annotations

import asyncio
import datetime
import ipaddress
import json
import socket
import ssl

import httpcore
import httpx
import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

import gwkit
import gwkit.sandbox
from gwkit.pooling import AsyncPoolTransport, _readable, default_ssl_context, plain_http_ssl_context

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
    default = httpx.AsyncHTTPTransport()._pool
    for setting in (
        "_max_connections",
        "_max_keepalive_connections",
        "_keepalive_expiry",
        "_http1",
        "_http2",
        "_retries",
        "_socket_options",
    ):
        assert getattr(transport._pool, setting) == getattr(default, setting), setting
    assert transport._pool._ssl_context.verify_mode == ssl.CERT_REQUIRED  # certificates still checked
    asyncio.run(client.aclose())


def test_the_https_clients_gwkit_makes_share_one_tls_context_that_checks_certificates():
    clients = [
        gwkit.Client("https://127.0.0.1:9", "user", "pw"),
        gwkit.Client("https://127.0.0.2:9", "u", "p"),
        gwkit.AsyncClient("https://127.0.0.1:9", "user", "pw"),
    ]
    contexts = {id(client._transport._pool._ssl_context) for client in clients}
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
    contexts = {id(client._transport._pool._ssl_context) for client in clients}
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
            return codes, len(client._transport._pool.connections)

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
        async with httpx.AsyncClient(transport=AsyncPoolTransport()) as client:
            for _ in range(3):
                closed.clear()
                response = await client.get(f"http://127.0.0.1:{port}/")
                statuses.append(response.status_code)
                await closed.wait()  # the server's FIN is in our socket now (loopback delivers at once)
                assert client._transport._pool.connections == []  # seen as closed, dropped, never reused
        server.close()
        await server.wait_closed()
        return statuses

    assert asyncio.run(main()) == [200, 200, 200]
    assert len(served) == 3


@pytest.fixture
def tls_server(tmp_path):
    """A loopback HTTPS server with a self-signed certificate for 127.0.0.1, answering a gateway record."""
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "127.0.0.1")])
    now = datetime.datetime.now(datetime.UTC)
    certificate = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(days=1))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(
            x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]), critical=False
        )
        .sign(key, hashes.SHA256())
    )
    cert_file, key_file = tmp_path / "cert.pem", tmp_path / "key.pem"
    cert_file.write_bytes(certificate.public_bytes(serialization.Encoding.PEM))
    key_file.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
        )
    )
    return cert_file, key_file


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
        async with gwkit.AsyncClient(
            url, "user", "pw", sitereference="test_site12345", transport=AsyncPoolTransport(verify=trusted)
        ) as client:
            first = await client.auth(**CARD)
            second = await client.auth(**CARD)  # over the same TLS connection
            assert len(client._transport._pool.connections) == 1
        async with gwkit.AsyncClient(url, "user", "pw", sitereference="test_site12345") as untrusting:
            with pytest.raises(gwkit.TransportError) as refused:
                await untrusting.auth(**CARD)
        server.close()
        await server.wait_closed()
        return first.record["errorcode"] + second.record["errorcode"], type(refused.value)

    codes, _ = asyncio.run(main())
    assert codes == "00"


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
