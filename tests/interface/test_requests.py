"""Every request type and variant of gwkit/interface/requests.py: required, forbidden and per-type rules.

The cases are generated from `gwkit.interface.REQUEST_TYPES`, so a new request type or variant is
tested as soon as it is in the table (and SAMPLE must then know its fields).
"""

from __future__ import annotations

import pytest

from gwkit import ValidationError
from gwkit.interface import FIELDS, REQUEST_TYPES, errordata, validate_request
from gwkit.interface.fields import IGNORED_FIELDS, REQUEST
from gwkit.interface.requests import FILTER_FIELDS, UPDATABLE_FIELDS
from gwkit.interface.validation import chained_entries, check_value, normalised

PAN = "4111111111111111"
MASKED = "411111######1111"

# A valid value for every field a request object may carry.
SAMPLE = {
    "sitereference": "test_site12345",
    "accounttypedescription": "ECOM",
    "currencyiso3a": "GBP",
    "baseamount": "1050",
    "orderreference": "order-1",
    "pan": PAN,
    "expirydate": "12/2030",
    "securitycode": "123",
    "md": "md-abc123",
    "pares": "eJxVUt1ugjAUfhXS",
    "parenttransactionreference": "23-9-80001",
    "credentialsonfile": "1",
    "termurl": "https://merchant.example/term",
    "accept": "text/html,*/*;q=0.8",
    "useragent": "Mozilla/5.0 (X11; Linux x86_64)",
    "browsercolordepth": "24",
    "browserjavaenabled": "false",
    "browserjavascriptenabled": "true",
    "browserlanguage": "en-GB",
    "browserscreenheight": "1080",
    "browserscreenwidth": "1920",
    "browsertz": "-60",
    "customerip": "203.0.113.7",
    "threedresponse": "eyJhbGciOiJub25lIn0.eyJQYXlsb2FkIjp7fX0.",
    "cachetoken": "eyJjYWNoZXRva2VuIjoieCJ9",
    "requestreference": "Aabc12345",
    "subscriptiontype": "RECURRING",
    "subscriptionunit": "MONTH",
    "subscriptionfrequency": "1",
    "subscriptionnumber": "1",
    "subscriptionfinalnumber": "12",
    "subscriptionbegindate": "2030-01-31",
    "transactionactive": "2",
    "billingpremise": "1",
    "billingstreet": "Test Street",
    "billingtown": "Bangor",
    "billingcounty": "Gwynedd",
    "billingcountryiso2a": "GB",
    "billingpostcode": "TE45 6ST",
    "billingemail": "test@example.com",
    "billingtelephonetype": "M",
    "billingtelephone": "+44 7700 900000",
    "billingprefixname": "Dr",
    "billingfirstname": "Ann",
    "billingmiddlename": "B",
    "billinglastname": "Example",
    "billingsuffixname": "Jr",
    "expirymonth": "12",
    "expiryyear": "2030",
    "paymenttypedescription": "VISA",
    "filter": {
        "sitereference": [{"value": "test_site12345"}],
        "transactionreference": [{"value": "23-9-80001"}],
    },
    "updates": {"transactionactive": "0"},
}

CASES = [(rt, variant) for rt in REQUEST_TYPES.values() for variant in rt.variants]
IDS = [f"{rt.key}-{variant.name}" for rt, variant in CASES]


def sample(name, variant):
    if name in variant.choices:
        return variant.choices[name][0]
    return SAMPLE[name]


def minimal(rt, variant):
    return {"requesttypedescriptions": list(rt.types), **{n: sample(n, variant) for n in variant.required}}


def full(rt, variant):
    return {**minimal(rt, variant), **{n: sample(n, variant) for n in variant.allowed}}


def problems_of(request, strict=True):
    return [(p.field, p.rule) for p in validate_request(request, strict=strict)]


def test_sample_knows_every_field_a_request_type_allows_or_forbids():
    names = {n for _, v in CASES for n in (*v.allowed, *v.forbidden)}
    assert names <= set(SAMPLE), f"add samples for {sorted(names - set(SAMPLE))}"


