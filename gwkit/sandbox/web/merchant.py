"""A demo merchant served by the sandbox, to see browser tokenisation end to end (interface 4.9).

    GET  /demo/merchant            a payment page with the st.js form (?locale=fr_fr, ?sitereference=,
                                   ?named_card_inputs=1 shows the mistake of naming the card inputs)
    POST /demo/merchant/pay        the form's action: the "merchant server". It records exactly what it
                                   received, then completes the AUTH with the cachetoken (unless the
                                   form says complete=later) and shows the result.
    GET  /demo/merchant/received   what the merchant server received, as JSON (or HTML for browsers
                                   and ?format=html), oldest first.

The merchant server is a separate party in spirit: it reaches the gateway with the site's web
services account, as a real merchant server would. What it records is kept in the sandbox
database (a sandbox reset clears it). Should card data ever arrive (a card input with a name
attribute), the receipt says so and keeps it masked: the sandbox never keeps a PAN in clear.
"""

from __future__ import annotations

import html
import json
from email.parser import BytesParser
from email.policy import HTTP
from typing import Any
from urllib.parse import parse_qsl, urlencode

from ...interface.cards import luhn_ok
from ...interface.fields import BILLING_FIELDS
from ...interface.masking import REDACTED, mask_data, mask_pan, mask_text
from ...interface.wire import PAN_PATTERN, VERSION
from ..gateway.core import Gateway
from ..http import SandboxRequest, SandboxResponse
from .pages import html_document
from .served import Served

CARD_FIELD_NAMES = frozenset({"pan", "expirymonth", "expiryyear", "securitycode", "expirydate"})
ORDER_FIELDS = ("baseamount", "currencyiso3a", "orderreference") + BILLING_FIELDS

SCHEMA = """
CREATE TABLE IF NOT EXISTS demo_merchant_receipts (
    id INTEGER PRIMARY KEY,
    received TEXT NOT NULL,        -- sandbox clock
    content_type TEXT NOT NULL,
    body TEXT NOT NULL,            -- the body as received; masked when card data arrived
    fields TEXT NOT NULL,          -- JSON [[name, value], ...] in the order received (masked likewise)
    card_data TEXT NOT NULL,       -- JSON list of the card data found, [] when none arrived
    auth TEXT                      -- JSON AUTH record when the merchant completed the payment
);
"""
# The site of a receipt, for snapshots: the site of the AUTH the merchant made (none: no site).
SITE_EXPRESSIONS = {"demo_merchant_receipts": "json_extract(auth, '$.sitereference')"}


def card_data_in(pairs: list[tuple[str, str]], body: str) -> list[str]:
    """What card data a merchant server received: card field names and card-number-like values.

    A body that is not a form is looked at too: the names and values inside JSON, and any card
    number anywhere in the text."""
    if not pairs:
        pairs = _json_leaves(body)
    found = [f"field {name!r}" for name, _ in pairs if name.lower() in CARD_FIELD_NAMES]
    for name, value in pairs:
        if any(luhn_ok(run) for run in PAN_PATTERN.findall(value)):
            found.append(f"a card number in {name!r}")
    if not found and any(luhn_ok(run) for run in PAN_PATTERN.findall(body)):
        found.append("a card number in the body")
    return found


def _json_leaves(body: str) -> list[tuple[str, str]]:
    """(name, value) of every scalar inside a JSON body, named by its nearest key; [] for other bodies."""
    try:
        data = json.loads(body)
    except ValueError:
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
    """The body as text and its form fields in the order received (URL-encoded or multipart forms)."""
    body = raw.decode("utf-8", errors="replace")
    if "x-www-form-urlencoded" in content_type:
        return body, parse_qsl(body, keep_blank_values=True)
    if "multipart/form-data" in content_type:
        return body, _multipart_pairs(content_type, raw)
    return body, []


def _multipart_pairs(content_type: str, raw: bytes) -> list[tuple[str, str]]:
    message = BytesParser(policy=HTTP).parsebytes(f"Content-Type: {content_type}\r\n\r\n".encode() + raw)
    if not message.is_multipart():
        return []
    pairs = []
    for part in message.iter_parts():
        name = part.get_param("name", header="content-disposition")
        if name is not None:
            pairs.append((name, part.get_payload(decode=True).decode("utf-8", errors="replace")))
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
    try:
        data = json.loads(body)
    except ValueError:
        return mask_text(body)
    masked = mask_data(data)
    return body if masked == data else json.dumps(masked)


