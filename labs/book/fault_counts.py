"""What the two labs that count acknowledged writes under three faults (write-path,
commit-settings) show alike: the table of losses beside the model, and the headline a
reader's run is set beside. Each lab's tally table has one row per case and fault, with
the columns cuts, acked, lost and model_most_lost."""

from __future__ import annotations

import math
from collections.abc import Callable

import pandas as pd

from labs.book import number_text as nt
from labs.book.compare import headline_table


def window_text(window_s: float) -> str:
    """A model's window as the tables say it: whole seconds, tenths, or "no end"."""
    if math.isinf(window_s):
        return "no end"
    return nt.number(window_s, 0 if window_s == round(window_s) else 1) + " s"


def loss_table(tally: pd.DataFrame, case: str, title: str, label: Callable[[str], str],
               window_s: Callable[[str, str], float]) -> pd.DataFrame:
    """Case x fault -> cuts, acknowledged, lost, the model's window and most lost."""
    return pd.DataFrame({
        title: tally[case].map(label),
        "fault": tally["fault"],
        "cuts": tally["cuts"].map(nt.count),
        "acknowledged": tally["acked"].map(nt.count),
        "lost": tally["lost"].map(nt.count),
        "model's window": [window_text(window_s(c, f))
                           for c, f in zip(tally[case], tally["fault"], strict=True)],
        "model's most lost": tally["model_most_lost"].map(nt.count),
    })


def loss_headline(tally: pd.DataFrame, case: str, label: Callable[[str], str]) -> pd.DataFrame:
    """A reader's run beside the book's: the share each fault took from each case, beside
    the model's most share."""
    return headline_table([
        {"measure": f"lost to a {row['fault']}", "config": label(row[case]),
         "value": row["lost"] / row["acked"], "unit": "ratio", "better": "lower",
         "model": row["model_most_lost"] / row["acked"]}
        for row in tally.to_dict("records")])
