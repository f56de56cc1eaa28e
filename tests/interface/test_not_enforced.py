"""Required fields the real service does not enforce: the client keeps the rule, the gateway does not."""

from __future__ import annotations

from gwkit.interface.requests import AUTH_SUBSCRIPTION, REQUEST_TYPES
from gwkit.interface.validation import validate_request

SUBSCRIPTION_WITHOUT_ORDER = {
    "requesttypedescriptions": ["ACCOUNTCHECK", "AUTH", "SUBSCRIPTION"],
    "sitereference": "test_site12345",
    "accounttypedescription": "ECOM",
    "currencyiso3a": "GBP",
    "baseamount": "1000",
    "pan": "4000000000000721",
    "expirydate": "12/2030",
    "subscriptiontype": "RECURRING",
    "subscriptionunit": "MONTH",
    "subscriptionbegindate": "2026-06-01",
    "subscriptionfrequency": "1",
    "subscriptionnumber": "1",
    "subscriptionfinalnumber": "12",
    "credentialsonfile": "1",
}


def test_the_client_keeps_the_documented_rule_and_the_gateway_answers_as_the_service():
    strict = validate_request(SUBSCRIPTION_WITHOUT_ORDER)
    assert [p.field for p in strict] == ["orderreference"]
    assert "is required" in strict[0].rule
    assert validate_request(SUBSCRIPTION_WITHOUT_ORDER, strict=False) == []


def test_the_subscriptions_order_reference_is_the_one_required_field_marked():
    marked = {
        (rt.key, v.name, name)
        for rt in REQUEST_TYPES.values()
        for v in rt.variants
        for name in v.not_enforced
        if name in v.required
    }
    assert marked == {("AUTH+SUBSCRIPTION", v.name, "orderreference") for v in AUTH_SUBSCRIPTION.variants}


def test_a_field_not_marked_is_still_required_by_the_gateway():
    request = {k: v for k, v in SUBSCRIPTION_WITHOUT_ORDER.items() if k != "subscriptionbegindate"}
    request["orderreference"] = "o-1"
    assert [p.field for p in validate_request(request, strict=False)] == ["subscriptionbegindate"]
