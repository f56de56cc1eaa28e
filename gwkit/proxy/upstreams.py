"""Where the proxy forwards: a gateway over HTTP(S), the embedded sandbox, or a cassette.

Each upstream is an `httpx.AsyncClient` posting to the gateway path, plus what it changes on the
way. A real gateway gets the application's request as sent (its credentials pass through). The
sandbox gets it with the application's credentials and site references mapped to a sandbox account
and site, and its answer mapped back, so the application needs no sandbox account and changes
nothing. A cassette answers as `gwkit.cassette` replays: each recording once, matched the same way.
"""

from __future__ import annotations

import asyncio
import base64
import json
import os
import ssl
from collections.abc import Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

import httpx

from ..cassette import Cassette, CassetteMiss, RecordedSilence
from ..errors import GwkitError
from ..interface.jsonread import BodyError, read_json
from ..interface.wire import GATEWAY_PATH
from ..sandbox import Sandbox, SandboxRequest
from ..sandbox.gateway.accounts import Account

# Headers of the application's request that the gateway reads (the official clients send the
# request reference and version info as headers); nothing else is forwarded.
FORWARDED_HEADERS = ("authorization", "content-type", "accept", "requestreference", "versioninfo", "origin")
UPSTREAM_TIMEOUT = httpx.Timeout(90.0, connect=10.0)  # the real gateway may take a minute to answer
PROBE_TIMEOUT = 5.0  # `is_sandbox`: a sandbox's health page answers at once; a gateway 404s or is slow
# Requests waiting on the upstream at once (each in a thread, created as needed); beyond, they queue.
# More than asyncio's default executor (CPUs + 4): a real gateway's answers take seconds.
UPSTREAM_THREADS = 64


@dataclass(frozen=True)
class UpstreamAnswer:
    status: int
    headers: Mapping[str, str]
    body: bytes


UNREAD: Any = object()  # `send` was given no envelope: the body is read where the envelope is needed


class UpstreamError(GwkitError):
    """The upstream gave no answer: it could not be reached, it timed out or closed the connection,
    or (a cassette) it has no recording for the request.

    `silence`: the upstream gave no answer on purpose, and the application gets none either ("drop"
    or "timeout"): the sandbox's own fault injection, or a cassette replaying a dropped answer;
    `fault` is then the fault's kind."""

    def __init__(self, message: str, *, silence: str | None = None, fault: str | None = None):
        super().__init__(message)
        self.silence = silence
        self.fault = fault


class Upstream:
    """Posts a request body to the gateway path of one upstream.

    A synchronous httpx client, called in worker threads: the proxy's event loop never waits on it,
    and it costs about 1 ms less CPU per request here than an `httpx.AsyncClient` on the loop."""

    name = "upstream"

    def __init__(self, url: str, transport: httpx.BaseTransport | None = None, **options: Any):
        self.url = gateway_url(url)
        self._client = httpx.Client(transport=transport, timeout=UPSTREAM_TIMEOUT, **options)
        self._threads = _threads()

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.url!r})"

    async def send(self, headers: Mapping[str, str], body: bytes, envelope: Any = UNREAD) -> UpstreamAnswer:
        """Post `body`; `envelope` is the JSON it encodes, when it is JSON (the proxy's one reading),
        None when it cannot be read."""
        forwarded = {name: headers[name] for name in FORWARDED_HEADERS if name in headers}
        return await asyncio.get_running_loop().run_in_executor(self._threads, self._post, forwarded, body)

    def _post(self, headers: dict[str, str], body: bytes) -> UpstreamAnswer:
        try:
            answer = self._client.post(self.url, content=body, headers=headers)
        except RecordedSilence as exc:  # a cassette replaying an answer that never came, as it came
            raise UpstreamError(
                f"{type(exc).__name__}: {exc}", silence=exc.silence, fault=exc.fault
            ) from None
        except (httpx.HTTPError, CassetteMiss) as exc:
            raise UpstreamError(f"{type(exc).__name__}: {exc}") from None
        return UpstreamAnswer(answer.status_code, dict(answer.headers), answer.content)

    async def control(
        self, method: str, path: str, query: Mapping[str, str], body: bytes, headers: Mapping[str, str]
    ) -> UpstreamAnswer | None:
        """The sandbox's control API (`/_sandbox/...`), when the upstream is a sandbox; None otherwise."""
        return None

    async def aclose(self) -> None:
        self._threads.shutdown(wait=False)
        self._client.close()


def _threads() -> ThreadPoolExecutor:
    return ThreadPoolExecutor(UPSTREAM_THREADS, thread_name_prefix="gwkit-proxy-upstream")


