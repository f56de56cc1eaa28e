"""Soak: 50 clients for 60 s of mixed traffic against a real `gwkit sandbox`, killed and restarted twice.

The server is a `gwkit sandbox` subprocess on a loopback port with its own temporary database and
two accounts: `soak` takes the traffic, `clock` moves the clock (PT1H a second). Each client loops
over a mix: AUTHs (each with its own orderreference), TRANSACTIONQUERY of its own orders,
TRANSACTIONUPDATE of its own AUTHs, 3-D Secure (THREEDQUERY, the ACS page and its form, then the
AUTH with md and pares) and 10% malformed bodies. Twice during the run the server is SIGKILLed and
started again on the same port and database; clients wait while it is down.

Throughout, a third tenant, `slow`, holds its maximum of delayed requests (a latency fault of an
hour on its site, `--delayed` AUTHs open at once, the sandbox's per-site cap): each gives up after a
few seconds (its connection closes, which must end its delay and give its slot back) and is sent
again at once. What the slow tenant alone costs the others is measured before the soak: the same
clients (no kills, no clock moves, no malformed bodies) for `--idle-seconds` idle and as long with
the slow tenant at its cap, taking turns (`--slices`) so that both see the same load of a shared
machine. The others' AUTH p99 with it is compared with
idle: the goal is within 2x. The soak's own AUTH p50/p99 (kills, clock moves and all) are compared
with idle too, for information: a restart's cold start is not the slow tenant's cost.

Afterwards every AUTH a client was told was authorised is looked up by TRANSACTIONQUERY: missing
ones are lost; an orderreference with more than one AUTH is a duplicate (clients never resend).
Requests in flight at a kill have an unknown outcome: they are counted apart, not as dropped.

On a team sandbox (`--postgres`, or `--database URL`: PostgreSQL, in a schema of its own made and
dropped by the run), two more tenants can join the slow one, beside the idle clients' turns and in
the soak: `--slow-listener S`, a tenant whose URL notifications go to a listener on loopback that
answers after S seconds, paying all along; `--restoring-tenant`, a tenant that restores a snapshot
of its site (100 payments) again and again. PostgreSQL's own view of who waits for whom is sampled
throughout (`TenantWaits`): a session waiting for the whole sandbox's lock, or for a row another
session holds, could be one tenant waiting for another; one waiting for a site's lock waits for its
own tenant's work (a write takes only the locks of its own sites).

    python benchmarks/soak.py [--seconds 60] [--clients 50] [--kills 2] [--seed 1] [--idle-seconds 20] [--slices 4]
        [--postgres | --database URL] [--slow-listener SECONDS] [--restoring-tenant]

Goal: 0 5xx, 0 dropped connections, 0 lost, 0 duplicated, 0 waits of one tenant on another's sites;
others' AUTH p99 within 2x of idle.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import re
import secrets
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from html import unescape
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import quote

import httpx

ROOT = Path(__file__).resolve().parents[1]
SOAK = ("soak", "soak-password", "test_soak1")
CLOCK = ("clock", "clock-password", "test_clock1")
SLOW = ("slow", "slow-password", "test_slow1")  # holds its maximum of delayed requests
LISTENER = ("listener", "listener-password", "test_listener1")  # its notifications' listener is slow
RESTORER = ("restorer", "restorer-password", "test_restorer1")  # restores a snapshot again and again
TENANTS = (SOAK, CLOCK, SLOW, LISTENER, RESTORER)
ACCOUNTS = "".join(
    f'[[account]]\nusername = "{u}"\npassword = "{p}"\nsitereferences = ["{s}"]\n' for u, p, s in TENANTS
)
LOCAL_POSTGRES = "postgresql://gwkit:gwkit@127.0.0.1:5432/gwkit_test"  # scripts/pg-up's
RESTORED_PAYMENTS = 100  # in the restoring tenant's snapshot
DELAYED_PER_SITE = 20  # the sandbox's default cap (gwkit/sandbox/web/latency.py)
LATENCY_FAULT = {"kind": "latency", "seconds": 3600, "count": 1_000_000, "requesttypes": ["AUTH"]}
CARD = {"pan": "4111111111111111", "expirydate": "12/2030", "securitycode": "123"}
ENROLLED_CARD = {"pan": "4111110000000211", "expirydate": "12/2030", "securitycode": "123"}
JSON = {"content-type": "application/json", "accept": "application/json"}
BATCH = 100  # filter values per TRANSACTIONQUERY after the run
MALFORMED: list[bytes] = [
    b'{"alias": "soak", "version": "1.00", "request": [',
    b"not json at all",
    b'{"request": "AUTH"}',
    b'{"request": [{"requesttypedescriptions": "AUTH"}]}',
    b'{"request": [{"requesttypedescriptions": ["AUTH"], "sitereference": ["test_soak1"]}]}',
    b'{"request": [{"requesttypedescriptions": ["AUTH"], "baseamount": 1e400}]}',
    b'{"request": [' + b"[" * 60 + b"]" * 60 + b"]}",
    b'{"request": [{"requesttypedescriptions": ["AUTH"], "pan": "\xff\xfe"}]}',
    b'{"request": [{"requesttypedescriptions": ["AUTH"], "baseamount": "' + b"9" * 400 + b'"}]}',
    b'{"request": [{"requesttypedescriptions": ["NOSUCHTYPE"]}]}',
    b"[]",
    b"",
]


@dataclass
class Tally:
    served: int = 0
    server_errors: int = 0
    dropped: int = 0
    bad_answers: int = 0  # a 200 whose body was not the gateway's JSON
    in_flight_at_kill: int = 0
    by_kind: dict[str, int] = field(default_factory=dict)
    latencies: list[float] = field(default_factory=list)
    by_kind_latency: dict[str, list[float]] = field(default_factory=dict)
    authorised: dict[str, str] = field(default_factory=dict)  # transactionreference -> orderreference
    orders: list[str] = field(default_factory=list)  # every AUTH orderreference sent
    unknown_orders: list[str] = field(default_factory=list)  # AUTHs in flight at a kill
    delayed_sent: int = 0  # the slow tenant's AUTHs, each held until it gave up
    delayed_refused: int = 0  # of them, 429: sent again before the server saw the previous one close
    delayed_other: int = 0  # of them, answered otherwise (should be 0: the delay is an hour)
    listener_auths: int = 0  # the slow listener's tenant's AUTHs, each notified
    restores: list[float] = field(default_factory=list)  # the restoring tenant's, how long each took


class Server:
    """`gwkit sandbox` as a subprocess; `restart` kills it (SIGKILL) and starts it on the same port."""

    def __init__(self, workdir: Path, database: str | None = None, notify_host: bool = False):
        self.workdir = workdir
        self.database = database or str(workdir / "soak.db")
        self.notify_host = notify_host
        (workdir / "accounts.toml").write_text(ACCOUNTS)
        self.port = 0
        self.generation = 0
        self.up = asyncio.Event()
        self.process: subprocess.Popen | None = None

    def start(self) -> None:
        self.process = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "gwkit.cli",
                "sandbox",
                "--port",
                str(self.port),
                "--db",
                self.database,
                "--accounts",
                str(self.workdir / "accounts.toml"),
                *(["--notify-host", "127.0.0.1"] if self.notify_host else []),
            ],
            cwd=ROOT,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        for line in self.process.stdout:
            if match := re.search(r"listening on http://127\.0\.0\.1:(\d+)", line):
                self.port = int(match.group(1))
            if "Press Ctrl-C to stop" in line:
                break
        else:
            raise RuntimeError("gwkit sandbox did not start")
        self.log = []
        threading.Thread(target=self._drain, args=(self.process, self.log), daemon=True).start()

    @staticmethod
    def _drain(process: subprocess.Popen, log: list[str]) -> None:
        log.extend(process.stdout)  # keep reading, or a full pipe would block the server

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    async def restart(self) -> None:
        self.up.clear()
        self.generation += 1
        self.process.kill()
        self.process.wait()
        await asyncio.to_thread(self.start)
        self.up.set()

    def stop(self) -> None:
        self.process.terminate()
        self.process.wait(timeout=60)


def envelope(*objects: dict[str, Any]) -> bytes:
    return json.dumps({"alias": SOAK[0], "version": "1.00", "request": list(objects)}).encode()


class Client:
    """One simulated merchant: a loop of mixed requests, each counted in the tally."""

    def __init__(
        self, number: int, server: Server, tally: Tally, seed: int, malformed: float, prefix: str = "soak"
    ):
        self.number, self.server, self.tally, self.prefix = number, server, tally, prefix
        self.random = random.Random(seed * 1000 + number)
        self.malformed = malformed
        self.made: list[str] = []  # this client's authorised AUTHs
        self.count = 0

    def new_order(self) -> str:
        self.count += 1
        return f"{self.prefix}-{self.number}-{self.count}"

    async def run(self, until: float) -> None:
        generation, http = -1, None
        try:
            while time.monotonic() < until:
                await self.server.up.wait()
                if generation != self.server.generation:  # a restarted server: fresh connections
                    if http is not None:
                        await http.aclose()
                    generation = self.server.generation
                    http = httpx.AsyncClient(
                        base_url=self.server.base_url, auth=SOAK[:2], timeout=60, headers=JSON
                    )
                try:
                    await self.one_step(http)
                except ValueError as exc:
                    self.tally.bad_answers += 1
                    print(f"bad answer: client {self.number}: {exc}", file=sys.stderr)
                except httpx.TransportError as exc:
                    if generation != self.server.generation or not self.server.up.is_set():
                        self.tally.in_flight_at_kill += 1
                    else:
                        self.tally.dropped += 1
                        print(f"dropped: client {self.number}: {type(exc).__name__}: {exc}", file=sys.stderr)
        finally:
            if http is not None:
                await http.aclose()

    async def send(
        self, http: httpx.AsyncClient, kind: str, method: str, path: str, **kwargs: Any
    ) -> httpx.Response:
        started = time.perf_counter()
        response = await http.request(method, path, **kwargs)
        self.tally.latencies.append(time.perf_counter() - started)
        self.tally.by_kind_latency.setdefault(kind, []).append(self.tally.latencies[-1])
        self.tally.served += 1
        self.tally.by_kind[kind] = self.tally.by_kind.get(kind, 0) + 1
        if response.status_code >= 500:
            self.tally.server_errors += 1
            print(f"5xx: {kind} {response.status_code}: {response.text[:200]}", file=sys.stderr)
        return response

    async def gateway(
        self, http: httpx.AsyncClient, kind: str, *objects: dict[str, Any]
    ) -> list[dict[str, Any]]:
        response = await self.send(http, kind, "POST", "/json/", content=envelope(*objects))
        return response.json()["response"] if response.status_code == 200 else []

    async def one_step(self, http: httpx.AsyncClient) -> None:
        draw = self.random.random()
        if draw < self.malformed:
            await self.send(http, "malformed", "POST", "/json/", content=self.random.choice(MALFORMED))
        elif draw < 0.50 or not self.made:
            await self.auth(http)
        elif draw < 0.65:
            orders = [self.made[-1]] if self.random.random() < 0.5 else []
            await self.gateway(
                http,
                "query",
                {
                    "requesttypedescriptions": ["TRANSACTIONQUERY"],
                    "filter": {
                        "sitereference": [{"value": SOAK[2]}],
                        **(
                            {"transactionreference": [{"value": r} for r in orders]}
                            if orders
                            else {"orderreference": [{"value": f"{self.prefix}-{self.number}-{self.count}"}]}
                        ),
                    },
                },
            )
        elif draw < 0.80:
            await self.gateway(
                http,
                "update",
                {
                    "requesttypedescriptions": ["TRANSACTIONUPDATE"],
                    "filter": {
                        "sitereference": [{"value": SOAK[2]}],
                        "transactionreference": [{"value": self.random.choice(self.made)}],
                    },
                    "updates": {"settlestatus": self.random.choice(["1", "2"])},
                },
            )
        else:
            await self.three_d_secure(http)

    async def auth(self, http: httpx.AsyncClient) -> None:
        order = self.new_order()
        self.tally.orders.append(order)
        try:
            records = await self.gateway(
                http,
                "auth",
                {
                    "requesttypedescriptions": ["AUTH"],
                    "sitereference": SOAK[2],
                    "accounttypedescription": "ECOM",
                    "currencyiso3a": "GBP",
                    "baseamount": str(100 + self.random.randrange(5000)),
                    "orderreference": order,
                    **CARD,
                },
            )
        except httpx.TransportError:
            self.tally.unknown_orders.append(order)
            raise
        self.note(records, order)

    def note(self, records: list[dict[str, Any]], order: str) -> None:
        for record in records:
            if record.get("requesttypedescription") == "AUTH" and record.get("errorcode") == "0":
                self.tally.authorised[record["transactionreference"]] = order
                self.made.append(record["transactionreference"])

    async def three_d_secure(self, http: httpx.AsyncClient) -> None:
        order = self.new_order()
        (query,) = await self.gateway(
            http,
            "threedquery",
            {
                "requesttypedescriptions": ["THREEDQUERY"],
                "sitereference": SOAK[2],
                "accounttypedescription": "ECOM",
                "currencyiso3a": "GBP",
                "baseamount": "1050",
                "orderreference": order,
                "termurl": f"{self.server.base_url}/term",
                **ENROLLED_CARD,
            },
        ) or [{}]
        if query.get("errorcode") != "0" or not query.get("acsurl"):
            return
        form = {"PaReq": query["pareq"], "TermUrl": f"{self.server.base_url}/term", "MD": query["md"]}
        page = await self.send(
            http, "acs", "POST", query["acsurl"], data=form, headers={"accept": "text/html"}
        )
        if page.status_code != 200:
            return
        done = await self.send(
            http,
            "acs",
            "POST",
            query["acsurl"] + "/complete",
            data={**form, "outcome": "Y"},
            headers={"accept": "text/html"},
        )
        pares = re.search(r"name=['\"]PaRes['\"] value=['\"]([^'\"]*)", done.text)
        if done.status_code != 200 or pares is None:
            return
        self.tally.orders.append(order)
        try:
            records = await self.gateway(
                http,
                "auth",
                {
                    "requesttypedescriptions": ["AUTH"],
                    "sitereference": SOAK[2],
                    "md": query["md"],
                    "pares": unescape(pares.group(1)),
                },
            )
        except httpx.TransportError:
            self.tally.unknown_orders.append(order)
            raise
        self.note(records, order)


async def move_clock(server: Server, until: float, tally: Tally) -> None:
    """The other account's clock moves: PT1H a second (one clock for all sites until clocks are per site)."""
    while time.monotonic() < until:
        await server.up.wait()
        try:
            async with httpx.AsyncClient(
                base_url=server.base_url, auth=CLOCK[:2], timeout=60, headers=JSON
            ) as http:
                started = time.perf_counter()
                response = await http.post("/_sandbox/clock/advance", content=b'{"by": "PT1H"}')
                tally.latencies.append(time.perf_counter() - started)
                tally.served += 1
                tally.by_kind["clock"] = tally.by_kind.get("clock", 0) + 1
                tally.server_errors += response.status_code >= 500
        except httpx.TransportError:
            tally.in_flight_at_kill += 1  # only a kill ends this client's requests
        await asyncio.sleep(1)