@pytest.mark.parametrize("rt,variant", CASES, ids=IDS)
def test_minimal_request_is_valid_and_selects_its_variant(rt, variant):
    request = minimal(rt, variant)
    assert rt.select(request) is variant
    assert problems_of(request) == []


@pytest.mark.parametrize("rt,variant", CASES, ids=IDS)
def test_request_with_every_allowed_field_is_valid(rt, variant):
    request = full(rt, variant)
    assert rt.select(request) is variant
    assert problems_of(request) == []


@pytest.mark.parametrize(
    "rt,variant,name",
    [(rt, v, n) for rt, v in CASES for n in v.required],
    ids=lambda x: getattr(x, "key", None) or getattr(x, "name", None) or x,
)
def test_each_required_field_is_required(rt, variant, name):
    request = minimal(rt, variant)
    del request[name]
    problems = validate_request(request)
    if not problems and name in variant.selected_by:
        # the selector itself: without it the request is another variant's (an AUTH without its
        # threedresponse is an AUTH from its parent), which may be valid
        assert rt.select(request) is not variant
        return
    assert problems, f"{rt.key} ({variant.name}) accepted a request without {name}"
    if rt.select(request) is variant:  # removing a selector may switch to another variant
        assert (name, f"is required in {rt.key} ({variant.name}) requests") in [
            (p.field, p.rule) for p in problems
        ]
    assert all(p.field and p.rule for p in problems)


@pytest.mark.parametrize(
    "rt,variant,name",
    [(rt, v, n) for rt, v in CASES for n in v.forbidden],
    ids=lambda x: getattr(x, "key", None) or getattr(x, "name", None) or x,
)
def test_each_forbidden_field_is_refused(rt, variant, name):
    request = {**minimal(rt, variant), name: SAMPLE[name]}
    problems = validate_request(request)
    assert problems, f"{rt.key} ({variant.name}) accepted {name}"
    if rt.select(request) is variant:  # adding a selector may switch to another variant
        rules = [p.rule for p in problems if p.field == name]
        assert rules == [f"must not be sent in {rt.key} requests: {variant.forbidden[name]}"]
    assert PAN not in " ".join(str(p) for p in problems)


@pytest.mark.parametrize(
    "rt,variant,name",
    [(rt, v, n) for rt, v in CASES for n in v.choices],
    ids=lambda x: getattr(x, "key", None) or getattr(x, "name", None) or x,
)
def test_per_type_choices(rt, variant, name):
    allowed = variant.choices[name]
    for value in allowed:
        assert problems_of({**minimal(rt, variant), name: value}) == []
    outside = [c for c in FIELDS[name].choices if c not in allowed]
    for value in outside:
        assert problems_of({**minimal(rt, variant), name: value}) == [
            (name, f"must be one of {', '.join(allowed)}")
        ]


@pytest.mark.parametrize("rt,variant", CASES, ids=IDS)
def test_fields_the_type_does_not_use_are_reported_when_strict(rt, variant):
    unused = next(
        n
        for n, spec in FIELDS.items()
        if REQUEST in spec.where
        and n not in variant.allowed
        and n not in variant.forbidden
        and n != "requesttypedescriptions"
        and not any(n in v.selected_by for v in rt.variants)
    )
    request = {**minimal(rt, variant), unused: SAMPLE.get(unused, "x")}
    assert [(f, r.split(" requests")[0]) for f, r in problems_of(request)] == [
        (unused, f"is not used by {rt.key}")
    ]
    assert problems_of(request, strict=False) == []


@pytest.mark.parametrize("rt,variant", CASES, ids=IDS)
def test_unknown_fields_are_typos_when_strict_and_ignored_otherwise(rt, variant):
    request = {**minimal(rt, variant), "amount": "10"}
    assert problems_of(request) == [("amount", "is not a field of the interface")]
    assert problems_of(request, strict=False) == []
    for name in IGNORED_FIELDS:  # what real clients add: accepted and ignored
        assert problems_of({**minimal(rt, variant), name: "1.00"}) == []


# -- the rules of the interface, spelled out ------------------------------------------------------


