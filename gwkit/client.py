"""`Client` and `AsyncClient`: the gateway's JSON web services over httpx.

    with gwkit.Client("https://gateway.example", "user", "secret",
                      sitereference="test_site12345", currencyiso3a="GBP") as client:
        response = client.auth(accounttypedescription="ECOM", baseamount=1050,
                               pan="4111111111111111", expirydate="12/2030", securitycode="123")
        response.raise_for_errors()
        print(response.record["transactionreference"])

Both clients share everything but the I/O: request objects are built and validated, the envelope
is encoded, answers are read and failures are mapped to gwkit's errors by the same code. A request
whose body may have reached the gateway is never sent again; only failures to connect are retried.
"""

from __future__ import annotations

import inspect
import json
import ssl
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from functools import partial
from logging import DEBUG
from time import perf_counter
from typing import Any

import httpx

from . import log
from .envelope import build_envelope, build_request, encode, envelope_around, to_wire
from .errors import (
    AuthenticationError,
    ConnectError,
    GwkitError,
    HTTPStatusError,
    RequestTimeoutError,
    ResponseFormatError,
    TransportError,
    ValidationError,
)
from .exchange import Exchange, ExchangeHook, error_text
from .interface.masking import REDACTED, mask_data
from .interface.validation import Problem, allowed_fields, validate_request, variants_for
from .interface.wire import FAULT_HEADER
from .pooling import default_ssl_context, plain_http_ssl_context
from .response import Response, excerpt
from .sending import CLOSED, asend, basic_authorization, send, transport_for

__all__ = ["AsyncClient", "Client"]

_logger = log.logger

HEADERS = {"Content-Type": "application/json", "Accept": "application/json"}
# The headers httpx.Client sends with these (its User-Agent, Accept-Encoding, keep-alive).
HTTPX_HEADERS = httpx.Headers(
    {
        "Accept-Encoding": "gzip, deflate",
        "Connection": "keep-alive",
        "User-Agent": f"python-httpx/{httpx.__version__}",
        **HEADERS,
    }
)
# Failures that happen before the request is sent: retrying them cannot make a payment twice.
_NOT_SENT = (httpx.ConnectError, httpx.ConnectTimeout, httpx.PoolTimeout)

Builder = Callable[[], list[dict[str, Any]]]


