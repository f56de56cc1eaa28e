"""The gateway's answer: a `Response` for the envelope, a `Record` per request type.

    {"requestreference": "A1b2c3d4e", "version": "1.00", "secrand": "x1Y2",
     "response": [{"requesttypedescription": "AUTH", "errorcode": "0", "errormessage": "Ok", ...}]}

Gateway error records never raise by themselves: `ok` tells, `raise_for_errors()` raises.
Every repr is masked, so a record or a response can be shown in a notebook safely.
"""

from __future__ import annotations

import html
import json
import re
from collections.abc import Iterator, Mapping, Sequence
from typing import Any, overload

from .errors import GatewayError, ResponseFormatError
from .interface.codes import CANCELLED, record_ok
from .interface.currency import format_money
from .interface.fields import AMOUNT, FIELDS
from .interface.masking import REDACTED, SECRET_NAMES, mask_data, mask_text
from .interface.outcome import in_words
from .interface.vocabulary import applies, labelled

EXCERPT_LENGTH = 200

# `"securitycode": "123"` in text that is not (or not all) JSON, e.g. a cut-off body.
_SECRET_NAMES = "|".join(sorted(SECRET_NAMES))
_SECRET_JSON_VALUE = re.compile(rf'"({_SECRET_NAMES})"(\s*:\s*)"[^"]*"?')


class MaskedDict(dict[str, Any]):
    """A plain dict (JSON-serialisable, comparable) whose repr masks card data and secrets."""

    def __repr__(self) -> str:
        return repr(mask_data(dict(self)))

    __str__ = __repr__

    def _repr_pretty_(self, printer: Any, cycle: bool) -> None:
        printer.text(repr(self))


def excerpt(content: bytes | str | Any, length: int = EXCERPT_LENGTH) -> str:
    """The start of a body or value as it may be shown: PANs masked, secrets redacted."""
    if isinstance(content, bytes):
        text = content[: length * 4].decode("utf-8", "replace")
    elif isinstance(content, str):
        text = content
    else:
        text = json.dumps(mask_data(content), ensure_ascii=False, default=repr)
    text = _SECRET_JSON_VALUE.sub(lambda m: f'"{m.group(1)}"{m.group(2)}"{REDACTED}"', text)
    text = mask_text(text)
    return text if len(text) <= length else text[: length - 3] + "..."


class Record(Mapping[str, Any]):
    """One record of a response: dict access to its fields, plus typed helpers."""

    __slots__ = ("_data",)

    def __init__(self, data: Mapping[str, Any]):
        self._data = data

    def __getitem__(self, key: str) -> Any:
        return self._data[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._data)

    def __len__(self) -> int:
        return len(self._data)

    def __contains__(self, key: object) -> bool:
        return key in self._data

    def __repr__(self) -> str:
        return f"Record({mask_data(dict(self._data))!r})"

    def _repr_pretty_(self, printer: Any, cycle: bool) -> None:
        printer.text(repr(self))

    def _repr_html_(self) -> str:
        """In a notebook: what happened in plain words, then the fields (masked)."""
        return records_html([self])

    @property
    def errorcode(self) -> int:
        value = self._data.get("errorcode")
        if value is None:
            raise ResponseFormatError(
                f"the gateway sent a {self.requesttype or 'record'} record without errorcode",
                excerpt(self._data),
            )
        try:
            return int(value)
        except (TypeError, ValueError):
            raise ResponseFormatError(
                "the gateway sent an errorcode that is not a number", excerpt(value)
            ) from None

    @property
    def errormessage(self) -> str:
        return str(self._data.get("errormessage") or "")

    @property
    def errordata(self) -> list[Any]:
        value = self._data.get("errordata")
        if value is None or value == "":
            return []
        return list(value) if isinstance(value, (list, tuple)) else [value]

    @property
    def requesttype(self) -> str | None:
        return self._data.get("requesttypedescription")

    @property
    def settlestatus(self) -> str | None:
        value = self._data.get("settlestatus")
        return None if value is None else str(value)

    @property
    def ok(self) -> bool:
        """True when `errorcode` is 0 and the transaction was not cancelled (`settlestatus` 3)."""
        return record_ok({"errorcode": self.errorcode, "settlestatus": self.settlestatus})

    @property
    def query_records(self) -> list[Record]:
        """The transaction records a TRANSACTIONQUERY record carries in `records`."""
        inner = self._data.get("records")
        if inner is None:
            return []
        if not isinstance(inner, list) or not all(isinstance(r, Mapping) for r in inner):
            raise ResponseFormatError(
                "the gateway sent 'records' that is not a list of objects", excerpt(inner)
            )
        return [Record(r) for r in inner]

    def only(self, *names: str) -> Excerpt:
        """These fields of the record, in this order (absent ones left out). In a notebook it reads
        like the record: its plain-words line first, then just these fields."""
        return Excerpt(self, names)

    def gateway_error(self, requestreference: str | None = None) -> GatewayError | None:
        """The `GatewayError` this record stands for, or None when it is ok."""
        if self.ok:
            return None
        message = self.errormessage
        if self.errorcode == 0:  # errorcode 0 but cancelled
            message = f"{message} (settlestatus {CANCELLED}: cancelled)".strip()
        return GatewayError(self.errorcode, message, self.errordata, requestreference, self.requesttype)


