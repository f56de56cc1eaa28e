"""Every error code the sandbox can answer is in the interface's table, with the table's message,
its published meaning and what a merchant should do.

It reads the sandbox's sources and starts no sandbox: there is no store to run it on, so it is not
marked `both_stores`."""

from __future__ import annotations

import ast
import re
from pathlib import Path

from gwkit.interface.codes import ERROR_CODES, explain
from gwkit.interface.faults import SOFT_DECLINE, UNKNOWN_OUTCOME_CODES
from gwkit.sandbox.gateway.acquirer import TEST_AMOUNTS

SANDBOX = Path(__file__).resolve().parents[2] / "gwkit" / "sandbox"


def fault_calls() -> list[tuple[str, ast.Call]]:
    calls = []
    for path in sorted(SANDBOX.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Call) and getattr(node.func, "id", None) == "Refusal":
                calls.append((f"{path.relative_to(SANDBOX)}:{node.lineno}", node))
    return calls


def codes_the_sandbox_can_answer() -> set[int]:
    """Every code in the sandbox's sources: raised (Refusal(N)), written in a record ("errorcode": "N"),
    looked up (message_of(N)), answered for a test amount, or injectable as a gateway-error fault."""
    codes = {call.args[0].value for _, call in fault_calls() if isinstance(call.args[0], ast.Constant)}
    for path in SANDBOX.rglob("*.py"):
        text = path.read_text(encoding="utf-8")
        codes.update(int(c) for c in re.findall(r'"errorcode": "(\d+)"', text))
        codes.update(int(c) for c in re.findall(r"message_of\((\d+)\)", text))
    codes.update(TEST_AMOUNTS.values())
    codes.update((*UNKNOWN_OUTCOME_CODES, SOFT_DECLINE))
    return codes


def test_every_fault_names_a_code_of_the_table_and_writes_no_message():
    calls = fault_calls()
    assert len(calls) > 15
    for where, call in calls:
        code = call.args[0]
        assert isinstance(code, ast.Constant) and code.value in ERROR_CODES, where
        assert not any(isinstance(a, ast.Constant) and isinstance(a.value, str) for a in call.args[1:]), where


def test_every_code_the_sandbox_can_answer_is_in_the_table():
    codes = codes_the_sandbox_can_answer()
    # what the gateway answers today, at least: the scan must keep finding them
    assert {
        0,
        10205,
        20004,
        20019,
        20032,
        30000,
        60010,
        60013,
        60017,
        60018,
        60019,
        60022,
        60031,
        60034,
        70000,
        71000,
        99999,
    } <= codes
    missing = sorted(codes - set(ERROR_CODES))
    assert not missing, f"codes the sandbox can answer but the table lacks: {missing}"


def test_each_code_the_sandbox_answers_says_what_it_means_and_what_to_do():
    for code in codes_the_sandbox_can_answer():
        entry = ERROR_CODES[code]
        assert entry.message and entry.meaning and entry.action, code
        assert explain(str(code)) is entry


def test_the_unknown_outcome_codes_are_marked_so():
    assert {c for c, e in ERROR_CODES.items() if e.unknown_outcome} == {60010, 60034, 99999}
    assert not ERROR_CODES[71000].unknown_outcome  # a soft decline is known: nothing was taken
