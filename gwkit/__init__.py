"""gwkit: a toolkit for a card-payment gateway's JSON web services, with an embedded sandbox."""

from .cardstore import CardStoreError
from .client import AsyncClient, Client
from .connect import ConfigError, Connection, connect
from .envelope import build_envelope, build_request, new_request_reference
from .errors import (
    AuthenticationError, ConnectError, GatewayError, GwkitError, HTTPStatusError, ResponseFormatError,
    TimeoutError, TransportError, ValidationError,
)
from .exchange import Exchange
from .journal import Journal
from .response import Record, Response
from .interface import FIELDS, REQUEST_TYPES, Problem, mask_data, mask_pan, validate_request
from .subscription import Subscription, SubscriptionError
from .threeds import TermUrlReceiver, ThreeDSecureError, ThreeDSecureFlow

__version__ = "0.1.0"

__all__ = [
    "CardStoreError", "ConfigError", "Connection", "Journal", "Subscription", "SubscriptionError",
    "TermUrlReceiver", "ThreeDSecureError", "ThreeDSecureFlow", "connect",
    "FIELDS", "REQUEST_TYPES", "AsyncClient", "AuthenticationError", "Client", "ConnectError", "Exchange",
    "GatewayError", "GwkitError",
    "HTTPStatusError", "Problem", "Record", "Response", "ResponseFormatError", "TimeoutError", "TransportError",
    "ValidationError", "build_envelope", "build_request", "mask_data", "mask_pan",
    "new_request_reference", "validate_request",
]