class Excerpt(Mapping[str, Any]):
    """Some fields of a record (`Record.only`): a mapping of just those, shown with the record's headline."""

    __slots__ = ("names", "record")

    def __init__(self, record: Record, names: Sequence[str]):
        self.record = record
        self.names = tuple(name for name in dict.fromkeys(names) if name in record)

    def __getitem__(self, key: str) -> Any:
        if key not in self.names:
            raise KeyError(key)
        return self.record[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self.names)

    def __len__(self) -> int:
        return len(self.names)

    def __repr__(self) -> str:
        return f"Excerpt({mask_data(dict(self))!r})"

    def _repr_pretty_(self, printer: Any, cycle: bool) -> None:
        printer.text(repr(self))

    def _repr_html_(self) -> str:
        return records_html([self.record], fields=self.names)


class Response(Sequence[Record]):
    """The gateway's envelope. Iterating or indexing yields its records, in request order."""

    __slots__ = ("_request", "_sent", "elapsed", "raw", "records", "status_code")

    def __init__(
        self,
        raw: Mapping[str, Any],
        *,
        request: Mapping[str, Any] | None = None,
        elapsed: float = 0.0,
        status_code: int = 200,
    ):
        records = raw.get("response") if isinstance(raw, (dict, Mapping)) else None
        if not isinstance(records, list) or not _all_objects(records):
            raise ResponseFormatError(
                "the answer is not a gateway envelope (no 'response' list of records)",
                excerpt(raw),
                status_code,
            )
        if not records:
            raise ResponseFormatError("the gateway envelope has no records", excerpt(raw), status_code)
        self.raw = raw if isinstance(raw, MaskedDict) else MaskedDict(raw)
        self.records = [Record(r) for r in records]
        self._sent = request  # masked on first use only: the benchmarked path never pays for it
        self._request: MaskedDict | None = None
        self.elapsed = elapsed
        self.status_code = status_code

    @property
    def request(self) -> MaskedDict | None:
        """The envelope that was sent, masked: no card number, security code or other secret."""
        if self._request is None and self._sent is not None:
            self._request = MaskedDict(mask_data(self._sent))
        return self._request

    @property
    def requestreference(self) -> str | None:
        return self.raw.get("requestreference")

    @property
    def version(self) -> str | None:
        return self.raw.get("version")

    @property
    def secrand(self) -> str | None:
        return self.raw.get("secrand")

    @property
    def record(self) -> Record:
        """The first record (the only one for most requests; the AUTH of an AUTH SUBSCRIPTION)."""
        return self.records[0]

    @property
    def query_records(self) -> list[Record]:
        """The transaction records of a TRANSACTIONQUERY, from every record of the response."""
        return [inner for record in self.records for inner in record.query_records]

    @property
    def ok(self) -> bool:
        return all(record.ok for record in self.records)

    def raise_for_errors(self) -> Response:
        """Raise `GatewayError` for the first record that is not ok; return the response otherwise."""
        for record in self.records:
            error = record.gateway_error(self.requestreference)
            if error is not None:
                raise error
        return self

    @overload
    def __getitem__(self, index: int) -> Record: ...

    @overload
    def __getitem__(self, index: slice) -> list[Record]: ...

    def __getitem__(self, index: int | slice) -> Record | list[Record]:
        return self.records[index]

    def __iter__(self) -> Iterator[Record]:
        return iter(self.records)

    def __len__(self) -> int:
        return len(self.records)

    def __repr__(self) -> str:
        return f"Response(requestreference={self.requestreference!r}, records={self.records!r})"

    def _repr_pretty_(self, printer: Any, cycle: bool) -> None:
        printer.text(repr(self))

    def _repr_html_(self) -> str:
        """In a notebook: each record in plain words, then its fields (masked), side by side."""
        return (
            f"<div class='gwkit-response'><small>request {html.escape(str(self.requestreference))}"
            f"{f', {self.elapsed * 1000:.0f} ms' if self.elapsed else ''}</small>{records_html(self.records)}</div>"
        )