async def hold_delayed(server: Server, until: float, tally: Tally, holders: int, seed: int) -> None:
    """The slow tenant: its latency fault armed (again after each restart: faults live in memory),
    and `holders` AUTHs open at all times, each closing after 2-6 s and sent again at once."""
    armed = -1

    async def arm() -> None:
        nonlocal armed
        while armed != server.generation:
            await server.up.wait()
            generation = server.generation
            try:
                async with httpx.AsyncClient(base_url=server.base_url, auth=SLOW[:2], timeout=60) as http:
                    response = await http.post("/_sandbox/faults", json=LATENCY_FAULT)
                if response.status_code == 200:
                    armed = generation
            except httpx.TransportError:
                pass  # killed meanwhile: arm the next server

    async def holder(number: int) -> None:
        chance = random.Random(seed * 7919 + number)
        body = json.dumps(
            {
                "alias": SLOW[0],
                "version": "1.00",
                "request": [
                    {
                        **CARD,
                        "requesttypedescriptions": ["AUTH"],
                        "sitereference": SLOW[2],
                        "accounttypedescription": "ECOM",
                        "currencyiso3a": "GBP",
                        "baseamount": "100",
                    }
                ],
            }
        ).encode()
        # One client per holder (per server): making an httpx client costs an SSL context, which
        # would load this process, not the server. A request that gives up closes its connection.
        http, generation = None, -1
        try:
            while time.monotonic() < until:
                await arm()
                if generation != server.generation:
                    if http is not None:
                        await http.aclose()
                    generation = server.generation
                    http = httpx.AsyncClient(base_url=server.base_url, auth=SLOW[:2], headers=JSON)
                try:
                    tally.delayed_sent += 1
                    gives_up = min(chance.uniform(2.0, 6.0), max(until - time.monotonic(), 0.1))
                    response = await http.post("/json/", content=body, timeout=gives_up)
                    if response.status_code == 429:
                        tally.delayed_refused += 1
                    else:
                        tally.delayed_other += 1
                except httpx.TimeoutException:
                    pass  # gave up: the connection is closed, the server ends the delay
                except httpx.TransportError:
                    pass  # a kill
        finally:
            if http is not None:
                await http.aclose()

    await asyncio.gather(*(holder(n) for n in range(holders)))
    try:  # the slow tenant leaves: its fault too, so later phases look up no armed fault
        async with httpx.AsyncClient(base_url=server.base_url, auth=SLOW[:2], timeout=60) as http:
            await http.post("/_sandbox/faults/clear", json={})
    except httpx.TransportError:
        pass  # killed meanwhile: faults live in memory, gone with the server


