"""Every field rule of gwkit/interface/fields.py, table-driven.

The tables below are checked against the spec itself: a new type class, a new rule or a new
field with choices or lengths makes a test here fail until it is covered.
"""

from __future__ import annotations

import pytest

from gwkit.interface import FIELDS, check_value
from gwkit.interface import fields as f
from gwkit.interface import types as t
from gwkit.interface.cards import SCHEMES, luhn_complete, luhn_ok, scheme_of

VISA = "4111111111111111"
AMEX = "378282246310005"
MASTERCARD = "5100000000000008"

# type class -> (values that have its shape, values that do not)
TYPE_CASES: dict[t.TypeClass, tuple[list[str], list[str]]] = {
    t.ALPHA: (["ECOM", "abc", "Z"], ["AB1", "A B", "É", "A-B", "A_B"]),
    t.NUMERIC: (["0", "1050", "0042"], ["10.00", "1,000", "-5", "12a", " 1", "١٢"]),
    t.ALPHANUMERIC: (["abc 123", "ABC", "9"], ["a-b", "a_b", "a@b", "a.b"]),
    t.ALPHANUMERIC_SYMBOLS: (
        ["O'Brien & Co. #1/2 – ü", "a\tb", "line\nbreak"],
        ["a\x00b", "bell\x07", "del\x7f"],
    ),
    t.ALPHANUMERIC_UNDERSCORE: (["test_site12345", "ABC_1"], ["test-site", "test site", "site!"]),
    t.ALPHANUMERIC_HYPHENS: (["23-9-80001", "ABC-1"], ["23_9", "23 9", "23/9"]),
    t.DATE_MONTH: (["01/2030", "12/1999"], ["1/2030", "13/2030", "00/2030", "12-2030", "2030/12", "12/30"]),
    t.DATE_ISO: (
        ["2026-01-31", "2024-02-29"],
        ["2026-1-31", "31-01-2026", "2026/01/31", "2026-02-30", "2025-02-29", "2026-13-01"],
    ),
    t.URL: (
        ["https://merchant.example/term", "http://127.0.0.1:8000/x?y=1"],
        ["ftp://merchant.example", "merchant.example/term", "https://", "https://a b"],
    ),
    t.EMAIL: (
        ["a@b.co", "first.last+tag@example.org", "x" * 64 + "@example.com"],
        ["a@b", "@b.co", "a@@b.co", "a b@c.co", "x" * 65 + "@example.com"],
    ),
    t.CHAR: (["Y", "7"], ["YN", "\n"]),
    t.NUMERIC_SYMBOLS: (["+44 (0)20 7946-0000", "0123456789"], ["020.7946", "ext 12", "+44/20", "#1"]),
    t.STRING: (["anything at all \x00"], []),
    t.HEADER: (
        ["Mozilla/5.0 (X11; Linux x86_64)", "text/html,application/xhtml+xml;q=0.9,*/*;q=0.8"],
        ["tab\there", "é", "new\nline"],
    ),
}


def test_every_type_class_in_use_has_cases():
    in_use = {spec.type for spec in FIELDS.values()}
    assert in_use <= set(TYPE_CASES), f"add cases for {in_use - set(TYPE_CASES)}"


@pytest.mark.parametrize(
    "type_class,value", [(tc, v) for tc, (good, _) in TYPE_CASES.items() for v in good], ids=repr
)
def test_type_class_accepts(type_class, value):
    assert type_class.check(value) is None


@pytest.mark.parametrize(
    "type_class,value", [(tc, v) for tc, (_, bad) in TYPE_CASES.items() for v in bad], ids=repr
)
def test_type_class_rejects_with_its_rule(type_class, value):
    broken = type_class.check(value)
    assert broken, f"{type_class.name} accepted {value!r}"
    assert broken in (type_class.rule, "must be a real calendar date")


def test_date_type_names_impossible_dates():
    assert t.DATE_ISO.check("2026-02-30") == "must be a real calendar date"
    assert t.DATE_ISO.check("26-02-01") == t.DATE_ISO.rule


# -- a field's type class is what check_value enforces ------------------------------------------


def _filler(spec: f.Field, length: int) -> str | None:
    """A value of `spec`'s type with exactly `length` characters, or None when none exists."""
    type_ = spec.type
    if type_ in (t.DATE_MONTH, t.DATE_ISO):
        sample = "12/2030" if type_ is t.DATE_MONTH else "2030-12-31"
        return sample if length == len(sample) else None
    if type_ is t.EMAIL:
        return "a@" + "b" * (length - 5) + ".co" if length >= 6 else None
    if type_ is t.URL:
        return "https://" + "a" * (length - 8) if length > 8 else None
    if type_ is t.CHAR:
        return "Y" if length == 1 else None
    char = "7" if type_ in (t.NUMERIC, t.NUMERIC_SYMBOLS) else "A"
    return char * length


