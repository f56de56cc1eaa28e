"""A reference shop for the checklist: a small web application that pays through a gateway at a
URL of its configuration (so a proxy, or the checklist, sees every request it sends), in one of two
behaviours:

- `right`: a decline is told to the customer; a soft decline (71000) is retried with 3-D Secure
  (THREEDQUERY + AUTH); after an unknown outcome (60010, 60034, 99999, no answer, a 5xx) the order
  is queried (TRANSACTIONQUERY) and paid again only if nothing was made;
- `naive`: anything but success is retried at once with the same AUTH: blindly, and without 3-D
  Secure; asked for a challenge, it pays without it.

    POST /pay  {"orderreference": "order-1", "pan": "...", "expirydate": "12/2030",
                "securitycode": "123", "baseamount": "1050", "currencyiso3a": "GBP"}
    -> {"outcome": "paid" | "declined" | "authenticate" | "failed" | "unknown", "did": [...]}

With `"threeds": "v2"` (or `"v1"`) in the order, the payment begins with 3-D Secure (THREEDQUERY +
AUTH, with the browser's data). Frictionless (or not enrolled), the answer has the AUTH's outcome.
Asked for a challenge, the shop answers `{"outcome": "challenge", "acsurl", "creq",
"transactionreference"}` (version 1: `pareq`, `md` and `termurl` in place of `creq`): the customer's
browser posts them to `acsurl`, and the ACS posts the `cres` (`PaRes` and `MD`) back to the shop:

    POST /pay/return  {"orderreference": "order-1", "transactionreference": "...", "cres": "..."}
                      (version 1: "md" and "pares" in place of "cres")
    -> the AUTH's outcome, sent with the library's `threedresponse` (version 1: `md` and `pares`)

Its URL notification listener, `POST /notifications` (the gateway's form): done right, a notification
whose `responsesitesecurity` is not the one its notification password makes is refused (403); the
naive shop answers 200 to anything.

`python -m gwkit.checklist.shop --gateway http://127.0.0.1:8766 [--naive] [--port 8767]` serves it.
The card is sent to the gateway only; the shop keeps nothing.
"""

from __future__ import annotations

import argparse
import contextlib
import sys
import threading
from collections.abc import AsyncIterator, Mapping
from dataclasses import dataclass, field
from typing import Any, Self
from urllib.parse import parse_qsl

import httpx
import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, PlainTextResponse, Response
from starlette.routing import Route

from ..interface.errors import GwkitError
from ..interface.jsonread import BodyError, read_json
from ..interface.notification import signature_ok
from ..interface.wire import GATEWAY_PATH
from ..sandbox.web.server import bind, uvicorn_config
from ..threeds.messages import decode_b64_json, threedresponse_jwt
from ..threeds.v2 import BROWSER_DEFAULTS

RIGHT, NAIVE = "right", "naive"
BEHAVIOURS = (RIGHT, NAIVE)
ORDER_FIELDS = ("orderreference", "pan", "expirydate", "securitycode", "baseamount", "currencyiso3a")
UNKNOWN_OUTCOME = ("60010", "60034", "99999")  # the payment may or may not have been made
SOFT_DECLINE, DECLINE = "71000", "70000"
UNAUTHENTICATED = "60022"  # the AUTH after a failed authentication: not sent to the bank
RETURN_FIELDS = ("orderreference", "transactionreference")  # POST /pay/return, with cres, or md and pares
AUTHENTICATED = ("Y", "A")  # the CRes's transStatus the browser library calls SUCCESS


class _NoAnswer(GwkitError):
    """The gateway's answer never came, or is not a gateway answer (a 5xx page, garbage)."""


@dataclass
class ShopSettings:
    gateway_url: str  # the gateway's base URL (the shop posts to it + /json/)
    username: str = "shop@example.com"
    password: str = "shop-password"
    sitereference: str = "test_shop12345"
    behaviour: str = RIGHT
    timeout: float = 10.0  # seconds to wait for the gateway's answer
    notification_password: str = "shop-notification-password"  # checks the notifications' signatures

    def __post_init__(self) -> None:
        if self.behaviour not in BEHAVIOURS:
            raise ValueError(f"behaviour must be one of {', '.join(BEHAVIOURS)}, not {self.behaviour!r}")