def gateway_url(url: str) -> str:
    """The gateway endpoint of a base URL, as the official clients make it (`https://host/json/`)."""
    parsed = httpx.URL(url)
    if parsed.scheme not in ("http", "https") or not parsed.host:
        raise ValueError(f"the upstream must be an http:// or https:// URL, not {url!r}")
    return str(parsed.copy_with(path=GATEWAY_PATH, query=None, fragment=None))


class GatewayUpstream(Upstream):
    """A gateway over HTTP or HTTPS (`ca`: a PEM file of the certificates to trust, else the system's)."""

    name = "gateway"

    def __init__(self, url: str, *, ca: str | os.PathLike[str] | None = None):
        verify: ssl.SSLContext | bool = ssl.create_default_context(cafile=os.fspath(ca)) if ca else True
        super().__init__(url, verify=verify)


class SandboxOverHttp(GatewayUpstream):
    """A gwkit sandbox served over HTTP (`gwkit sandbox`, a team sandbox): a gateway whose control
    API (`/_sandbox/...`) the proxy forwards too, with the application's credentials as they came
    (as its gateway requests)."""

    name = "sandbox over HTTP"

    async def control(
        self, method: str, path: str, query: Mapping[str, str], body: bytes, headers: Mapping[str, str]
    ) -> UpstreamAnswer | None:
        forwarded = {name: headers[name] for name in FORWARDED_HEADERS if name in headers}
        url = str(httpx.URL(self.url).copy_with(path=path, query=None))
        return await asyncio.get_running_loop().run_in_executor(
            self._threads, self._control, method, url, dict(query), forwarded, body
        )

    def _control(
        self, method: str, url: str, query: dict[str, str], headers: dict[str, str], body: bytes
    ) -> UpstreamAnswer:
        try:
            answer = self._client.request(method, url, params=query, content=body, headers=headers)
        except httpx.HTTPError as exc:
            raise UpstreamError(f"{type(exc).__name__}: {exc}") from None
        return UpstreamAnswer(answer.status_code, dict(answer.headers), answer.content)


def is_sandbox(url: str, *, ca: str | os.PathLike[str] | None = None) -> bool:
    """Does `url` serve a gwkit sandbox? Its health page answers `{"status": "ok"}` to anyone."""
    verify: ssl.SSLContext | bool = ssl.create_default_context(cafile=os.fspath(ca)) if ca else True
    health = str(httpx.URL(gateway_url(url)).copy_with(path="/_sandbox/health"))
    try:
        answer = httpx.get(health, verify=verify, timeout=PROBE_TIMEOUT)
        return answer.status_code == 200 and answer.json() == {"status": "ok"}
    except (httpx.HTTPError, ValueError):
        return False


class CassetteUpstream(Upstream):
    """A cassette answering as `gwkit.cassette` replays it (each recording once; a miss is an error)."""

    name = "cassette"

    def __init__(self, path: str | os.PathLike[str]):
        self.cassette = Cassette(path)
        if not self.cassette.path.exists():
            raise ValueError(f"no cassette at {self.cassette.path}")
        self.transport = self.cassette.transport()
        super().__init__("http://cassette.invalid", transport=self.transport)


