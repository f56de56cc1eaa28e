"""Reading a widget tree as the user sees it: what is shown right under an input, and every HTML
text of a view."""

from __future__ import annotations

from collections.abc import Iterator

import ipywidgets as widgets


def descendants(root: widgets.Widget) -> Iterator[widgets.Widget]:
    yield root
    if isinstance(root, widgets.Box):
        for child in root.children:
            yield from descendants(child)


def shown_beside(root: widgets.Widget, field_input: widgets.Widget) -> str:
    """The HTML shown right next to `field_input` in `root`: the sibling that follows it in its box
    (its message line), or '' when it has none."""
    for box in descendants(root):
        if isinstance(box, widgets.Box) and field_input in box.children:
            siblings = list(box.children)
            after = siblings[siblings.index(field_input) + 1 :]
            return next((w.value for w in after if isinstance(w, widgets.HTML)), "")
    raise AssertionError(f"{field_input!r} is not shown in {type(root).__name__}")


def all_html(root: widgets.Widget) -> str:
    """Every HTML text of the view, joined."""
    return " ".join(w.value for w in descendants(root) if isinstance(w, widgets.HTML))