@dataclass
class _Payment:
    order: Mapping[str, str]
    did: list[str] = field(default_factory=list)


class Shop:
    """The shop's gateway conversations (no HTTP of its own: `create_shop` serves it)."""

    def __init__(self, settings: ShopSettings, client: httpx.AsyncClient):
        self.settings = settings
        self.client = client

    async def pay(self, order: Mapping[str, str]) -> dict[str, Any]:
        payment = _Payment(order)
        if order.get("threeds") in ("v1", "v2"):
            return await self._pay_with_3ds(payment)
        outcome = await (
            self._pay_naively(payment) if self.settings.behaviour == NAIVE else self._pay(payment)
        )
        return {"outcome": outcome, "did": payment.did}

    async def _pay_with_3ds(self, payment: _Payment) -> dict[str, Any]:
        """THREEDQUERY + AUTH; a challenge (version 1: the enrolled card's ACS) goes to the customer.
        Naive: the card is paid without it, and again without 3-D Secure when authentication failed."""
        payment.did.append("THREEDQUERY+AUTH")
        request = {
            **self._card(payment.order),
            "requesttypedescriptions": ["THREEDQUERY", "AUTH"],
            "termurl": "https://shop.example/pay/return",
            **BROWSER_DEFAULTS,
        }
        try:
            last = (await self._send(request))[-1]
        except _NoAnswer:
            return {"outcome": await self._reconcile(payment), "did": payment.did}
        challenged = last.get("requesttypedescription") == "THREEDQUERY" and last.get("acsurl")
        unauthenticated = str(last.get("errorcode")) == UNAUTHENTICATED
        if self.settings.behaviour == NAIVE and (challenged or unauthenticated):
            return {"outcome": _outcome(await self._auth(payment)), "did": payment.did}
        if not challenged:
            return {"outcome": _outcome(last), "did": payment.did}  # frictionless: the AUTH's outcome
        to_acs = {"creq": last.get("threedpayload")} if last.get("threedpayload") else {}
        if last.get("pareq"):
            to_acs = {"pareq": last["pareq"], "md": last.get("md"), "termurl": request["termurl"]}
        return {
            "outcome": "challenge",
            "acsurl": last["acsurl"],
            **to_acs,
            "transactionreference": last.get("transactionreference"),
            "did": payment.did,
        }

    async def returned(self, back: Mapping[str, str]) -> dict[str, Any]:
        """The customer back from the ACS: the AUTH with version 1's `md` and `pares`, or, naming the
        THREEDQUERY, with the browser library's `threedresponse` made of the `cres` (SUCCESS when the
        issuer authenticated the cardholder)."""
        request: dict[str, Any] = {
            "requesttypedescriptions": ["AUTH"],
            "sitereference": self.settings.sitereference,
            "orderreference": back["orderreference"],
        }
        if back.get("pares"):
            request |= {"md": back["md"], "pares": back["pares"]}
        else:
            try:
                status = decode_b64_json(back["cres"], "cres").get("transStatus")
            except GwkitError:
                status = None
            request |= {
                "parenttransactionreference": back["transactionreference"],
                "threedresponse": threedresponse_jwt(
                    "SUCCESS" if status in AUTHENTICATED else "FAILURE", cres=back["cres"]
                ),
            }
        try:
            record = (await self._send(request))[-1]
        except _NoAnswer:
            return {"outcome": "unknown", "did": ["AUTH+threedresponse"]}
        return {"outcome": _outcome(record), "did": ["AUTH+threedresponse"]}

    async def _pay(self, payment: _Payment) -> str:
        try:
            record = await self._auth(payment)
        except _NoAnswer:
            return await self._reconcile(payment)
        code = str(record.get("errorcode"))
        if code == SOFT_DECLINE:
            return await self._auth_with_3ds(payment)
        if code in UNKNOWN_OUTCOME:
            return await self._reconcile(payment)
        return _outcome(record)

    async def _pay_naively(self, payment: _Payment) -> str:
        try:
            record = await self._auth(payment)
            if str(record.get("errorcode")) == "0":
                return "paid"
        except _NoAnswer:
            pass
        try:  # try again, the same order, as it was
            return _outcome(await self._auth(payment))
        except _NoAnswer:
            return "unknown"

    async def _reconcile(self, payment: _Payment) -> str:
        """Ask the gateway what became of the order; pay again only if nothing was made."""
        try:
            found = await self._query(payment)
        except _NoAnswer:
            return "unknown"  # ask again later: never pay blindly
        if found:
            return "paid"
        try:
            return _outcome(await self._auth(payment))
        except _NoAnswer:
            return "unknown"

    async def _auth(self, payment: _Payment) -> Mapping[str, Any]:
        payment.did.append("AUTH")
        return (await self._send({**self._card(payment.order), "requesttypedescriptions": ["AUTH"]}))[-1]

    async def _auth_with_3ds(self, payment: _Payment) -> str:
        payment.did.append("THREEDQUERY+AUTH")
        request = {
            **self._card(payment.order),
            "requesttypedescriptions": ["THREEDQUERY", "AUTH"],
            "termurl": "https://shop.example/3ds-return",
            "accept": "text/html",
            "useragent": "Mozilla/5.0 (reference shop)",
        }
        try:
            records = await self._send(request)
        except _NoAnswer:
            return await self._reconcile(payment)
        last = records[-1]
        if last.get("requesttypedescription") == "THREEDQUERY" and str(last.get("errorcode")) == "0":
            return "authenticate"  # enrolled: the customer goes to the ACS (the browser's part)
        return _outcome(last)

    async def _query(self, payment: _Payment) -> bool:
        payment.did.append("TRANSACTIONQUERY")
        request = {
            "requesttypedescriptions": ["TRANSACTIONQUERY"],
            "filter": {
                "sitereference": [{"value": self.settings.sitereference}],
                "orderreference": [{"value": payment.order["orderreference"]}],
            },
        }
        record = (await self._send(request))[-1]
        if str(record.get("errorcode")) != "0":
            raise _NoAnswer(f"the query failed: {record.get('errorcode')}")
        return any(
            r.get("requesttypedescription") == "AUTH"
            and str(r.get("errorcode")) == "0"
            and str(r.get("settlestatus")) != "3"
            for r in record.get("records") or ()
        )

    def _card(self, order: Mapping[str, str]) -> dict[str, str]:
        return {
            "sitereference": self.settings.sitereference,
            "accounttypedescription": "ECOM",
            **{name: order[name] for name in ORDER_FIELDS},
        }

    async def _send(self, request: dict[str, Any]) -> list[Mapping[str, Any]]:
        envelope = {"alias": self.settings.username, "version": "1.00", "request": [request]}
        url = self.settings.gateway_url.rstrip("/") + GATEWAY_PATH
        try:
            answer = await self.client.post(url, json=envelope)
        except httpx.HTTPError as exc:
            raise _NoAnswer(type(exc).__name__) from None
        try:
            records = answer.json()["response"] if answer.status_code == 200 else None
        except (ValueError, KeyError, TypeError):
            records = None
        if not isinstance(records, list) or not records:
            raise _NoAnswer(f"HTTP {answer.status_code}, not a gateway answer")
        return records


