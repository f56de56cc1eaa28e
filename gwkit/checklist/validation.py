"""The validation step: every request the application sent during the run passes the interface's
rules (the proxy checks each, as gwkit's client does); each problem named with its field and rule."""

from __future__ import annotations

from collections.abc import Sequence

from ..proxy import ProxyExchange
from .steps import FAIL, NOT_SEEN, PASS, Step, Verdict, register


@register
class Validation(Step):
    name = "validation"
    title = "Validation"
    instruction = "nothing to do: every request your shop sends during the run is checked"
    why = (
        "The gateway refuses an invalid request (30000, naming only the field): a payment that never "
        "happens, or a field it reads other than meant. Each problem here names the field and the rule."
    )
    fault = None

    def judge_run(self, exchanges: Sequence[ProxyExchange]) -> Verdict:
        if not exchanges:
            return Verdict(self.name, self.title, NOT_SEEN, "no request seen during the run", why=self.why)
        wrong = [exchange for exchange in exchanges if exchange.problems]
        if not wrong:
            return Verdict(
                self.name,
                self.title,
                PASS,
                f"all {len(exchanges)} requests pass the interface's rules",
                why=self.why,
            )
        problems = [
            f"#{e.number} {problem.where}: {problem.field}: {problem.rule}"
            for e in wrong
            for problem in e.problems
        ]
        return Verdict(self.name, self.title, FAIL, "; ".join(problems), evidence=tuple(wrong), why=self.why)