LENGTH_FIELDS = [spec for spec in FIELDS.values() if spec.max_length is not None]


@pytest.mark.parametrize("spec", LENGTH_FIELDS, ids=lambda s: s.name)
def test_max_length_is_enforced(spec):
    # the length is checked before the type, so any text of the length will do
    too_long = _filler(spec, spec.max_length + 1) or "7" * (spec.max_length + 1)
    problems = check_value(spec.name, too_long)
    assert [p.field for p in problems] == [spec.name]
    assert problems[0].rule == f"must be at most {spec.max_length} characters (has {spec.max_length + 1})"
    at_limit = _filler(spec, spec.max_length)
    if at_limit is not None:
        assert not any("at most" in p.rule or "at least" in p.rule for p in check_value(spec.name, at_limit))


@pytest.mark.parametrize("spec", [s for s in FIELDS.values() if s.min_length > 1], ids=lambda s: s.name)
def test_min_length_is_enforced(spec):
    too_short = _filler(spec, spec.min_length - 1)
    if too_short is None:
        too_short = "1" * (spec.min_length - 1)
    problems = check_value(spec.name, too_short)
    assert [p.field for p in problems] == [spec.name]
    assert problems[0].rule.startswith(f"must be at least {spec.min_length} characters")


# type class -> a character no value of that type may start with
BAD_FIRST_CHAR = {
    t.ALPHA: "1",
    t.NUMERIC: "a",
    t.ALPHANUMERIC: "-",
    t.ALPHANUMERIC_SYMBOLS: "\x00",
    t.ALPHANUMERIC_UNDERSCORE: "-",
    t.ALPHANUMERIC_HYPHENS: "_",
    t.DATE_MONTH: "x",
    t.DATE_ISO: "x",
    t.URL: " ",
    t.EMAIL: " ",
    t.CHAR: "\n",
    t.NUMERIC_SYMBOLS: "a",
    t.HEADER: "\t",
}


@pytest.mark.parametrize(
    "spec", [s for s in FIELDS.values() if s.type.pattern is not None], ids=lambda s: s.name
)
def test_field_reports_its_type_rule(spec):
    length = min(max(12, spec.min_length), spec.max_length or 12)
    good = _filler(spec, length) or _filler(spec, spec.min_length)
    assert good is not None
    bad = BAD_FIRST_CHAR[spec.type] + good[1:]
    problems = check_value(spec.name, bad)
    assert problems and problems[0].field == spec.name
    assert problems[0].rule.startswith(spec.type.name + ": ")


@pytest.mark.parametrize("name", sorted(FIELDS))
def test_empty_and_non_string_values_are_refused(name):
    assert [p.rule for p in check_value(name, "")] == ["must not be empty"]
    assert check_value(name, 12)[0].rule.startswith("must be a string")


def test_unknown_field_is_named():
    assert check_value("panx", "1")[0].rule == "is not a field of the interface"


# -- choices ----------------------------------------------------------------------------------

CHOICE_FIELDS = [spec for spec in FIELDS.values() if spec.choices]


@pytest.mark.parametrize(
    "spec,choice",
    [(s, c) for s in CHOICE_FIELDS for c in s.choices],
    ids=lambda x: x if isinstance(x, str) else x.name,
)
def test_every_choice_is_accepted(spec, choice):
    assert check_value(spec.name, choice) == []


@pytest.mark.parametrize("spec", CHOICE_FIELDS, ids=lambda s: s.name)
def test_a_value_outside_the_choices_is_refused(spec):
    outside = next(
        v
        for v in ("Q", "9", "QQQ", "7", "X")
        if v not in spec.choices
        and spec.type.check(v) is None
        and spec.min_length <= len(v) <= (spec.max_length or 99)
    )
    problems = check_value(spec.name, outside)
    assert [p.rule for p in problems] == [f"must be one of {', '.join(spec.choices)}"]


def test_per_request_type_choices_override_the_field_choices():
    assert check_value("accounttypedescription", "MOTO", choices=("ECOM",))[0].rule == "must be one of ECOM"
    assert check_value("accounttypedescription", "ECOM", choices=("ECOM",)) == []


def test_telephone_type_is_h_m_or_w():
    assert FIELDS["billingtelephonetype"].choices == ("H", "M", "W")
    for value in "HMW":
        assert check_value("billingtelephonetype", value) == []
    for value in ("h", "X", "HM"):
        assert check_value("billingtelephonetype", value), value


# -- rules beyond the type class ----------------------------------------------------------------