class _Requests:
    """The request-type methods, shared by `Client` (which returns a `Response`) and `AsyncClient`
    (which returns an awaitable). Keyword arguments are request fields; ints are sent as strings."""

    def _dispatch(self, build: Builder, validate: bool | None) -> Any:  # pragma: no cover - abstract
        raise NotImplementedError

    def _single(
        self, types: tuple[str, ...], fields: Mapping[str, Any]
    ) -> list[dict[str, Any]]:  # pragma: no cover - abstract
        raise NotImplementedError

    def _filtered(
        self,
        request_type: str,
        filter: Mapping[str, Any] | None,
        filter_fields: Mapping[str, Any],
        updates: Mapping[str, Any] | None,
    ) -> list[dict[str, Any]]:  # pragma: no cover - abstract
        raise NotImplementedError

    def _raw(
        self, requests: Mapping[str, Any] | Sequence[Mapping[str, Any]]
    ) -> list[dict[str, Any]]:  # pragma: no cover - abstract
        raise NotImplementedError

    def auth(self, *, validate: bool | None = None, **fields: Any) -> Any:
        """AUTH with card details, a `cachetoken`, a `parenttransactionreference`, or `md`/`pares`."""
        return self._dispatch(partial(self._single, ("AUTH",), fields), validate)

    def auth_subscription(self, *, validate: bool | None = None, **fields: Any) -> Any:
        """AUTH + SUBSCRIPTION: the first payment now, the schedule in the subscription engine."""
        return self._dispatch(partial(self._single, ("AUTH", "SUBSCRIPTION"), fields), validate)

    def accountcheck(self, *, validate: bool | None = None, **fields: Any) -> Any:
        """ACCOUNTCHECK: the bank checks the card (card details or a stored card) and takes no money."""
        return self._dispatch(partial(self._single, ("ACCOUNTCHECK",), fields), validate)

    def threedquery(self, *, validate: bool | None = None, **fields: Any) -> Any:
        """THREEDQUERY: is the card enrolled in 3-D Secure version 1?"""
        return self._dispatch(partial(self._single, ("THREEDQUERY",), fields), validate)

    def store(self, *, validate: bool | None = None, **fields: Any) -> Any:
        """STORE: keep card and billing details for later requests (never a security code)."""
        return self._dispatch(partial(self._single, ("STORE",), fields), validate)

    def cachetokenise(self, *, validate: bool | None = None, **fields: Any) -> Any:
        """CACHETOKENISE: what the browser library sends; the answer carries a `cachetoken`."""
        return self._dispatch(partial(self._single, ("CACHETOKENISE",), fields), validate)

    def refund(
        self, parenttransactionreference: str | None = None, *, validate: bool | None = None, **fields: Any
    ) -> Any:
        """REFUND of an AUTH: `refund("23-9-1")` gives back all that is left of it, `refund("23-9-1",
        baseamount=500)` part of it. Without a parent, a standalone refund to a card
        (`accounttypedescription="CFT"`, card fields, `baseamount`)."""
        if parenttransactionreference is not None:
            fields = {"parenttransactionreference": parenttransactionreference, **fields}
        return self._dispatch(partial(self._single, ("REFUND",), fields), validate)

    def transaction_query(
        self, filter: Mapping[str, Any] | None = None, *, validate: bool | None = None, **filter_fields: Any
    ) -> Any:
        """TRANSACTIONQUERY. `filter` in the gateway's shape, or filter fields as keywords:
        `transaction_query(transactionreference="1-2-3")`, `transaction_query(settlestatus=["0", "100"])`."""
        return self._dispatch(
            partial(self._filtered, "TRANSACTIONQUERY", filter, filter_fields, None), validate
        )

    def transaction_update(
        self,
        filter: Mapping[str, Any] | None = None,
        updates: Mapping[str, Any] | None = None,
        *,
        validate: bool | None = None,
        **filter_fields: Any,
    ) -> Any:
        """TRANSACTIONUPDATE: `transaction_update(transactionreference="1-2-3", updates={"transactionactive": 0})`."""
        return self._dispatch(
            partial(self._filtered, "TRANSACTIONUPDATE", filter, filter_fields, updates), validate
        )

    def send(
        self, requests: Mapping[str, Any] | Sequence[Mapping[str, Any]], *, validate: bool | None = None
    ) -> Any:
        """Raw request objects, sent as given (no defaults filled in); a list puts several in one
        envelope. Each object gets a `requestreference` unless it has one."""
        return self._dispatch(partial(self._raw, requests), validate)


