"""Tenancy: each web services user sees, uses and changes only its own site references."""

from __future__ import annotations

import httpx
import pytest

import gwkit.sandbox
from support.sandbox import CLOCK, Gateway, card_auth, parent_auth, query_request, store_request

pytestmark = pytest.mark.both_stores  # each test on SQLite and on PostgreSQL

ACCOUNTS = """
[[account]]
username = "alice@example.test"
password = "alice-secret"
sitereferences = ["test_alice12345", "test_alice67890"]

[[account]]
username = "bob@example.test"
password = "bob-secret"
sitereferences = ["test_bob12345"]

[[account]]
username = "ops@example.test"
password = "ops-secret"
sitereferences = ["test_ops12345"]
admin = true
"""
ALICE_1, ALICE_2, BOB, OPS = "test_alice12345", "test_alice67890", "test_bob12345", "test_ops12345"


@pytest.fixture
def two_accounts(tmp_path):
    path = tmp_path / "accounts.toml"
    path.write_text(ACCOUNTS, encoding="utf-8")
    handle = gwkit.sandbox.start(
        tmp_path / "s.db", accounts=gwkit.sandbox.load_accounts(path), clock_start=CLOCK
    )
    alice = Gateway(handle.base_url, "alice@example.test", "alice-secret")
    bob = Gateway(handle.base_url, "bob@example.test", "bob-secret")
    yield handle, alice, bob
    alice.close()
    bob.close()
    handle.stop()


@pytest.fixture
def operator(two_accounts):
    handle, _, _ = two_accounts
    ops = Gateway(handle.base_url, "ops@example.test", "ops-secret")
    yield ops
    ops.close()


def test_each_user_pays_on_its_own_sites_only(two_accounts):
    handle, alice, bob = two_accounts
    assert handle.username == "alice@example.test" and handle.sitereference == ALICE_1  # the first account
    assert alice.one(card_auth(sitereference=ALICE_1))["errorcode"] == "0"
    assert alice.one(card_auth(sitereference=ALICE_2))["errorcode"] == "0"
    refused = bob.one(card_auth(sitereference=ALICE_1))
    assert (refused["errorcode"], refused["errordata"]) == ("30000", ["sitereference"])
    assert bob.one(card_auth(sitereference=BOB))["errorcode"] == "0"


def test_another_sites_transaction_is_as_if_it_did_not_exist(two_accounts):
    _, alice, bob = two_accounts
    stored = alice.one(store_request(sitereference=ALICE_1, orderreference="alice-card"))[
        "transactionreference"
    ]
    paid = alice.one(card_auth(sitereference=ALICE_2, orderreference="alice-pay"))["transactionreference"]

    # query: nothing, whatever the filter names
    assert bob.query(transactionreference=[stored, paid]) == []
    assert bob.query(sitereference=[ALICE_1, ALICE_2]) == []
    assert bob.query(orderreference=["alice-card", "alice-pay"]) == []
    # use as a parent: the same answer as an unknown reference
    # (each field error uses up a reference of its own: the rest of the answer is the same)
    unknown = bob.one(parent_auth("77-9-777777", sitereference=BOB))
    foreign = bob.one(parent_auth(stored, sitereference=BOB))
    unknown.pop("transactionreference"), foreign.pop("transactionreference")
    assert (
        foreign == unknown == {**foreign, "errorcode": "30000", "errordata": ["parenttransactionreference"]}
    )
    # update: the same answer as an unknown reference, and nothing changes
    for reference in (stored, "77-9-777777"):
        record = bob.one(
            {
                "requesttypedescriptions": ["TRANSACTIONUPDATE"],
                "filter": {"transactionreference": [{"value": reference}]},
                "updates": {"transactionactive": "0"},
            }
        )
        assert (record["errorcode"], record["errordata"]) == ("30000", ["transactionreference"])
    (card,) = alice.query(transactionreference=stored)
    assert card["transactionactive"] == "1"


