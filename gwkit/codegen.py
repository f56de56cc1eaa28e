"""Copy as code: a request (an envelope, a request object, an exchange or a journal entry) as code to run.

    print(as_code(entry))                         # gwkit Python
    print(as_code(entry, "curl"))                 # curl with the JSON body
    print(as_code(entry, "httpx"))                # a raw httpx call
    print(as_code(entry, "securetrading"))        # the official client

Credentials and card data are masked unless `reveal=True`: the password becomes a placeholder read
from the environment, a card number shows as `411111######1111`, a security code as
`[redacted]`. `reveal` can only show what the source holds: the journal and exchanges keep masked
data only, so a request a form is about to send is the one source that can be revealed.
"""

from __future__ import annotations

import json
import shlex
from collections.abc import Mapping
from typing import Any

from .errors import GwkitError
from .interface.masking import mask_data
from .interface.wire import GATEWAY_PATH, VERSION

STYLES = ("gwkit", "httpx", "curl", "securetrading")
PASSWORD_PLACEHOLDER = "$GWKIT_PASSWORD"
DEFAULT_BASE_URL = "https://webservices.example/"
# gwkit Client methods by request type key; anything else goes through `send`.
_METHODS = {
    "AUTH": "auth",
    "AUTH+SUBSCRIPTION": "auth_subscription",
    "SUBSCRIPTION+AUTH": "auth_subscription",
    "THREEDQUERY": "threedquery",
    "STORE": "store",
    "CACHETOKENISE": "cachetokenise",
    "REFUND": "refund",
    "TRANSACTIONQUERY": "transaction_query",
    "TRANSACTIONUPDATE": "transaction_update",
}
# Filled in by the client itself, so left out of gwkit code.
_CLIENT_FILLS = ("requesttypedescriptions", "requestreference")


class CodegenError(GwkitError, ValueError):
    """The source holds no request that can be written as code."""


def as_code(
    source: Any,
    style: str = "gwkit",
    *,
    base_url: str | None = None,
    username: str | None = None,
    password: str | None = None,
    reveal: bool = False,
) -> str:
    """`source` as code in `style` (one of STYLES)."""
    if style not in STYLES:
        raise CodegenError(f"style must be one of {', '.join(STYLES)}, got {style!r}")
    envelope = _envelope_of(source)
    if not reveal:
        envelope = mask_data(envelope)
    target = _Target(
        base_url or _attribute(source, "target") or DEFAULT_BASE_URL,
        username or envelope.get("alias") or "<username>",
        password if (reveal and password) else None,
    )
    return _WRITERS[style](envelope, target)


class _Target:
    def __init__(self, base_url: str, username: str, password: str | None):
        self.base_url = base_url.rstrip("/")
        self.url = self.base_url + GATEWAY_PATH
        self.username = username
        self.password = password

    def python_password(self) -> str:
        return repr(self.password) if self.password else 'os.environ["GWKIT_PASSWORD"]'

    def shell_credentials(self) -> str:
        if self.password:
            return shlex.quote(f"{self.username}:{self.password}")
        return f'{shlex.quote(self.username)}:"{PASSWORD_PLACEHOLDER}"'


def _attribute(source: Any, name: str) -> Any:
    return getattr(source, name, None) if not isinstance(source, Mapping) else None


def _envelope_of(source: Any) -> dict[str, Any]:
    request = source if isinstance(source, Mapping) else getattr(source, "request", None)
    if not isinstance(request, Mapping):
        raise CodegenError(
            f"no request in {type(source).__name__}: give an envelope, a request object, "
            "an Exchange or a journal entry"
        )
    if "request" in request:
        objects = request["request"]
        if not isinstance(objects, list) or not all(isinstance(o, Mapping) for o in objects):
            raise CodegenError("the envelope's 'request' must be a list of request objects")
        return {
            "alias": request.get("alias"),
            "version": request.get("version", VERSION),
            "request": [dict(o) for o in objects],
        }
    return {"alias": None, "version": VERSION, "request": [dict(request)]}


