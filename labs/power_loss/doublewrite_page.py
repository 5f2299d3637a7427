"""What the power-loss page shows of its doublewrite legs: InnoDB pages a power cut tore,
with the doublewrite buffer on and off, beside the model."""

from __future__ import annotations

import pandas as pd

from labs.power_loss.torn_page import leg_outcomes
from labs.records import RecordedRun

SETTING_LABELS = {"innodb_doublewrite=ON": "innodb_doublewrite = ON",
                  "innodb_doublewrite=OFF": "innodb_doublewrite = OFF"}


def has_doublewrite_legs(run: RecordedRun) -> bool:
    """Whether the run had InnoDB's torn-page legs (older runs, and --engines postgres or
    --tear-delay-ms 0, do not)."""
    return bool((run.results["workload"] == "doublewrite").any())


def doublewrite_outcomes(run: RecordedRun) -> pd.DataFrame:
    """One row per setting and power cut: updates acknowledged, pages torn on the disk
    before recovery, pages recovery took from the doublewrite area, whether MariaDB
    recovered by itself, pages still damaged after it, rows whose newest acknowledged
    update was lost, the model."""
    return leg_outcomes(run, "doublewrite", SETTING_LABELS)