def test_a_user_queries_all_its_sites_or_the_one_it_names(two_accounts):
    _, alice, bob = two_accounts
    one = alice.one(card_auth(sitereference=ALICE_1, orderreference="o"))["transactionreference"]
    two = alice.one(card_auth(sitereference=ALICE_2, orderreference="o"))["transactionreference"]
    bobs = bob.one(card_auth(sitereference=BOB, orderreference="o"))["transactionreference"]
    assert {r["transactionreference"] for r in alice.query(orderreference="o")} == {one, two}
    assert [r["transactionreference"] for r in alice.query(orderreference="o", sitereference=ALICE_2)] == [
        two
    ]
    assert [r["transactionreference"] for r in bob.query(orderreference="o")] == [bobs]


def test_credentials_and_alias_must_belong_together(two_accounts):
    handle, alice, _ = two_accounts
    mixed = httpx.post(
        f"{handle.base_url}/json/",
        auth=("alice@example.test", "bob-secret"),
        json={"request": [query_request(orderreference="o")]},
    )
    assert mixed.status_code == 401
    answer = alice.envelope(card_auth(sitereference=ALICE_1), alias="bob@example.test")
    assert answer["response"][0]["errordata"] == ["alias"]


def test_the_control_api_takes_any_accounts_credentials(two_accounts):
    handle, alice, bob = two_accounts
    assert alice.http.get("/_sandbox/clock").status_code == bob.http.get("/_sandbox/clock").status_code == 200
    assert httpx.get(f"{handle.base_url}/_sandbox/clock").status_code == 401


@pytest.mark.parametrize(
    "text, message",
    [
        ("not toml [", "not valid TOML"),
        ("[[account]]\nusername = 'a'\npassword = 'p'\n", "[[account]] number 1 ('a'): sitereferences"),
        ("[[account]]\nusername = 'a'\npassword = 'p'\nsitereferences = ['bad site']\n", "'bad site'"),
        ("[[account]]\nusername = 'a'\npassword = ''\nsitereferences = ['test_a']\n", "('a'): password"),
        (
            "[[account]]\nusername = 'a'\npassword = 'p'\nsitereferences = ['test_a']\n"
            "[[account]]\nusername = 'a'\npassword = 'q'\nsitereferences = ['test_b']\n",
            "'a' is listed twice",
        ),
        (
            "[[account]]\nusername = 'a'\npassword = 'p'\nsitereferences = ['test_a']\n"
            "[[account]]\nusername = 'b'\npassword = 'q'\nsitereferences = ['test_a']\n",
            "'test_a' is listed for both",
        ),
        (
            "[[account]]\nusername = 'a'\npasword = 'p'\nsitereferences = ['test_a']\n",
            "unknown key(s) pasword",
        ),
        ("title = 'no accounts'\n", "at least one [[account]]"),
        (
            "[[account]]\nusername = 'a'\npassword = 'p'\nsitereferences = ['test_a']\nadmin = 'yes'\n",
            "('a'): admin must be true or false",
        ),
    ],
)
def test_bad_accounts_files_name_the_entry_and_the_rule(tmp_path, text, message):
    path = tmp_path / "accounts.toml"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(gwkit.sandbox.AccountsError) as raised:
        gwkit.sandbox.load_accounts(path)
    assert message in str(raised.value) and str(path) in str(raised.value)


# the control API: each caller acts on its own sites; an operator on every site ---------------------


def control(caller: Gateway, path: str, **payload) -> httpx.Response:
    return caller.http.post(f"/_sandbox/{path}", json=payload)


def site_clock(caller: Gateway, site: str) -> str:
    return caller.http.get("/_sandbox/clock").json()["sites"][site]


