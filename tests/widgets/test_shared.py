"""Widgets that look alike share one Layout and one style: fewer widgets for the browser to make,
and never a closed one handed to a new widget."""

from __future__ import annotations

import ipywidgets as widgets

from gwkit.widgets import RequestForm
from gwkit.widgets.form import field_spec
from gwkit.widgets.inputs import FieldInput
from gwkit.widgets.shared import layout, style


def models_under(root: widgets.Widget) -> set[str]:
    """The model ids the browser must make to show `root`: it, its children, layouts and styles."""
    seen: set[str] = set()
    waiting = [root]
    while waiting:
        widget = waiting.pop()
        if widget.model_id in seen:
            continue
        seen.add(widget.model_id)
        for name in widget.keys:
            value = getattr(widget, name)
            values = value if isinstance(value, (tuple, list)) else (value,)
            waiting += [v for v in values if isinstance(v, widgets.Widget)]
    return seen


def test_inputs_of_one_kind_share_their_layout_and_style():
    pan, expiry = FieldInput("pan", field_spec("pan")), FieldInput("expirydate", field_spec("expirydate"))
    assert pan.widget.layout is expiry.widget.layout
    assert pan.label.layout is expiry.label.layout
    assert pan.label.style is pan.hint.style is expiry.message.style
    assert pan.label.layout is not pan.message.layout  # different looks, different Layouts


def test_a_shared_layout_closed_by_close_all_is_made_again():
    first = layout(width="3em")
    widgets.Widget.close_all()
    second = layout(width="3em")
    assert first.comm is None
    assert second is not first and second.comm is not None
    field = FieldInput("pan", field_spec("pan"))
    assert field.widget.layout.comm is not None and field.widget.style.comm is not None


def test_the_style_is_the_one_the_widget_kind_takes():
    assert isinstance(style(widgets.Text), type(widgets.Text().style))
    assert isinstance(style(widgets.Dropdown), type(widgets.Dropdown().style))


def test_a_form_makes_few_widgets_per_field():
    form = RequestForm("AUTH", "card")
    made = len(models_under(form))
    # each field: its input, label, hint, note, message and two boxes; shared looks come on top once
    assert made <= 8 * len(form.inputs) + 40, made
