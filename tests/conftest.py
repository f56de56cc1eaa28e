"""Shared fixtures.

Widget callbacks: ipywidgets swallows exceptions raised in `on_click` callbacks (it logs them, or
shows them in an Output widget inside a kernel). Tests must fail instead, so every test runs with
the dispatcher re-raising and with GWKIT_RAISE_CALLBACK_ERRORS set, which gwkit's own guarded
callbacks honour after showing the error in the widget.
"""

from __future__ import annotations

import pytest


@pytest.fixture(autouse=True)
def raise_widget_callback_errors(monkeypatch):
    monkeypatch.setenv("GWKIT_RAISE_CALLBACK_ERRORS", "1")
    try:
        from ipywidgets.widgets.widget import CallbackDispatcher
    except ImportError:  # the core client needs no ipywidgets
        yield
        return

    def call_and_raise(self, *args, **kwargs):
        value = None
        for callback in self.callbacks:
            local_value = callback(*args, **kwargs)
            value = local_value if local_value is not None else value
        return value

    monkeypatch.setattr(CallbackDispatcher, "__call__", call_and_raise)
    yield
