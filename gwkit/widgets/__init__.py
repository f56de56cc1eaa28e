"""Notebook widgets: forms generated from the spec tables, a response view, the request explorer.

Widgets hold no business logic: a form builds a request object, the client sends it, a view
renders the records. Every callback is `guarded`: an error shows in the widget.
"""

from .actions import Action, follow_ups
from .explorer import RequestExplorer
from .form import RequestForm
from .guard import guarded, show_error
from .inputs import FieldInput
from .response_view import ResponseView

__all__ = ["Action", "FieldInput", "RequestExplorer", "RequestForm", "ResponseView", "follow_ups", "guarded",
           "show_error"]