# rule -> [(value, request context, obeys the rule?)]
RULE_CASES: dict[f.Rule, list[tuple[str, dict[str, str], bool]]] = {
    f.POSITIVE: [("1", {}, True), ("1050", {}, True), ("0", {}, False), ("000", {}, False)],
    f.NO_LEADING_ZERO: [("0", {}, True), ("10", {}, True), ("010", {}, False), ("00", {}, False)],
    f.LUHN: [
        (VISA, {}, True),
        (AMEX, {}, True),
        (MASTERCARD, {}, True),
        ("4111111111111112", {}, False),
        ("4111 1111 1111 1111", {}, False),
    ],
    f.SECURITYCODE_SCHEME: [
        ("123", {"pan": VISA}, True),
        ("1234", {"pan": VISA}, False),
        ("1234", {"pan": AMEX}, True),
        ("123", {"pan": AMEX}, False),
        ("123", {"pan": MASTERCARD}, True),
        ("1234", {"pan": MASTERCARD}, False),
        ("1234", {}, True),  # no card in the request (inherited): the scheme is unknown
        ("1234", {"pan": "9999999999999995"}, True),  # no known scheme
    ],
    f.UPPERCASE: [("GBP", {}, True), ("gbp", {}, False), ("Gb", {}, False)],
    f.MONTH: [("01", {}, True), ("12", {}, True), ("00", {}, False), ("13", {}, False)],
    f.TIMESTAMP: [
        ("2026-01-15 10:00:00", {}, True),
        ("2026-02-30 10:00:00", {}, False),
        ("2026-01-15T10:00:00", {}, False),
        ("2026-01-15 24:00:00", {}, False),
    ],
    f.ZERO_OR_MORE: [("0", {}, True), ("1050", {}, True), ("-1", {}, False), ("1.5", {}, False)],
    f.IP_ADDRESS: [("203.0.113.7", {}, True), ("::1", {}, True), ("203.0.113", {}, False), ("x", {}, False)],
    f.TIMEZONE_MINUTES: [
        ("-60", {}, True),
        ("0", {}, True),
        ("330", {}, True),
        ("+60", {}, False),
        ("-", {}, False),
    ],
    f.POSTCODE: [
        ("90210", {"billingcountryiso2a": "US"}, True),
        ("12345-6789", {"billingcountryiso2a": "US"}, True),
        ("9021", {"billingcountryiso2a": "US"}, False),
        ("SW1A 1AA", {"billingcountryiso2a": "US"}, False),
        ("SW1A 1AA", {"billingcountryiso2a": "GB"}, True),
        ("M1 1AE", {"billingcountryiso2a": "GB"}, True),
        ("sw1a1aa", {"billingcountryiso2a": "GB"}, True),
        ("90210", {"billingcountryiso2a": "GB"}, False),
        ("K1A 0B1", {"billingcountryiso2a": "CA"}, True),
        ("K1A0B1", {"billingcountryiso2a": "CA"}, True),
        ("D1A 0B1", {"billingcountryiso2a": "CA"}, False),
        # not validated for any other country, nor without a country
        ("1000-001", {"billingcountryiso2a": "PT"}, True),
        ("75008", {"billingcountryiso2a": "FR"}, True),
        ("anything at all", {"billingcountryiso2a": "DE"}, True),
        ("?", {}, True),
    ],
    f.US_STATE: [
        ("NY", {"billingcountryiso2a": "US"}, True),
        ("ca", {"billingcountryiso2a": "US"}, True),
        ("New York", {"billingcountryiso2a": "US"}, True),
        ("new york", {"billingcountryiso2a": "US"}, True),
        ("District of Columbia", {"billingcountryiso2a": "US"}, True),
        ("Narnia", {"billingcountryiso2a": "US"}, False),
        ("ZZ", {"billingcountryiso2a": "US"}, False),
        ("Narnia", {"billingcountryiso2a": "GB"}, True),
        ("Narnia", {}, True),
    ],
    f.AT_LEAST_ONE: [("1", {}, True), ("12", {}, True), ("0", {}, False)],
}


def test_every_rule_in_use_has_cases():
    in_use = {rule for spec in FIELDS.values() for rule in spec.rules}
    assert in_use <= set(RULE_CASES), f"add cases for {[r.text for r in in_use - set(RULE_CASES)]}"


@pytest.mark.parametrize(
    "rule,value,request_,obeys",
    [(r, v, req, ok) for r, cases in RULE_CASES.items() for v, req, ok in cases],
    ids=lambda x: x.text[:30] if isinstance(x, f.Rule) else repr(x),
)
def test_rule(rule, value, request_, obeys):
    assert rule.check(value, request_) is obeys


