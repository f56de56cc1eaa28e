"""Notebook widgets: forms generated from the spec tables, a response view, the request explorer,
the 3-D Secure steppers (v1 and v2), the subscription and card store panels, and the view of a
checklist run.

Widgets hold no business logic: a form builds a request object, the client sends it, a view
renders the records. Every callback is `guarded`: an error shows in the widget.
"""

from .actions import Action, follow_ups
from .cardstore_panel import CardStorePanel
from .checklist_view import ChecklistView
from .connection_view import ConnectionView, show_connections_as_widgets
from .explorer import RequestExplorer
from .faults_panel import FaultsPanel
from .form import RequestForm
from .guard import guarded, show_error
from .inputs import FieldInput
from .notification_panel import NotificationPanel
from .progress import ProgressBar
from .response_view import ResponseView
from .style import button, table_html
from .subscription_panel import SubscriptionPanel
from .threeds_stepper import ThreeDSecureStepper
from .threeds_v2_stepper import ThreeDSecureV2Stepper

__all__ = [
    "Action",
    "CardStorePanel",
    "ChecklistView",
    "ConnectionView",
    "FaultsPanel",
    "FieldInput",
    "NotificationPanel",
    "ProgressBar",
    "RequestExplorer",
    "RequestForm",
    "ResponseView",
    "SubscriptionPanel",
    "ThreeDSecureStepper",
    "ThreeDSecureV2Stepper",
    "button",
    "follow_ups",
    "guarded",
    "show_connections_as_widgets",
    "show_error",
    "table_html",
]

show_connections_as_widgets()  # in IPython, a Connection displays with its reset button
