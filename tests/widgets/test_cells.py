"""Work put off until the running notebook cell finishes: once per key, at once outside a cell."""

from __future__ import annotations

import IPython
import pytest

from gwkit.widgets import cells


class FakeEvents:
    def __init__(self) -> None:
        self.callbacks: dict[str, list] = {}

    def register(self, event: str, callback) -> None:
        self.callbacks.setdefault(event, []).append(callback)

    def trigger(self, event: str) -> None:
        for callback in self.callbacks.get(event, []):
            callback(None)


class FakeShell:
    def __init__(self) -> None:
        self.events = FakeEvents()


@pytest.fixture
def shell(monkeypatch):
    fake = FakeShell()
    monkeypatch.setattr(IPython, "get_ipython", lambda: fake)
    monkeypatch.setattr(cells, "_state", {"in_cell": False, "hooked": None})
    monkeypatch.setattr(cells, "_pending", {})
    return fake


def test_outside_ipython_the_action_runs_at_once(monkeypatch):
    monkeypatch.setattr(IPython, "get_ipython", lambda: None)
    ran = []
    cells.after_this_cell("key", lambda: ran.append(1))
    assert ran == [1]


def test_in_a_cell_the_last_action_of_a_key_runs_once_when_the_cell_finishes(shell):
    ran = []
    cells.after_this_cell("warm-up", lambda: None)  # the shell is followed from here on
    shell.events.trigger("post_run_cell")
    shell.events.trigger("pre_run_cell")
    for n in range(3):
        cells.after_this_cell("panel", lambda n=n: ran.append(n))
    cells.after_this_cell("other", lambda: ran.append("other"))
    assert ran == []
    shell.events.trigger("post_run_cell")
    assert sorted(ran, key=str) == [2, "other"]


def test_between_cells_a_widget_callback_runs_at_once_and_a_cancelled_action_never(shell):
    ran = []
    cells.after_this_cell("warm-up", lambda: None)
    shell.events.trigger("post_run_cell")
    cells.after_this_cell("button", lambda: ran.append("button"))  # no cell runs: a button's callback
    assert ran == ["button"]
    shell.events.trigger("pre_run_cell")
    cells.after_this_cell("closed", lambda: ran.append("closed"))
    cells.cancel("closed")
    shell.events.trigger("post_run_cell")
    assert ran == ["button"]