@pytest.mark.parametrize(
    "spec,rule",
    [(s, r) for s in FIELDS.values() for r in s.rules],
    ids=lambda x: getattr(x, "name", None) or x.text[:30],
)
def test_each_field_reports_its_rules_by_name(spec, rule):
    """A value that has the field's type but breaks the rule gets a problem with the rule's text."""
    breaking = [
        (v, req)
        for v, req, ok in RULE_CASES[rule]
        if not ok and spec.type.check(v) is None and spec.min_length <= len(v) <= (spec.max_length or 10**6)
    ]
    if not breaking:
        pytest.skip("every breaking value also breaks the type")
    value, request_ = breaking[0]
    problems = check_value(spec.name, value, request_)
    assert rule.text in [p.rule for p in problems]
    assert all(p.field == spec.name for p in problems)


BASEAMOUNT_CASES = [
    ("1050", []),
    ("1", []),
    ("9" * 13, []),
    ("0", ["must be greater than zero, in base units with no separators"]),
    ("010", ["must not start with 0"]),
    ("10.50", ["Numeric: digits 0-9 only"]),
    ("1,050", ["Numeric: digits 0-9 only"]),
    ("-5", ["Numeric: digits 0-9 only"]),
    ("1 050", ["Numeric: digits 0-9 only"]),
    ("1" * 14, ["must be at most 13 characters (has 14)"]),
]


@pytest.mark.parametrize("value,rules", BASEAMOUNT_CASES)
def test_baseamount_is_positive_base_units_without_separators(value, rules):
    assert [p.rule for p in check_value("baseamount", value)] == rules


@pytest.mark.parametrize(
    "pan,good,bad", [(VISA, "123", "1234"), (AMEX, "1234", "123"), (MASTERCARD, "999", "9999")]
)
def test_securitycode_length_follows_the_card_scheme(pan, good, bad):
    assert check_value("securitycode", good, {"pan": pan}) == []
    problems = check_value("securitycode", bad, {"pan": pan})
    assert [p.rule for p in problems] == [f.SECURITYCODE_SCHEME.text]
    assert problems[0].value == "[redacted]"


def test_securitycode_is_three_or_four_digits():
    assert check_value("securitycode", "12")[0].rule.startswith("must be at least 3")
    assert check_value("securitycode", "12345")[0].rule.startswith("must be at most 4")
    assert check_value("securitycode", "12a")[0].rule == "Numeric: digits 0-9 only"


def test_amex_is_the_only_four_digit_scheme():
    assert {s.code for s in SCHEMES.values() if s.securitycode_length == 4} == {"AMEX"}
    assert scheme_of(AMEX).code == "AMEX" and scheme_of(VISA).code == "VISA"


def test_pan_length_and_luhn():
    assert check_value("pan", VISA) == []
    assert check_value("pan", luhn_complete("41111111111")) == []  # 12 digits
    assert check_value("pan", "4" * 11)[0].rule.startswith("must be at least 12")
    assert check_value("pan", luhn_complete("4" * 19))[0].rule.startswith("must be at most 19")
    assert [p.rule for p in check_value("pan", "4111111111111112")] == ["must pass the Luhn check"]
    assert not luhn_ok("") and not luhn_ok("12a4")


@pytest.mark.parametrize(
    "country,postcode,ok",
    [
        (c, p, ok)
        for r in [f.POSTCODE]
        for p, req, ok in RULE_CASES[r]
        for c in [req.get("billingcountryiso2a")]
    ],
)
def test_postcode_validated_only_for_us_gb_ca(country, postcode, ok):
    request = {"billingcountryiso2a": country} if country else {}
    problems = check_value("billingpostcode", postcode, request)
    assert (problems == []) is ok, problems


def test_us_state_goes_in_billingcounty():
    assert check_value("billingcounty", "TX", {"billingcountryiso2a": "US"}) == []
    assert [p.rule for p in check_value("billingcounty", "Texass", {"billingcountryiso2a": "US"})] == [
        f.US_STATE.text
    ]
    assert check_value("billingcounty", "Texass", {"billingcountryiso2a": "GB"}) == []


def test_email_local_part_at_most_64():
    assert check_value("billingemail", "a" * 64 + "@example.com") == []
    problems = check_value("billingemail", "a" * 65 + "@example.com")
    assert problems[0].field == "billingemail" and "64" in problems[0].rule


def test_telephone_characters():
    assert check_value("billingtelephone", "+44 (0)20 7946-0000") == []
    for bad in ("020.7946.0000", "0207946000x", "020/7946"):
        assert (
            check_value("billingtelephone", bad)[0].rule
            == "Numeric with symbols: digits, spaces, +, -, ( and ) only"
        )


def test_filter_only_dates_use_the_iso_date_rules():
    assert check_value("startdate", "2026-01-31") == []
    assert check_value("enddate", "2026-02-30")[0].rule == "Date YYYY-MM-DD: must be a real calendar date"


def test_sensitive_fields_are_marked():
    assert FIELDS["pan"].sensitive == f.MASK_PAN
    for name in ("securitycode", "md", "pares", "cachetoken"):
        assert FIELDS[name].sensitive == f.REDACT, name
