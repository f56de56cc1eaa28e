"""Stored cards (interface 2.8, 3.2, 4.7) through any gwkit client: list, enable, disable, use.

    from gwkit import cardstore
    ref = gw.store(accounttypedescription="CARDSTORE", pan="5100000000000008", expirydate="12/2030",
                   billinglastname="Tester").raise_for_errors().record["transactionreference"]
    cardstore.stored_cards(gw)                   # one row per stored card, masked, with its use count
    cardstore.disable(gw, ref)                   # transactionactive 0: refused by later requests
    cardstore.pay_with(gw, ref, baseamount=1050) # AUTH with the stored card as parent
    cardstore.subscribe_with(gw, ref, baseamount=999, subscriptionfinalnumber=12)

Everything goes through the gateway's own requests (TRANSACTIONQUERY, TRANSACTIONUPDATE, AUTH,
AUTH SUBSCRIPTION), so it works against the sandbox and a real test site alike. A card's "uses"
are the transactions naming it as `parenttransactionreference`.
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import date
from typing import Any

from .errors import GwkitError
from .interface.schedule import due_date
from .protocols import GatewayClient
from .querying import MAX_QUERY_RECORDS, matched

# What a listing shows of each stored card: masked, never the card number.
COLUMNS = (
    "transactionreference",
    "maskedpan",
    "paymenttypedescription",
    "expirydate",
    "billingname",
    "billingcountryiso2a",
    "transactionactive",
    "uses",
    "transactionstartedtimestamp",
    "sitereference",
    "orderreference",
    "issuer",
    "issuercountryiso2a",
)
QUERY_LIMIT = MAX_QUERY_RECORDS  # the most records one TRANSACTIONQUERY answers
_CHUNK = 100  # references per usage query


class CardStoreError(GwkitError):
    """A card store listing that cannot be complete; the message says why."""


def stored_cards(client: GatewayClient, sitereference: str | None = None) -> list[dict[str, Any]]:
    """The site's stored cards, newest first, each with its billing name and country and how often
    it was used. Values are the gateway's strings, except `uses` (an int)."""
    answer = client.transaction_query(
        requesttypedescription="STORE", errorcode="0", **_site(sitereference)
    ).raise_for_errors()
    records = answer.query_records
    _check_complete(answer, "stored cards")
    uses = usage_counts(client, [r["transactionreference"] for r in records], sitereference)
    # Records name no site (as the real gateway's): the site is the one the query was for.
    site = sitereference or getattr(client, "sitereference", None)
    return [_row(record, uses.get(record["transactionreference"], 0), site) for record in records]


def usage_counts(
    client: GatewayClient, references: Iterable[str], sitereference: str | None = None
) -> dict[str, int]:
    """How many transactions name each reference as their `parenttransactionreference`."""
    references = list(references)
    counts = dict.fromkeys(references, 0)
    for start in range(0, len(references), _CHUNK):
        chunk = references[start : start + _CHUNK]
        answer = client.transaction_query(
            parenttransactionreference=chunk, **_site(sitereference)
        ).raise_for_errors()
        children = answer.query_records
        if matched(answer.record) > len(children):  # more than one answer holds: count per card
            for reference in chunk:
                counts[reference] = _found(
                    client.transaction_query(
                        parenttransactionreference=reference, **_site(sitereference)
                    ).raise_for_errors()
                )
            continue
        for child in children:
            parent = child.get("parenttransactionreference")
            if parent in counts:
                counts[parent] += 1
    return counts


def set_active(client: GatewayClient, reference: str, active: bool) -> Any:
    """TRANSACTIONUPDATE of the stored card's `transactionactive` (1 enabled, 0 disabled)."""
    return client.transaction_update(
        transactionreference=reference, updates={"transactionactive": "1" if active else "0"}
    ).raise_for_errors()


def enable(client: GatewayClient, reference: str) -> Any:
    return set_active(client, reference, True)


def disable(client: GatewayClient, reference: str) -> Any:
    return set_active(client, reference, False)


def pay_with(client: GatewayClient, reference: str, **fields: Any) -> Any:
    """AUTH with the stored card as parent; card and billing details are inherited.
    Returns the response as it came (check `.ok`: a disabled card is answered 30000)."""
    return client.auth(
        parenttransactionreference=reference,
        **{"accounttypedescription": "ECOM", "baseamount": "1050", **fields},
    )


def subscribe_with(client: GatewayClient, reference: str, *, today: date | None = None, **fields: Any) -> Any:
    """AUTH SUBSCRIPTION with the stored card as parent: the first payment now, then monthly.
    The first automated payment is a month after `today` (the sandbox clock by default)."""
    today = today or _today(client)
    defaults = {
        "accounttypedescription": "ECOM",
        "baseamount": "1050",
        "orderreference": f"sub-{reference}",
        "subscriptiontype": "RECURRING",
        "subscriptionunit": "MONTH",
        "subscriptionfrequency": "1",
        "subscriptionnumber": "1",
        "subscriptionfinalnumber": "12",
        "subscriptionbegindate": due_date(today, 1, 0, 1).isoformat(),
        "credentialsonfile": "1",
    }
    return client.auth_subscription(parenttransactionreference=reference, **{**defaults, **fields})


# helpers ---------------------------------------------------------------------------------------


def _row(record: Any, uses: int, site: str | None) -> dict[str, Any]:
    names = [
        record.get(k)
        for k in (
            "billingprefixname",
            "billingfirstname",
            "billingmiddlename",
            "billinglastname",
            "billingsuffixname",
        )
    ]
    row = {name: record.get(name) for name in COLUMNS}
    row["billingname"] = " ".join(n for n in names if n) or None
    row["uses"] = uses
    row["sitereference"] = record.get("sitereference") or site
    return row


def _found(answer: Any) -> int:
    """How many records matched: `found` when the gateway says, else those the answer holds."""
    value = answer.record.get("found")
    return int(value) if value not in (None, "") else len(answer.query_records)


def _check_complete(answer: Any, what: str) -> None:
    """Raise when the answer holds fewer records than matched (a full answer without `found`, as
    the real gateway sends, may have more)."""
    returned, found = len(answer.query_records), matched(answer.record)
    if found > returned:
        count = answer.record.get("found") or f"at least {returned}"
        raise CardStoreError(
            f"the site has {count} {what}, more than one TRANSACTIONQUERY answers "
            f"({QUERY_LIMIT}); narrow the listing with startdate/enddate filters"
        )


def _site(sitereference: str | None) -> dict[str, Any]:
    return {"sitereference": sitereference} if sitereference else {}


def _today(client: GatewayClient) -> date:
    sandbox = getattr(client, "sandbox", None)
    return sandbox.now().date() if sandbox is not None else date.today()