def test_another_users_credentials_change_nothing_of_my_sites(two_accounts):
    _handle, alice, bob = two_accounts
    paid = alice.one(card_auth(sitereference=ALICE_1, orderreference="alice-pay"))
    before = alice.query(sitereference=[ALICE_1, ALICE_2])
    alice_clocks = alice.http.get("/_sandbox/clock").json()

    # Naming one of alice's sites is refused (403, naming the field), whatever the endpoint.
    for path, payload in [
        ("clock/advance", {"by": "P3D"}),
        ("settle", {"all": True}),
        ("reset", {}),
        ("faults", {"kind": "gateway_error", "code": 60010}),
        ("faults/clear", {}),
    ]:
        refused = control(bob, path, sitereference=ALICE_1, **payload)
        assert refused.status_code in (400, 403) and ALICE_1 in refused.json()["detail"], path
    assert control(bob, "reset", sitereference=ALICE_1).json()["field"] == "sitereference"
    # Without a site, bob's moves touch bob's sites only.
    assert control(bob, "clock/advance", by="P3D").status_code == 200
    assert control(bob, "settle", all=True).json() == {"settlement": {"settled": []}}
    assert control(bob, "reset").json()["reset"] is True
    assert control(bob, "faults", kind="gateway_error", code=60010).json()["sitereference"] == BOB
    assert control(bob, "faults/clear").json() == {"cleared": 1}

    assert alice.query(sitereference=[ALICE_1, ALICE_2]) == before  # still there, still unsettled
    assert (
        before[0]["transactionreference"] == paid["transactionreference"] and before[0]["settlestatus"] == "0"
    )
    assert alice.http.get("/_sandbox/clock").json() == alice_clocks
    assert site_clock(bob, BOB) == "2026-01-18T10:00:00"
    assert alice.http.get("/_sandbox/faults").json()["faults"] == []
    assert (
        alice.one(card_auth(sitereference=ALICE_1))["errorcode"] == "0"
    )  # no fault was left on alice's site


def test_an_unknown_site_is_refused_like_another_users(two_accounts):
    _, _, bob = two_accounts
    for site in (ALICE_1, "test_nobody999"):
        refused = control(bob, "clock/advance", by="P1D", sitereference=site)
        assert refused.status_code == 403
        assert refused.json() == {
            "error": "forbidden",
            "field": "sitereference",
            "detail": f"sitereference {site!r} is not one of your sites",
        }


def test_an_operator_acts_on_every_site(two_accounts, operator):
    _handle, alice, bob = two_accounts
    alices = alice.one(card_auth(sitereference=ALICE_1))["transactionreference"]
    bobs = bob.one(card_auth(sitereference=BOB))["transactionreference"]
    assert control(operator, "settle", all=True, sitereference=ALICE_1).json() == {
        "settlement": {"settled": [alices]}
    }
    assert control(operator, "faults", kind="gateway_error", code=60010, sitereference=BOB).status_code == 200
    assert bob.one(card_auth(sitereference=BOB))["errorcode"] == "60010"
    report = control(operator, "clock/advance", by="P2D").json()
    assert report["settlement"]["settled"] == [bobs]
    assert set(operator.http.get("/_sandbox/clock").json()["sites"]) == {ALICE_1, ALICE_2, BOB, OPS}
    assert {site_clock(alice, ALICE_1), site_clock(alice, ALICE_2), site_clock(bob, BOB)} == {
        "2026-01-17T10:00:00"
    }
    assert control(operator, "reset", sitereference=ALICE_1).status_code == 200
    assert alice.query(transactionreference=alices) == []
    assert [r["transactionreference"] for r in bob.query(sitereference=BOB)][-1] == bobs


def test_each_site_has_its_own_clock(two_accounts):
    _handle, alice, bob = two_accounts
    assert control(alice, "clock/advance", by="P2D", sitereference=ALICE_1).json()["days"] == 2
    assert alice.http.get("/_sandbox/clock").json() == {
        "now": "2026-01-17T10:00:00",
        "sites": {ALICE_1: "2026-01-17T10:00:00", ALICE_2: "2026-01-15T10:00:00"},
    }
    assert site_clock(bob, BOB) == "2026-01-15T10:00:00"
    # Records are dated by their own site's clock.
    assert alice.one(card_auth(sitereference=ALICE_1))["transactionstartedtimestamp"] == "2026-01-17 10:00:00"
    assert alice.one(card_auth(sitereference=ALICE_2))["transactionstartedtimestamp"] == "2026-01-15 10:00:00"
    assert bob.one(card_auth(sitereference=BOB))["settleduedate"] == "2026-01-15"  # its own day
    # Without a site, a user's sites move together: from the latest of them, the others catch up.
    report = control(alice, "clock/advance", by="P1D").json()
    assert (report["from"], report["to"]) == ("2026-01-17T10:00:00", "2026-01-18T10:00:00")
    assert set(alice.http.get("/_sandbox/clock").json()["sites"].values()) == {"2026-01-18T10:00:00"}
    # A site's clock never goes back.
    refused = control(alice, "clock/advance", to="2026-01-16T00:00:00", sitereference=ALICE_2)
    assert refused.status_code == 400 and "only moves forward" in refused.json()["detail"]


