"""Work put off until the running notebook cell has finished.

A panel that redraws whenever data changes would redraw once per request while a cell sends a
hundred of them (each redraw queries the gateway and renders its tables); the reader only sees
the last drawing. `after_this_cell(key, action)` runs `action` once when the cell finishes, however
often it is asked during the cell; outside a running cell (a button's callback, a plain script,
a test) it runs at once.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable
from typing import Any

_pending: dict[Hashable, Callable[[], Any]] = {}
_state = {"in_cell": False, "hooked": None}


def after_this_cell(key: Hashable, action: Callable[[], Any]) -> None:
    """Run `action` when the running cell finishes (the last one asked for under `key`), or now."""
    if not _hooked() or not _state["in_cell"]:
        action()
        return
    _pending[key] = action


def cancel(key: Hashable) -> None:
    """Forget what was put off under `key` (a panel closed before its cell finished)."""
    _pending.pop(key, None)


def _hooked() -> bool:
    """Follow the cells of the IPython kernel this runs in, if any (once)."""
    try:
        from IPython import get_ipython
    except ImportError:  # pragma: no cover - IPython comes with ipywidgets
        return False
    shell = get_ipython()
    if shell is None:
        return False
    if _state["hooked"] is not shell:
        shell.events.register("pre_run_cell", _cell_started)
        shell.events.register("post_run_cell", _cell_finished)
        _state["hooked"] = shell
        _state["in_cell"] = True  # registered from inside a cell: this one is running
    return True


def _cell_started(*_info: Any) -> None:
    _state["in_cell"] = True


def _cell_finished(*_info: Any) -> None:
    _state["in_cell"] = False
    while _pending:
        _, action = _pending.popitem()
        action()


_hooked()  # gwkit.widgets is imported from a cell: from then on the cells are followed