def _masked(name: str, value: str) -> str:
    if name.lower() in ("securitycode", "expirymonth", "expiryyear", "expirydate"):
        return REDACTED
    return mask_pan(value) if name.lower() == "pan" else mask_text(value)


# pages -----------------------------------------------------------------------------------------

def payment_page(sandbox: Served, request: SandboxRequest) -> SandboxResponse:
    locale = request.query.get("locale", "en_gb")
    site = request.query.get("sitereference") or sandbox.gateway.default_account.sitereferences[0]
    named = request.query.get("named_card_inputs") == "1"
    return SandboxResponse.html(_page("Demo shop: pay by card", _payment_form(request.base_url, site, locale, named)))


def pay(sandbox: Served, request: SandboxRequest) -> SandboxResponse:
    content_type = request.headers.get("content-type", "")
    body, pairs = received_pairs(content_type, request.body)
    receipt = receipt_of(content_type, body, pairs)
    fields = dict(pairs)
    auth = None
    if fields.get("cachetoken") and fields.get("complete", "now") != "later":
        auth = complete_payment(sandbox.gateway, fields, request.base_url)
    receipt_id = _keep(sandbox.gateway, receipt, auth)
    links = ("<p><a href='/demo/merchant'>Back to the shop</a> &middot; "
             "<a href='/demo/merchant/received?format=html'>Everything the merchant server received</a></p>")
    return SandboxResponse.html(_page("Merchant server", _receipt_html(receipt_id, receipt, auth) + links))


def received(sandbox: Served, request: SandboxRequest) -> SandboxResponse:
    receipts = receipts_of(sandbox.gateway)
    wants_html = request.query.get("format") == "html" or (
        request.query.get("format") != "json" and "text/html" in request.headers.get("accept", ""))
    if not wants_html:
        return SandboxResponse.json({"receipts": receipts})
    parts = [_receipt_html(r["id"], r, r["auth"]) for r in reversed(receipts)] or ["<p>Nothing received yet.</p>"]
    return SandboxResponse.html(_page("What the merchant server received", "".join(parts)))


def complete_payment(gateway: Gateway, fields: dict[str, str], base_url: str) -> dict[str, Any]:
    """The merchant server's AUTH with the token, sent with the site's web services account."""
    site = fields.get("sitereference") or gateway.default_account.sitereferences[0]
    account = gateway.account_for_site(site) or gateway.default_account
    auth = {"requesttypedescriptions": ["AUTH"], "sitereference": site, "accounttypedescription": "ECOM",
            "cachetoken": fields["cachetoken"], **{k: fields[k] for k in ORDER_FIELDS if fields.get(k)}}
    answer = gateway.process({"alias": account.username, "version": VERSION, "request": [auth]},
                             account, base_url=base_url)
    return mask_data(answer["response"][0])


def receipts_of(gateway: Gateway) -> list[dict[str, Any]]:
    rows = gateway.store.connection().execute("SELECT * FROM demo_merchant_receipts ORDER BY id").fetchall()
    return [{"id": r["id"], "received": r["received"], "content_type": r["content_type"], "body": r["body"],
             "fields": dict(json.loads(r["fields"])), "field_names": [n for n, _ in json.loads(r["fields"])],
             "card_data": json.loads(r["card_data"]), "auth": json.loads(r["auth"]) if r["auth"] else None}
            for r in rows]


def _keep(gateway: Gateway, receipt: dict[str, Any], auth: dict[str, Any] | None) -> int:
    with gateway.store.write() as conn:
        cursor = conn.execute(
            "INSERT INTO demo_merchant_receipts (received, content_type, body, fields, card_data, auth) "
            "VALUES (?, ?, ?, ?, ?, ?)",
            (gateway.clock.timestamp(), receipt["content_type"], receipt["body"],
             json.dumps(receipt["fields"]), json.dumps(receipt["card_data"]),
             json.dumps(auth) if auth is not None else None))
        return int(cursor.lastrowid)


# HTML ------------------------------------------------------------------------------------------

_STYLE = """
body { font-family: system-ui, sans-serif; margin: 1.5em; max-width: 46em; color: #222; }
label { display: block; margin-top: .6em; font-size: .9em; }
input, select { font-size: 1em; padding: .3em; }
.card { border: 1px solid #ccd; border-radius: 6px; padding: .2em 1em 1em; margin: 1em 0; background: #f7f8fc; }
.st-error { border: 2px solid #c00 !important; }
#st-message.st-error { background: #fee; color: #900; padding: .5em; border-radius: 4px; }
#st-message:empty { display: none; }
table { border-collapse: collapse; margin: .5em 0; }
th, td { text-align: left; padding: .2em .8em .2em 0; border-bottom: 1px solid #eee; vertical-align: top; }
td code { word-break: break-all; }
.ok { color: #1b7f3b; font-weight: bold; } .bad { color: #b00020; font-weight: bold; }
"""