def _outcome(record: Mapping[str, Any]) -> str:
    code = str(record.get("errorcode"))
    if code == "0":
        return "paid"
    if code in (DECLINE, SOFT_DECLINE):
        return "declined"
    return "unknown" if code in UNKNOWN_OUTCOME else "failed"


def create_shop(settings: ShopSettings, ready: threading.Event | None = None) -> Starlette:
    """The shop as a Starlette app: `POST /pay` (JSON), `GET /` says what it is. `ready` is set
    once it serves (its gateway client made)."""
    shops: list[Shop] = []

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        auth = (settings.username, settings.password)
        async with httpx.AsyncClient(auth=auth, timeout=settings.timeout) as client:
            shops.append(Shop(settings, client))
            if ready is not None:
                ready.set()
            yield

    async def pay(request: Request) -> Response:
        order = await _json_fields(request, ORDER_FIELDS, "the order")
        if isinstance(order, Response):
            return order
        return JSONResponse(await shops[0].pay(order))

    async def pay_return(request: Request) -> Response:
        back = await _json_fields(request, RETURN_FIELDS, "the customer back from the ACS")
        if isinstance(back, Response):
            return back
        if not (_text(back, "cres") or (_text(back, "md") and _text(back, "pares"))):
            return JSONResponse({"error": "cres, or md and pares: required (text)"}, status_code=400)
        return JSONResponse(await shops[0].returned(back))

    async def notification(request: Request) -> Response:
        fields = dict(parse_qsl((await request.body()).decode("utf-8", "replace"), keep_blank_values=True))
        if settings.behaviour == NAIVE or signature_ok(fields, settings.notification_password):
            return PlainTextResponse("ok")
        return PlainTextResponse("responsesitesecurity: not the notification's signature", status_code=403)

    async def about(request: Request) -> Response:
        return JSONResponse({"shop": "gwkit reference shop", "behaviour": settings.behaviour})

    routes = [
        Route("/pay", pay, methods=["POST"]),
        Route("/pay/return", pay_return, methods=["POST"]),
        Route("/notifications", notification, methods=["POST"]),
        Route("/", about),
    ]
    return Starlette(routes=routes, lifespan=lifespan)


