"""The source article's published figures (data/reference/drbd-article.csv), read as numbers.

Both sides read them: the explanation page quotes them, and the lab sets the round trips of
its two "zones" from them on the run's own time scale (labs/drbd/databases.py). Nothing here
touches a host.
"""

from __future__ import annotations

from functools import cache

import pandas as pd

from labs import PROJECT_ROOT

REFERENCE = PROJECT_ROOT / "data" / "reference" / "drbd-article.csv"
ONE_ZONE = "DRBD protocol C within one AZ"
TWO_ZONES = "DRBD protocol C across AZs"
SAMPLE = "sample output (the article does not say which of its three databases)"


@cache
def reference() -> dict[tuple[str, str], str]:
    """The published figures, keyed by (figure, case), as printed."""
    table = pd.read_csv(REFERENCE, dtype=str)
    return {(row.figure, row.case): row.value for row in table.itertuples()}


def published(figure: str, case: str) -> float:
    return float(reference()[(figure, case)])


def article_ratios() -> dict[str, float]:
    """The article's pgbench TPS on DRBD as a fraction of the local disk's."""
    return {"one zone": published("pgbench_tps_vs_local", ONE_ZONE) / 100,
            "two zones": published("pgbench_tps_vs_local", TWO_ZONES) / 100}


def sample_ms_per_transaction() -> float:
    """The sample output's time per transaction if its transactions ran one at a time."""
    return 1000 / published("pgbench_sample_tps", SAMPLE)
