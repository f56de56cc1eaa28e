"""Minor-unit exponents of currencies (ISO 4217): how many decimal places a base unit has.

`baseamount` is sent in base units, so 1050 is 10.50 GBP, 1050 JPY, and 1.050 BHD. Currencies not
listed here have two decimal places, like most of the world's currencies.
"""

from __future__ import annotations

DEFAULT_EXPONENT = 2

EXPONENTS: dict[str, int] = {
    # no minor unit
    **dict.fromkeys(
        (
            "BIF",
            "CLP",
            "DJF",
            "GNF",
            "ISK",
            "JPY",
            "KMF",
            "KRW",
            "PYG",
            "RWF",
            "UGX",
            "UYI",
            "VND",
            "VUV",
            "XAF",
            "XOF",
            "XPF",
        ),
        0,
    ),
    # thousandths
    **dict.fromkeys(("BHD", "IQD", "JOD", "KWD", "LYD", "OMR", "TND"), 3),
    # ten-thousandths (units of account)
    **dict.fromkeys(("CLF", "UYW"), 4),
}


def exponent(currency: str | None) -> int:
    """Decimal places of `currency`'s minor unit (2 when the currency is unknown or missing)."""
    if not currency:
        return DEFAULT_EXPONENT
    return EXPONENTS.get(currency.upper(), DEFAULT_EXPONENT)


def to_major(baseamount: int | str, currency: str | None) -> str:
    """`1050`, `GBP` -> `"10.50"`: an amount in base units written in major units, exactly."""
    places = exponent(currency)
    value = int(baseamount)
    sign, value = ("-", -value) if value < 0 else ("", value)
    if places == 0:
        return f"{sign}{value}"
    whole, fraction = divmod(value, 10**places)
    return f"{sign}{whole}.{fraction:0{places}d}"


# Symbols for display; any other currency is written with its code after the amount.
SYMBOLS: dict[str, str] = {
    "GBP": "£",
    "EUR": "€",
    "USD": "$",
    "JPY": "¥",
    "CHF": "CHF ",
    "AUD": "A$",
    "CAD": "C$",
    "NZD": "NZ$",
    "HKD": "HK$",
    "SGD": "S$",
    "INR": "₹",
    "CNY": "CN¥",
}


def format_money(baseamount: int | str, currency: str | None) -> str:
    """`1050`, `GBP` -> `"£10.50"`; `123456789`, `JPY` -> `"¥123,456,789"`; `1050`, `BHD` ->
    `"1.050 BHD"`: major units, thousands separated, for people (analysis keeps base units)."""
    major = to_major(baseamount, currency)
    sign, major = ("-", major[1:]) if major.startswith("-") else ("", major)
    whole, dot, fraction = major.partition(".")
    grouped = f"{int(whole):,}" + dot + fraction
    code = (currency or "").upper()
    if code in SYMBOLS:
        return f"{sign}{SYMBOLS[code]}{grouped}"
    return f"{sign}{grouped} {code}".rstrip()