def test_store_never_takes_a_security_code():
    request = {**minimal(REQUEST_TYPES["STORE"], REQUEST_TYPES["STORE"].variants[0]), "securitycode": "123"}
    [problem] = validate_request(request)
    assert problem.field == "securitycode" and "never be sent in a STORE request" in problem.rule
    assert problem.value == "[redacted]"
    assert validate_request(request, strict=False) == []  # the real service accepts it: the sandbox too
    assert REQUEST_TYPES["STORE"].variants[0].not_enforced == {"securitycode"}


@pytest.mark.parametrize(
    "key,bad,allowed",
    [
        ("THREEDQUERY", "MOTO", "ECOM"),
        ("AUTH+SUBSCRIPTION", "RECUR", "ECOM, MOTO"),
        ("STORE", "ECOM", "CARDSTORE"),
    ],
)
def test_account_type_per_request_type(key, bad, allowed):
    rt = REQUEST_TYPES[key]
    request = {**minimal(rt, rt.variants[-1]), "accounttypedescription": bad}
    assert problems_of(request) == [("accounttypedescription", f"must be one of {allowed}")]


def test_subscription_variants_follow_the_interface():
    rt = REQUEST_TYPES["AUTH+SUBSCRIPTION"]
    assert rt.types == ("AUTH", "SUBSCRIPTION")
    assert {v.name for v in rt.variants} == {"threeds", "threedresponse", "parent", "card"}
    for variant in rt.variants:
        for name in (
            "sitereference",
            "accounttypedescription",
            "currencyiso3a",
            "baseamount",
            "orderreference",
            "subscriptiontype",
            "subscriptionunit",
            "subscriptionfrequency",
            "subscriptionnumber",
            "subscriptionfinalnumber",
            "subscriptionbegindate",
            "credentialsonfile",
        ):
            assert name in variant.required, (variant.name, name)
        assert "transactionactive" in variant.optional
    assert {"md", "pares"} <= set(rt.variant("threeds").required)
    assert {"parenttransactionreference", "threedresponse"} <= set(rt.variant("threedresponse").required)
    assert "parenttransactionreference" in rt.variant("parent").required
    assert {"pan", "expirydate"} <= set(rt.variant("card").required)


def test_auth_after_3d_secure_needs_md_and_pares_and_inherits_the_rest():
    request = {"requesttypedescriptions": ["AUTH"], "md": "m"}
    assert problems_of(request) == [("pares", "is required in AUTH (threeds) requests")]
    request = {"requesttypedescriptions": ["AUTH"], "md": "m", "pares": "p", "pan": PAN}
    [problem] = validate_request(request)
    assert problem.field == "pan" and problem.value == MASKED


@pytest.mark.parametrize(
    "types,rule",
    [
        ([], "must be a non-empty list of request type names"),
        ("AUTH", "must be a non-empty list of request type names"),
        ([1], "must be a non-empty list of request type names"),
        (["FOO"], "unknown request type(s) FOO"),
        (
            ["SUBSCRIPTION", "AUTH"],
            "SUBSCRIPTION comes last, after AUTH or ACCOUNTCHECK (or alone, naming its parent)",
        ),
        (
            ["STORE", "SUBSCRIPTION"],
            "SUBSCRIPTION comes last, after AUTH or ACCOUNTCHECK (or alone, naming its parent)",
        ),
        (
            ["TRANSACTIONUPDATE", "AUTH"],
            "TRANSACTIONUPDATE cannot be combined with other request types in one object",
        ),
        (
            ["AUTH", "CACHETOKENISE"],
            "CACHETOKENISE cannot be combined with other request types in one object",
        ),
        (["STORE", "STORE"], "names a request type twice"),
    ],
)
def test_request_type_list_problems(types, rule):
    assert problems_of({"requesttypedescriptions": types, "pan": PAN}) == [("requesttypedescriptions", rule)]


def test_missing_request_types_and_non_objects():
    assert problems_of({"pan": PAN})[0][0] == "requesttypedescriptions"
    assert problems_of(["AUTH"]) == [("request", "each request object must be a JSON object")]


