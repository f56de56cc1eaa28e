"""Shared pieces of the sandbox tests: a sandbox on a real loopback port with a tmp_path database,
and a thin raw-JSON caller (deliberately not gwkit's client: these tests pin the wire format).

The fixtures that use them (`db_path`, `sandbox`, `gateway`) are in tests/sandbox/conftest.py.
"""

from __future__ import annotations

from datetime import datetime
from pathlib import Path
from typing import Any

import httpx

from gwkit.sandbox.gateway.accounts import DEFAULT_PASSWORD, DEFAULT_SITEREFERENCE, DEFAULT_USERNAME
from support.databases import Database

CLOCK = datetime(2026, 1, 15, 10, 0, 0)
SITE = DEFAULT_SITEREFERENCE
VISA = "4111111111111111"
VISA_DECLINED = "4000000000000812"
MASTERCARD = "5100000000000008"
EXPIRY = "12/2030"


def card_auth(**fields: Any) -> dict[str, Any]:
    """An AUTH request object with card fields (authorised unless the fields say otherwise)."""
    return {
        "requesttypedescriptions": ["AUTH"],
        "sitereference": SITE,
        "accounttypedescription": "ECOM",
        "currencyiso3a": "GBP",
        "baseamount": "1050",
        "pan": VISA,
        "expirydate": EXPIRY,
        "securitycode": "123",
        **fields,
    }


def monthly_subscription(begindate: str, finalnumber: int = 2, **fields: Any) -> dict[str, Any]:
    """An AUTH SUBSCRIPTION request object: a card payment now, then one a month from `begindate`."""
    return {
        **card_auth(**fields),
        "requesttypedescriptions": ["AUTH", "SUBSCRIPTION"],
        "subscriptiontype": "RECURRING",
        "subscriptionunit": "MONTH",
        "subscriptionfrequency": "1",
        "subscriptionnumber": "1",
        "subscriptionfinalnumber": str(finalnumber),
        "subscriptionbegindate": begindate,
        "credentialsonfile": "1",
        "transactionactive": "1",
    }


def store_request(**fields: Any) -> dict[str, Any]:
    return {
        "requesttypedescriptions": ["STORE"],
        "sitereference": SITE,
        "accounttypedescription": "CARDSTORE",
        "pan": MASTERCARD,
        "expirydate": EXPIRY,
        **fields,
    }


def parent_auth(parent: str, **fields: Any) -> dict[str, Any]:
    return {
        "requesttypedescriptions": ["AUTH"],
        "sitereference": SITE,
        "parenttransactionreference": parent,
        "accounttypedescription": "ECOM",
        "currencyiso3a": "GBP",
        "baseamount": "2500",
        **fields,
    }


def query_request(**filters: str | list[str]) -> dict[str, Any]:
    """TRANSACTIONQUERY in the real filter shape; a list gives several values for one filter."""
    shaped = {
        name: [{"value": v} for v in (values if isinstance(values, list) else [values])]
        for name, values in filters.items()
    }
    return {"requesttypedescriptions": ["TRANSACTIONQUERY"], "filter": shaped}


def update_request(references: str | list[str], **updates: str) -> dict[str, Any]:
    refs = references if isinstance(references, list) else [references]
    return {
        "requesttypedescriptions": ["TRANSACTIONUPDATE"],
        "filter": {"sitereference": [{"value": SITE}], "transactionreference": [{"value": r} for r in refs]},
        "updates": updates,
    }


class Gateway:
    """Posts raw envelopes to `/json/` over real HTTP and returns the parsed answers."""

    def __init__(self, base_url: str, username: str = DEFAULT_USERNAME, password: str = DEFAULT_PASSWORD):
        self.username = username
        self.http = httpx.Client(
            base_url=base_url, auth=(username, password), timeout=30, headers={"accept": "application/json"}
        )

    def envelope(self, *objects: dict[str, Any], **extra: Any) -> dict[str, Any]:
        response = self.http.post(
            "/json/", json={"alias": self.username, "version": "1.00", "request": list(objects), **extra}
        )
        assert response.status_code == 200, response.text
        assert response.headers["content-type"].startswith("application/json")
        return response.json()

    def records(self, *objects: dict[str, Any]) -> list[dict[str, Any]]:
        return self.envelope(*objects)["response"]

    def one(self, request: dict[str, Any]) -> dict[str, Any]:
        (record,) = self.records(request)
        return record

    def query(self, **filters: str | list[str]) -> list[dict[str, Any]]:
        record = self.one(query_request(**filters))
        assert record["errorcode"] == "0", record
        return record["records"]

    def close(self) -> None:
        self.http.close()


def rows(db_path: str | Path, table: str = "transactions") -> int:
    return Database(db_path).count(table)


def kept_rows(db_path: str | Path) -> dict[str, int]:
    """`all_rows` without the references' bookkeeping (the `meta` table: counter and prefix): what a
    request refused for a field must leave as it was. It uses up one transaction reference (its ERROR
    record names it, as the gateway's do) and keeps nothing."""
    return {name: count for name, count in all_rows(db_path).items() if not name.startswith("meta")}


def all_rows(db_path: str | Path) -> dict[str, int]:
    """Row counts of every table: what "nothing was stored" is checked against. The fault log is left
    out: recording an injected fault is its job, not data the request stored."""
    database = Database(db_path)
    counts = database.counts([t for t in database.tables() if t != "fault_log"])
    counts["meta:reference_counter"] = database.references_made()
    return counts
