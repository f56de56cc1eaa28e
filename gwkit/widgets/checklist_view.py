"""`ChecklistView`: a checklist run (`gwkit checklist`), live, in a notebook.

Each step with its state (waiting, watching, then its verdict in words), the chosen verdict with
the reason, why it matters and its exchanges (request and answer, masked, in the columns of the
proxy's own view), and any of those exchanges as code (`gwkit.codegen`, as the proxy's view copies
a row). Two buttons send the run's explicit signals: judge the current step, finish the run.

The view holds no logic of its own: it reads the run (`gwkit.checklist.Checklist`, or the handle
`checklist.start` returns) and follows its proxy's exchanges. The widgets layer sits below the
checklist, so the run is described here by what the view reads of it (`ChecklistRun`), not imported.
"""

from __future__ import annotations

import html
import json
import threading
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Protocol

import ipywidgets as widgets
import pandas as pd

from ..codegen import STYLES, as_code
from .guard import guarded
from .style import button, table_html

# A verdict's status in words, as the view shows it (an advisory verdict says so first).
VERDICT_WORDS = {
    "pass": "passed",
    "fail": "failed",
    "warning": "warning",
    "no payment seen": "no payment seen",
}
WAITING, WATCHING = "waiting", "watching"
ALWAYS_SHOWN = ("#", "request", "gateway's answer")  # an exchange's columns shown even when empty
WRAPPED = "<style>table.gwkit-table.gwkit-checklist-steps td { white-space: normal; }</style>"  # a reason is a sentence


class ChecklistRun(Protocol):
    """What the view reads of a run (`gwkit.checklist.Checklist` is one)."""

    verdicts: Mapping[str, Any]  # step name -> Verdict: status, reason, why, key, evidence, advisory
    proxy: Any  # the proxy it runs on: `on_exchange(listener)`

    def status(self) -> dict[str, Any]: ...

    def next(self) -> Any: ...

    def finish(self) -> Any: ...


def state_words(status: Mapping[str, Any], verdict: Any | None) -> str:
    """A step's state as the table shows it: waiting, watching, or its verdict in words."""
    if verdict is not None:
        words = VERDICT_WORDS.get(verdict.status, verdict.status)
        return f"advisory ({words})" if verdict.advisory else words
    return WATCHING if status["current"] == status["step"] else WAITING


def key_words(key: Any | None) -> str:
    """The key a payment was known by, as a person reads it: `orderreference order-7`."""
    return "" if key is None else f"{key.kind} {key.value}"


