"""What a quorum Monte Carlo run found, as typed values: the page formats them and the
claim tests assert them (book/quorum/lab.md, "Does the formula match brute force?").

Computed from the recorded run alone, with its parameters read back as the lab's dataclass.
"""

from __future__ import annotations

from dataclasses import dataclass

import pandas as pd

from labs.quorum.params import Parameters
from labs.records import RecordedRun


@dataclass(frozen=True)
class Estimate:
    """One operation's chance of losing its quorum: simulated, its 95 % interval, exact."""

    estimate: float
    low: float
    high: float
    exact: float

    @property
    def exact_inside_interval(self) -> bool:
        return self.low <= self.exact <= self.high


@dataclass(frozen=True)
class Findings:
    params: Parameters
    write: Estimate
    read: Estimate
    trials_per_s: float  # how fast the simulation ran on the recording machine

    @property
    def every_exact_inside_its_interval(self) -> bool:
        """Backs the verdict: brute force agrees with the formulas."""
        return self.write.exact_inside_interval and self.read.exact_inside_interval


def estimate_table(run: RecordedRun) -> pd.DataFrame:
    """One row per operation: estimate, 95 % interval, exact value."""
    return run.results[run.results["metric"] != "throughput"].pivot_table(
        index="op", columns="metric", values="value")


def findings(run: RecordedRun) -> Findings:
    wide = estimate_table(run)

    def estimate(op: str) -> Estimate:
        row = wide.loc[op]
        return Estimate(float(row["estimate"]), float(row["ci95_low"]),
                        float(row["ci95_high"]), float(row["exact"]))

    throughput = run.results.query("metric == 'throughput'")["value"].iloc[0]
    return Findings(params=Parameters.of(run),
                    write=estimate("write"), read=estimate("read"),
                    trials_per_s=float(throughput))
