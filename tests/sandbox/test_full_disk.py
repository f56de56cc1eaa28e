"""A full disk: every `/json/` answer is a 200 (99999 for what could not be kept), the server log
names the cause under each answer's reference, and nothing committed is lost.

The disk fills for real: the sandbox runs as `gwkit sandbox` in a process whose files may not grow
past a size (RLIMIT_FSIZE, SIGXFSZ ignored), so SQLite's writes fail as on a full disk, in single
commits and in the group commit of concurrent requests alike. Then the limit is lifted (prlimit)
and the sandbox goes on. SQLite only: a PostgreSQL server's disk is its own process's.
"""

from __future__ import annotations

import asyncio
import re
import resource
import signal
import subprocess
import sys
import threading
from pathlib import Path

import httpx
import pytest

import gwkit.sandbox
from support.databases import Database
from support.sandbox import DEFAULT_PASSWORD, DEFAULT_USERNAME, card_auth

ROUNDS, TOGETHER = 60, 16  # at most 60 rounds of 16 concurrent AUTHs to fill 64 KiB
HEADROOM = 64 * 1024


class LimitedSandbox:
    """`gwkit sandbox` whose files cannot grow past `limit` bytes, until `lift()`."""

    def __init__(self, db: Path, limit: int):
        limited = (  # set in the child itself: preexec_fn is unsafe in a process with threads
            "import resource, signal, sys\n"
            "signal.signal(signal.SIGXFSZ, signal.SIG_IGN)\n"
            f"resource.setrlimit(resource.RLIMIT_FSIZE, ({limit}, resource.RLIM_INFINITY))\n"
            "from gwkit.cli import main\n"
            f"sys.exit(main(['sandbox', '--port', '0', '--db', {str(db)!r}]))\n"
        )
        self.process = subprocess.Popen(
            [sys.executable, "-c", limited], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
        )
        self.output: list[str] = []
        for line in self.process.stdout:
            self.output.append(line)
            if "Press Ctrl-C" in line:
                break
        self.url = re.search(r"listening on (\S+)", "".join(self.output)).group(1)
        self._reader = threading.Thread(target=lambda: self.output.extend(self.process.stdout), daemon=True)
        self._reader.start()

    def lift(self) -> None:
        resource.prlimit(self.process.pid, resource.RLIMIT_FSIZE, (resource.RLIM_INFINITY,) * 2)

    def stop(self) -> str:
        self.process.send_signal(signal.SIGINT)
        self.process.wait(timeout=60)
        self._reader.join(timeout=60)
        return "".join(self.output)


async def round_of_auths(url: str, name: str) -> list[tuple[str, httpx.Response]]:
    orders = [f"{name}-{i}" for i in range(TOGETHER)]
    async with httpx.AsyncClient(
        base_url=url, auth=(DEFAULT_USERNAME, DEFAULT_PASSWORD), timeout=60
    ) as client:
        body = {"alias": DEFAULT_USERNAME, "version": "1.00"}
        answers = await asyncio.gather(
            *(client.post("/json/", json={**body, "request": [card_auth(orderreference=o)]}) for o in orders)
        )
    return list(zip(orders, answers, strict=True))


@pytest.mark.skipif(sys.platform != "linux", reason="RLIMIT_FSIZE and prlimit as on Linux")
def test_a_full_disk_answers_99999_in_a_200_logs_the_cause_and_loses_nothing(tmp_path):
    db = tmp_path / "sandbox.db"
    gwkit.sandbox.Sandbox(db).close()  # the schema and the card key, made unhindered
    sandbox = LimitedSandbox(db, limit=db.stat().st_size + HEADROOM)
    answered: dict[str, dict] = {}
    try:
        for number in range(ROUNDS):
            for order, response in asyncio.run(round_of_auths(sandbox.url, f"full-{number}")):
                assert response.status_code == 200, response.text  # never a 500
                answered[order] = response.json()["response"][0]
            if any(record["errorcode"] == "99999" for record in answered.values()):
                break
        failed = [record for record in answered.values() if record["errorcode"] == "99999"]
        assert failed, "the disk never filled"
        sandbox.lift()  # space again: the sandbox goes on, nothing left half-open
        after = asyncio.run(round_of_auths(sandbox.url, "after"))
        assert {response.json()["response"][0]["errorcode"] for _, response in after} == {"0"}
        answered.update({order: response.json()["response"][0] for order, response in after})
    finally:
        log = sandbox.stop()
    for record in failed:  # the cause, under the reference the answer gave
        (reference,) = re.findall(r"E-[A-Z2-9]{8}", record["errordata"][0])
        assert re.search(
            rf"internal error {reference}: OperationalError: (disk I/O error|database or disk is full)", log
        )
    assert {record["errorcode"] for record in answered.values()} == {"0", "99999"}
    kept = [order for (order,) in Database(db).rows("SELECT orderreference FROM transactions")]
    made = [order for order, record in answered.items() if record["errorcode"] == "0"]
    assert sorted(kept) == sorted(made)  # every payment answered 0 is kept, once; no 99999 one is