def _text(sent: Mapping[str, Any], name: str) -> bool:
    return isinstance(sent.get(name), str) and bool(sent[name])


async def _json_fields(request: Request, required: tuple[str, ...], what: str) -> dict[str, Any] | Response:
    """The JSON object posted, with each of `required` a non-empty text; else the 4xx naming the field."""
    if request.headers.get("content-type", "").split(";")[0].strip() != "application/json":
        return JSONResponse({"error": "content-type: must be application/json"}, status_code=415)
    try:
        sent = read_json(await request.body())
    except BodyError as exc:
        return JSONResponse({"error": f"body: must be JSON: {exc}"}, status_code=400)
    if not isinstance(sent, dict):
        return JSONResponse({"error": f"body: must be a JSON object ({what})"}, status_code=400)
    missing = [name for name in required if not isinstance(sent.get(name), str) or not sent[name]]
    if missing:
        return JSONResponse({"error": f"{', '.join(missing)}: required (text)"}, status_code=400)
    return sent


@dataclass
class ShopHandle:
    """The reference shop serving on loopback in a background thread."""

    base_url: str
    _server: uvicorn.Server
    _thread: threading.Thread
    _sock: Any

    def pay(self, **order: str) -> dict[str, Any]:
        """Play the customer: one payment (the fields of ORDER_FIELDS); what the shop answered."""
        return self._post("/pay", order)

    def returned(self, **back: str) -> dict[str, Any]:
        """Play the customer's browser back from the ACS (the fields of RETURN_FIELDS)."""
        return self._post("/pay/return", back)

    def _post(self, path: str, sent: dict[str, str]) -> dict[str, Any]:
        answer = httpx.post(f"{self.base_url}{path}", json=sent, timeout=60)
        answer.raise_for_status()
        result: dict[str, Any] = answer.json()
        return result

    def stop(self) -> None:
        self._server.should_exit = True
        self._thread.join(timeout=30)
        self._sock.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


def serve_shop(settings: ShopSettings, *, port: int = 0) -> ShopHandle:
    """Serve the reference shop on 127.0.0.1:`port` (0: a free one); serving on return."""
    sock = bind("127.0.0.1", port)
    ready = threading.Event()
    config = uvicorn_config(create_shop(settings, ready))
    config.lifespan = "on"
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, name="gwkit-shop", daemon=True)
    thread.start()
    if not ready.wait(timeout=30):
        raise RuntimeError("the reference shop did not start")
    host, bound = sock.getsockname()[:2]
    return ShopHandle(f"http://{host}:{bound}", server, thread, sock)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m gwkit.checklist.shop", description=__doc__.split("\n\n")[0]
    )
    parser.add_argument("--gateway", required=True, help="the gateway's base URL (the checklist's)")
    parser.add_argument("--naive", action="store_true", help="retry blindly, without 3-D Secure")
    parser.add_argument("--port", type=int, default=8767, help="loopback port (default 8767)")
    parser.add_argument("--timeout", type=float, default=10.0, help="seconds to wait for the gateway")
    args = parser.parse_args(argv)
    settings = ShopSettings(args.gateway, behaviour=NAIVE if args.naive else RIGHT, timeout=args.timeout)
    handle = serve_shop(settings, port=args.port)
    print(
        f"reference shop ({settings.behaviour}) on {handle.base_url}, paying through {args.gateway}",
        flush=True,
    )
    try:
        handle._thread.join()
    except KeyboardInterrupt:
        handle.stop()
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
