"""A demo merchant served by the sandbox, to see browser tokenisation end to end (interface 4.9).

    GET  /demo/merchant            a payment page with the st.js form (?locale=fr_fr,
                                   ?named_card_inputs=1 shows the mistake of naming the card inputs)
    POST /demo/merchant/pay        the form's action: the "merchant server". It records exactly what it
                                   received, then completes the AUTH with the cachetoken (unless the
                                   form says complete=later) and shows the result.
    GET  /demo/merchant/received   what the merchant server received, as JSON (or HTML for browsers
                                   and ?format=html), oldest first.

The merchant server is a separate party in spirit: it sells on one site, the first of the
sandbox's default account, and reaches the gateway with that site's web services account, as a
real merchant server would. It pays only there: a form naming another site, or a cachetoken made
for another site, is refused (HTTP 400) before anything is sent or kept, and the receipts it lists
are its own. What it records is kept in the sandbox
database (a sandbox reset clears it). Should card data ever arrive (a card input with a name
attribute), the receipt says so and keeps it masked: the sandbox never keeps a PAN in clear.
"""

from __future__ import annotations

import json
from email.parser import BytesParser
from email.policy import HTTP
from typing import Any
from urllib.parse import parse_qsl, urlencode

from ...interface.cards import luhn_ok
from ...interface.fields import BILLING_FIELDS
from ...interface.masking import REDACTED, mask_data, mask_pan, mask_text
from ...interface.wire import PAN_PATTERN, VERSION
from ..gateway import receipts
from ..gateway.cachetokens import site_of_token
from ..gateway.core import Gateway
from ..http import BodyError, SandboxRequest, SandboxResponse, read_json
from .pages import LOOPBACK_FRAMERS, render
from .served import Served

CARD_FIELD_NAMES = frozenset({"pan", "expirymonth", "expiryyear", "securitycode", "expirydate"})
ORDER_FIELDS = ("baseamount", "currencyiso3a", "orderreference") + BILLING_FIELDS
MAX_FORM_FIELDS = 64


def card_data_in(pairs: list[tuple[str, str]], body: str) -> list[str]:
    """What card data a merchant server received: card field names and card-number-like values.

    A body that is not a form is looked at too: the names and values inside JSON, and any card
    number anywhere in the text."""
    if not pairs:
        pairs = _json_leaves(body)
    found = [f"field {name}" for name, _ in pairs if name.lower() in CARD_FIELD_NAMES]
    for name, value in pairs:
        if any(luhn_ok(run) for run in PAN_PATTERN.findall(value)):
            found.append(f"a card number in {name}")
    if not found and any(luhn_ok(run) for run in PAN_PATTERN.findall(body)):
        found.append("a card number in the body")
    return found


def _json_leaves(body: str) -> list[tuple[str, str]]:
    """(name, value) of every scalar inside a JSON body, named by its nearest key; [] for other bodies."""
    data = _json_of(body)
    if data is _NOT_JSON:
        return []
    leaves: list[tuple[str, str]] = []

    def walk(value: Any, name: str) -> None:
        if isinstance(value, dict):
            for key, item in value.items():
                walk(item, str(key))
        elif isinstance(value, list):
            for item in value:
                walk(item, name)
        elif value is not None:
            leaves.append((name, str(value)))

    walk(data, "body")
    return leaves


def received_pairs(content_type: str, raw: bytes) -> tuple[str, list[tuple[str, str]]]:
    """The body as text and its form fields in the order received (URL-encoded or multipart forms).

    ValueError, saying why, for a body that is not UTF-8 or a form the merchant cannot read."""
    try:
        body = raw.decode("utf-8")
    except UnicodeDecodeError:
        raise ValueError("it is not UTF-8 text") from None
    if "x-www-form-urlencoded" in content_type:
        return body, parse_qsl(body, keep_blank_values=True, max_num_fields=MAX_FORM_FIELDS)
    if "multipart/form-data" in content_type:
        return body, _multipart_pairs(content_type, raw)
    _json_of(body)  # a JSON body past a limit (nested too deep, a huge number) is refused here
    return body, []


