"""Ambiguous framing (RFC 9112 section 6.3) is answered once, with 400, and the connection closed:
no request hidden in a body is ever answered. Raw sockets on loopback, a real server."""

from __future__ import annotations

import base64
import socket

import pytest

import gwkit.sandbox

SMUGGLED = b"GET /_sandbox/health HTTP/1.1\r\nHost: x\r\n\r\n"
CHUNKS = b"0\r\n\r\n" + SMUGGLED  # a chunked body of nothing, then the hidden request


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    handle = gwkit.sandbox.start(tmp_path_factory.mktemp("framing") / "s.db")
    yield handle
    handle.stop()


def exchange(server, raw: bytes) -> bytes:
    """Send `raw` and read until the server closes the connection (a 10 s guard, never a wait)."""
    host, port = server.base_url.removeprefix("http://").split(":")
    with socket.create_connection((host, int(port)), timeout=10) as sock:
        sock.sendall(raw)
        received = b""
        while chunk := sock.recv(65536):
            received += chunk
    return received


def head(method: str, *headers: str, version: str = "1.1") -> bytes:
    lines = [f"{method} /json/ HTTP/{version}", "Host: x", "Content-Type: application/json", *headers]
    return ("\r\n".join(lines) + "\r\n\r\n").encode()


@pytest.mark.parametrize(
    "raw, rule",
    [
        (head("POST", f"Content-Length: {len(CHUNKS)}", "Transfer-Encoding: chunked") + CHUNKS, "both"),
        (head("POST", "Transfer-Encoding: chunked", "Content-Length: 3") + CHUNKS, "both"),
        (head("POST", "Transfer-Encoding: chunked", "Content-Length: 0") + CHUNKS, "both"),
        (head("POST", "Transfer-Encoding: chunked", version="1.0") + CHUNKS, "HTTP/1.0"),
        # what h11 refuses itself: still one 400 and a close
        (head("POST", "Transfer-Encoding: gzip, chunked") + CHUNKS, None),
        (head("POST", "Transfer-Encoding: chunked", "Transfer-Encoding: chunked") + CHUNKS, None),
        (head("POST", "Transfer-Encoding : chunked") + CHUNKS, None),
        (head("POST", "Content-Length: 5", "Content-Length: 6") + b"{}   " + SMUGGLED, None),
        (head("POST", "Content-Length: +5") + b"{}   " + SMUGGLED, None),
    ],
)
def test_ambiguous_framing_is_one_400_and_a_close(server, raw, rule):
    received = exchange(server, raw)
    assert received.startswith(b"HTTP/1.1 400 ")
    assert received.count(b"HTTP/1.1 ") == 1  # the hidden request was never answered
    assert b"connection: close" in received.lower()
    if rule is not None:
        assert b"RFC 9112 section 6.3" in received and rule.encode() in received


def test_plain_framings_are_still_answered_on_a_kept_alive_connection(server):
    credentials = base64.b64encode(f"{server.username}:{server.password}".encode()).decode()
    body = b'{"request": []}'
    chunked = head("POST", f"Authorization: Basic {credentials}", "Transfer-Encoding: chunked")
    chunked += b"%x\r\n%s\r\n0\r\n\r\n" % (len(body), body)
    sized = head("POST", f"Authorization: Basic {credentials}", f"Content-Length: {len(body)}") + body
    closing = b"GET /_sandbox/health HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"
    received = exchange(server, chunked + sized + closing)
    assert received.count(b"HTTP/1.1 200 OK") == 3