def test_several_request_types_in_one_object_need_the_fields_of_each():
    problems = dict(
        problems_of(
            {
                "requesttypedescriptions": ["STORE", "THREEDQUERY"],
                "pan": PAN,
                "expirydate": "12/2030",
                "sitereference": "test_site12345",
            }
        )
    )
    assert {"accounttypedescription", "termurl", "currencyiso3a", "baseamount"} <= set(problems)


# -- TRANSACTIONQUERY / TRANSACTIONUPDATE in the real filter/updates shape ----------------------


def query(filter_):
    return {"requesttypedescriptions": ["TRANSACTIONQUERY"], "filter": filter_}


def test_filter_shape_and_fields():
    assert (
        problems_of(
            query(
                {
                    "transactionreference": [{"value": "1-2-3"}, {"value": "1-2-4"}],
                    "settlestatus": [{"value": "0"}, {"value": "100"}],
                }
            )
        )
        == []
    )
    assert set(FILTER_FIELDS) >= {"sitereference", "transactionreference", "settlestatus"}
    assert problems_of(query("1-2-3"))[0][0] == "filter"
    assert problems_of(query({"transactionreference": "1-2-3"}))[0] == (
        "filter.transactionreference",
        'must be a list such as [{"value": "..."}]',
    )
    assert problems_of(query({"transactionreference": ["1-2-3"]}))[0] == (
        "filter.transactionreference",
        'each entry must be an object {"value": "..."}',
    )
    assert problems_of(query({"pan": [{"value": PAN}]}))[0][0] == "filter.pan"
    assert problems_of(query({"settlestatus": [{"value": "7"}]})) == [
        ("filter.settlestatus", "must be one of 0, 1, 2, 3, 10, 100")
    ]


def test_updates_name_updatable_fields_with_valid_values():
    def update(updates):
        return {
            "requesttypedescriptions": ["TRANSACTIONUPDATE"],
            "filter": {"transactionreference": [{"value": "1-2-3"}]},
            "updates": updates,
        }

    for name in UPDATABLE_FIELDS:
        value = {
            "baseamount": "2000",
            "settlebaseamount": "2000",
            "subscriptionfinalnumber": "24",
            "settleduedate": "2026-02-01",
            "billingcountryiso2a": "GB",
            "billingemail": "a@example.com",
            "billingtelephonetype": "M",
        }.get(name, "1")
        assert problems_of(update({name: value})) == [], name
    assert problems_of(update({"pan": PAN}))[0][0] == "updates.pan"
    assert problems_of(update({"transactionactive": "5"})) == [
        ("updates.transactionactive", "must be one of 0, 1, 2")
    ]
    assert problems_of(update({"baseamount": "0"}))[0][0] == "updates.baseamount"
    assert problems_of(update("transactionactive=0"))[0][0] == "updates"


def test_filter_and_updates_belong_to_query_and_update_only():
    auth = {
        **minimal(REQUEST_TYPES["AUTH"], REQUEST_TYPES["AUTH"].variant("card")),
        "filter": SAMPLE["filter"],
    }
    assert problems_of(auth) == [("filter", "is only used by TRANSACTIONQUERY and TRANSACTIONUPDATE")]


# -- every problem at once, named and masked ------------------------------------------------------

BAD_AUTH = {
    "requesttypedescriptions": ["AUTH"],
    "accounttypedescription": "CARDSTORE",
    "currencyiso3a": "gbp",
    "baseamount": "10.50",
    "pan": "4111111111111112",
    "expirydate": "13/2030",
    "securitycode": "12345",
    "orderreference": "x" * 40 + PAN + "y" * 200,
    "amount": "1050",
    "md": "should-not-be-here",
}


def test_every_problem_is_reported_at_once_each_naming_field_and_rule():
    problems = validate_request({k: v for k, v in BAD_AUTH.items() if k != "md"})
    fields = [p.field for p in problems]
    assert fields == [
        "sitereference",
        "accounttypedescription",
        "currencyiso3a",
        "baseamount",
        "pan",
        "expirydate",
        "securitycode",
        "orderreference",
        "amount",
    ]
    for problem in problems:
        assert problem.rule and problem.field in str(problem)
    assert errordata(problems) == fields