class SlowListener:
    """A notification listener on loopback that answers each notification after `seconds`."""

    def __init__(self, seconds: float):
        delay = seconds

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                self.rfile.read(int(self.headers.get("content-length") or 0))
                time.sleep(delay)  # the slow listener itself: not the benchmark waiting
                self.send_response(200)
                self.send_header("content-length", "0")
                self.end_headers()

            def log_message(self, *args: Any) -> None:
                pass

        self.http = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.http.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.http.server_address[1]}/notify"
        threading.Thread(target=self.http.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.http.shutdown()
        self.http.server_close()


def tenant_auth(tenant: tuple[str, str, str], order: str) -> bytes:
    return json.dumps(
        {
            "alias": tenant[0],
            "version": "1.00",
            "request": [
                {
                    **CARD,
                    "requesttypedescriptions": ["AUTH"],
                    "sitereference": tenant[2],
                    "accounttypedescription": "ECOM",
                    "currencyiso3a": "GBP",
                    "baseamount": "100",
                    "orderreference": order,
                }
            ],
        }
    ).encode()


def prepare_tenants(server: Server, listener: SlowListener | None, restoring: bool) -> None:
    """The slow listener's rule, and the restoring tenant's payments and snapshot (kept in the database)."""
    if listener is not None:
        with httpx.Client(base_url=server.base_url, auth=LISTENER[:2], timeout=60, headers=JSON) as http:
            rule = http.post("/_sandbox/notifications/rules", json={"url": listener.url, "flow": "offline"})
            rule.raise_for_status()
    if restoring:
        with httpx.Client(base_url=server.base_url, auth=RESTORER[:2], timeout=60, headers=JSON) as http:
            for number in range(RESTORED_PAYMENTS):
                http.post("/json/", content=tenant_auth(RESTORER, f"restored-{number}")).raise_for_status()
            http.post("/_sandbox/snapshots", json={"name": "soak"}).raise_for_status()


async def listener_payments(server: Server, until: float, tally: Tally) -> None:
    """The slow listener's tenant pays all along: each AUTH is notified to its slow listener."""
    count = 0
    while time.monotonic() < until:
        await server.up.wait()
        try:
            async with httpx.AsyncClient(
                base_url=server.base_url, auth=LISTENER[:2], timeout=60, headers=JSON
            ) as http:
                while time.monotonic() < until:
                    count += 1
                    response = await http.post("/json/", content=tenant_auth(LISTENER, f"listened-{count}"))
                    tally.listener_auths += 1
                    tally.server_errors += response.status_code >= 500
        except httpx.TransportError:
            pass  # a kill


async def restore_again_and_again(server: Server, until: float, tally: Tally) -> None:
    """The restoring tenant: its snapshot restored, again as soon as the last one ended."""
    while time.monotonic() < until:
        await server.up.wait()
        try:
            async with httpx.AsyncClient(
                base_url=server.base_url, auth=RESTORER[:2], timeout=120, headers=JSON
            ) as http:
                while time.monotonic() < until:
                    started = time.perf_counter()
                    response = await http.post("/_sandbox/snapshots/restore", json={"name": "soak"})
                    tally.restores.append(time.perf_counter() - started)
                    tally.server_errors += response.status_code >= 500
        except httpx.TransportError:
            pass  # a kill


class TenantWaits:
    """PostgreSQL's own view of the server's sessions waiting, sampled every few milliseconds: each
    waiting lock classified by what it is. A site's write lock or turn (a write takes only its own
    sites' locks, so the waiter waits for its own tenant; but a group-commit batch waits for its first
    request's site with every request it carries, other tenants' too: docs/team-sandbox.md); the whole sandbox's lock (taken alone by a
    reset of every site, a migration: any tenant may wait there for another); a row or transaction
    (another session's row: possibly another tenant's); a table's file growing (`extend`: whoever
    inserts next waits for it, whatever the tenant, as for the CPU). Counted in samples of waiting."""

    def __init__(self, database: str, sites: list[str]):
        import psycopg

        from gwkit.sandbox.gateway.store import PostgresStore

        store = PostgresStore(database)  # the lock keys, as the server computes them
        try:
            self.whole = store._write_lock  # the keys the server takes
            self.site_keys = {store._site_lock(site): site for site in sites}
            self.site_keys.update({store._site_lock(site, "turn "): site for site in sites})
        finally:
            store.close()
        self.application = database.rpartition("application_name=")[2]
        self._conn = psycopg.connect(database, autocommit=True)
        self.samples = 0
        self.own_site: dict[str, int] = {}  # waits for a site's lock, by site
        self.whole_sandbox = 0
        self.rows: dict[str, int] = {}  # waits for a row, a transaction or a table, by wait event
        self.extend = 0  # waits for a table's file to grow: no tenant's
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._sample)

    def __enter__(self) -> TenantWaits:
        self._thread.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self._stop.set()
        self._thread.join()
        self._conn.close()

    def _sample(self) -> None:
        while not self._stop.wait(0.002):
            self.samples += 1
            for locktype, high, low, event in self._conn.execute(
                "SELECT l.locktype, l.classid::bigint, l.objid::bigint, a.wait_event FROM pg_locks l "
                "JOIN pg_stat_activity a ON a.pid = l.pid WHERE NOT l.granted AND a.application_name = %s",
                (self.application,),
            ):
                if locktype == "advisory":
                    key = (high << 32) | low
                    key = key - (1 << 64) if key >= 1 << 63 else key
                    if key == self.whole:
                        self.whole_sandbox += 1
                    else:
                        site = self.site_keys.get(key, "unknown")
                        self.own_site[site] = self.own_site.get(site, 0) + 1
                elif locktype == "extend":
                    self.extend += 1
                else:
                    self.rows[event] = self.rows.get(event, 0) + 1

    @property
    def across_tenants(self) -> int:
        return self.whole_sandbox + sum(self.rows.values())