def _type_key(request: Mapping[str, Any]) -> str:
    types = request.get("requesttypedescriptions") or []
    return "+".join(types) if isinstance(types, list) else str(types)


def _python_value(value: Any, indent: int) -> str:
    text = json.dumps(value, indent=4, ensure_ascii=False)
    text = text.replace(": true", ": True").replace(": false", ": False").replace(": null", ": None")
    return text.replace("\n", "\n" + " " * indent)


def _gwkit(envelope: dict[str, Any], target: _Target) -> str:
    lines = [
        "import os",
        "",
        "import gwkit",
        "",
        f"gw = gwkit.Client({target.base_url!r}, {target.username!r}, {target.python_password()})",
    ]
    objects = envelope["request"]
    method = _METHODS.get(_type_key(objects[0])) if len(objects) == 1 else None
    if method is None:
        lines.append(f"response = gw.send({_python_value(objects if len(objects) > 1 else objects[0], 0)})")
        return "\n".join(lines) + "\n"
    fields = {k: v for k, v in objects[0].items() if k not in _CLIENT_FILLS}
    arguments = []
    for name in ("filter", "updates"):
        if name in fields:
            arguments.append(f"    {name}={_python_value(fields.pop(name), 4)},")
    arguments += [f"    {name}={_python_value(value, 4)}," for name, value in fields.items()]
    lines.append(
        f"response = gw.{method}(\n" + "\n".join(arguments) + "\n)"
        if arguments
        else f"response = gw.{method}()"
    )
    lines.append("response.record")
    return "\n".join(lines) + "\n"


def _httpx(envelope: dict[str, Any], target: _Target) -> str:
    body = {**envelope, "alias": envelope.get("alias") or target.username}
    return (
        "\n".join(
            [
                "import os",
                "",
                "import httpx",
                "",
                f"envelope = {_python_value(body, 0)}",
                "answer = httpx.post(",
                f"    {target.url!r},",
                f"    auth=({target.username!r}, {target.python_password()}),",
                '    headers={"Accept": "application/json"},',
                "    json=envelope,",
                ")",
                "answer.raise_for_status()",
                'answer.json()["response"]',
            ]
        )
        + "\n"
    )


def _curl(envelope: dict[str, Any], target: _Target) -> str:
    body = json.dumps(
        {**envelope, "alias": envelope.get("alias") or target.username}, indent=2, ensure_ascii=False
    )
    return (
        f"curl -sS -u {target.shell_credentials()} \\\n"
        "     -H 'Content-Type: application/json' -H 'Accept: application/json' \\\n"
        f"     --data-binary @- {shlex.quote(target.url)} <<'JSON'\n{body}\nJSON\n"
    )


def _securetrading(envelope: dict[str, Any], target: _Target) -> str:
    lines = [
        "import os",
        "",
        "import securetrading",
        "",
        "config = securetrading.Config()",
        f"config.username = {target.username!r}",
        f"config.password = {target.python_password()}",
        f"config.datacenterurl = {target.base_url!r}",
        "api = securetrading.Api(config)",
        "",
    ]
    objects = [{k: v for k, v in o.items() if k != "requestreference"} for o in envelope["request"]]
    if len(objects) == 1:
        lines += ["request = securetrading.Request()", f"request.update({_python_value(objects[0], 0)})"]
    else:
        lines += ["request = securetrading.Requests()", 'request["requests"] = []']
        for obj in objects:
            lines += [
                "single = securetrading.Request()",
                f"single.update({_python_value(obj, 0)})",
                'request["requests"].append(single)',
            ]
    lines += ["response = api.process(request)", 'response["responses"]']
    return "\n".join(lines) + "\n"


_WRITERS = {"gwkit": _gwkit, "httpx": _httpx, "curl": _curl, "securetrading": _securetrading}