def test_problem_values_are_masked_and_the_pan_never_shows():
    problems = validate_request({**BAD_AUTH, "pan": PAN})
    text = "\n".join(str(p) for p in problems) + repr(problems)
    assert PAN not in text
    assert "4111111111111112" not in str(validate_request(BAD_AUTH))
    by_field = {p.field: p.value for p in validate_request(BAD_AUTH)}
    assert by_field["pan"] == "411111######1112"
    assert by_field["securitycode"] == "[redacted]"
    assert "411111######" in by_field["orderreference"] and by_field["orderreference"].endswith("...")
    error = ValidationError(validate_request({**BAD_AUTH, "pan": PAN}), "AUTH")
    assert PAN not in str(error) and "12345" not in str(error)
    assert {"pan", "pares"} <= set(error.fields)  # md selects the 3-D Secure variant


def test_problems_as_dicts_for_forms_and_the_sandbox():
    [problem] = validate_request(
        {
            "requesttypedescriptions": ["STORE"],
            "sitereference": "test_site12345",
            "accounttypedescription": "CARDSTORE",
            "pan": PAN,
            "expirydate": "2030/12",
        }
    )
    assert problem.as_dict() == {
        "field": "expirydate",
        "rule": "Date MM/YYYY: format MM/YYYY",
        "value": "2030/12",
    }


def test_several_request_types_in_one_object_accept_a_value_any_of_them_takes():
    request = {
        "requesttypedescriptions": ["STORE", "AUTH"],
        "sitereference": "test_site12345",
        "accounttypedescription": "ECOM",
        "currencyiso3a": "GBP",
        "baseamount": "1050",
        "pan": "4111111111111111",
        "expirydate": "12/2030",
    }
    assert validate_request(request) == []
    problems = validate_request({**request, "accounttypedescription": "RECURX"})
    assert [p.field for p in problems] == ["accounttypedescription"]
    assert "CARDSTORE" in problems[0].rule and "ECOM" in problems[0].rule


def test_errordata_names_the_field_of_a_bad_update_and_filter_for_a_bad_filter():
    problems = validate_request(
        {
            "requesttypedescriptions": ["TRANSACTIONUPDATE"],
            "filter": {"nosuchfilter": [{"value": "1"}]},
            "updates": {"baseamount": "0"},
        }
    )
    assert errordata(problems) == ["filter", "baseamount"]


@pytest.mark.parametrize(
    "bad",
    ["\r", "\n", "\x00", "\x1b", "\x7f", "\x85", "\ud800"],
    ids=["CR", "LF", "NUL", "ESC", "DEL", "NEL", "surrogate"],
)
@pytest.mark.parametrize("name", [n for n in SAMPLE if isinstance(SAMPLE[n], str)])
def test_control_characters_are_refused_in_every_string_field_naming_it(name, bad):
    value = bad + SAMPLE[name][1:]  # the same length: only the character is wrong
    problems = check_value(name, value)
    assert [p.field for p in problems] == [name]
    broken = FIELDS[name].type.check(value)  # the type's own rule, when it refuses the character already
    assert problems[0].rule == (
        f"{FIELDS[name].type.name}: {broken}"
        if broken
        else "must not contain control characters (such as CR, LF or NUL) or unpaired surrogates"
    )
    assert PAN not in str(problems)


def test_a_tab_is_not_a_refused_control_character():
    assert check_value("billingfirstname", "Ann\tMarie") == []


def test_an_unknown_request_type_that_is_a_card_number_is_masked():
    (problem,) = validate_request({"requesttypedescriptions": [PAN]})
    assert PAN not in str(problem) and MASKED in problem.rule


# -- what the official clients send (issue 17) -------------------------------------------------------


def card_request(types, **fields):
    return {
        "requesttypedescriptions": types,
        "sitereference": "test_site12345",
        "accounttypedescription": "ECOM",
        "currencyiso3a": "GBP",
        "baseamount": "1050",
        "pan": PAN,
        "expirydate": "12/2030",
        **fields,
    }


def with_pair(request, month="11", year="2031"):
    return {
        **{k: v for k, v in request.items() if k != "expirydate"},
        "expirymonth": month,
        "expiryyear": year,
    }


