"""The connection as a notebook shows it: what it talks to, and for a sandbox a reset button.

    gw = gwkit.connect(notebook="04_subscriptions")
    gw                      # with gwkit.widgets imported, shown as a ConnectionView

`show_connections_as_widgets()` (called when `gwkit.widgets` is imported inside IPython) tells
IPython to display every `Connection` this way; without widgets it shows its plain HTML table.
"""

from __future__ import annotations

from typing import Any

import ipywidgets as widgets
from IPython import get_ipython
from IPython.display import display

from .guard import guarded
from .style import button

# The connection's class, by name: widgets sit below the composition root that defines it.
CONNECTION_CLASS = ("gwkit.connect", "Connection")


class ConnectionView(widgets.VBox):
    """`table` (the connection's HTML) and, for a sandbox, `reset_button`, which asks first: the
    `confirmation` box offers `keep_clock_button` (delete every transaction, card, subscription and
    token; the clock stays, as it only moves forward), `afresh_button` (the same, and the clock back at
    the sandbox's start: the sandbox as it was when it started) and `cancel_button`. `status` says what
    was done."""

    def __init__(self, connection: Any):  # a gwkit.connect.Connection
        super().__init__()
        self.connection = connection
        self.table = widgets.HTML(connection._repr_html_())
        self.status = widgets.HTML()
        whose = "this notebook's sandbox" if connection.notebook else "the sandbox"
        self.reset_button = button(
            f"Reset {whose}…",
            kind="danger",
            icon="trash",
            tooltip=f"Asks first: delete the data of {whose}, with or without its clock",
        )
        self.question = widgets.HTML()
        self.keep_clock_button = button("Delete the data, keep the clock", kind="danger")
        self.afresh_button = button("Start afresh: data and clock", kind="danger")
        self.cancel_button = button("Cancel")
        self.confirmation = widgets.VBox(
            [self.question, widgets.HBox([self.keep_clock_button, self.afresh_button, self.cancel_button])]
        )
        self.confirmation.layout.display = "none"
        self.reset_button.on_click(guarded(self.ask, self.status, context="resetting the sandbox"))
        self.keep_clock_button.on_click(
            guarded(lambda _: self.reset(clock=False), self.status, context="resetting the sandbox")
        )
        self.afresh_button.on_click(
            guarded(lambda _: self.reset(clock=True), self.status, context="resetting the sandbox")
        )
        self.cancel_button.on_click(guarded(self.cancel, self.status, context="resetting the sandbox"))
        controls = (
            [widgets.HBox([self.reset_button, self.status]), self.confirmation]
            if connection.sandbox is not None
            else []
        )
        self.children = [self.table, *controls]
        self.add_class("gwkit-connection-view")

    def ask(self, _button: Any = None) -> None:
        """Show what each choice deletes, with the dates the clock would show after it; nothing yet."""
        sandbox = self._sandbox()
        self.question.value = (
            "<b>Delete every payment, card, subscription and token of this sandbox?</b> This cannot be "
            "undone. <i>Keep the clock</i>: the clock stays at "
            f"{sandbox.now():%Y-%m-%d %H:%M} (it only moves forward). <i>Start afresh</i>: the clock goes "
            f"back to {sandbox.start():%Y-%m-%d %H:%M}, where it stood when the sandbox started."
        )
        self.status.value = ""
        self.confirmation.layout.display = None

    def cancel(self, _button: Any = None) -> None:
        self.confirmation.layout.display = "none"
        self.status.value = "<span>Nothing was deleted.</span>"

    def reset(self, _button: Any = None, *, clock: bool = False) -> None:
        sandbox = self._sandbox()
        sandbox.reset(clock=clock)
        self.confirmation.layout.display = "none"
        self.table.value = self.connection._repr_html_()
        kept = "back at its start," if clock else "stays at"
        self.status.value = (
            f"<span class='gwkit-ok'>Reset: no transactions left; the clock {kept} "
            f"{sandbox.now():%Y-%m-%d %H:%M:%S}.</span>"
        )

    def _sandbox(self) -> Any:
        sandbox = self.connection.sandbox
        if sandbox is None:
            raise RuntimeError("a real gateway cannot be reset; only the sandbox can")
        return sandbox


def show_connections_as_widgets() -> bool:
    """Display every Connection as a ConnectionView in this IPython session (False outside one)."""
    shell = get_ipython()
    if shell is None:
        return False
    formatter = shell.display_formatter.ipython_display_formatter
    formatter.for_type_by_name(*CONNECTION_CLASS, _display_view)
    return True


def _display_view(connection: Any) -> None:
    display(ConnectionView(connection))