def _page(title: str, content: str) -> str:
    return html_document(title, f"<h1>{html.escape(title)}</h1>{content}", _STYLE)


def _payment_form(base_url: str, site: str, locale: str, named: bool) -> str:
    def card_input(field: str, label: str, size: int, placeholder: str) -> str:
        name = f" name='{field}'" if named else ""
        return (f"<label>{label} <input id='card-{field}' data-st-field='{field}'{name} size='{size}' "
                f"placeholder='{placeholder}' autocomplete='off'></label>")

    warning = ("<p class='bad'>This page names its card inputs (a mistake): card data will reach the "
               "merchant server.</p>" if named else "")
    return f"""{warning}
<form id="st-payment" action="/demo/merchant/pay" method="post">
  <div id="st-message"></div>
  <input type="hidden" name="sitereference" value="{html.escape(site)}">
  <label>Order reference <input name="orderreference" value="demo-order-1"></label>
  <label>Amount (base units, 1050 = 10.50) <input name="baseamount" value="1050"></label>
  <label>Currency <select name="currencyiso3a"><option>GBP</option><option>EUR</option>
    <option>USD</option></select></label>
  <label>Name on the order <input name="billinglastname" value="Tester"></label>
  <div class="card"><p>Card details: these inputs have no <code>name</code>, so they never reach the
    merchant server; st.js swaps them for a token.</p>
    {card_input("pan", "Card number", 22, "4111 1111 1111 1111")}
    {card_input("expirymonth", "Expiry month", 3, "MM")}
    {card_input("expiryyear", "Expiry year", 5, "YYYY")}
    {card_input("securitycode", "Security code", 5, "123")}
  </div>
  <label>Complete the payment <select name="complete">
    <option value="now">now, on the merchant server</option>
    <option value="later">later (keep the token, e.g. for the notebook)</option></select></label>
  <p><button id="pay" type="submit">Pay</button></p>
</form>
<p><a href="/demo/merchant/received?format=html">What the merchant server received</a></p>
<script src="{html.escape(base_url)}/js/st.js"></script>
<script>
  new SecureTrading.Standard({{sitereference: {json.dumps(site)}, locale: {json.dumps(locale)}}});
</script>"""


def _receipt_html(receipt_id: int, receipt: dict[str, Any], auth: dict[str, Any] | None) -> str:
    fields = receipt["fields"].items() if isinstance(receipt["fields"], dict) else receipt["fields"]
    rows = "".join(f"<tr><th>{html.escape(name)}</th><td><code>{html.escape(_shown(name, value))}</code></td></tr>"
                   for name, value in fields)
    verdict = ("<p class='bad'>Card data reached the merchant server: " + html.escape("; ".join(receipt["card_data"]))
               + " (kept masked here)</p>" if receipt["card_data"]
               else "<p class='ok'>No card data reached the merchant server: only the fields below.</p>")
    return (f"<section id='receipt-{receipt_id}' class='receipt'><h2>Receipt {receipt_id}: what the merchant "
            f"server received</h2>{verdict}<table class='received'>{rows}</table>{_auth_html(auth)}</section>")


def _shown(name: str, value: str) -> str:
    if name == "cachetoken" and len(value) > 16:
        return f"{value[:12]}… ({len(value)} characters)"
    return value


def _auth_html(auth: dict[str, Any] | None) -> str:
    if auth is None:
        return "<p id='auth-result'>The payment was not completed yet (no AUTH sent).</p>"
    shown = ("errorcode", "errormessage", "errordata", "transactionreference", "paymenttypedescription",
             "maskedpan", "baseamount", "currencyiso3a", "authcode", "settlestatus")
    rows = "".join(f"<tr><th>{k}</th><td>{html.escape(str(auth[k]))}</td></tr>" for k in shown if k in auth)
    outcome = "ok" if auth.get("errorcode") == "0" else "bad"
    title = "Payment authorised" if outcome == "ok" else "Payment not authorised"
    return f"<h3 id='auth-result' class='{outcome}'>{title}</h3><table class='auth'>{rows}</table>"