def postgres_schema(server_url: str) -> tuple[str, str]:
    """A schema of the run's own in the database: its name, and the URL whose sessions use it (and
    carry its name, to find them in pg_stat_activity)."""
    import psycopg

    name = f"soak_{secrets.token_hex(4)}"
    with psycopg.connect(server_url, autocommit=True) as conn:
        conn.execute(f"CREATE SCHEMA {name}")
    joiner = "&" if "?" in server_url else "?"
    return name, f"{server_url}{joiner}options={quote(f'-csearch_path={name}')}&application_name={name}"


def drop_schema(server_url: str, name: str) -> None:
    import psycopg

    with psycopg.connect(server_url, autocommit=True) as conn:
        conn.execute(f"DROP SCHEMA {name} CASCADE")


async def kill_twice(server: Server, seconds: float, kills: int) -> None:
    for number in range(1, kills + 1):
        await asyncio.sleep(seconds / (kills + 1))
        await server.restart()
        print(f"killed (SIGKILL) and restarted the server ({number} of {kills})", file=sys.stderr)


def lookup(base_url: str, name: str, values: list[str]) -> list[dict[str, Any]]:
    """Every record whose `name` is one of `values`, in TRANSACTIONQUERY batches."""
    found = []
    with httpx.Client(base_url=base_url, auth=SOAK[:2], timeout=120, headers=JSON) as http:
        for start in range(0, len(values), BATCH):
            query = {
                "requesttypedescriptions": ["TRANSACTIONQUERY"],
                "filter": {
                    "sitereference": [{"value": SOAK[2]}],
                    name: [{"value": v} for v in values[start : start + BATCH]],
                },
            }
            (record,) = http.post("/json/", content=envelope(query)).json()["response"]
            found.extend(record.get("records", []))
    return found


