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
    """`table` (the connection's HTML), `reset_button` ("Reset this notebook's sandbox": deletes
    every transaction, card, subscription and token; the clock stays) and `status`."""

    def __init__(self, connection: Any):  # a gwkit.connect.Connection
        super().__init__()
        self.connection = connection
        self.table = widgets.HTML(connection._repr_html_())
        self.status = widgets.HTML()
        self.reset_button = button(
            "Reset this notebook's sandbox" if connection.notebook else "Reset the sandbox",
            kind="danger",
            icon="trash",
            tooltip="Delete every transaction, card, subscription and token of this sandbox (the clock stays)",
        )
        self.reset_button.on_click(guarded(self.reset, self.status, context="resetting the sandbox"))
        controls = [widgets.HBox([self.reset_button, self.status])] if connection.sandbox is not None else []
        self.children = [self.table, *controls]
        self.add_class("gwkit-connection-view")

    def reset(self, _button: Any = None) -> None:
        sandbox = self.connection.sandbox
        if sandbox is None:
            raise RuntimeError("a real gateway cannot be reset; only the sandbox can")
        sandbox.reset()
        self.table.value = self.connection._repr_html_()
        self.status.value = (
            f"<span class='gwkit-ok'>Reset: no transactions left; the clock stays at "
            f"{sandbox.now():%Y-%m-%d %H:%M:%S}.</span>"
        )


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
