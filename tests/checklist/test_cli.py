"""`gwkit checklist` from the command line: bad input named before the run, and --auto running the
shop's own tests (a Python command; a Node shop when node is on the machine) to reports and an
exit status."""

from __future__ import annotations

import io
import shutil
import sys
import textwrap
from pathlib import Path
from xml.etree import ElementTree as ET

import pytest

from gwkit.cli import main

NODE_SHOP = Path(__file__).parent / "node" / "shop_test.mjs"
JAVA_SHOP = Path(__file__).parent / "java" / "Shop.java"


@pytest.fixture(scope="module")
def sandbox_db(tmp_path_factory):
    return tmp_path_factory.mktemp("checklist-cli") / "sandbox.db"  # one sandbox for the module's runs


@pytest.fixture
def files(tmp_path, monkeypatch, sandbox_db):
    monkeypatch.setenv("GWKIT_SANDBOX_DB", str(sandbox_db))
    monkeypatch.setenv("GWKIT_JOURNAL", str(tmp_path / "journal.db"))
    return tmp_path


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        (
            ["--steps", "decline,refund"],
            "--steps: unknown step(s) refund; the steps are decline, soft-decline",
        ),
        (
            ["--upstream", "http://127.0.0.1:9"],
            "--upstream http://127.0.0.1:9: does not answer (ConnectError",
        ),
        (
            ["--junit", "/no/such/folder/r.xml"],
            "report path /no/such/folder/r.xml: its folder /no/such/folder does not exist",
        ),
        (["--html", "."], "report path .: is a folder, name a file"),
        (["--", "true"], "a command after -- runs only with --auto"),
        (
            ["--steps", "decline,notification"],
            "--steps notification: needs --listener URL, your shop's notification listener",
        ),
    ],
)
def test_bad_input_is_named_before_the_run(files, capsys, arguments, message):
    assert main(["checklist", "--port", "0", *arguments]) == 2
    assert message in capsys.readouterr().err


PYTHON_TESTS = """
import os
from gwkit.checklist.shop import ShopSettings, serve_shop

shop = serve_shop(ShopSettings(os.environ["GWKIT_CHECKLIST_URL"], behaviour="{behaviour}"))
for step in ("decline", "bank-error-made"):  # in the checklist's order: no claim needed
    print(step, shop.pay(orderreference=f"py-{{step}}", pan="4000000000000721", expirydate="12/2030",
                         securitycode="123", baseamount="1050", currencyiso3a="GBP"))
shop.stop()
"""


@pytest.mark.parametrize(("behaviour", "status"), [("naive", 1)])  # right, exit 0: the Node shop's test
def test_auto_runs_the_tests_then_writes_the_reports_and_says_how_it_went(files, capsys, behaviour, status):
    script = files / "shop_tests.py"
    script.write_text(textwrap.dedent(PYTHON_TESTS.format(behaviour=behaviour)))
    junit, html, cassette = files / "checklist.xml", files / "checklist.html", files / "session.jsonl"
    arguments = ["--steps", "decline,bank-error-made,validation", "--junit", str(junit), "--html", str(html)]
    arguments += ["--cassette", str(cassette)]

    assert (
        main(["checklist", "--auto", "--port", "0", *arguments, "--", sys.executable, str(script)]) == status
    )

    out = capsys.readouterr().out
    cases = ET.parse(junit).getroot().findall("testcase")
    assert [case.get("name") for case in cases] == [
        "decline: Decline (70000)",
        "bank-error-made: Bank system error, payment made (60010)",
        "validation: Validation",
    ]
    failed = [case.get("name").split(":")[0] for case in cases if case.find("failure") is not None]
    assert failed == ([] if behaviour == "right" else ["decline", "bank-error-made"])
    assert "4000000000000721" not in html.read_text() and "400000######0721" in html.read_text()
    assert f"junit report: {junit}" in out and f"html report: {html}" in out
    recorded = cassette.read_text()
    assert len(recorded.splitlines()) == 4 and "4000000000000721" not in recorded  # 2 payments, each retried


@pytest.mark.skipif(shutil.which("node") is None, reason="node is not on this machine")
@pytest.mark.parametrize(
    ("naive", "status", "failed"), [("0", 0, []), ("1", 1, ["bank-error-made", "dropped-answer"])]
)
def test_a_node_shop_through_auto_claiming_its_steps_in_its_own_order(
    files, capfd, monkeypatch, naive, status, failed
):
    monkeypatch.setenv("NAIVE", naive)
    junit = files / "checklist.xml"
    steps = "decline,bank-error-made,dropped-answer,validation"
    command = ["checklist", "--auto", "--port", "0", "--steps", steps, "--junit", str(junit)]

    assert main([*command, "--", "node", str(NODE_SHOP)]) == status

    out = capfd.readouterr().out
    cases = ET.parse(junit).getroot().findall("testcase")
    assert [case.get("name").split(":")[0] for case in cases if case.find("failure") is not None] == failed
    assert all(case.find("error") is None for case in cases)  # every step saw its payment
    assert "dropped-answer: the shop says 0" in out  # made: found by the query (naive: paid twice)


@pytest.mark.skipif(shutil.which("java") is None, reason="java is not on this machine")
@pytest.mark.parametrize(
    ("naive", "status", "failed"), [("0", 0, []), ("1", 1, ["bank-error-made", "dropped-answer"])]
)
def test_a_java_shop_through_auto_claiming_its_steps_in_its_own_order(
    files, capfd, monkeypatch, naive, status, failed
):
    """The JDK alone: `java Shop.java` runs the one source file, its own JSON reading included."""
    monkeypatch.setenv("NAIVE", naive)
    junit = files / "checklist.xml"
    steps = "decline,bank-error-made,dropped-answer,validation"
    command = ["checklist", "--auto", "--port", "0", "--steps", steps, "--junit", str(junit)]

    assert main([*command, "--", "java", str(JAVA_SHOP)]) == status

    out = capfd.readouterr().out
    cases = ET.parse(junit).getroot().findall("testcase")
    assert [case.get("name").split(":")[0] for case in cases if case.find("failure") is not None] == failed
    assert all(case.find("error") is None for case in cases)  # every step saw its payment
    assert "dropped-answer: the shop says 0" in out  # made: found by the query (naive: paid twice)
    assert "decline: the shop says 70000" in out


def test_the_listener_option_adds_the_notification_steps(files, capsys, monkeypatch):
    monkeypatch.setattr(sys, "stdin", io.StringIO("q\n"))
    listener = "http://127.0.0.1:9/hook"

    assert main(["checklist", "--port", "0", "--listener", listener, "--steps", "notification"]) == 1

    out = capsys.readouterr().out
    assert "  steps:     notification\n" in out
    assert f"  listener:  {listener} (notified of the notification steps' payments)" in out
    assert "URL notification to your listener: NO PAYMENT SEEN" in out


def test_in_the_terminal_enter_moves_on_and_a_step_without_a_payment_says_so(files, capsys, monkeypatch):
    monkeypatch.setattr(sys, "stdin", io.StringIO("\n\n"))

    assert main(["checklist", "--port", "0", "--steps", "decline,soft-decline"]) == 1

    out = capsys.readouterr().out
    assert "Step 1/2: Decline (70000): make one payment in your shop: it will be declined (70000)" in out
    assert out.index("gwkit checklist listening on http://127.0.0.1:") < out.index("Step 1/2")
    assert "Decline (70000): NO PAYMENT SEEN: no payment seen: make one payment in your shop" in out
    assert "Step 2/2: Soft decline (71000)" in out
    assert out.rstrip().endswith("FAILED: 2 steps (2 no payment seen)")
