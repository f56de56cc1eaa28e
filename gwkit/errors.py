"""gwkit's exception hierarchy.

GwkitError
├── ValidationError          a request breaks the interface's rules (every problem listed)
├── GatewayError             the gateway answered a record with a non-zero errorcode
├── ThreeDSecureError        a 3-D Secure step that cannot be taken now, or an ACS page that refused
└── TransportError           the exchange itself failed
    ├── AuthenticationError  HTTP 401: credentials rejected
    ├── ResponseFormatError  the body is not a readable gateway envelope
    ├── HTTPStatusError      any other unexpected HTTP status
    ├── RequestTimeoutError  no answer in time (the request may have been processed)
    └── ConnectError         no connection could be made (nothing was sent)
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # pragma: no cover
    from .interface.validation import Problem


class GwkitError(Exception):
    """Base class of every error gwkit raises."""


class ValidationError(GwkitError, ValueError):
    """A request breaks the interface's rules. `problems` lists every one, each naming its field."""

    def __init__(self, problems: Sequence[Problem], request_type: str = ""):
        self.problems = list(problems)
        self.request_type = request_type
        what = f"{request_type} request" if request_type else "request"
        lines = "\n".join(f"  - {p}" for p in self.problems)
        super().__init__(f"invalid {what}: {len(self.problems)} problem(s)\n{lines}")

    @property
    def fields(self) -> list[str]:
        return [p.field for p in self.problems]


class GatewayError(GwkitError):
    """A gateway record carried a non-zero `errorcode`; raised by `raise_for_errors()`."""

    def __init__(
        self,
        errorcode: int,
        errormessage: str,
        errordata: list[Any] | None = None,
        requestreference: str | None = None,
        requesttype: str | None = None,
    ):
        self.errorcode = errorcode
        self.errormessage = errormessage
        self.errordata = list(errordata or [])
        self.requestreference = requestreference
        self.requesttype = requesttype
        detail = f" {self.errordata}" if self.errordata else ""
        where = f" in {requesttype}" if requesttype else ""
        ref = f" (request {requestreference})" if requestreference else ""
        super().__init__(f"gateway error {errorcode} {errormessage}{detail}{where}{ref}")


class TransportError(GwkitError):
    """The exchange with the gateway failed. `sent` tells whether the body may have reached it."""

    sent: bool = True


class AuthenticationError(TransportError):
    """The gateway answered HTTP 401: the user name or password was rejected."""

    status_code = 401


class ResponseFormatError(TransportError):
    """The gateway's answer is not a readable JSON envelope; `excerpt` shows its start."""

    def __init__(self, message: str, excerpt: str = "", status_code: int | None = None):
        self.excerpt = excerpt
        self.status_code = status_code
        super().__init__(f"{message}: {excerpt!r}" if excerpt else message)


class HTTPStatusError(ResponseFormatError):
    """The gateway answered an HTTP status gwkit did not expect."""


class RequestTimeoutError(TransportError):
    """No answer in time. The request may have been processed: it is never re-sent automatically."""


class ConnectError(TransportError):
    """No connection could be made; nothing was sent, so retrying is safe."""

    sent = False


class ThreeDSecureError(GwkitError):
    """A 3-D Secure step that cannot be taken now, or an ACS that refused the browser's post."""
