"""Every error code the sandbox can answer is in the interface's table, with the table's message."""

from __future__ import annotations

import ast
import re
from pathlib import Path

from gwkit.interface.codes import ERROR_CODES

SANDBOX = Path(__file__).resolve().parents[2] / "gwkit" / "sandbox"


def fault_calls() -> list[tuple[str, ast.Call]]:
    calls = []
    for path in sorted(SANDBOX.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Call) and getattr(node.func, "id", None) == "Fault":
                calls.append((f"{path.relative_to(SANDBOX)}:{node.lineno}", node))
    return calls


def test_every_fault_names_a_code_of_the_table_and_writes_no_message():
    calls = fault_calls()
    assert len(calls) > 15
    for where, call in calls:
        code = call.args[0]
        assert isinstance(code, ast.Constant) and code.value in ERROR_CODES, where
        assert not any(isinstance(a, ast.Constant) and isinstance(a.value, str) for a in call.args[1:]), where


def test_records_the_sandbox_writes_carry_codes_of_the_table():
    written = set()
    for path in SANDBOX.rglob("*.py"):
        text = path.read_text(encoding="utf-8")
        written.update(int(c) for c in re.findall(r'"errorcode": "(\d+)"', text))
        written.update(int(c) for c in re.findall(r"message_of\((\d+)\)", text))
    assert {0, 60010, 60022, 70000} <= written
    assert written <= set(ERROR_CODES)