def _all_objects(records: list[Any]) -> bool:
    # A plain loop, not all() over a generator: this runs for every answer.
    for record in records:  # noqa: SIM110
        if not isinstance(record, (dict, Mapping)):
            return False
    return True


# The fields a reader looks for first, in this order; every other field is one click away.
KEY_FIELDS = (
    "requesttypedescription",
    "errorcode",
    "errordata",
    "transactionreference",
    "parenttransactionreference",
    "baseamount",
    "maskedpan",
    "paymenttypedescription",
    "settlestatus",
    "settleduedate",
    "enrolled",
    "status",
    "eci",
    "transactionactive",
    "authcode",
    "orderreference",
)


def records_html(records: Sequence[Mapping[str, Any]], fields: Sequence[str] | None = None) -> str:
    """Records as a person reads them, a short card each: one line in plain words, then the fields
    that matter with codes in words (`0 · pending settlement`), every field behind "all fields".
    With `fields`, just those (in that order). Masked; nested query records summarised by count."""
    lines = "".join(
        f"<div class='gwkit-headline' style='font-weight:bold;color:{'#1b7f3b' if record_ok(r) else '#b00020'}'>"
        f"{html.escape(in_words(r))}</div>"
        for r in records
    )
    masked = [mask_data(dict(r)) for r in records]
    present = list(dict.fromkeys(name for r in masked for name in r if name != "records"))
    if fields is not None:
        return f"{lines}{field_table(list(fields), masked)}"
    key = [n for n in KEY_FIELDS if any(applies(n, r) for r in masked)]
    return (
        f"{lines}{field_table(key, masked, only_applying=True)}"
        f"<details class='gwkit-all-fields'><summary>all {len(present)} fields</summary>"
        f"{field_table(present, masked)}</details>"
    )


def field_table(
    names: Sequence[str], records: Sequence[Mapping[str, Any]], *, only_applying: bool = False
) -> str:
    """A table of fields (rows) by records (columns), each value as `value_text` writes it."""
    rows = "".join(
        f"<tr><th style='text-align:left;padding-right:1em;font-weight:normal'><code>{html.escape(name)}</code></th>"
        + "".join(
            "<td style='text-align:left;padding-right:1em'>"
            f"{html.escape(value_text(name, r)) if not only_applying or applies(name, r) else ''}</td>"
            for r in records
        )
        + "</tr>"
        for name in names
    )
    return f"<table class='gwkit-record-table' style='border-collapse:collapse'>{rows}</table>"


def value_text(name: str, record: Mapping[str, Any]) -> str:
    """One field of a record for a person: a code with its words, an amount with its currency
    sign in major units (base units beside), a list as `a, b`, a count of nested records."""
    value = record.get(name)
    if value is None:
        return ""
    if name == "records" and isinstance(value, list):
        return f"{len(value)} record(s)"
    if isinstance(value, (list, tuple)):
        return ", ".join(str(v) for v in value)
    if isinstance(value, dict):
        return ", ".join(f"{k}: {v}" for k, v in value.items())
    if FIELDS.get(name) is not None and FIELDS[name].report == AMOUNT and str(value).isdigit():
        return f"{format_money(value, record.get('currencyiso3a'))} · {value} in base units"
    return labelled(name, value, record)