@pytest.mark.parametrize("types", [["AUTH"], ["ACCOUNTCHECK"], ["STORE"]])
def test_the_expiry_pair_stands_for_expirydate(types):
    request = card_request(types, **({"accounttypedescription": "CARDSTORE"} if types == ["STORE"] else {}))
    if types == ["STORE"]:
        del request["baseamount"], request["currencyiso3a"]
    assert validate_request(request) == []
    assert validate_request(with_pair(request)) == []
    assert normalised(with_pair(request))[0]["expirydate"] == "11/2031"
    assert "expirymonth" not in normalised(with_pair(request))[0]


@pytest.mark.parametrize(
    "month, year, problem",
    [
        ("13", "2031", ("expirymonth", "must be a month, 01 to 12")),
        ("00", "2031", ("expirymonth", "must be a month, 01 to 12")),
        ("11", "31", ("expiryyear", "must be at least 4 characters (has 2)")),
        (None, "2031", ("expirymonth", "is required with expiryyear (or send expirydate as MM/YYYY)")),
    ],
)
def test_a_bad_expiry_pair_names_its_half_and_only_that(month, year, problem):
    request = {k: v for k, v in with_pair(card_request(["AUTH"]), month or "", year).items() if v != ""}
    assert problems_of(request) == [problem]


def test_cachetokenise_keeps_its_own_pair():
    request = {
        "requesttypedescriptions": ["CACHETOKENISE"],
        "sitereference": "test_site12345",
        "pan": PAN,
        "expirymonth": "11",
        "expiryyear": "2031",
    }
    assert normalised(request)[0] == request and validate_request(request) == []


def test_the_singular_request_type_is_the_list_of_one():
    request = card_request(["AUTH"])
    request["requesttypedescription"] = request.pop("requesttypedescriptions")[0]
    assert normalised(request)[0]["requesttypedescriptions"] == ["AUTH"]
    assert validate_request(request) == []


def test_an_accountcheck_takes_an_amount_of_zero_and_an_auth_does_not():
    assert validate_request(card_request(["ACCOUNTCHECK"], baseamount="0")) == []
    assert [p.field for p in validate_request(card_request(["AUTH"], baseamount="0"))] == ["baseamount"]
    [problem] = validate_request(card_request(["ACCOUNTCHECK"], baseamount="01"))
    assert (problem.field, problem.rule) == ("baseamount", "must not start with 0")
    # chained with an AUTH, the object's amount is the AUTH's too: the stricter rule holds
    assert [p.field for p in validate_request(card_request(["ACCOUNTCHECK", "AUTH"], baseamount="0"))] == [
        "baseamount"
    ]


def test_a_chained_request_type_needs_no_parent_of_its_own():
    subscription = {
        "subscriptiontype": "RECURRING",
        "subscriptionunit": "MONTH",
        "subscriptionfrequency": "1",
        "subscriptionnumber": "1",
        "subscriptionfinalnumber": "0",
    }
    assert validate_request(card_request(["ACCOUNTCHECK", "SUBSCRIPTION"], **subscription)) == []
    alone = {"requesttypedescriptions": ["SUBSCRIPTION"], "sitereference": "test_site12345", **subscription}
    assert problems_of(alone) == [
        ("parenttransactionreference", "is required in SUBSCRIPTION (parent) requests")
    ]
    assert chained_entries(["THREEDQUERY", "AUTH", "SUBSCRIPTION"]) == (False, True)
    assert chained_entries(["AUTH", "TRANSACTIONQUERY"]) == (False, False)


def test_a_requesttypedescription_filter_takes_the_record_types_only():
    query = {"requesttypedescriptions": ["TRANSACTIONQUERY"]}
    for kind in ("ACCOUNTCHECK", "REFUND", "AUTH", "SUBSCRIPTION", "STORE", "THREEDQUERY"):
        assert validate_request({**query, "filter": {"requesttypedescription": [{"value": kind}]}}) == [], (
            kind
        )
    [problem] = validate_request(
        {**query, "filter": {"requesttypedescription": [{"value": "TRANSACTIONQUERY"}]}}
    )
    assert problem.field == "filter.requesttypedescription" and "ACCOUNTCHECK" in problem.rule