def subscription(site: str, order: str) -> dict:
    return {
        **card_auth(sitereference=site, orderreference=order, expirydate="12/2099"),
        "requesttypedescriptions": ["AUTH", "SUBSCRIPTION"],
        "accounttypedescription": "ECOM",
        "subscriptiontype": "RECURRING",
        "subscriptionunit": "MONTH",
        "subscriptionfrequency": "1",
        "subscriptionnumber": "1",
        "subscriptionfinalnumber": "0",
        "subscriptionbegindate": "2026-02-15",
        "credentialsonfile": "1",
    }


def recur_payments(caller: Gateway, site: str) -> list[dict]:
    return [
        r
        for r in caller.query(sitereference=site)
        if r["requesttypedescription"] == "AUTH" and r.get("accounttypedescription") == "RECUR"
    ]


def test_advancing_one_users_clock_pays_only_its_subscriptions(two_accounts):
    _handle, alice, bob = two_accounts
    assert [r["errorcode"] for r in alice.records(subscription(ALICE_1, "a-sub"))] == ["0", "0"]
    assert [r["errorcode"] for r in bob.records(subscription(BOB, "b-sub"))] == ["0", "0"]
    report = control(alice, "clock/advance", to="2026-03-20T00:00:00").json()
    assert report["subscriptions"]["made"] == 2  # 15 February and 15 March
    assert len(recur_payments(alice, ALICE_1)) == 2
    assert recur_payments(bob, BOB) == []  # bob's clock has not moved: nothing of bob's is due
    assert bob.query(sitereference=BOB, requesttypedescription="AUTH")[-1]["settlestatus"] == "0"
    # Bob's day comes when bob moves his clock; each payment once.
    assert control(bob, "clock/advance", to="2026-03-20T00:00:00").json()["subscriptions"]["made"] == 2
    assert len(recur_payments(bob, BOB)) == 2 and len(recur_payments(alice, ALICE_1)) == 2


def test_a_long_advance_reports_its_progress_to_its_owner_only(two_accounts):
    handle, alice, bob = two_accounts
    alice.records(subscription(ALICE_1, "a-sub"))
    seen: list[tuple[dict, dict]] = []

    def progress(step: str, done: int, total: int) -> None:  # called inside the advance, between batches
        seen.append(
            (
                alice.http.get("/_sandbox/clock/progress").json(),
                bob.http.get("/_sandbox/clock/progress").json(),
            )
        )

    handle.advance(to="2026-03-20T00:00:00", progress=progress)
    assert seen, "the engine reported progress"
    alices, bobs = seen[0]
    assert bobs == {"advances": []}
    (running,) = alices["advances"]
    assert running["sites"] == [ALICE_1, ALICE_2] and running["days"] == 64
    assert running["from"] == "2026-01-15T10:00:00" and running["to"] == "2026-03-20T00:00:00"
    assert 0 < running["day"] <= running["days"]
    assert running["step"].startswith("subscriptions 2026-02-15") and running["done"] == running["total"] == 1
    assert alice.http.get("/_sandbox/clock/progress").json() == {"advances": []}  # finished


def test_another_users_payment_cannot_be_refunded(two_accounts):
    handle, alice, bob = two_accounts
    paid = alice.one(card_auth(sitereference=ALICE_1))["transactionreference"]
    handle.advance(by="P1D")  # settled
    refund = {"requesttypedescriptions": ["REFUND"], "parenttransactionreference": paid}
    for caller, site in ((bob, BOB), (alice, ALICE_2)):  # another user's, and another site of the same user
        record = caller.one({**refund, "sitereference": site})
        assert (record["errorcode"], record["errordata"]) == ("20004", ["parenttransactionreference"])
    assert alice.one({**refund, "sitereference": ALICE_1})["errorcode"] == "0"