class ChecklistView(widgets.VBox):
    """The live view of a checklist run: `ChecklistView(handle)` (code is then written against the
    checklist's base URL), or `ChecklistView(checklist, base_url=...)`."""

    def __init__(self, run: Any, *, base_url: str | None = None):
        self.run: ChecklistRun = getattr(run, "checklist", run)
        self._refreshing = threading.RLock()
        self.base_url = base_url or getattr(run, "base_url", None)
        self.now = widgets.HTML()
        self.table = widgets.HTML()
        self.next_button = button("Judge this step, arm the next", "primary")
        self.finish_button = button("Finish the run")
        self.step = widgets.Dropdown(options=[], description="Verdict")
        self.verdict = widgets.HTML()
        self.evidence = widgets.HTML()
        self.exchange = widgets.Dropdown(options=[], description="Exchange #")
        self.exchange_shown = widgets.HTML()
        self.style = widgets.Dropdown(options=list(STYLES), value="gwkit", description="As")
        self.code = widgets.Textarea(layout=widgets.Layout(width="100%", height="14em"))
        self.error = widgets.HTML()
        self.next_button.on_click(guarded(lambda _: self._signal(self.run.next), self.error))
        self.finish_button.on_click(guarded(lambda _: self._signal(self.run.finish), self.error))
        self.step.observe(guarded(lambda change: self._show_verdict(), self.error), names="value")
        for control in (self.exchange, self.style):
            control.observe(guarded(lambda change: self._show_exchange(), self.error), names="value")
        super().__init__(
            [
                self.now,
                self.table,
                widgets.HBox([self.next_button, self.finish_button]),
                self.step,
                self.verdict,
                self.evidence,
                widgets.HBox([self.exchange, self.style]),
                self.exchange_shown,
                self.code,
                self.error,
            ]
        )
        self.add_class("gwkit-checklist-view")
        if self.run.proxy is not None:
            self.run.proxy.on_exchange(guarded(lambda exchange: self.refresh(), self.error))
        self.refresh()

    def states(self) -> dict[str, str]:
        """Each step's state in words, by step name, in the run's order."""
        return {row["step"]: state_words(row, self.run.verdicts.get(row["step"])) for row in self._rows()}

    def frame(self) -> pd.DataFrame:
        """The steps as the table shows them."""
        rows = []
        for row in self._rows():
            verdict = self.run.verdicts.get(row["step"])
            rows.append(
                {
                    "step": row["title"],
                    "state": state_words(row, verdict),
                    "why": verdict.reason if verdict is not None else "",
                }
            )
        return pd.DataFrame(rows)

    def refresh(self) -> None:
        """Show the run as it is now (the view calls it on each exchange, from the proxy's thread, and
        after each button): one refresh at a time, so the last one shows the latest state."""
        with self._refreshing:
            self._refresh()

    def _refresh(self) -> None:
        status = self.run.status()
        self.now.value = f"<div>{self._now_html(status)}</div>"  # one block, wherever it is drawn
        self.table.value = WRAPPED + table_html(
            self.frame(), "This run has no steps.", css_class="gwkit-checklist-steps"
        )
        judged = [(row["title"], row["step"]) for row in status["steps"] if row["step"] in self.run.verdicts]
        if list(self.step.options) != judged:
            chosen = self.step.value
            names = [name for _, name in judged]
            self.step.options = judged
            self.step.value = chosen if chosen in names else (names[-1] if names else None)
        self._show_verdict()
        self.next_button.disabled = self.finish_button.disabled = status["finished"]

    def _rows(self) -> list[dict[str, Any]]:
        """The run's steps, each with the name of the step being watched (`current`)."""
        status = self.run.status()
        return [row | {"current": status["current"]} for row in status["steps"]]

    def _signal(self, act: Callable[[], Any]) -> None:
        act()
        self.refresh()

    def _now_html(self, status: Mapping[str, Any]) -> str:
        if status["finished"]:
            mishandled = [v for v in self.run.verdicts.values() if v.required_failed]
            said = (
                "every outcome handled"
                if not mishandled
                else f"{len(mishandled)} of {len(status['steps'])} steps failed the run"
            )
            return f"<b>The run has finished:</b> {html.escape(said)}."
        if status["current"] is None:
            return "<b>Every payment step has been run:</b> finish the run to judge the rest."
        title = next(row["title"] for row in status["steps"] if row["step"] == status["current"])
        return f"<b>Watching: {html.escape(title)}.</b> {html.escape(_sentence(status['instruction']))}"

    def _chosen_verdict(self) -> Any | None:
        return self.run.verdicts.get(self.step.value) if self.step.value else None

    def _show_verdict(self) -> None:
        verdict = self._chosen_verdict()
        if verdict is None:
            self.verdict.value = "<i class='gwkit-placeholder'>No step judged yet.</i>"
            self.evidence.value = ""
            self.exchange.options = []
            self._show_exchange()
            return
        state = state_words({"step": verdict.step, "current": None}, verdict)
        lines = [f"<b>{html.escape(verdict.title)}: {html.escape(state)}</b>: {html.escape(verdict.reason)}"]
        if verdict.key is not None:
            lines.append(f"The payment was known by its {html.escape(key_words(verdict.key))}.")
        elif verdict.advisory:
            lines.append(f"The payment was known by {html.escape(verdict.keyed_by)}.")
        if verdict.why:
            lines.append(f"Why it matters: {html.escape(verdict.why)}")
        self.verdict.value = "".join(f"<div>{line}</div>" for line in lines)
        evidence = list(verdict.evidence)
        self.evidence.value = table_html(_evidence_frame(evidence), "No exchanges: nothing to show.")
        numbers = [e.number for e in evidence]
        if list(self.exchange.options) != numbers:
            self.exchange.options = numbers
            self.exchange.value = numbers[0] if numbers else None
        self._show_exchange()

    def _chosen_exchange(self) -> Any | None:
        verdict = self._chosen_verdict()
        evidence: Sequence[Any] = verdict.evidence if verdict is not None else ()
        return next((e for e in evidence if e.number == self.exchange.value), None)

    def _show_exchange(self) -> None:
        chosen = self._chosen_exchange()
        if chosen is None:
            self.exchange_shown.value = ""
            self.code.value = ""
            return
        self.exchange_shown.value = _request_and_answer_html(chosen)
        base = self.base_url or "http://127.0.0.1/"
        self.code.value = as_code(chosen.exchange, self.style.value, base_url=base)


def _evidence_frame(evidence: Sequence[Any]) -> pd.DataFrame:
    """The exchanges in the proxy view's columns, less those empty for all of them (no drift...)."""
    frame = pd.DataFrame([e.as_people_row() for e in evidence]).astype(str)
    kept = [column for column in frame.columns if column in ALWAYS_SHOWN or (frame[column] != "").any()]
    return frame[kept]


def _request_and_answer_html(exchange: Any) -> str:
    """The exchange's request and answer side by side, as kept: masked (a card as 400000######0721)."""
    answer: Any = exchange.response
    if answer is None and exchange.answer_body:
        answer = exchange.answer_body.decode("utf-8", "replace")  # a 5xx page, not JSON
    elif answer is None:
        answer = exchange.exchange.error or "no answer"
    panes = [("Request (masked)", exchange.request), ("Answer", answer)]
    shown = "".join(
        f"<div style='flex:1;min-width:0'><b>{title}</b><pre style='white-space:pre-wrap;font-size:85%'>"
        f"{html.escape(_as_text(value), quote=False)}</pre></div>"
        for title, value in panes
    )
    return f"<div style='display:flex;gap:1em'>{shown}</div>"


def _as_text(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value, indent=1, ensure_ascii=False)


def _sentence(text: str | None) -> str:
    said = (text or "").strip()
    return f"{said[:1].upper()}{said[1:]}{'' if said.endswith('.') else '.'}" if said else ""
