"""A step of the checklist, its verdict, and the register of steps.

A step is a small object: what to tell the person (`instruction`), the outcome to arm for the next
payment (`fault`: the sandbox's fault JSON, acted on by the proxy), and how to judge the exchanges
of that payment (`judge`). A step judged over the whole run instead (validation) has no fault and
judges every exchange (`judge_run`). Adding a step is a new module that calls `register`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

from ..errors import GwkitError
from ..proxy import ProxyExchange
from .payments import Payment, PaymentKey

PASS, FAIL, WARNING, NOT_SEEN = "pass", "fail", "warning", "no payment seen"


class ChecklistError(GwkitError):
    """A checklist that cannot run as asked: an unknown step, a step claimed twice, a report path
    that cannot be written, an upstream that does not answer. The message says which and why."""


@dataclass(frozen=True)
class Verdict:
    """What a step concluded: `status` (pass, fail, warning, "no payment seen"), the reason in
    words, the exchanges that show it, and the key the payment was known by (None: advisory)."""

    step: str
    title: str
    status: str
    reason: str
    key: PaymentKey | None = None
    evidence: tuple[ProxyExchange, ...] = ()
    advisory: bool = False
    why: str = ""

    @property
    def passed(self) -> bool:
        return self.status in (PASS, WARNING)

    @property
    def required_failed(self) -> bool:
        """Does this verdict fail the run? A failure or a step never exercised, unless advisory."""
        return not self.advisory and self.status in (FAIL, NOT_SEEN)

    @property
    def keyed_by(self) -> str:
        if self.key is None:
            return "no key (no orderreference, nor card, amount and currency): advisory"
        return f"by {self.key}"

    def explain(self) -> str:
        """The verdict in a few lines, with its evidence (masked), for a terminal or a test's message."""
        lines = [
            f"{self.title}: {self.status.upper()}{' (advisory)' if self.advisory else ''}: {self.reason}"
        ]
        if self.key is not None or self.advisory:
            lines.append(f"  payment known {self.keyed_by}")
        lines += [f"  {exchange.summary()}" for exchange in self.evidence]
        return "\n".join(lines)

    def as_dict(self) -> dict[str, Any]:
        return {
            "step": self.step,
            "title": self.title,
            "status": self.status,
            "reason": self.reason,
            "key": None if self.key is None else {"kind": self.key.kind, "value": self.key.value},
            "advisory": self.advisory,
            "evidence": [exchange.number for exchange in self.evidence],
        }


@dataclass
class Step:
    """One outcome of the checklist. Subclasses set the class attributes and `judge`."""

    name: ClassVar[str]
    title: ClassVar[str]
    instruction: ClassVar[str]  # what the person does: "make one payment in your shop: ..."
    why: ClassVar[str]  # why the outcome matters: money, liability, the customer
    fault: ClassVar[dict[str, Any] | None] = None  # armed for the next AUTH; None: judged over the run
    needs_listener: ClassVar[bool] = False  # a URL notification step: runs only given the shop's listener
    off_by_default: ClassVar[bool] = False  # runs only when named (3-D Secure version 1)
    listener: str | None = None  # the shop's notification listener (`--listener URL`)
    listener_password: str | None = None  # the password it checks signatures with

    @property
    def per_payment(self) -> bool:
        return self.fault is not None or self.needs_listener

    @property
    def rule_password(self) -> str | None:
        """The password a URL notification step's rule signs with: the listener's own."""
        return self.listener_password

    def judge(self, payment: Payment) -> Verdict:
        """The verdict on the payment this step armed (its exchanges, gathered by its key)."""
        raise NotImplementedError

    def judge_run(self, exchanges: Sequence[ProxyExchange]) -> Verdict:
        """For a step with no fault: the verdict on every exchange of the run."""
        raise NotImplementedError

    def verdict(
        self, status: str, reason: str, payment: Payment | None = None, evidence: Any = None
    ) -> Verdict:
        key = payment.key if payment is not None else None
        shown = tuple(evidence if evidence is not None else (payment.exchanges if payment else ()))
        return Verdict(
            self.name,
            self.title,
            status,
            reason,
            key,
            shown,
            advisory=payment is not None and key is None,
            why=self.why,
        )

    def not_seen(self, reason: str = "") -> Verdict:
        return Verdict(
            self.name, self.title, NOT_SEEN, reason or f"no payment seen: {self.instruction}", why=self.why
        )


REGISTER: dict[str, type[Step]] = {}  # in the order steps run by default


def register(step: type[Step]) -> type[Step]:
    """Add a step to the register (a class decorator)."""
    REGISTER[step.name] = step
    return step


def steps_named(
    names: Sequence[str] | None = None, *, listener: str | None = None, listener_password: str | None = None
) -> list[Step]:
    """The steps to run, in the register's order: all of them (the URL notification steps only given
    the shop's `listener`; those off by default only when named), or those named (`--steps`)."""
    if names is None:
        chosen = [
            step
            for step in REGISTER.values()
            if not step.off_by_default and (listener is not None or not step.needs_listener)
        ]
    else:
        unknown = [name for name in names if name not in REGISTER]
        if unknown:
            raise ChecklistError(
                f"--steps: unknown step(s) {', '.join(unknown)}; the steps are {', '.join(REGISTER)}"
            )
        if not names:
            raise ChecklistError(f"--steps: name at least one step of {', '.join(REGISTER)}")
        chosen = [step for name, step in REGISTER.items() if name in names]
        deaf = [step.name for step in chosen if step.needs_listener and listener is None]
        if deaf:
            raise ChecklistError(
                f"--steps {', '.join(deaf)}: needs --listener URL, your shop's notification listener"
            )
    return [step(listener=listener, listener_password=listener_password) for step in chosen]