# every route of the routes table, walked by two tenants and an operator ------------------------------

ALICE_MARKERS = (ALICE_1, ALICE_2, "alice-order", "alice-faulted", "alice-snap", "alice-hook")
NOTIFICATIONS = "/_sandbox/notifications"


def _alice_fingerprint(alice: Gateway) -> list:
    """Everything of alice's that another caller could show or change."""
    return [
        alice.query(sitereference=[ALICE_1, ALICE_2]),
        alice.http.get("/_sandbox/clock").json(),
        alice.http.get("/_sandbox/faults").json(),
        alice.http.get("/_sandbox/faults/log").json(),
        alice.http.get("/_sandbox/snapshots").json()["snapshots"][0]["name"],
        alice.http.get(f"{NOTIFICATIONS}/rules").json(),
        alice.http.get(f"{NOTIFICATIONS}/deliveries").json(),
    ]


def _gateway_probe(method: str, path: str):
    def probe(caller: Gateway, site: str) -> list[httpx.Response]:
        if method == "OPTIONS":
            return [caller.http.options(path, headers={"origin": "http://localhost:8888"})]
        if method == "*":
            return [caller.http.put(path, json={})]
        body = {"alias": caller.username, "version": "1.00"}
        refused = caller.http.post(path, json={**body, "request": [card_auth(sitereference=ALICE_1)]})
        assert refused.json()["response"][0]["errordata"] == ["sitereference"]
        return [
            caller.http.post(
                path, json={**body, "request": [query_request(sitereference=[ALICE_1, ALICE_2])]}
            ),
            caller.http.post(path, json={**body, "request": [query_request(orderreference="alice-order")]}),
        ]

    return probe


def _control_probe(method: str, path: str, payload: dict | None = None):
    """A GET as it is; a POST twice: naming one of alice's sites, and acting on the caller's own."""

    def probe(caller: Gateway, site: str) -> list[httpx.Response]:
        if method == "GET":
            return [caller.http.get(path)]
        body = payload or {}
        if body.get("name") == "alice-snap":  # only alice's snapshots have it: a 404 echoing the name
            assert caller.http.post(path, json=body).status_code == 404
            return []
        if "name" in body:
            return [caller.http.post(path, json=body)]
        naming_alices = caller.http.post(path, json={**body, "sitereference": ALICE_1})
        assert naming_alices.status_code == 403 and naming_alices.json()["field"] == "sitereference"
        return [caller.http.post(path, json={**body, "sitereference": site})]

    return probe


def _page_probe(method: str, path: str, **sent):
    def probe(caller: Gateway, site: str) -> list[httpx.Response]:
        return [caller.http.request(method, path, **sent)]

    return probe


def _refused_probe(method: str, path: str):
    """A route naming one of alice's rules or deliveries by its id: to anyone else, one that does not exist."""

    def probe(caller: Gateway, site: str) -> list[httpx.Response]:
        answer = caller.http.request(method, path, json={})
        assert answer.status_code == 404, answer.text
        return [answer]

    return probe


