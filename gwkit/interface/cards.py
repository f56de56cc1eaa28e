"""Card numbers: the Luhn check and the payment type (scheme) a number belongs to.

The gateway answers a card's scheme as `paymenttypedescription`. The prefixes below follow the
schemes' published ranges; where a scheme is a sub-brand of Visa or Mastercard (Visa Debit,
Visa Electron, Visa Purchasing, V PAY, Debit Mastercard) only particular BINs belong to it, and
gwkit lists representative ones. The longest matching prefix wins.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date
from functools import lru_cache


@dataclass(frozen=True)
class Scheme:
    code: str  # the gateway's paymenttypedescription
    name: str
    securitycode_length: int
    threeds_supported: bool = True


SCHEMES: dict[str, Scheme] = {
    s.code: s
    for s in [
        Scheme("AMEX", "American Express", 4),
        Scheme("DINERS", "Diners Club International", 3, threeds_supported=False),
        Scheme("DISCOVER", "Discover", 3, threeds_supported=False),
        Scheme("JCB", "JCB", 3),
        Scheme("MAESTRO", "Maestro", 3),
        Scheme("MASTERCARD", "Mastercard", 3),
        Scheme("MASTERCARDDEBIT", "Debit Mastercard", 3),
        Scheme("VPAY", "V PAY", 3),
        Scheme("VISA", "Visa", 3),
        Scheme("DELTA", "Visa Debit", 3),
        Scheme("ELECTRON", "Visa Electron", 3),
        Scheme("PURCHASING", "Visa Purchasing", 3),
    ]
}

# (prefix, scheme code); ranges are expanded to their prefixes once, at import.
_PREFIX_RANGES: list[tuple[int, int, str]] = [
    (34, 34, "AMEX"),
    (37, 37, "AMEX"),
    (300, 305, "DINERS"),
    (36, 36, "DINERS"),
    (38, 39, "DINERS"),
    (6011, 6011, "DISCOVER"),
    (644, 649, "DISCOVER"),
    (65, 65, "DISCOVER"),
    (3528, 3589, "JCB"),
    (50, 50, "MAESTRO"),
    (56, 58, "MAESTRO"),
    (6304, 6304, "MAESTRO"),
    (6759, 6759, "MAESTRO"),
    (6761, 6763, "MAESTRO"),
    (6799, 6799, "MAESTRO"),
    (51, 55, "MASTERCARD"),
    (2221, 2720, "MASTERCARD"),
    (516001, 516099, "MASTERCARDDEBIT"),
    (517000, 517049, "MASTERCARDDEBIT"),
    (4, 4, "VISA"),
    (4462, 4462, "DELTA"),
    (4543, 4543, "DELTA"),
    (400626, 400626, "DELTA"),
    (490049, 490049, "DELTA"),  # the EMV 3-D Secure test cards: DELTA, as the makers' help centre shows
    (4026, 4026, "ELECTRON"),
    (417500, 417500, "ELECTRON"),
    (4508, 4508, "ELECTRON"),
    (4844, 4844, "ELECTRON"),
    (4913, 4913, "ELECTRON"),
    (4917, 4917, "ELECTRON"),
    (4484, 4484, "PURCHASING"),
    (4715, 4715, "PURCHASING"),
    (4829, 4829, "VPAY"),
    (4035, 4035, "VPAY"),
]


def _expand(ranges: list[tuple[int, int, str]]) -> dict[str, str]:
    table: dict[str, str] = {}
    for low, high, code in ranges:
        for prefix in range(low, high + 1):
            table[str(prefix)] = code
    return table


_PREFIXES = _expand(_PREFIX_RANGES)
_LONGEST_PREFIX = max(len(p) for p in _PREFIXES)


# ASCII digits to their values as bytes, plain and doubled (9 taken off past 9), so that `sum` of
# the translated bytes adds them up in C: an int() per digit cost more than the rest of a check.
_VALUE = bytes.maketrans(b"0123456789", bytes([0, 1, 2, 3, 4, 5, 6, 7, 8, 9]))
_DOUBLED = bytes.maketrans(b"0123456789", bytes([0, 2, 4, 6, 8, 1, 3, 5, 7, 9]))


def luhn_ok(number: str) -> bool:
    """True when `number` is all digits and passes the Luhn (mod 10) check."""
    if not number.isdigit() or not number.isascii():
        return False
    backwards = number[::-1].encode()
    return (sum(backwards[0::2].translate(_VALUE)) + sum(backwards[1::2].translate(_DOUBLED))) % 10 == 0


def luhn_complete(partial: str) -> str:
    """Append the check digit that makes `partial` pass the Luhn check."""
    for digit in "0123456789":
        if luhn_ok(partial + digit):
            return partial + digit
    raise ValueError("digits only")  # pragma: no cover - unreachable for digit strings


def scheme_of(pan: str) -> Scheme | None:
    """The scheme whose prefix is the longest match for `pan`, or None when none matches."""
    return _scheme_of_leading_digits(pan[:_LONGEST_PREFIX])


# By the leading digits alone (at most six: the issuer's BIN, shown in every masked PAN, so no card
# data is kept): a client checks the same few cards' schemes over and over.
@lru_cache(maxsize=4096)
def _scheme_of_leading_digits(digits: str) -> Scheme | None:
    for length in range(len(digits), 0, -1):
        code = _PREFIXES.get(digits[:length])
        if code:
            return SCHEMES[code]
    return None


def payment_type_of(pan: str) -> str | None:
    scheme = scheme_of(pan)
    return scheme.code if scheme else None


def expired(expirydate: str, today: date) -> bool:
    """Has a card of `expirydate` (MM/YYYY, already validated) expired by `today`? A card is good
    through the last day of its expiry month: the gateway's rule, and the request form's."""
    month, year = int(expirydate[:2]), int(expirydate[3:])
    return (year, month) < (today.year, today.month)
