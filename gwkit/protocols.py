"""`GatewayClient`: what the helpers of gwkit (subscriptions, card store, 3-D Secure, reports,
widgets) need of a client. `gwkit.Client` and `gwkit.connect()` satisfy it; so does a test double."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Protocol

from .response import Response


class GatewayClient(Protocol):
    """A synchronous client: each request-type method sends one request and returns the Response."""

    sitereference: str | None
    currencyiso3a: str | None

    def auth(self, *, validate: bool | None = None, **fields: Any) -> Response: ...

    def auth_subscription(self, *, validate: bool | None = None, **fields: Any) -> Response: ...

    def threedquery(self, *, validate: bool | None = None, **fields: Any) -> Response: ...

    def store(self, *, validate: bool | None = None, **fields: Any) -> Response: ...

    def refund(
        self, parenttransactionreference: str | None = None, *, validate: bool | None = None, **fields: Any
    ) -> Response: ...

    def transaction_query(
        self, filter: Mapping[str, Any] | None = None, *, validate: bool | None = None, **filter_fields: Any
    ) -> Response: ...

    def transaction_update(
        self,
        filter: Mapping[str, Any] | None = None,
        updates: Mapping[str, Any] | None = None,
        *,
        validate: bool | None = None,
        **filter_fields: Any,
    ) -> Response: ...

    def build_request(
        self, types: Any, fields: Mapping[str, Any] | None = None, /, **more: Any
    ) -> dict[str, Any]: ...

    def build_filter(self, filter: Mapping[str, Any] | None = None, /, **filter_fields: Any) -> Any: ...

    def send(self, requests: Any, *, validate: bool | None = None) -> Response: ...
