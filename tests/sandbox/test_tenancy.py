"""Tenancy: each web services user sees, uses and changes only its own site references."""

from __future__ import annotations

import httpx
import pytest

import gwkit.sandbox
from support.sandbox import CLOCK, Gateway, card_auth, parent_auth, query_request, store_request

ACCOUNTS = """
[[account]]
username = "alice@example.test"
password = "alice-secret"
sitereferences = ["test_alice12345", "test_alice67890"]

[[account]]
username = "bob@example.test"
password = "bob-secret"
sitereferences = ["test_bob12345"]
"""
ALICE_1, ALICE_2, BOB = "test_alice12345", "test_alice67890", "test_bob12345"


@pytest.fixture
def two_accounts(tmp_path):
    path = tmp_path / "accounts.toml"
    path.write_text(ACCOUNTS, encoding="utf-8")
    handle = gwkit.sandbox.start(tmp_path / "s.db", accounts=gwkit.sandbox.load_accounts(path), clock_start=CLOCK)
    alice = Gateway(handle.base_url, "alice@example.test", "alice-secret")
    bob = Gateway(handle.base_url, "bob@example.test", "bob-secret")
    yield handle, alice, bob
    alice.close()
    bob.close()
    handle.stop()


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
    stored = alice.one(store_request(sitereference=ALICE_1, orderreference="alice-card"))["transactionreference"]
    paid = alice.one(card_auth(sitereference=ALICE_2, orderreference="alice-pay"))["transactionreference"]

    # query: nothing, whatever the filter names
    assert bob.query(transactionreference=[stored, paid]) == []
    assert bob.query(sitereference=[ALICE_1, ALICE_2]) == []
    assert bob.query(orderreference=["alice-card", "alice-pay"]) == []
    # use as a parent: the same answer as an unknown reference
    unknown = bob.one(parent_auth("77-9-777777", sitereference=BOB))
    foreign = bob.one(parent_auth(stored, sitereference=BOB))
    assert foreign == unknown == {**foreign, "errorcode": "30000", "errordata": ["parenttransactionreference"]}
    # update: the same answer as an unknown reference, and nothing changes
    for reference in (stored, "77-9-777777"):
        record = bob.one({"requesttypedescriptions": ["TRANSACTIONUPDATE"],
                          "filter": {"transactionreference": [{"value": reference}]},
                          "updates": {"transactionactive": "0"}})
        assert (record["errorcode"], record["errordata"]) == ("30000", ["transactionreference"])
    (card,) = alice.query(transactionreference=stored)
    assert card["transactionactive"] == "1"


def test_a_user_queries_all_its_sites_or_the_one_it_names(two_accounts):
    _, alice, bob = two_accounts
    one = alice.one(card_auth(sitereference=ALICE_1, orderreference="o"))["transactionreference"]
    two = alice.one(card_auth(sitereference=ALICE_2, orderreference="o"))["transactionreference"]
    bob.one(card_auth(sitereference=BOB, orderreference="o"))
    assert {r["transactionreference"] for r in alice.query(orderreference="o")} == {one, two}
    assert [r["transactionreference"] for r in alice.query(orderreference="o", sitereference=ALICE_2)] == [two]
    assert [r["sitereference"] for r in bob.query(orderreference="o")] == [BOB]


def test_credentials_and_alias_must_belong_together(two_accounts):
    handle, alice, _ = two_accounts
    mixed = httpx.post(f"{handle.base_url}/json/", auth=("alice@example.test", "bob-secret"),
                       json={"request": [query_request(orderreference="o")]})
    assert mixed.status_code == 401
    answer = alice.envelope(card_auth(sitereference=ALICE_1), alias="bob@example.test")
    assert answer["response"][0]["errordata"] == ["alias"]


def test_the_control_api_takes_any_accounts_credentials(two_accounts):
    handle, alice, bob = two_accounts
    assert alice.http.get("/_sandbox/clock").status_code == bob.http.get("/_sandbox/clock").status_code == 200
    assert httpx.get(f"{handle.base_url}/_sandbox/clock").status_code == 401


@pytest.mark.parametrize("text, message", [
    ("not toml [", "not valid TOML"),
    ("[[account]]\nusername = 'a'\npassword = 'p'\n", "[[account]] number 1 ('a'): sitereferences"),
    ("[[account]]\nusername = 'a'\npassword = 'p'\nsitereferences = ['bad site']\n", "'bad site'"),
    ("[[account]]\nusername = 'a'\npassword = ''\nsitereferences = ['test_a']\n", "('a'): password"),
    ("[[account]]\nusername = 'a'\npassword = 'p'\nsitereferences = ['test_a']\n"
     "[[account]]\nusername = 'a'\npassword = 'q'\nsitereferences = ['test_b']\n", "'a' is listed twice"),
    ("[[account]]\nusername = 'a'\npassword = 'p'\nsitereferences = ['test_a']\n"
     "[[account]]\nusername = 'b'\npassword = 'q'\nsitereferences = ['test_a']\n", "'test_a' is listed for both"),
    ("[[account]]\nusername = 'a'\npasword = 'p'\nsitereferences = ['test_a']\n", "unknown key(s) pasword"),
    ("title = 'no accounts'\n", "at least one [[account]]"),
])
def test_bad_accounts_files_name_the_entry_and_the_rule(tmp_path, text, message):
    path = tmp_path / "accounts.toml"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(gwkit.sandbox.AccountsError) as raised:
        gwkit.sandbox.load_accounts(path)
    assert message in str(raised.value) and str(path) in str(raised.value)