def check(server: Server, tally: Tally) -> dict[str, int]:
    stored = {
        r["transactionreference"]
        for r in lookup(server.base_url, "transactionreference", sorted(tally.authorised))
    }
    auths: dict[str, int] = {}
    for record in lookup(server.base_url, "orderreference", tally.orders):
        if record.get("requesttypedescription") == "AUTH":
            auths[record["orderreference"]] = auths.get(record["orderreference"], 0) + 1
    return {
        "lost": len(set(tally.authorised) - stored),
        "duplicated": sum(n - 1 for n in auths.values() if n > 1),
        "unknown_kept": sum(1 for order in tally.unknown_orders if order in auths),
    }


async def alternating(args: argparse.Namespace, server: Server) -> tuple[Tally, Tally]:
    """The same clients (no kills, no clock moves, no malformed bodies) in `--slices` turns of idle,
    then with the slow tenant at its cap: (idle, with it). Taking turns, both phases see the same
    load of a shared machine, so their ratio is the slow tenant's cost, not the load's drift."""
    idle, with_slow = Tally(), Tally()
    seconds = args.idle_seconds / args.slices
    for turn in range(args.slices):
        until = time.monotonic() + seconds
        clients = [
            Client(n, server, idle, args.seed + 1, 0.0, prefix=f"idle{turn}") for n in range(args.clients)
        ]
        await asyncio.gather(*(client.run(until) for client in clients))
        until = time.monotonic() + seconds
        clients = [
            Client(n, server, with_slow, args.seed + 2, 0.0, prefix=f"held{turn}")
            for n in range(args.clients)
        ]
        await asyncio.gather(
            hold_delayed(server, until, with_slow, args.delayed, args.seed + turn),
            *more_tenants(args, server, until, with_slow),
            *(client.run(until) for client in clients),
        )
    return idle, with_slow