class SandboxUpstream(Upstream):
    """The embedded sandbox, in-process (no socket, no HTTP client): credentials and site references
    mapped to `account`. Its answer comes from a worker thread, so the proxy's event loop never waits
    on it; the sandbox's own faults apply as over HTTP."""

    name = "sandbox"

    def __init__(self, sandbox: Sandbox, account: Account | None = None):
        self.sandbox = sandbox
        self.account = account or sandbox.default_account
        token = f"{self.account.username}:{self.account.password}".encode()
        self._authorization = "Basic " + base64.b64encode(token).decode("ascii")
        self.url = SANDBOX_URL
        self._threads = _threads()

    def __repr__(self) -> str:
        return f"SandboxUpstream({self.account.username!r}, sitereference={self.sitereference!r})"

    @property
    def sitereference(self) -> str:
        return self.account.sitereferences[0]

    async def send(self, headers: Mapping[str, str], body: bytes, envelope: Any = UNREAD) -> UpstreamAnswer:
        """The sandbox's answer to `envelope` (read from `body` when not given) with its sites
        mapped (`body` as it came when it is not JSON), and the application's site in the answer."""
        if envelope is UNREAD:
            envelope = _json_or_none(body)
        sites = _sites_named(envelope)
        if isinstance(envelope, dict):
            body = json.dumps(_map_sites(envelope, self.sitereference, self.account.username)).encode()
        answer = await self._answer("POST", GATEWAY_PATH, headers, body)
        return self._mapped_back(answer, sites[0]) if sites else answer

    async def control(
        self, method: str, path: str, query: Mapping[str, str], body: bytes, headers: Mapping[str, str]
    ) -> UpstreamAnswer | None:
        """The sandbox's control API as the application's account: any credentials and site
        reference mapped to the sandbox's, as for the gateway endpoint."""
        site = query.get("sitereference")
        mapped_query = {**query, "sitereference": self.sitereference} if site is not None else dict(query)
        payload = _json_or_none(body)
        if isinstance(payload, dict) and isinstance(payload.get("sitereference"), str):
            site = payload["sitereference"]
            body = json.dumps({**payload, "sitereference": self.sitereference}).encode()
        headers = {"content-type": "application/json"} if body else {}
        answer = await self._answer(method, path, headers, body, mapped_query)
        return self._mapped_back(answer, site) if site else answer

    def _mapped_back(self, answer: UpstreamAnswer, site: str) -> UpstreamAnswer:
        answered = _json_or_none(answer.body)
        if not isinstance(answered, dict):
            return answer
        back = json.dumps(_answer_sites(answered, self.sitereference, site)).encode()
        return UpstreamAnswer(answer.status, answer.headers, back)

    async def _answer(
        self,
        method: str,
        path: str,
        headers: Mapping[str, str],
        body: bytes,
        query: Mapping[str, str] | None = None,
    ) -> UpstreamAnswer:
        forwarded = {name: headers[name] for name in FORWARDED_HEADERS if name in headers}
        request = SandboxRequest(
            method,
            path,
            {**forwarded, "authorization": self._authorization},
            body,
            query=dict(query or {}),
            base_url=SANDBOX_URL,
        )
        outcome = await asyncio.get_running_loop().run_in_executor(
            self._threads, self.sandbox.answer, request
        )
        try:
            if outcome.delay:
                await asyncio.sleep(outcome.delay)
        finally:
            if outcome.slot is not None:  # the site's budget of delayed requests (sandbox/web/latency.py)
                outcome.slot.release()
        if outcome.response is None:  # the sandbox's own fault injection: no answer, and none given
            raise UpstreamError(
                f"the sandbox sent no answer (its fault: {outcome.silence})",
                silence="timeout" if outcome.silence == "timeout" else "drop",
                fault=outcome.silence,
            )
        return UpstreamAnswer(outcome.response.status, outcome.response.headers, outcome.response.body)

    async def aclose(self) -> None:
        self._threads.shutdown(wait=False)


SANDBOX_URL = "http://sandbox.invalid"


def _json_or_none(body: bytes) -> Any:
    """The JSON of a body, read as every body is (bounded, `read_json`); None when it cannot be."""
    try:
        return read_json(body)
    except BodyError:
        return None


def _objects(envelope: Any) -> list[dict[str, Any]]:
    objects = envelope.get("request") if isinstance(envelope, dict) else None
    return [o for o in objects if isinstance(o, dict)] if isinstance(objects, list) else []


def _sites_named(envelope: Any) -> list[str]:
    """The site references the application named: in its request objects, then in their filters."""
    named = [o["sitereference"] for o in _objects(envelope) if isinstance(o.get("sitereference"), str)]
    for obj in _objects(envelope):
        query = obj.get("filter")
        values = query.get("sitereference") if isinstance(query, dict) else None
        for value in values if isinstance(values, list) else ():
            if isinstance(value, dict) and isinstance(value.get("value"), str):
                named.append(value["value"])
    return named


def _map_sites(envelope: dict[str, Any], site: str, username: str) -> dict[str, Any]:
    """The envelope with every site reference (and the alias) the sandbox's."""
    mapped = dict(envelope)
    if "alias" in mapped:
        mapped["alias"] = username
    if isinstance(envelope.get("request"), list):
        mapped["request"] = [_map_object(o, site) if isinstance(o, dict) else o for o in envelope["request"]]
    return mapped


def _map_object(request: dict[str, Any], site: str) -> dict[str, Any]:
    mapped = dict(request)
    if isinstance(mapped.get("sitereference"), str):
        mapped["sitereference"] = site
    query = mapped.get("filter")
    if isinstance(query, dict) and isinstance(query.get("sitereference"), list):
        mapped["filter"] = {**query, "sitereference": [{"value": site}]}
    return mapped


def _answer_sites(answer: Any, sandbox_site: str, site: str) -> Any:
    """The sandbox's answer with its site reference the application's, at any depth. Records name
    no site (as the real gateway's); a value that names the sandbox's site elsewhere is mapped too."""
    if isinstance(answer, dict):  # a site as a key too: the control API's {"sites": {site: ...}}
        return {
            (site if key == sandbox_site else key): site
            if key == "sitereference" and value == sandbox_site
            else _answer_sites(value, sandbox_site, site)
            for key, value in answer.items()
        }
    if isinstance(answer, list):
        return [_answer_sites(item, sandbox_site, site) for item in answer]
    return answer
