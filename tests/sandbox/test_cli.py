"""`gwkit sandbox` as a real subprocess: what it prints, serving, restarts, Ctrl-C, bad input."""

from __future__ import annotations

import json
import queue
import re
import shutil
import signal
import subprocess
import sys
import threading
import time
from datetime import date, timedelta
from pathlib import Path

import httpx
import pytest

from support.databases import Database
from support.sandbox import VISA, card_auth, monthly_subscription, query_request

pytestmark = pytest.mark.both_stores  # each test on SQLite and on PostgreSQL (`--db` a file or a URL)

GWKIT = Path(sys.executable).with_name("gwkit")
STARTUP_TIMEOUT = 60  # seconds: an upper bound for a slow machine, not a wait


class Running:
    """A `gwkit sandbox` process; its output lines are read by a thread into a queue."""

    def __init__(self, *args: str, cwd: Path):
        self.process = subprocess.Popen(
            [str(GWKIT), "sandbox", *args],
            cwd=cwd,
            text=True,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
        )
        self.lines: queue.Queue[str | None] = queue.Queue()
        self.output: list[str] = []
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        for line in self.process.stdout:
            self.lines.put(line.rstrip("\n"))
        self.lines.put(None)

    def until(self, pattern: str) -> re.Match:
        """Read lines until one matches; fails (never hangs) if the process ends or takes too long."""
        while True:
            try:
                line = self.lines.get(timeout=STARTUP_TIMEOUT)
            except queue.Empty:
                pytest.fail(f"no line matching {pattern!r} within {STARTUP_TIMEOUT}s: {self.output}")
            if line is None:
                pytest.fail(f"gwkit sandbox ended before printing {pattern!r}: {self.output}")
            self.output.append(line)
            match = re.search(pattern, line)
            if match:
                return match

    def banner(self) -> dict[str, str]:
        """The base URL and the first account printed; every account is in `self.accounts`."""
        url = self.until(r"listening on (http://\S+)").group(1)
        start = len(self.output)
        self.until("Press Ctrl-C to stop")
        printed = "\n".join(self.output[start:])
        self.accounts = [
            {
                "url": url,
                "user": user,
                "password": password,
                "site": sites.split(", ")[0],
                "sites": sites.split(", "),
            }
            for user, password, sites in re.findall(
                r"user name:\s+(\S+)\n\s+password:\s+(.+)\n\s+site references:\s+(.+)", printed
            )
        ]
        assert self.accounts, printed
        return self.accounts[0]

    def stop(self, sig: int = signal.SIGINT) -> tuple[int, str]:
        self.process.send_signal(sig)
        code = self.process.wait(timeout=STARTUP_TIMEOUT)
        while (line := self.lines.get(timeout=STARTUP_TIMEOUT)) is not None:
            self.output.append(line)
        return code, "\n".join(self.output)

    def kill(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait()


@pytest.fixture
def run(tmp_path):
    started: list[Running] = []

    def run_(*args: str) -> Running:
        started.append(Running(*args, cwd=tmp_path))
        return started[-1]

    yield run_
    for running in started:
        running.kill()


def nothing_made(db_path) -> bool:
    """No database file, or no table in the PostgreSQL schema: refused before the store was opened."""
    if isinstance(db_path, Path):
        return not db_path.exists()
    return Database(db_path).tables() == []


def auth(banner: dict[str, str], **fields: str) -> dict:
    response = httpx.post(
        f"{banner['url']}/json/",
        auth=(banner["user"], banner["password"]),
        json={
            "alias": banner["user"],
            "version": "1.00",
            "request": [card_auth(**{"sitereference": banner["site"], **fields})],
        },
    )
    assert response.status_code == 200
    return response.json()["response"][0]


def test_serves_prints_credentials_and_stops_cleanly_on_ctrl_c(run, db_path):
    sandbox = run("--port", "0", "--db", str(db_path))
    banner = sandbox.banner()
    assert re.fullmatch(r"http://127\.0\.0\.1:\d+", banner["url"])
    assert (banner["user"], banner["password"], banner["sites"]) == (
        "gwkit_sandbox",
        "gwkit-sandbox-password",
        ["test_gwkit12345"],
    )
    assert len(sandbox.accounts) == 1
    record = auth(banner, orderreference="from-cli")
    assert record["errorcode"] == "0" and record["maskedpan"] == "411111######1111"
    code, output = sandbox.stop(signal.SIGINT)
    assert code == 0
    assert "gwkit sandbox stopped." in output
    assert re.search(r"process \d+: \d+ write transactions waited [\d.]+ s in all for their turn", output)
    assert "Traceback" not in output and VISA not in output


def test_a_new_user_pays_with_curl_restarts_and_finds_the_payment(run, db_path):
    db = str(db_path)
    first = run("--port", "0", "--db", db)
    banner = first.banner()
    body = json.dumps(
        {
            "alias": banner["user"],
            "version": "1.00",
            "request": [
                {
                    "requesttypedescriptions": ["AUTH"],
                    "sitereference": banner["site"],
                    "accounttypedescription": "ECOM",
                    "currencyiso3a": "GBP",
                    "baseamount": "1050",
                    "orderreference": "curl-order",
                    "pan": "4111111111111111",
                    "expirydate": "12/2030",
                    "securitycode": "123",
                }
            ],
        }
    )
    if shutil.which("curl"):
        out = subprocess.run(
            [
                "curl",
                "-sS",
                "--max-time",
                "30",
                "-u",
                f"{banner['user']}:{banner['password']}",
                "-H",
                "Content-Type: application/json",
                "-H",
                "Accept: application/json",
                "-d",
                body,
                f"{banner['url']}/json/",
            ],
            capture_output=True,
            text=True,
            check=True,
        )
        answer = out.stdout
    else:  # pragma: no cover - no curl on this machine: the same bytes with httpx
        answer = httpx.post(
            f"{banner['url']}/json/",
            content=body,
            auth=(banner["user"], banner["password"]),
            headers={"content-type": "application/json"},
        ).text
    reference = httpx.Response(200, content=answer).json()["response"][0]["transactionreference"]
    assert first.stop(signal.SIGTERM)[0] == 0  # SIGTERM stops cleanly too

    second = run("--port", "0", "--db", db)
    banner = second.banner()
    response = httpx.post(
        f"{banner['url']}/json/",
        auth=(banner["user"], banner["password"]),
        json={"request": [query_request(orderreference="curl-order")]},
    )
    (found,) = response.json()["response"][0]["records"]
    assert found["transactionreference"] == reference and found["errorcode"] == "0"
    assert second.stop()[0] == 0


def test_accounts_file_users_are_printed_without_passwords_and_served(run, tmp_path, db_path):
    accounts = tmp_path / "accounts.toml"
    accounts.write_text(
        '[[account]]\nusername = "alice"\npassword = "a-pass"\n'
        'sitereferences = ["test_alice1", "test_alice2"]\n'
        '[[account]]\nusername = "bob"\npassword = "b-pass"\nsitereferences = ["test_bob1"]\n'
    )
    sandbox = run("--port", "0", "--db", str(db_path), "--accounts", str(accounts))
    alice = sandbox.banner()
    assert alice["user"] == "alice" and alice["sites"] == ["test_alice1", "test_alice2"]
    bob = sandbox.accounts[1]
    assert (bob["user"], bob["sites"]) == ("bob", ["test_bob1"])
    printed = "\n".join(sandbox.output)
    assert "a-pass" not in printed and "b-pass" not in printed  # the output may go to a system journal
    assert f"password:         (as in {accounts})" in printed
    alice["password"], bob["password"] = "a-pass", "b-pass"
    assert auth(bob)["errorcode"] == "0"
    assert auth(alice, sitereference="test_alice2")["errorcode"] == "0"
    assert auth(bob, sitereference="test_alice1")["errordata"] == ["sitereference"]
    assert sandbox.stop()[0] == 0


@pytest.mark.parametrize(
    "text, expected",
    [
        (
            '[[account]]\nusername = "alice"\npassword = "p"\nsitereferences = ["bad site!"]\n',
            "[[account]] number 1 ('alice'): sitereferences: 'bad site!'",
        ),
        ('[[account]]\nusername = "alice"\nsitereferences = ["test_a"]\n', "('alice'): password must be"),
        ("[[account]\n", "not valid TOML"),
    ],
)
def test_a_bad_accounts_file_is_a_clear_error_naming_the_entry(tmp_path, db_path, text, expected):
    accounts = tmp_path / "accounts.toml"
    accounts.write_text(text)
    result = subprocess.run(
        [str(GWKIT), "sandbox", "--port", "0", "--db", str(db_path), "--accounts", str(accounts)],
        capture_output=True,
        text=True,
        timeout=STARTUP_TIMEOUT,
    )
    assert result.returncode == 2
    assert result.stderr.startswith("gwkit sandbox: ")
    assert expected in result.stderr and str(accounts) in result.stderr
    assert "Traceback" not in result.stderr and nothing_made(db_path)


def test_a_missing_accounts_file_and_a_busy_port_are_clear_errors(run, tmp_path, db_path):
    result = subprocess.run(
        [str(GWKIT), "sandbox", "--port", "0", "--accounts", str(tmp_path / "none.toml")],
        capture_output=True,
        text=True,
        timeout=STARTUP_TIMEOUT,
        cwd=tmp_path,
    )
    assert result.returncode == 2 and "none.toml" in result.stderr and "Traceback" not in result.stderr
    sandbox = run("--port", "0", "--db", str(db_path))
    port = sandbox.banner()["url"].rsplit(":", 1)[1]
    busy = subprocess.run(
        [str(GWKIT), "sandbox", "--port", port, "--db", str(db_path)],
        capture_output=True,
        text=True,
        timeout=STARTUP_TIMEOUT,
        cwd=tmp_path,
    )
    assert busy.returncode == 1 and f"cannot listen on 127.0.0.1:{port}" in busy.stderr
    assert sandbox.stop()[0] == 0


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT], ids=["SIGTERM", "Ctrl-C"])
def test_a_stop_signal_during_a_long_clock_move_stops_the_server_and_keeps_the_days_it_ran(
    run, db_path, store_kind, sig
):
    sandbox = run("--port", "0", "--db", str(db_path))
    banner = sandbox.banner()
    database = Database(db_path)
    start = database.value("SELECT value FROM meta WHERE key = 'clock'")
    # A payment due every day: a move skips the days with no work, and this one must be long.
    begins = (date.fromisoformat(start[:10]) + timedelta(days=1)).isoformat()
    daily = {**monthly_subscription(begins, finalnumber=0), "subscriptionunit": "DAY"}
    subscribed = httpx.post(
        f"{banner['url']}/json/",
        json={"alias": banner["user"], "version": "1.00", "request": [daily]},
        auth=(banner["user"], banner["password"]),
        timeout=STARTUP_TIMEOUT,
    )
    assert [r["errorcode"] for r in subscribed.json()["response"]] == ["0", "0"], subscribed.text

    def advance() -> None:  # its answer is not awaited: the server stops under it
        try:
            httpx.post(
                f"{banner['url']}/_sandbox/clock/advance",
                json={"by": "P10Y"},
                headers={"content-type": "application/json"},
                auth=(banner["user"], banner["password"]),
                timeout=STARTUP_TIMEOUT,
            )
        except httpx.HTTPError:
            pass

    threading.Thread(target=advance, daemon=True).start()
    days = int(
        sandbox.until(r"running the daily jobs for (\d+) days").group(1)
    )  # logged as the long run starts
    assert days >= 3652  # ten years of days
    # Stopped once some days are committed (each job's mark goes in with them), however busy the machine.
    committed_by = time.monotonic() + STARTUP_TIMEOUT
    while not database.rows("SELECT job FROM site_jobs") and time.monotonic() < committed_by:
        threading.Event().wait(0.02)
    code, output = sandbox.stop(sig)

    assert code == 0 and "gwkit sandbox stopped." in output
    assert "daily jobs stopped before" in output and "Traceback" not in output
    if store_kind == "sqlite":  # the file opens again, whole (PostgreSQL has no file of its own to check)
        assert database.rows("PRAGMA integrity_check") == [("ok",)]
    clocks = dict(database.rows("SELECT sitereference, now FROM site_clocks"))  # with the days that ran
    ran = database.rows("SELECT sitereference, job, through FROM site_jobs")
    assert clocks and all(now[:4] == str(int(start[:4]) + 10) for now in clocks.values())  # the move was made
    # Stopped part way: each job is through a day between the start and the target (the rest runs at
    # the next start), and every day it ran is committed.
    assert ran and all(start[:10] <= through < clocks[site_][:10] for site_, _job, through in ran), (
        start,
        ran,
    )


@pytest.mark.parametrize(
    "option, value",
    [
        ("--max-connections", "0"),
        ("--keep-alive", "-1"),
        ("--header-timeout", "soon"),
        ("--threads", "0"),
        ("--delayed-per-site", "0"),
    ],
)
def test_a_bad_limit_is_a_clear_error_naming_the_option(db_path, option, value):
    result = subprocess.run(
        [str(GWKIT), "sandbox", "--port", "0", "--db", str(db_path), option, value],
        capture_output=True,
        text=True,
        timeout=STARTUP_TIMEOUT,
    )
    assert result.returncode == 2 and option in result.stderr and "Traceback" not in result.stderr
    assert nothing_made(db_path)