def more_tenants(args: argparse.Namespace, server: Server, until: float, tally: Tally) -> list[Any]:
    """The slow listener's tenant and the restoring tenant, as the options ask."""
    tenants = []
    if args.slow_listener is not None:
        tenants.append(listener_payments(server, until, tally))
    if args.restoring_tenant:
        tenants.append(restore_again_and_again(server, until, tally))
    return tenants


async def soak(args: argparse.Namespace, server: Server) -> Tally:
    tally = Tally()
    until = time.monotonic() + args.seconds
    clients = [Client(n, server, tally, args.seed, args.malformed) for n in range(args.clients)]
    await asyncio.gather(
        kill_twice(server, args.seconds, args.kills),
        move_clock(server, until, tally),
        hold_delayed(server, until, tally, args.delayed, args.seed),
        *more_tenants(args, server, until, tally),
        *(client.run(until) for client in clients),
    )
    return tally


def percentiles(values: list[float]) -> tuple[float, float]:
    """p50 and p99, in milliseconds."""
    ordered = sorted(values)
    return statistics.median(ordered) * 1000, ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))] * 1000


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=60.0)
    parser.add_argument("--clients", type=int, default=50)
    parser.add_argument("--kills", type=int, default=2)
    parser.add_argument("--malformed", type=float, default=0.10, help="share of malformed bodies")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument(
        "--idle-seconds", type=float, default=20.0, help="idle, and then as long with the slow tenant, before"
    )
    parser.add_argument("--slices", type=int, default=4, help="turns the two take, each half idle")
    parser.add_argument("--delayed", type=int, default=DELAYED_PER_SITE, help="the slow tenant's open AUTHs")
    database = parser.add_mutually_exclusive_group()
    database.add_argument(
        "--postgres", action="store_true", help=f"a team sandbox on the local PostgreSQL ({LOCAL_POSTGRES})"
    )
    database.add_argument("--database", metavar="URL", help="a team sandbox on this PostgreSQL database")
    parser.add_argument(
        "--slow-listener",
        type=float,
        metavar="SECONDS",
        help="a tenant whose notification listener is this slow",
    )
    parser.add_argument(
        "--restoring-tenant", action="store_true", help="a tenant restoring a snapshot again and again"
    )
    args = parser.parse_args()
    server_url = LOCAL_POSTGRES if args.postgres else args.database
    schema, database_url = postgres_schema(server_url) if server_url else (None, None)
    listener = SlowListener(args.slow_listener) if args.slow_listener is not None else None
    waits: TenantWaits | None = None
    with tempfile.TemporaryDirectory(prefix="gwkit-soak-") as tmp:
        server = Server(Path(tmp), database_url, notify_host=listener is not None)
        server.start()
        server.up.set()
        try:
            prepare_tenants(server, listener, args.restoring_tenant)
            if database_url is not None:
                waits = TenantWaits(database_url, [tenant[2] for tenant in TENANTS])
                waits.__enter__()
            baseline, with_slow = asyncio.run(alternating(args, server))
            started = time.monotonic()
            tally = asyncio.run(soak(args, server))
            elapsed = time.monotonic() - started
            if waits is not None:
                waits.__exit__(None, None, None)
            result = check(server, tally)
        finally:
            server.stop()
            if listener is not None:
                listener.close()
            if schema is not None:
                drop_schema(server_url, schema)
    latencies = sorted(tally.latencies)
    if not latencies:
        print("soak: no request was served", file=sys.stderr)
        return 1
    p50 = statistics.median(latencies) * 1000
    p99 = latencies[min(len(latencies) - 1, int(len(latencies) * 0.99))] * 1000
    print(f"soak: {args.clients} clients, {elapsed:.0f} s, {args.kills} kills (SIGKILL) and restarts")
    print(f"  store                  {'PostgreSQL' if database_url else 'SQLite'}")
    print(f"  requests served        {tally.served}  ({tally.served / elapsed:.0f}/s)")
    print(f"  by kind                {', '.join(f'{k} {v}' for k, v in sorted(tally.by_kind.items()))}")
    print(
        f"  p50 by kind            {', '.join(f'{k} {statistics.median(v) * 1000:.0f} ms' for k, v in sorted(tally.by_kind_latency.items()))}"
    )
    print(f"  5xx                    {tally.server_errors}")
    print(f"  dropped connections    {tally.dropped}")
    print(f"  unreadable answers     {tally.bad_answers}")
    print(
        f"  in flight at a kill    {tally.in_flight_at_kill}  (AUTHs among them kept: "
        f"{result['unknown_kept']} of {len(tally.unknown_orders)})"
    )
    print(f"  authorised AUTHs       {len(tally.authorised)}")
    print(f"  lost                   {result['lost']}")
    print(f"  duplicated             {result['duplicated']}")
    print(f"  latency p50 / p99      {p50:.1f} ms / {p99:.1f} ms")
    idle_p50, idle_p99 = percentiles(baseline.by_kind_latency.get("auth", [0.0]))
    alone_p50, alone_p99 = percentiles(with_slow.by_kind_latency.get("auth", [0.0]))
    soak_p50, soak_p99 = percentiles(tally.by_kind_latency.get("auth", [0.0]))
    for phase, phase_tally in (("beside the idle clients", with_slow), ("in the soak", tally)):
        print(
            f"  slow tenant {phase:<25}{args.delayed} delayed AUTHs open throughout: "
            f"{phase_tally.delayed_sent} sent, {phase_tally.delayed_refused} refused 429, "
            f"{phase_tally.delayed_other} answered otherwise"
        )
    for phase, phase_tally in (("beside the idle clients", with_slow), ("in the soak", tally)):
        restores = sorted(phase_tally.restores)
        if args.slow_listener is not None:
            print(
                f"  listener tenant {phase:<21}{phase_tally.listener_auths} AUTHs notified to a listener "
                f"answering after {args.slow_listener:g} s"
            )
        if args.restoring_tenant and restores:
            print(
                f"  restoring tenant {phase:<20}{len(restores)} restores of {RESTORED_PAYMENTS} payments, "
                f"p50 {statistics.median(restores) * 1000:.0f} ms, longest {restores[-1] * 1000:.0f} ms"
            )
    if waits is not None:
        print(
            f"  sessions waiting       {waits.samples} samples: for the whole sandbox's lock {waits.whole_sandbox}, "
            f"for a row {sum(waits.rows.values())} {waits.rows or ''}, for a table's file to grow {waits.extend}, "
            "for a site's own lock "
            + (", ".join(f"{site} {count}" for site, count in sorted(waits.own_site.items())) or "0")
        )
    phases = (
        ("idle", baseline, idle_p50, idle_p99, "no slow tenant, no kills"),
        ("with the slow tenant", with_slow, alone_p50, alone_p99, "the same clients, no kills"),
        ("in the soak", tally, soak_p50, soak_p99, "slow tenant, kills, clock moves, malformed bodies"),
    )
    for name, phase_tally, p50_ms, p99_ms, what in phases:
        count = len(phase_tally.by_kind_latency.get("auth", []))
        print(f"  others' AUTH {name:<21} p50 {p50_ms:.1f} ms, p99 {p99_ms:.1f} ms ({count} AUTHs; {what})")
    print(f"ratio others_auth_p50_with_slow_tenant_vs_idle {alone_p50 / idle_p50:.2f}")
    print(f"ratio others_auth_p99_with_slow_tenant_vs_idle {alone_p99 / idle_p99:.2f}")
    print(f"ratio others_auth_p50_in_soak_vs_idle {soak_p50 / idle_p50:.2f}")
    print(f"ratio others_auth_p99_in_soak_vs_idle {soak_p99 / idle_p99:.2f}")
    failures = tally.server_errors + tally.dropped + tally.bad_answers + result["lost"] + result["duplicated"]
    for phase_tally in (baseline, with_slow):
        failures += phase_tally.server_errors + phase_tally.dropped + phase_tally.bad_answers
    failures += tally.delayed_other + with_slow.delayed_other
    if waits is not None:
        failures += waits.across_tenants  # a wait one tenant may have made on another's sites
        print(f"ratio waits_across_tenants {waits.across_tenants}")
    print(f"ratio soak_failures_per_request {failures / max(tally.served, 1):.6f}")
    print(f"ratio soak_p99_over_p50 {p99 / p50:.2f}")
    print("meets the goal of 0 / 0 / 0 / 0" if not failures else "MISSES the goal of 0 / 0 / 0 / 0")
    return 0 if not failures else 1


if __name__ == "__main__":
    sys.exit(main())
