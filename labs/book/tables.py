"""Tables as the book shows them."""

from __future__ import annotations

import pandas as pd


def wrapping_table(table: pd.DataFrame):
    """A table without its index whose long values wrap instead of running off the page
    (how a cell may break is the stylesheet's: book/_static/tables.css)."""
    return table.style.hide(axis="index").set_properties(
        **{"white-space": "normal", "text-align": "left"})
