"""One exchange with the gateway, as a record for hooks (the journal, logs, widgets).

The client builds an `Exchange` after every HTTP attempt, successful or not, and calls each hook
with it. Request and response are masked when the `Exchange` is made, whatever the caller passes,
so no hook ever sees a PAN in clear or a security code at all.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from typing import Any

from .interface.codes import record_ok
from .interface.masking import mask_data, mask_text

ExchangeHook = Callable[["Exchange"], Any]


@dataclass(frozen=True)
class Exchange:
    started_at: datetime  # UTC, when the request was sent
    elapsed: float  # seconds until the answer was read, or the failure happened
    target: str  # the client's base URL
    alias: str
    request: Mapping[str, Any]  # the envelope sent, masked
    response: Mapping[str, Any] | None = None  # the envelope received, masked; None when there was none
    status_code: int | None = None
    error: str | None = None  # "ConnectError: ..." when the exchange failed
    request_types: tuple[str, ...] = ()  # one entry per request object, e.g. ("AUTH+SUBSCRIPTION",)
    requestreference: str | None = None
    attempt: int = 1  # 2 and more for retries after a failure to connect
    url: str = field(default="", compare=False)  # the endpoint posted to
    fault: str | None = None  # the kind of fault the sandbox injected into this answer, if any

    def __post_init__(self) -> None:
        object.__setattr__(self, "request", mask_data(dict(self.request)))
        if self.response is not None:
            object.__setattr__(self, "response", mask_data(self.response))
        if self.error is not None:
            object.__setattr__(self, "error", mask_text(self.error))

    @classmethod
    def at(cls, started: float, **fields: Any) -> Exchange:
        """An exchange that started at `started`, a `time.time()` value."""
        return cls(datetime.fromtimestamp(started, tz=UTC), **fields)

    @property
    def ok(self) -> bool:
        """True when the exchange succeeded and every record has errorcode 0 and is not cancelled."""
        if self.error is not None or not isinstance(self.response, Mapping):
            return False
        records = self.response.get("response")
        if not isinstance(records, list) or not records:
            return False
        return all(isinstance(r, Mapping) and record_ok(r) for r in records)

    def as_dict(self) -> dict[str, Any]:
        """JSON-ready: `started_at` as an ISO 8601 string, request types as a list."""
        data = asdict(self)
        data["started_at"] = self.started_at.isoformat()
        data["request_types"] = list(self.request_types)
        return data


def error_text(error: BaseException) -> str:
    return f"{type(error).__name__}: {error}"
