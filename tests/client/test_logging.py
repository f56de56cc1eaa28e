"""Logging: requests and responses at DEBUG, failures at WARNING, always masked."""

from __future__ import annotations

import io
import logging
import subprocess
import sys

import httpx
import pytest

import gwkit.log
from gwkit import ConnectError
from support.fakes import CARD, MASKED, PAN, SECURITYCODE, FakeGateway, make_client


@pytest.fixture(autouse=True)
def restore_logging():
    yield
    gwkit.log.disable()


def test_requests_and_responses_are_logged_at_debug_masked(caplog):
    caplog.set_level(logging.DEBUG, logger="gwkit")
    client, _gateway = make_client()
    response = client.auth(**CARD)
    messages = [r.getMessage() for r in caplog.records if r.name == "gwkit"]
    assert len(messages) == 2
    request_line, response_line = messages
    assert request_line.startswith("request AUTH " + response.requestreference)
    assert MASKED in request_line and '"securitycode": "[redacted]"' in request_line
    assert response_line.startswith("response AUTH " + response.requestreference + ": HTTP 200")
    assert all(r.levelno == logging.DEBUG for r in caplog.records)
    everything = caplog.text + "\n".join(messages)
    assert PAN not in everything
    assert f'"securitycode": "{SECURITYCODE}"' not in everything


def test_cachetokens_and_3ds_secrets_in_responses_are_redacted(caplog):
    caplog.set_level(logging.DEBUG, logger="gwkit")
    gateway = FakeGateway(
        records=[
            {
                "requesttypedescription": "CACHETOKENISE",
                "errorcode": "0",
                "cachetoken": "tok-abc-123",
                "md": "md-xyz",
            }
        ]
    )
    client, _ = make_client(gateway)
    client.cachetokenise(pan=PAN, expirymonth="12", expiryyear="2030", securitycode=SECURITYCODE)
    assert "tok-abc-123" not in caplog.text and "md-xyz" not in caplog.text and PAN not in caplog.text


def test_failures_are_logged_at_warning(caplog):
    caplog.set_level(logging.WARNING, logger="gwkit")
    gateway = FakeGateway(errors=[httpx.ConnectError("refused")] * 3)
    client, _ = make_client(gateway, retries=1)
    with pytest.raises(ConnectError):
        client.auth(**CARD)
    warnings = [r for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warnings) == 2
    assert "retrying" in warnings[0].getMessage() and "retrying" not in warnings[1].getMessage()
    assert "ConnectError" in warnings[1].getMessage() and "attempt 2" in warnings[1].getMessage()
    assert PAN not in caplog.text


def test_format_errors_are_logged_with_masked_excerpts(caplog):
    caplog.set_level(logging.DEBUG, logger="gwkit")
    client, _ = make_client(FakeGateway(body=f"oops {PAN}".encode()))
    with pytest.raises(gwkit.ResponseFormatError):
        client.auth(**CARD)
    [warning] = [r for r in caplog.records if r.levelno == logging.WARNING]
    assert MASKED in warning.getMessage() and PAN not in caplog.text


def test_success_logs_nothing_at_warning(caplog):
    caplog.set_level(logging.WARNING, logger="gwkit")
    client, _ = make_client()
    client.auth(**CARD)
    assert caplog.records == []


def test_enable_sends_the_log_to_a_handler_and_masks_any_message():
    stream = io.StringIO()
    handler = gwkit.log.enable("DEBUG", logging.StreamHandler(stream))
    assert handler in logging.getLogger("gwkit").handlers
    client, _ = make_client()
    client.auth(**CARD)
    logging.getLogger("gwkit.sandbox").info("stored card %s", PAN)  # any gwkit logger, any message
    text = stream.getvalue()
    assert "DEBUG gwkit: request AUTH" in text and MASKED in text and PAN not in text
    assert "stored card 411111######1111" in text


QUIET_SCRIPT = """
import httpx, gwkit
def dropped(request):
    raise httpx.ReadError("dropped")
client = gwkit.Client("http://gateway.test", "u", "p", transport=httpx.MockTransport(dropped))
try:
    client.send({"requesttypedescriptions": ["TRANSACTIONQUERY"], "filter": {}})
except gwkit.TransportError:
    print("raised")
"""


def test_quiet_until_configured():
    # In a fresh interpreter: pytest's own log capture would hide Python's last-resort handler.
    result = subprocess.run([sys.executable, "-c", QUIET_SCRIPT], capture_output=True, text=True, timeout=60)
    assert result.stdout.strip() == "raised"
    assert result.stderr == ""


def test_enable_again_replaces_the_handler_and_disable_removes_it():
    first = gwkit.log.enable()
    second = gwkit.log.enable("WARNING", logging.StreamHandler(io.StringIO()))
    logger = logging.getLogger("gwkit")
    assert first not in logger.handlers and second in logger.handlers
    assert logger.level == logging.WARNING
    gwkit.log.disable()
    assert second not in logger.handlers and logger.level == logging.NOTSET