def _route_probes(
    alices_rule: str, alices_delivery: str, alices_threedquery: str
) -> dict[tuple[str, str], object]:
    from gwkit.sandbox.gateway.threeds import ACS_PATH
    from gwkit.sandbox.web import acs_v2
    from gwkit.sandbox.web.acs import COMPLETE_PATH
    from gwkit.sandbox.web.faults import GATEWAY_PATHS

    form = {"headers": {"content-type": "application/x-www-form-urlencoded"}, "content": b"MD=x&PaReq=y"}
    v2_form = {
        "headers": {"content-type": "application/x-www-form-urlencoded"},
        "content": b"creq=x&threeDSMethodData=y&outcome=submit",
    }
    probes: dict[tuple[str, str], object] = {
        **{(m, p): _gateway_probe(m, p) for p in GATEWAY_PATHS for m in ("POST", "OPTIONS", "*")},
        **{("GET", p): _page_probe("GET", p) for p in ("/", "/_sandbox/", "/_sandbox")},
        ("GET", ACS_PATH): _page_probe("GET", ACS_PATH),
        ("POST", ACS_PATH): _page_probe("POST", ACS_PATH, **form),
        ("POST", COMPLETE_PATH): _page_probe("POST", COMPLETE_PATH, **form),
        **{("GET", p): _page_probe("GET", p) for p in acs_v2.FORM_PATHS},
        **{("POST", p): _page_probe("POST", p, **v2_form) for p in acs_v2.FORM_PATHS},
        ("GET", "/js/st.js"): _page_probe("GET", "/js/st.js"),
        ("GET", "/demo/merchant"): _page_probe("GET", "/demo/merchant"),
        ("POST", "/demo/merchant/pay"): _page_probe(
            "POST", "/demo/merchant/pay", data={"sitereference": ALICE_1, "orderreference": "o"}
        ),
        ("GET", "/demo/merchant/received"): _page_probe("GET", "/demo/merchant/received"),
        ("GET", "/_sandbox/health"): _control_probe("GET", "/_sandbox/health"),
        ("GET", "/_sandbox/clock"): _control_probe("GET", "/_sandbox/clock"),
        ("POST", "/_sandbox/clock/advance"): _control_probe("POST", "/_sandbox/clock/advance", {"by": "P1D"}),
        ("POST", "/_sandbox/settle"): _control_probe("POST", "/_sandbox/settle", {"all": True}),
        ("POST", "/_sandbox/reset"): _control_probe("POST", "/_sandbox/reset"),
        ("GET", "/_sandbox/faults"): _control_probe("GET", "/_sandbox/faults"),
        ("POST", "/_sandbox/faults"): _control_probe(
            "POST", "/_sandbox/faults", {"kind": "gateway_error", "code": 60010, "count": 1}
        ),
        ("POST", "/_sandbox/faults/clear"): _control_probe("POST", "/_sandbox/faults/clear"),
        ("GET", "/_sandbox/faults/log"): _control_probe("GET", "/_sandbox/faults/log"),
        ("POST", "/_sandbox/snapshots"): _control_probe("POST", "/_sandbox/snapshots", {"name": "bob-snap"}),
        ("GET", "/_sandbox/snapshots"): _control_probe("GET", "/_sandbox/snapshots"),
        ("POST", "/_sandbox/snapshots/restore"): _control_probe(
            "POST", "/_sandbox/snapshots/restore", {"name": "alice-snap"}
        ),
        ("POST", "/_sandbox/snapshots/delete"): _control_probe(
            "POST", "/_sandbox/snapshots/delete", {"name": "alice-snap"}
        ),
        ("GET", "/_sandbox/clock/progress"): _control_probe("GET", "/_sandbox/clock/progress"),
        ("POST", f"{NOTIFICATIONS}/rules"): _control_probe(
            "POST", f"{NOTIFICATIONS}/rules", {"url": "http://127.0.0.1:9/bob-hook", "flow": "online"}
        ),
        ("GET", f"{NOTIFICATIONS}/rules"): _control_probe("GET", f"{NOTIFICATIONS}/rules"),
        ("GET", "/_sandbox/threeds/{id}"): _refused_probe("GET", f"/_sandbox/threeds/{alices_threedquery}"),
        ("DELETE", f"{NOTIFICATIONS}/rules/{{id}}"): _refused_probe(
            "DELETE", f"{NOTIFICATIONS}/rules/{alices_rule}"
        ),
        ("GET", f"{NOTIFICATIONS}/deliveries"): _control_probe("GET", f"{NOTIFICATIONS}/deliveries"),
        ("POST", f"{NOTIFICATIONS}/deliveries/{{id}}/resend"): _refused_probe(
            "POST", f"{NOTIFICATIONS}/deliveries/{alices_delivery}/resend"
        ),
    }
    return probes