class _Base(_Requests):
    """Configuration and every step that does no I/O."""

    _asynchronous = False  # True for AsyncClient: its transport is an async one

    def __init__(
        self,
        base_url: str,
        username: str,
        password: str,
        *,
        sitereference: str | None = None,
        currencyiso3a: str | None = None,
        alias: str | None = None,
        timeout: float | httpx.Timeout | None = 30.0,
        transport: httpx.BaseTransport | httpx.AsyncBaseTransport | None = None,
        validate: bool = True,
        retries: int = 2,
        on_exchange: Iterable[ExchangeHook] | ExchangeHook = (),
    ):
        url = httpx.URL(base_url)
        if url.scheme not in ("http", "https") or not url.host:
            raise ValueError(f"base_url must be an http:// or https:// URL, got {base_url!r}")
        if url.userinfo:
            raise ValueError("pass the credentials as username and password, not inside base_url")
        if retries < 0:
            raise ValueError("retries must be 0 or more")
        self.base_url = str(base_url).rstrip("/")
        self.url = self.base_url + "/json/"
        self._endpoint = httpx.URL(self.url)  # parsed once, not on every request
        self.username = username
        self.alias = alias or username
        self.sitereference = sitereference
        self.currencyiso3a = currencyiso3a
        self.validate = validate
        self.retries = retries
        self.timeout = timeout if isinstance(timeout, httpx.Timeout) else httpx.Timeout(timeout)
        self._hooks: list[ExchangeHook] = [on_exchange] if callable(on_exchange) else list(on_exchange)
        # httpx's own transport verifies https certificates against one context shared by all
        # gwkit's clients (plain http needs none); a transport given here brings its own.
        verify: ssl.SSLContext | bool = True
        if transport is None:
            verify = default_ssl_context() if url.scheme == "https" else plain_http_ssl_context()
        # One transport per gwkit client (sending.py): the one given, or httpx's own, pooled.
        self._transport = transport or transport_for(self._endpoint, verify, asynchronous=self._asynchronous)
        self._jar = httpx.Cookies()  # none from the gateway; a proxy's, sent back
        self._closed = False
        self._extensions = {"timeout": self.timeout.as_dict()}
        # The password lives only in this header: every request's headers, as httpx.Client would
        # build them for this client, but for the length of the body.
        self._authorization = basic_authorization(username, password)
        self._headers = [(b"Host", self._endpoint.netloc), *HTTPX_HEADERS.raw]
        self._headers.append((b"Authorization", self._authorization.encode("ascii")))

    def _http_request(self, body: bytes) -> httpx.Request:
        """The POST of one body with the client's credentials, as `httpx.Client.build_request` makes
        it but without merging the client's settings on every request: they are the client's own and
        fixed (no params, and the gateway sets no cookies; should a proxy set one, it is sent back)."""
        if self._closed:
            raise RuntimeError(CLOSED)
        request = httpx.Request(
            "POST",
            self._endpoint,
            stream=httpx.ByteStream(body),
            headers=[*self._headers, (b"Content-Length", str(len(body)).encode("ascii"))],
            extensions=dict(self._extensions),
        )
        request.read()  # as httpx reads a body given as bytes: a transport or a hook may read `content`
        if self._jar:
            self._jar.set_cookie_header(request)
        return request

    def __repr__(self) -> str:
        return (
            f"{type(self).__name__}(base_url={self.base_url!r}, username={self.username!r}, "
            f"password={REDACTED!r}, alias={self.alias!r}, sitereference={self.sitereference!r}, "
            f"currencyiso3a={self.currencyiso3a!r})"
        )

    # -- hooks -------------------------------------------------------------------------------
    def add_exchange_hook(self, hook: ExchangeHook) -> ExchangeHook:
        """Call `hook(exchange)` after every exchange, successful or not; returns `hook`."""
        self._hooks.append(hook)
        return hook

    def remove_exchange_hook(self, hook: ExchangeHook) -> None:
        self._hooks.remove(hook)

    @property
    def exchange_hooks(self) -> tuple[ExchangeHook, ...]:
        return tuple(self._hooks)

    # -- building requests -------------------------------------------------------------------
    def build_request(
        self, types: str | Iterable[str], fields: Mapping[str, Any] | None = None, /, **more: Any
    ) -> dict[str, Any]:
        """One request object with the client's `sitereference` and `currencyiso3a` filled in
        where the request type (and variant) uses them. Nothing is validated or sent."""
        request = build_request(types, fields, **more)
        if self.sitereference is not None or self.currencyiso3a is not None:
            self._fill_defaults(request)
        return request

    def build_filter(self, filter: Mapping[str, Any] | None = None, /, **filter_fields: Any) -> Any:
        """A TRANSACTIONQUERY/UPDATE filter in the gateway's shape `{name: [{"value": ...}]}`.
        Plain values and lists become that shape; the client's `sitereference` is the default."""
        if filter is not None and not isinstance(filter, Mapping):
            return to_wire(filter, "filter")  # validation names the problem
        shaped: dict[str, Any] = {}
        for source in (filter or {}, filter_fields):
            for name, value in source.items():
                if value is not None:
                    shaped[name] = _filter_entries(value, f"filter.{name}")
        if self.sitereference and "sitereference" not in shaped:
            shaped = {"sitereference": [{"value": to_wire(self.sitereference)}], **shaped}
        return shaped

    def build_envelope(self, requests: Iterable[Mapping[str, Any]]) -> dict[str, Any]:
        """The envelope for request objects: alias, version, a `requestreference` per object."""
        return build_envelope(self.alias, requests)

    def _fill_defaults(self, request: dict[str, Any]) -> None:
        """Add the client's defaults that this request's types and variants use and `request` lacks."""
        try:
            used = allowed_fields(variants_for(request["requesttypedescriptions"], request))
        except (KeyError, TypeError):  # not request type names: validation says so
            return
        for name, value in (("sitereference", self.sitereference), ("currencyiso3a", self.currencyiso3a)):
            if value is not None and name in used and name not in request:
                request[name] = to_wire(value, name)

    def _single(self, types: tuple[str, ...], fields: Mapping[str, Any]) -> list[dict[str, Any]]:
        return [self.build_request(types, fields)]

    def _filtered(
        self,
        request_type: str,
        filter: Mapping[str, Any] | None,
        filter_fields: Mapping[str, Any],
        updates: Mapping[str, Any] | None,
    ) -> list[dict[str, Any]]:
        request: dict[str, Any] = {
            "requesttypedescriptions": [request_type],
            "filter": self.build_filter(filter, **filter_fields),
        }
        if updates is not None:
            request["updates"] = to_wire(updates, "updates")
        return [request]

    def _raw(self, requests: Mapping[str, Any] | Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
        items = [requests] if isinstance(requests, Mapping) else list(requests)
        if not all(isinstance(item, Mapping) for item in items):  # cannot be sent, validated or not
            raise ValidationError([Problem("request", "each request object must be a JSON object")])
        return [
            {name: to_wire(value, name) for name, value in item.items() if value is not None}
            for item in items
        ]

    def _prepare(self, build: Builder, validate: bool | None) -> _Call:
        objects = build()
        if self.validate if validate is None else validate:
            _raise_problems(objects)
        return _Call(self, objects)

    # -- I/O-free pieces of the exchange -------------------------------------------------------
    def _new_exchange(
        self,
        call: _Call,
        elapsed: float,
        status_code: int | None,
        data: Any,
        error: GwkitError | None,
        reference: str | None,
    ) -> Exchange:
        # The envelope and the answer go in as they are: an Exchange masks them when it is made.
        return Exchange.at(
            call.started,
            elapsed=elapsed,
            target=self.base_url,
            alias=self.alias,
            request=call.envelope,
            response=data if isinstance(data, Mapping) else None,
            status_code=status_code,
            error=error_text(error) if error is not None else None,
            request_types=call.request_types,
            requestreference=reference,
            attempt=call.attempt,
            url=self.url,
            fault=call.fault,
        )


class _Attempt:
    """What one HTTP attempt came to: a response, or an error (and whether to try again)."""

    __slots__ = ("cause", "error", "exchange", "response", "retry")

    def __init__(
        self,
        response: Response | None,
        error: GwkitError | None,
        cause: BaseException | None,
        retry: bool,
        exchange: Exchange | None,
    ):
        self.response, self.error, self.cause, self.retry, self.exchange = (
            response,
            error,
            cause,
            retry,
            exchange,
        )

    def result(self) -> Response:
        if self.error is not None:
            raise self.error from self.cause
        return self.response  # type: ignore[return-value]


class _Call:
    """One request envelope on its way: encoded once, sent one or more times, read, logged."""

    __slots__ = (
        "_masked",
        "_t0",
        "_types",
        "attempt",
        "body",
        "client",
        "envelope",
        "expected",
        "fault",
        "started",
    )

    def __init__(self, client: _Base, objects: list[dict[str, Any]]):
        self.client = client
        self.envelope = envelope_around(client.alias, objects)  # the builders made them: no copies
        self.body = encode(self.envelope)
        requests = self.envelope["request"]
        # The gateway echoes the reference of a single request object; the official client checks it.
        self.expected = requests[0].get("requestreference") if len(requests) == 1 else None
        self.attempt = 0
        self.started = 0.0
        self.fault: str | None = None  # the kind of fault the sandbox marked its answer with, if any
        self._t0 = 0.0
        self._masked: dict[str, Any] | None = None
        self._types: tuple[str, ...] | None = None

    @property
    def request_types(self) -> tuple[str, ...]:
        if self._types is None:
            self._types = tuple(_type_key(o) for o in self.envelope["request"])
        return self._types

    @property
    def types(self) -> str:
        return ", ".join(self.request_types)

    def masked_request(self) -> dict[str, Any]:
        if self._masked is None:
            self._masked = mask_data(self.envelope)
        return self._masked

    def begin(self) -> None:
        self.attempt += 1
        if _logger.isEnabledFor(DEBUG):
            log.request_sent(self.client.url, self.types, self.expected, self.attempt, self.masked_request())
        self.started = time.time()
        self._t0 = perf_counter()

    def answered(self, http_response: httpx.Response) -> _Attempt:
        elapsed = perf_counter() - self._t0
        headers = http_response.headers
        # A fault the sandbox injected, by kind. Asked with `in` first: httpx's `get` of an absent
        # header raises and catches a KeyError, on every answer.
        self.fault = headers[FAULT_HEADER] if FAULT_HEADER in headers else None  # noqa: SIM401
        data, response, error = self._read(http_response, elapsed)
        reference = data.get("requestreference") if isinstance(data, (dict, Mapping)) else None
        return self._finish(
            elapsed, http_response.status_code, data, response, error, None, False, reference or self.expected
        )

    def failed(self, exc: httpx.RequestError) -> _Attempt:
        elapsed = perf_counter() - self._t0
        retry = isinstance(exc, _NOT_SENT) and self.attempt <= self.client.retries
        error = transport_error(exc, self.client.url, self.attempt)
        return self._finish(elapsed, None, None, None, error, exc, retry, self.expected)

    def _read(
        self, http_response: httpx.Response, elapsed: float
    ) -> tuple[Any, Response | None, GwkitError | None]:
        url, status = self.client.url, http_response.status_code
        if status == 401:
            return (
                None,
                None,
                AuthenticationError(
                    f"HTTP 401 from {url}: the gateway rejected the web "
                    f"services user name {self.client.username!r} or its password"
                ),
            )
        if not 200 <= status < 300:
            return (
                None,
                None,
                HTTPStatusError(
                    f"unexpected HTTP status {status} from {url}", excerpt(http_response.content), status
                ),
            )
        try:
            data = json.loads(http_response.content)
        except ValueError:
            return (
                None,
                None,
                ResponseFormatError(
                    f"the answer from {url} (HTTP {status}) is not JSON",
                    excerpt(http_response.content),
                    status,
                ),
            )
        try:
            response = Response(data, request=self.envelope, elapsed=elapsed, status_code=status)
        except ResponseFormatError as error:
            return data, None, error
        if self.expected is not None and response.requestreference != self.expected:
            return (
                data,
                None,
                ResponseFormatError(
                    f"the gateway answered request reference {response.requestreference!r} to request "
                    f"{self.expected!r}",
                    "",
                    status,
                ),
            )
        return data, response, None

    def _finish(
        self,
        elapsed: float,
        status_code: int | None,
        data: Any,
        response: Response | None,
        error: GwkitError | None,
        cause: BaseException | None,
        retry: bool,
        reference: str | None,
    ) -> _Attempt:
        if error is not None:
            log.exchange_failed(self.types, reference, self.client.url, self.attempt, error, retry)
        elif _logger.isEnabledFor(DEBUG):
            log.response_received(self.types, reference, status_code or 0, elapsed, mask_data(data))
        exchange = None
        if self.client._hooks:
            exchange = self.client._new_exchange(self, elapsed, status_code, data, error, reference)
        return _Attempt(response, error, cause, retry, exchange)


class Client(_Base):
    """A synchronous client; one pooled httpx transport per gwkit client. Use it as a context manager
    or call `close()`. `transport` takes any httpx transport (e.g. `httpx.MockTransport`)."""

    _transport: httpx.BaseTransport

    def _dispatch(self, build: Builder, validate: bool | None) -> Response:
        call = self._prepare(build, validate)
        while True:
            call.begin()
            try:
                http_response = send(self._transport, self._http_request(call.body), self._jar)
            except httpx.RequestError as exc:
                outcome = call.failed(exc)
            else:
                outcome = call.answered(http_response)
            if outcome.exchange is not None:
                for hook in tuple(self._hooks):
                    hook(outcome.exchange)
            if not outcome.retry:
                return outcome.result()

    def close(self) -> None:
        self._closed = True
        self._transport.close()

    def __enter__(self) -> Client:
        return self

    def __exit__(self, *exc_info: Any) -> None:
        self.close()


class AsyncClient(_Base):
    """The asynchronous twin of `Client`: the same methods, awaited; `transport` must be an async
    httpx transport (`httpx.MockTransport` is both). Hooks may be coroutine functions."""

    _asynchronous = True
    _transport: httpx.AsyncBaseTransport

    async def _dispatch(self, build: Builder, validate: bool | None) -> Response:
        call = self._prepare(build, validate)
        while True:
            call.begin()
            try:
                http_response = await asend(self._transport, self._http_request(call.body), self._jar)
            except httpx.RequestError as exc:
                outcome = call.failed(exc)
            else:
                outcome = call.answered(http_response)
            if outcome.exchange is not None:
                for hook in tuple(self._hooks):
                    result = hook(outcome.exchange)
                    if inspect.isawaitable(result):
                        await result
            if not outcome.retry:
                return outcome.result()

    async def aclose(self) -> None:
        self._closed = True
        await self._transport.aclose()

    close = aclose

    async def __aenter__(self) -> AsyncClient:
        return self

    async def __aexit__(self, *exc_info: Any) -> None:
        await self.aclose()


# -- pure helpers -----------------------------------------------------------------------------


def transport_error(exc: httpx.RequestError, url: str, attempt: int = 1) -> GwkitError:
    """gwkit's error for an httpx failure. `sent` tells whether the body may have reached the gateway."""
    detail = str(exc) or "no detail given"
    tries = f" (attempt {attempt})" if attempt > 1 else ""
    error: GwkitError
    if isinstance(exc, (httpx.ConnectTimeout, httpx.PoolTimeout)):
        error = RequestTimeoutError(f"no connection to {url} in time{tries}; nothing was sent: {detail}")
        error.sent = False
    elif isinstance(exc, httpx.TimeoutException):
        error = RequestTimeoutError(
            f"no answer from {url} in time; the request may have been processed, "
            f"so it was not sent again: {detail}"
        )
    elif isinstance(exc, (httpx.ConnectError, httpx.UnsupportedProtocol, httpx.ProxyError)):
        error = ConnectError(f"could not connect to {url}{tries}: {detail}")
    elif isinstance(exc, httpx.DecodingError):
        error = ResponseFormatError(f"the answer from {url} could not be decoded: {detail}")
    else:  # read, write and protocol errors: the body may have reached the gateway
        error = TransportError(
            f"the connection to {url} failed after the request was sent; it may have "
            f"been processed, so it was not sent again ({detail})"
        )
    return error


def _filter_entries(value: Any, name: str) -> Any:
    items = value if isinstance(value, (list, tuple)) else [value]
    return [
        to_wire(item, name) if isinstance(item, Mapping) else {"value": to_wire(item, name)} for item in items
    ]


def _type_key(request: Any) -> str:
    types = request.get("requesttypedescriptions") if isinstance(request, Mapping) else None
    if isinstance(types, list) and all(isinstance(t, str) for t in types):
        return "+".join(types)
    return "?"


def _raise_problems(objects: list[Any]) -> None:
    if not objects:
        raise ValidationError([Problem("request", "must hold at least one request object")])
    problems: list[Problem] = []
    for index, request in enumerate(objects):
        found = validate_request(request, strict=True)
        if len(objects) > 1:
            found = [Problem(f"request[{index}].{p.field}", p.rule, p.value) for p in found]
        problems.extend(found)
    if problems:
        raise ValidationError(problems, ", ".join(_type_key(o) for o in objects))