_NOT_JSON = object()


def _json_of(body: str) -> Any:
    """The body parsed as JSON within the sandbox's limits, or _NOT_JSON for other text; a ValueError
    naming the limit for JSON past one (the recorder walks what it parses)."""
    try:
        return read_json(body.encode("utf-8"))
    except BodyError as error:
        if error.limit is None:
            return _NOT_JSON
        raise ValueError(f"its JSON breaks a limit ({error.limit}): {error.detail}") from None


def _multipart_pairs(content_type: str, raw: bytes) -> list[tuple[str, str]]:
    message = BytesParser(policy=HTTP).parsebytes(f"Content-Type: {content_type}\r\n\r\n".encode() + raw)
    if not message.is_multipart():
        return []
    pairs = []
    for part in message.iter_parts():
        name = part.get_param("name", header="content-disposition")
        if name is None:
            continue
        payload = part.get_payload(decode=True)
        if not isinstance(payload, bytes):
            raise ValueError(f"the part {name!r} is itself multipart; a form's fields are plain values")
        try:
            pairs.append((str(name), payload.decode("utf-8")))
        except UnicodeDecodeError:
            raise ValueError(f"the part {name!r} is not UTF-8 text") from None
        if len(pairs) > MAX_FORM_FIELDS:
            raise ValueError(f"more than {MAX_FORM_FIELDS} fields")
    return pairs


def receipt_of(content_type: str, body: str, pairs: list[tuple[str, str]]) -> dict[str, Any]:
    """A receipt of one POST: exact when no card data arrived, with the card data masked when some did.

    A form that carried card data is kept as its masked fields, URL-encoded."""
    found = card_data_in(pairs, body)
    if found and pairs:
        pairs = [(name, _masked(name, value)) for name, value in pairs]
        body = urlencode(pairs)
    elif not pairs:
        body = _masked_body(body)
    return {"content_type": content_type, "body": body, "fields": pairs, "card_data": found}


def _masked_body(body: str) -> str:
    """A body that is not a form: card numbers masked and, in JSON, security codes and other
    secrets redacted (a `securitycode` may come without a card number)."""
    data = _json_of(body)
    if data is _NOT_JSON:
        return mask_text(body)
    masked = mask_data(data)
    return body if masked == data else json.dumps(masked)


def _masked(name: str, value: str) -> str:
    if name.lower() in ("securitycode", "expirymonth", "expiryyear", "expirydate"):
        return REDACTED
    return mask_pan(value) if name.lower() == "pan" else mask_text(value)


# pages -----------------------------------------------------------------------------------------


def merchant_site(gateway: Gateway) -> str:
    """The one site the demo merchant sells on: the first site of the sandbox's default account."""
    return gateway.default_account.sitereferences[0]


def payment_page(sandbox: Served, request: SandboxRequest) -> SandboxResponse:
    site = merchant_site(sandbox.gateway)
    asked = request.query.get("sitereference")
    if asked is not None and asked != site:
        return _refused(f"The demo merchant sells on site {site} only, not {asked!r}.")
    return _page(
        "merchant_payment.html",
        title="Demo shop: pay by card",
        site=site,
        base_url=request.base_url,
        locale=request.query.get("locale", "en_gb"),
        named=request.query.get("named_card_inputs") == "1",
    )


def pay(sandbox: Served, request: SandboxRequest) -> SandboxResponse:
    gateway = sandbox.gateway
    content_type = request.headers.get("content-type", "")
    try:
        body, pairs = received_pairs(content_type, request.body)
    except ValueError as error:
        return _refused(f"The merchant server could not read this body: {error}")
    fields = dict(pairs)
    refusal = _foreign_site(gateway, fields)
    if refusal:
        return _refused(refusal)
    receipt = receipt_of(content_type, body, pairs)
    auth = None
    if fields.get("cachetoken") and fields.get("complete", "now") != "later":
        auth = complete_payment(gateway, fields, request.base_url)
    receipt_id = _keep(gateway, receipt, auth)
    return _page(
        "merchant_pay.html",
        title="Merchant server",
        receipt_id=receipt_id,
        receipt=_shown_receipt(receipt),
        auth=auth,
        auth_fields=AUTH_FIELDS_SHOWN,
    )