def _every_route(caller: Gateway) -> set[tuple[str, str]]:
    """The one routes table, every control endpoint a row of it: the control API's 404 lists them all."""
    from gwkit.sandbox.web.routes import ROUTES

    listed = caller.http.get("/_sandbox/no-such-endpoint").json()["endpoints"]
    controls = {tuple(endpoint.split(" ", 1)) for endpoint in listed}
    assert controls == {key for key in ROUTES if key[1].startswith("/_sandbox/") and "*" not in key} - {
        ("GET", "/_sandbox/")
    }
    return {key for key in ROUTES if key != ("*", "/_sandbox/*")}


def test_every_route_shows_and_changes_only_the_callers_sites(two_accounts, operator):
    handle, alice, bob = two_accounts
    hook = {"url": "http://127.0.0.1:9/alice-hook", "flow": "online", "sitereference": ALICE_1}
    alices_rule = alice.http.post(f"{NOTIFICATIONS}/rules", json=hook).json()["id"]
    alice.one(card_auth(sitereference=ALICE_1, orderreference="alice-order"))  # notified: nobody listens
    (delivery,) = alice.http.get(f"{NOTIFICATIONS}/deliveries").json()["deliveries"]
    challenged = card_auth(
        sitereference=ALICE_1,
        requesttypedescriptions=["THREEDQUERY"],
        pan="4900490000000147",  # EMV 3-D Secure, challenged: an ACS session
        termurl="https://merchant.example/back",
        useragent="Mozilla/5.0",
        accept="text/html",
    )
    threedquery = alice.one(challenged)["transactionreference"]
    assert alice.http.get(f"/_sandbox/threeds/{threedquery}").json()["challenged"] is True
    alice.records(subscription(ALICE_1, "alice-order-sub"))  # work for a clock move to report on
    control(alice, "faults", kind="gateway_error", code=60010, count=1, sitereference=ALICE_2)
    assert alice.one(card_auth(sitereference=ALICE_2, orderreference="alice-faulted"))["errorcode"] == "60010"
    control(alice, "faults", kind="gateway_error", code=60010, sitereference=ALICE_2)  # stays active
    assert control(alice, "snapshots", name="alice-snap").status_code == 200
    bob.one(card_auth(sitereference=BOB, orderreference="bob-order"))
    before = _alice_fingerprint(alice)

    probes = _route_probes(alices_rule, delivery["id"], threedquery)
    assert _every_route(bob) == set(probes), "a route without a tenancy probe: add it here"
    progress = probes.pop(("GET", "/_sandbox/clock/progress"))
    for route, probe in probes.items():
        for response in probe(bob, BOB):
            assert response.status_code < 500, (route, response.text)
            public = route[1].startswith("/demo/merchant")  # the first account's public shop, on its site
            leaked = [m for m in ALICE_MARKERS if m in response.text and not (public and m == ALICE_1)]
            assert not leaked, (route, leaked, response.text[:500])
    assert _alice_fingerprint(alice) == before  # bob changed nothing of alice's

    # what an operator sees: every site's
    health = operator.http.get("/_sandbox/health").json()
    assert health["transactions"] == len(before[0]) + len(bob.query(sitereference=BOB))
    assert {f["sitereference"] for f in health["faults"]["faults"]} >= {ALICE_2}
    assert ALICE_2 in operator.http.get("/_sandbox/faults/log").text
    # bob's health: bob's own count and faults only
    bobs = bob.http.get("/_sandbox/health").json()
    assert bobs["transactions"] == len(bob.query(sitereference=BOB))
    assert all(f["sitereference"] == BOB for f in bobs["faults"]["faults"])

    # an operator's move of every site, seen while it runs
    seen: list[tuple[list, list]] = []

    def watch(step: str, done: int, total: int) -> None:
        if not seen:
            seen.append(
                (progress(bob, BOB)[0].json()["advances"], progress(operator, OPS)[0].json()["advances"])
            )

    gateway = handle.sandbox.gateway
    gateway.advance(to="2026-03-20T00:00:00", progress=watch, sites=gateway.every_site)
    bobs_view, operators_view = seen[0]
    assert [move["sites"] for move in bobs_view] == [[BOB]]
    assert [sorted(move["sites"]) for move in operators_view] == [sorted([ALICE_1, ALICE_2, BOB, OPS])]
