"""Layouts and styles shared by the widgets that look alike.

Every ipywidgets widget brings its own Layout and, most of them, its own style, and each of those is a
widget too, with its own message to the browser: a form of 24 fields was about 500 widgets, most of
the time it took to appear. Widgets that look alike share one Layout and one style from here.

Never change a shared Layout or style in place (it would change every widget that shares it): give
the widget a Layout of its own instead.
"""

from __future__ import annotations

from typing import Any, TypeVar

import ipywidgets as widgets

W = TypeVar("W", bound=widgets.Widget)

_SHARED: dict[tuple[Any, ...], widgets.Widget] = {}


def layout(**traits: str) -> widgets.Layout:
    """The Layout every widget with these `traits` shares (`layout()` for the default one)."""
    return shared(widgets.Layout, **traits)


def style(widget_kind: type[widgets.Widget], **traits: Any) -> widgets.Widget:
    """The style every `widget_kind` (widgets.Text, widgets.HTML...) with these `traits` shares."""
    return shared(widget_kind.class_traits()["style"].klass, **traits)


def shared(kind: type[W], **traits: Any) -> W:
    """The one `kind(**traits)` this kernel shares, made again if it was closed (`Widget.close_all()`)."""
    key = (kind, *sorted(traits.items()))
    found = _SHARED.get(key)
    if found is None or found.comm is None:
        found = _SHARED[key] = kind(**traits)
    return found
