"""`gwkit proxy` as a real subprocess: its banner, a line per problem and per exchange, --strict,
--faults, the journal and cassette it writes, and a clean stop on Ctrl-C."""

from __future__ import annotations

import json
import os
import queue
import re
import signal
import socket
import sqlite3
import subprocess
import sys
import threading
from pathlib import Path

import httpx
import pytest

from support.upstream import RecordingGateway, self_signed, tls_context

GWKIT = Path(sys.executable).with_name("gwkit")
STARTUP_TIMEOUT = 60  # seconds: an upper bound for a slow machine, not a wait
PASSWORD, PAN = "pw-cli-Zq8x", "4111111111111111"


class Running:
    """A `gwkit proxy` process; its output lines are read by a thread into a queue."""

    def __init__(self, *args: str, cwd: Path, env: dict[str, str] | None = None):
        self.process = subprocess.Popen(
            [str(GWKIT), "proxy", *args],
            cwd=cwd,
            text=True,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            env={**os.environ, **(env or {})},
        )
        self.lines: queue.Queue[str | None] = queue.Queue()
        self.output: list[str] = []
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        for line in self.process.stdout:
            self.lines.put(line.rstrip("\n"))
        self.lines.put(None)

    def until(self, pattern: str) -> re.Match:
        while True:
            try:
                line = self.lines.get(timeout=STARTUP_TIMEOUT)
            except queue.Empty:
                pytest.fail(f"no line matching {pattern!r} within {STARTUP_TIMEOUT}s: {self.output}")
            if line is None:
                pytest.fail(f"gwkit proxy ended before printing {pattern!r}: {self.output}")
            self.output.append(line)
            if match := re.search(pattern, line):
                return match

    def stop(self) -> tuple[int, str]:
        self.process.send_signal(signal.SIGINT)
        code = self.process.wait(timeout=STARTUP_TIMEOUT)
        while (line := self.lines.get(timeout=STARTUP_TIMEOUT)) is not None:
            self.output.append(line)
        return code, "\n".join(self.output)


def running_url(running: Running) -> str:
    url = running.until(r"listening on (http://\S+)").group(1)
    running.until("Press Ctrl-C to stop")
    return url


def post(url: str, **fields: str) -> httpx.Response:
    request = {
        "requesttypedescriptions": ["AUTH"],
        "sitereference": "merchant_site_1",
        "accounttypedescription": "ECOM",
        "currencyiso3a": "GBP",
        "baseamount": "1050",
        "pan": PAN,
        "expirydate": "12/2030",
        "securitycode": "739",
        **fields,
    }
    envelope = {"alias": "shop", "version": "1.00", "request": [request]}
    return httpx.post(f"{url}/json/", auth=("shop", PASSWORD), json=envelope, timeout=STARTUP_TIMEOUT)


def test_the_proxy_command_validates_faults_records_and_stops_cleanly(tmp_path):
    faults = tmp_path / "faults.json"
    faults.write_text(
        json.dumps([{"kind": "gateway_error", "code": 60034, "requesttypes": ["ACCOUNTCHECK"]}])
    )
    running = Running(
        "--port", "0", "--db", "sandbox.db", "--journal", "journal.db", "--cassette", "session.jsonl",
        "--strict", "--faults", str(faults),
        cwd=tmp_path,
    )  # fmt: skip
    try:
        forwards = r"\(it forwards POST /json/ and the sandbox's /_sandbox/ control API\)"
        url = running.until(r"listening on (http://\S+) " + forwards).group(1)
        running.until("Press Ctrl-C to stop")

        first = post(url).json()["response"]
        assert first[0]["errorcode"] == "0"
        running.until(r"#1 AUTH -> 200 0 in [\d.]+ ms$")
        refused = post(url, expirydate="13/2030").json()["response"][0]
        assert (refused["errorcode"], refused["errordata"]) == ("30000", ["expirydate"])
        running.until(r"#2 request.0 AUTH problem: expirydate: ")
        running.until(r"#2 AUTH -> 200 30000 .*\[answered by the proxy\] \[1 problem\]")
        faulted = post(url, requesttypedescriptions=["ACCOUNTCHECK"]).json()["response"][0]
        assert faulted["errorcode"] == "60034"
        running.until(r"#3 ACCOUNTCHECK -> 200 60034 .*\[fault: gateway_error\]")
        assert httpx.get(f"{url}/js/v3/st.js").status_code == 404
    finally:
        code, output = running.stop()
    assert code == 0 and output.endswith("gwkit proxy stopped.")
    assert PASSWORD not in output and PAN not in output

    recorded = (tmp_path / "session.jsonl").read_text()
    assert len(recorded.splitlines()) == 3 and PAN not in recorded and PASSWORD not in recorded
    replaying = Running(
        "--port", "0", "--upstream", "cassette:session.jsonl", "--journal", "replay.db", cwd=tmp_path
    )
    try:
        url = running_url(replaying)
        assert post(url).json()["response"] == first  # the sandbox is gone: the cassette answers
        replaying.until(r"#1 AUTH -> 200 0 ")
    finally:
        replaying.stop()
        journal = sqlite3.connect(tmp_path / "journal.db")
    assert journal.execute("SELECT kind, errorcode FROM exchanges ORDER BY id").fetchall() == [
        ("proxy", "0"),
        ("proxy", "30000"),
        ("proxy", "60034"),
    ]