def received(sandbox: Served, request: SandboxRequest) -> SandboxResponse:
    receipts = receipts_of(sandbox.gateway)
    wants_html = request.query.get("format") == "html" or (
        request.query.get("format") != "json" and "text/html" in request.headers.get("accept", "")
    )
    if not wants_html:
        return SandboxResponse.json({"receipts": receipts})
    return _page(
        "merchant_received.html",
        title="What the merchant server received",
        receipts=[_shown_receipt(r) for r in reversed(receipts)],
        auth_fields=AUTH_FIELDS_SHOWN,
    )


def _foreign_site(gateway: Gateway, fields: dict[str, str]) -> str | None:
    """Why a post asks the merchant to pay somewhere else than its own site, or None.

    The merchant pays with the server's own credentials, so a form naming another site, or a
    cachetoken made for another site, is refused before anything is sent or kept."""
    site = merchant_site(gateway)
    named = fields.get("sitereference")
    if named and named != site:
        return f"The demo merchant pays only on its own site {site}, not on {named!r}."
    token = fields.get("cachetoken")
    if token:
        made_for = site_of_token(gateway.store.connection(), token)
        if made_for is not None and made_for != site:
            return (
                f"This cachetoken was made for another site; the demo merchant pays only on its own "
                f"site {site}."
            )
    return None


def complete_payment(gateway: Gateway, fields: dict[str, str], base_url: str) -> dict[str, Any]:
    """The merchant server's AUTH with the token, on its own site with that site's web services account."""
    site = merchant_site(gateway)
    account = gateway.account_for_site(site) or gateway.default_account
    auth = {
        "requesttypedescriptions": ["AUTH"],
        "sitereference": site,
        "accounttypedescription": "ECOM",
        "cachetoken": fields["cachetoken"],
        **{k: fields[k] for k in ORDER_FIELDS if fields.get(k)},
    }
    answer = gateway.process(
        {"alias": account.username, "version": VERSION, "request": [auth]}, account, base_url=base_url
    )
    # The gateway's record names no site (as the real one's): the merchant notes the site it paid on,
    # which says whose receipt it is (SITE_EXPRESSIONS, receipts_of).
    return {**mask_data(answer["response"][0]), "sitereference": site}


def receipts_of(gateway: Gateway) -> list[dict[str, Any]]:
    """What the merchant received: its own receipts only (no AUTH yet, or an AUTH on its own site)."""
    return receipts.of_site(gateway.store.connection(), merchant_site(gateway))


def _keep(gateway: Gateway, receipt: dict[str, Any], auth: dict[str, Any] | None) -> int:
    with gateway.store.write() as conn:
        return receipts.keep(conn, gateway.clock.timestamp(), receipt, auth)


# HTML ------------------------------------------------------------------------------------------

AUTH_FIELDS_SHOWN = (
    "errorcode",
    "errormessage",
    "errordata",
    "transactionreference",
    "paymenttypedescription",
    "maskedpan",
    "baseamount",
    "currencyiso3a",
    "authcode",
    "settlestatus",
)


def _page(template: str, **context: Any) -> SandboxResponse:
    # notebook 06 shows the shop and its receipts in an iframe
    return render(template, framed_by=LOOPBACK_FRAMERS, **context)


def _refused(message: str) -> SandboxResponse:
    return render(
        "merchant_refused.html",
        status=400,
        framed_by=LOOPBACK_FRAMERS,
        title="Demo shop: request refused",
        message=message,
    )


def _shown_receipt(receipt: dict[str, Any]) -> dict[str, Any]:
    fields = receipt["fields"].items() if isinstance(receipt["fields"], dict) else receipt["fields"]
    return {**receipt, "shown_fields": [(name, _shown(name, value)) for name, value in fields]}


def _shown(name: str, value: str) -> str:
    if name == "cachetoken" and len(value) > 16:
        return f"{value[:12]}… ({len(value)} characters)"
    return value
