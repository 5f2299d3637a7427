"""The torn-pages pages' number formats: how a figure reads when the page quotes it.

Pure text of numbers only; the words around them are the pages' own.
"""

from __future__ import annotations

import math

NA = "n/a"


def num(value: float | None, digits: int = 2) -> str:
    return NA if value is None or math.isnan(value) else f"{value:,.{digits}f}"


def pct(share: float | None) -> str:
    """A share or a model's error as a percentage, without its sign: '12 %'."""
    return NA if share is None or math.isnan(share) else f"{abs(share) * 100:.0f} %"


def share_text(share: float) -> str:
    """A share as a percentage, with the decimals that keep 99.96 % from reading as 100 %."""
    if 0.995 <= share < 1:
        return f"{share * 100:.2f} %"
    return f"{share * 100:.0f} %"