def test_a_busy_port_is_a_clear_error(tmp_path):
    with socket.socket() as holder:
        holder.bind(("127.0.0.1", 0))
        holder.listen()
        port = holder.getsockname()[1]
        result = subprocess.run(
            [str(GWKIT), "proxy", "--port", str(port), "--upstream", "https://gateway.example"],
            cwd=tmp_path,
            capture_output=True,
            text=True,
            timeout=STARTUP_TIMEOUT,
            check=False,
        )
    assert result.returncode == 1
    assert f"cannot listen on 127.0.0.1:{port}" in result.stderr


def test_an_https_upstream_with_ca_and_drift_against_the_shadow_sandbox(tmp_path):
    cert, key = self_signed(tmp_path)
    gateway = RecordingGateway(tls=tls_context(cert, key))  # answers every request with one bare record
    temporary = tmp_path / "tmp"  # where the shadow sandbox lives for the run
    temporary.mkdir()
    running = Running(
        "--port",
        "0",
        "--upstream",
        gateway.base_url,
        "--ca",
        str(cert),
        "--journal",
        "j.db",
        cwd=tmp_path,
        env={"TMPDIR": str(temporary)},
    )
    try:
        url = running.until(r"listening on (http://\S+)").group(1)
        running.until(r"drift: +each answer compared with a shadow sandbox's")
        (shadow,) = temporary.iterdir()
        assert shadow.name.startswith("gwkit-shadow-")
        assert post(url).json()["response"][0]["errorcode"] == "0"
        (received,) = gateway.received
        assert httpx.BasicAuth("shop", PASSWORD)._auth_header == received.headers["authorization"]
        line = running.until(r"#1 AUTH -> 200 0 .*\[drift: ").string
        assert "only in the shadow sandbox" in line  # the stand-in's record lacks what a payment has
        # more drift than the line shows: all of it is in the journal, and the line says how to see it
        more = re.search(r"and (\d+) more: gwkit proxy --show-drift (\d+)\]", line)
        assert more is not None, line
        assert not [p for p in shadow.rglob("*") if p.name.endswith(".key")]  # its key is not beside it
    finally:
        code, output = running.stop()
        gateway.stop()
    assert code == 0 and PASSWORD not in output and PAN not in output
    assert list(temporary.iterdir()) == []  # the shadow's files are gone with the run

    shown = subprocess.run(
        [str(GWKIT), "proxy", "--journal", "j.db", "--show-drift", more.group(2)],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=STARTUP_TIMEOUT,
        check=True,
    ).stdout.splitlines()
    assert shown[0].startswith(f"journal entry {more.group(2)} (")
    assert len(shown[1:]) == 2 + int(more.group(1))  # every line, the two the summary showed first
    assert all(drift in line for drift in (s.strip() for s in shown[1:3]))
    everything = subprocess.run(
        [str(GWKIT), "proxy", "--journal", "j.db", "--show-drift"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=STARTUP_TIMEOUT,
        check=True,
    ).stdout.splitlines()
    assert everything == shown
