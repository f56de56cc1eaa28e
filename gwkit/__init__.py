"""gwkit: a toolkit for a card-payment gateway's JSON web services, with an embedded sandbox.

The root exports what a notebook user needs; everything else stays importable from its module
(`gwkit.envelope`, `gwkit.interface`, `gwkit.threeds`, ...).
"""

from .cardstore import CardStoreError
from .client import AsyncClient, Client
from .config import ConfigError
from .connect import Connection, connect
from .errors import (
    AuthenticationError,
    ConnectError,
    GatewayError,
    GwkitError,
    HTTPStatusError,
    RequestTimeoutError,
    ResponseFormatError,
    TransportError,
    ValidationError,
)
from .exchange import Exchange
from .interface import mask_data, mask_pan, validate_request
from .journal import Journal
from .notifications import Notification, NotificationListener, NotificationMismatch
from .response import Record, Response
from .shop import DemoShop
from .subscription import Subscription, SubscriptionError
from .threeds import ThreeDSecureError, ThreeDSecureFlow

__version__ = "0.1.0"

__all__ = [
    "AsyncClient",
    "AuthenticationError",
    "CardStoreError",
    "Client",
    "ConfigError",
    "ConnectError",
    "Connection",
    "DemoShop",
    "Exchange",
    "GatewayError",
    "GwkitError",
    "HTTPStatusError",
    "Journal",
    "Notification",
    "NotificationListener",
    "NotificationMismatch",
    "Record",
    "RequestTimeoutError",
    "Response",
    "ResponseFormatError",
    "Subscription",
    "SubscriptionError",
    "ThreeDSecureError",
    "ThreeDSecureFlow",
    "TransportError",
    "ValidationError",
    "connect",
    "mask_data",
    "mask_pan",
    "validate_request",
]
