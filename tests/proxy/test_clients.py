"""Applications in other languages through the proxy: Node 20 (`fetch`) and Java 17
(`java.net.http.HttpClient`, the JDK alone, run as a single source file). Each sends a valid AUTH
and an invalid one, and checks the answers and the `x-gwkit-problems` header itself
(tests/proxy/clients/). `.ci/run` installs node and a JDK where they are missing."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from gwkit.proxy import SandboxUpstream

CLIENTS = Path(__file__).parent / "clients"
RUN_TIMEOUT = 120  # seconds: an upper bound for a loaded machine (javac runs first), not a wait


def command(program: str, *args: str) -> list[str]:
    found = shutil.which(program)
    if found is None:
        if os.environ.get("CI") == "true":
            pytest.fail(f"{program} is missing: .ci/run installs it")
        pytest.skip(f"{program} is not installed (apt-get install nodejs openjdk-17-jdk-headless)")
    return [found, *args]


@pytest.mark.parametrize("strict", [False, True], ids=["forwarded", "strict"])
@pytest.mark.parametrize(
    "client", [("node", "auth.mjs"), ("java", "Auth.java")], ids=["node-fetch", "java-httpclient"]
)
def test_an_application_in_another_language_gets_its_answers_and_the_problems_header(
    box, run_proxy, client, strict
):
    handle, _ = run_proxy(SandboxUpstream(box), strict=strict)
    result = subprocess.run(
        command(*client),
        cwd=CLIENTS,
        env={**os.environ, "GATEWAY_URL": handle.base_url},
        capture_output=True,
        text=True,
        timeout=RUN_TIMEOUT,
        check=False,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    handle.flush()
    assert [e.exchange.request_types for e in handle.exchanges] == [("AUTH",), ("AUTH",)]
    assert [bool(e.problems) for e in handle.exchanges] == [False, True]
    if client[0] == "node":
        answered = json.loads(result.stdout)
        assert answered["problems"] == [
            {"object": 0, "field": "baseamount", "rule": "Numeric: digits 0-9 only"}
        ]
