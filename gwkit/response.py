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
from typing import Any, Iterator, Mapping, Sequence

from .errors import GatewayError, ResponseFormatError
from .interface.codes import CANCELLED, record_ok
from .interface.masking import REDACTED, SECRET_NAMES, mask_data, mask_text
from .interface.outcome import in_words

EXCERPT_LENGTH = 200

# `"securitycode": "123"` in text that is not (or not all) JSON, e.g. a cut-off body.
_SECRET_JSON_VALUE = re.compile(r'"(%s)"(\s*:\s*)"[^"]*"?' % "|".join(sorted(SECRET_NAMES)))


class MaskedDict(dict):
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
                f"the gateway sent an errorcode that is not a number", excerpt(value)
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
    def query_records(self) -> list["Record"]:
        """The transaction records a TRANSACTIONQUERY record carries in `records`."""
        inner = self._data.get("records")
        if inner is None:
            return []
        if not isinstance(inner, list) or not all(isinstance(r, Mapping) for r in inner):
            raise ResponseFormatError(
                "the gateway sent 'records' that is not a list of objects", excerpt(inner)
            )
        return [Record(r) for r in inner]

    def only(self, *names: str) -> "Excerpt":
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

    __slots__ = ("record", "names")

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

    __slots__ = ("raw", "records", "elapsed", "status_code", "_sent", "_request")

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

    def raise_for_errors(self) -> "Response":
        """Raise `GatewayError` for the first record that is not ok; return the response otherwise."""
        for record in self.records:
            error = record.gateway_error(self.requestreference)
            if error is not None:
                raise error
        return self

    def __getitem__(self, index):  # type: ignore[override]
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
    for record in records:  # a plain loop: this runs for every answer
        if not isinstance(record, (dict, Mapping)):
            return False
    return True


def records_html(records: Sequence[Mapping[str, Any]], fields: Sequence[str] | None = None) -> str:
    """Records as a person reads them: one line in plain words each, then a masked field table
    (nested query records summarised by count; gwkit.widgets.ResponseView shows them in full),
    of every field or of `fields` only."""
    lines = "".join(
        f"<div class='gwkit-headline' style='font-weight:bold;color:{'#1b7f3b' if record_ok(r) else '#b00020'}'>"
        f"{html.escape(in_words(r))}</div>"
        for r in records
    )
    masked = [mask_data(dict(r)) for r in records]
    names = (
        list(fields)
        if fields is not None
        else list(dict.fromkeys(name for r in masked for name in r if name != "records"))
    )
    rows = "".join(
        f"<tr><th style='text-align:left;padding-right:1em'><code>{html.escape(name)}</code></th>"
        + "".join(
            f"<td style='text-align:left;padding-right:1em'>{_cell_text(r.get(name))}</td>" for r in masked
        )
        + "</tr>"
        for name in names
    )
    return f"{lines}<table class='gwkit-record-table' style='border-collapse:collapse'>{rows}</table>"


def _cell_text(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, (list, dict)):
        return f"<code>{html.escape(json.dumps(value))}</code>"
    return html.escape(str(value))
