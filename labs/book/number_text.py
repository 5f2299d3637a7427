"""How a number reads on a page: one convention for every chapter.

- A missing value (None or NaN) reads "n/a".
- Thousands are grouped with a comma: "12,345".
- Unless a page asks for a number of decimals, a quantity keeps three significant digits
  from 1 up and two decimals below: "1,234", "123", "12.3", "1.23", "0.25", "0".
- A percentage has a space before its sign, "12 %", and is given as a share (0.12).
  Rounding never makes a share that is not 0 read "0 %", nor one that is not 1 read
  "100 %": a decimal is added until it does not (at most three).
- A signed figure (a model's error) carries "+" or "-", and never reads "-0".
- A duration with its unit reads in µs below 1 ms, in ms below 1 s, else in s: "250 µs",
  "2.53 ms", "1.50 s". A size reads in B, KiB, MiB or GiB, whichever keeps it from 1 to
  1,023: "512 B", "4.00 KiB", "317 MiB".

Pure text of numbers: the words around them are the pages' own.
"""

from __future__ import annotations

import math

NA = "n/a"
MOST_DECIMALS = 3


def missing(value: float | None) -> bool:
    """None, NaN, or a value that is no number at all (pandas' NA)."""
    try:
        return value is None or math.isnan(value)
    except TypeError:
        return True


def auto_digits(value: float) -> int:
    """The decimals that keep three significant digits from 1 up (0 from 100, 1 from 10,
    2 below), and two decimals below 1."""
    size = abs(value)
    return 0 if size >= 99.95 or size == 0 else 1 if size >= 9.995 else 2


def number(value: float | None, digits: int | None = None, *, signed: bool = False) -> str:
    """'12,345', '0.25' (digits=2), '+3' (signed), digits left out for auto_digits; never '-0'."""
    if missing(value):
        return NA
    if digits is None:
        digits = auto_digits(value)
    text = f"{value:{'+' if signed else ''},.{digits}f}"
    if text.lstrip("+-").strip("0.,") == "":  # rounds to zero: no sign on it
        return text.lstrip("+-")
    return text


def count(value: float | None) -> str:
    """A count of things (commits, pages, rows): '1,234'."""
    return number(value, 0)


def percent(share: float | None, digits: int = 0, *, signed: bool = False,
            size_only: bool = False) -> str:
    """A share as a percentage: percent(0.123) is '12 %'; signed, '+12 %'; size_only drops
    the sign of a negative share (the page says in which direction)."""
    if missing(share):
        return NA
    if size_only:
        share = abs(share)
    for decimals in range(digits, MOST_DECIMALS + 1):
        value = round(share * 100, decimals)
        if (value != 0 or share == 0) and (value != 100 or share == 1):
            break
    return number(share * 100, decimals, signed=signed) + " %"


def duration_ms(value_ms: float | None) -> str:
    """A duration given in ms, with the unit that suits its size."""
    if missing(value_ms):
        return NA
    if abs(value_ms) < 0.9995:
        return number(value_ms * 1000, 0) + " µs"
    if abs(value_ms) < 999.5:
        return number(value_ms) + " ms"
    return number(value_ms / 1000) + " s"


SIZE_UNITS = ("B", "KiB", "MiB", "GiB", "TiB")


def size(value_bytes: float | None) -> str:
    """A size given in bytes, in the binary unit that keeps it under 1,024 (bytes whole)."""
    if missing(value_bytes):
        return NA
    value, unit = float(value_bytes), 0
    while abs(value) >= 1023.5 and unit < len(SIZE_UNITS) - 1:
        value, unit = value / 1024, unit + 1
    return number(value, 0 if unit == 0 else None) + " " + SIZE_UNITS[unit]


def listed(texts: list[str]) -> str:
    """'A', 'A and B', 'A, B and C'."""
    if len(texts) <= 1:
        return "".join(texts)
    return ", ".join(texts[:-1]) + " and " + texts[-1]
