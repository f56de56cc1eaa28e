"""gwkit's exception hierarchy: every error gwkit raises is a `GwkitError` (its root lives in
`gwkit/interface/errors.py`, the layer every other may import; it is re-exported here). Where a
caller may catch an error by a built-in class, the error is that too (in brackets). Modules the
sandbox and the proxy raise from are named; the others are the client's, in this module.

GwkitError
├── ValidationError (ValueError)           a request breaks the interface's rules (every problem listed)
├── GatewayError                           the gateway answered a record with a non-zero errorcode
│   └── SubscriptionError                  a subscription request refused (gwkit.subscription)
├── ThreeDSecureError                      a 3-D Secure step that cannot be taken now, or an ACS page that refused
├── TransportError                         the exchange itself failed
│   ├── AuthenticationError                HTTP 401: credentials rejected
│   ├── ResponseFormatError                the body is not a readable gateway envelope
│   │   └── HTTPStatusError                any other unexpected HTTP status
│   ├── RequestTimeoutError                no answer in time (the request may have been processed)
│   └── ConnectError                       no connection could be made (nothing was sent)
├── ConfigError (ValueError)               the configuration is incomplete or unreadable (gwkit.config)
├── CardStoreError                         a card store listing that cannot be complete (gwkit.cardstore)
├── QueryCapError                          one day holds more records than one query answers (gwkit.querying)
├── CassetteMiss (LookupError)             a replayed request has no recording left (gwkit.cassette)
├── RecordedSilence (RemoteProtocolError)  a cassette replays an answer that was dropped (gwkit.cassette)
├── NotificationMismatch (AssertionError)  the notifications a test expected did not arrive (gwkit.notifications)
├── CodegenError (ValueError)              a source with no request to write as code (gwkit.codegen)
├── ReportError (ValueError)               a value that does not fit its column's type (gwkit.report.frames)
├── UpstreamError                          the proxy's upstream gave no answer (gwkit.proxy.upstreams)
├── FaultsError (ValueError)               a proxy fault book that cannot be used (gwkit.proxy.faults)
├── ChecklistError                         a checklist that cannot run as asked (gwkit.checklist.steps)
├── AccountsError (ValueError)             a sandbox accounts file that cannot be used (sandbox.gateway.accounts)
├── SiteNotYours (LookupError)             a control request names a site not the caller's (sandbox.gateway.accounts)
├── ClockError (ValueError)                a clock move that cannot be made (sandbox.gateway.clock)
├── TablesError (ValueError)               handler modules whose tables cannot be merged (sandbox.gateway.context)
├── NotificationError (ValueError)         a notification rule or request that cannot be taken (sandbox.gateway.notifications)
├── NotFound (LookupError)                 no such notification rule or delivery (sandbox.gateway.notifications)
├── Refusal                                a request the sandbox refuses with an error record (sandbox.gateway.refusal)
├── BadToken (ValueError)                  a malformed or forged PaReq or PaRes (sandbox.gateway.threeds)
├── StoreError (RuntimeError)              a sandbox store that cannot be opened (sandbox.gateway.store)
│   ├── SchemaTooNew                       its database was migrated by a newer gwkit
│   └── MissingDriver                      psycopg is not installed (the `team` extra)
├── SnapshotError (ValueError)             a bad snapshot name (sandbox.gateway.store.snapshots)
├── SnapshotNotFound (LookupError)         no snapshot of that name (sandbox.gateway.store.snapshots)
├── BodyError (ValueError)                 a request body that cannot be read (interface.jsonread)
└── AcsError (ValueError)                  a 3-D Secure page post the sandbox's ACS refuses (sandbox.web.acs)

Private control-flow signals (`_Stopped` in the CLI, `_FirstRefused` in the sandbox's gateway) are
GwkitErrors too, and never leave the module that raises them. `tests/test_errors_tree.py` checks
this tree against the classes.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from .interface.errors import GwkitError

if TYPE_CHECKING:  # pragma: no cover
    from .interface.validation import Problem

__all__ = [
    "AuthenticationError",
    "ConnectError",
    "GatewayError",
    "GwkitError",
    "HTTPStatusError",
    "RequestTimeoutError",
    "ResponseFormatError",
    "ThreeDSecureError",
    "TransportError",
    "ValidationError",
]


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
