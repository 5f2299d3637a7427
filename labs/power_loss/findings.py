"""What a power-loss run found about its commit servers, as typed values: the page
(book/power-loss/lab.md, its sections on what a cut takes with each setting) formats them
and the claim tests assert them. The torn-page and doublewrite sections still compute their
figures in torn_page.py and doublewrite_page.py.

Computed from the recorded run alone (its results and each server's acknowledgement file),
with its parameters read back as the lab's dataclass.
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass

import pandas as pd

from labs.power_loss import model, torn_page
from labs.power_loss.params import Parameters
from labs.records import RecordedRun

ENGINES = ("postgres", "mariadb")
MANUAL_WAKEUPS = 3  # PostgreSQL's manual: at most three times wal_writer_delay is lost
WAL_WRITER_DELAY_MS = 200  # PostgreSQL's default wal_writer_delay


@dataclass(frozen=True)
class Cut:
    """One commit server (an engine under one setting) in one power cut."""

    engine: str
    setting: str  # "synchronous_commit=off", ...
    safety: str  # "safe" or "unsafe", as the book calls the setting
    cut: int
    acknowledged: int
    acknowledged_found: int
    lost: int  # acknowledged commits the server no longer had after recovery
    unacknowledged_found: int  # rows found that the client never saw acknowledged
    model_most_lost: float  # the model's estimate: the client's rate times the window
    lost_ms: float  # how long before the cut the oldest lost commit was acknowledged (0: none)
    bound_ms: float  # the model's window for the setting
    acks_per_s: float  # the client's commit rate over its last ten seconds
    boot_s: float
    recovery_s: float
    cut_after_s: float  # when the cut came, seconds after the client started

    @property
    def over_estimate(self) -> float:
        return self.lost - self.model_most_lost


@dataclass(frozen=True)
class Findings:
    params: Parameters
    cuts: tuple[Cut, ...]
    # Commits the client of the cut furthest over its estimate had acknowledged within its
    # setting's window before the cut, counted from its acknowledgement file.
    over_cut_acked_in_window: int

    def of(self, safety: str, engine: str | None = None) -> list[Cut]:
        return [c for c in self.cuts if c.safety == safety and engine in (None, c.engine)]

    def lost(self, safety: str) -> int:
        return sum(c.lost for c in self.of(safety))

    def acknowledged(self, safety: str) -> int:
        return sum(c.acknowledged for c in self.of(safety))

    @property
    def cut_count(self) -> int:
        return max(c.cut for c in self.cuts)

    @property
    def safe_settings_lost_nothing(self) -> bool:
        """Backs "with the safe settings, 0 acknowledged commits were lost"."""
        return all(c.acknowledged > 0 and c.lost == 0 for c in self.of("safe"))

    @property
    def unsafe_losses_within_their_window(self) -> bool:
        """Backs "every lost commit had been acknowledged within its setting's window"."""
        return all(c.lost_ms <= c.bound_ms for c in self.of("unsafe"))

    @property
    def cuts_over_their_estimate(self) -> list[Cut]:
        return [c for c in self.of("unsafe") if c.lost > c.model_most_lost]

    @property
    def furthest_over_estimate(self) -> Cut:
        """The unsafe cut that lost the most commits beyond its estimate (the latest of a
        tie)."""
        return max(self.of("unsafe"), key=lambda c: (c.over_estimate, c.cut))

    def lossy(self, engine: str) -> list[Cut]:
        """The engine's unsafe cuts that took acknowledged commits."""
        return [c for c in self.of("unsafe", engine) if c.lost > 0]

    def rate(self, engine: str, safety: str) -> float:
        """The median commit rate of the engine's server under that setting, over the cuts."""
        return statistics.median(c.acks_per_s for c in self.of(safety, engine))

    def speedup(self, engine: str) -> float:
        """How many times as fast the unsafe setting committed as the safe one."""
        return self.rate(engine, "unsafe") / self.rate(engine, "safe")

    @property
    def longest_recovery_s(self) -> float:
        return max(c.recovery_s for c in self.cuts)

    @property
    def boot_s(self) -> tuple[float, ...]:
        return tuple(c.boot_s for c in self.cuts)

    def unacknowledged_found(self, safety: str | None = None) -> int:
        return sum(c.unacknowledged_found for c in self.cuts if safety in (None, c.safety))

    @property
    def postgres_oldest_loss(self) -> Cut:
        """The unsafe PostgreSQL cut whose oldest lost commit was the oldest (an exercise)."""
        return max(self.of("unsafe", "postgres"), key=lambda c: (c.lost_ms, c.cut))

    @property
    def postgres_oldest_loss_wakeups(self) -> float:
        """That loss in wal_writer_delay wake-ups."""
        return self.postgres_oldest_loss.lost_ms / WAL_WRITER_DELAY_MS

    @property
    def postgres_oldest_loss_share_of_manual(self) -> float:
        """That loss as a share of the manual's bound (three wake-ups)."""
        return self.postgres_oldest_loss.lost_ms / (MANUAL_WAKEUPS * WAL_WRITER_DELAY_MS)


def outcomes(run: RecordedRun) -> pd.DataFrame:
    """One row per database and power cut: acknowledged, lost, the model's bounds."""
    rows = run.results[run.results["workload"] == "power-cut"]
    table = rows.pivot_table(index=["engine", "setting", "safety", "cut"], columns="metric",
                             values="value").reset_index()
    table.columns.name = None
    # The model in time: how long before the cut a lost commit can have been acknowledged.
    table["bound_ms"] = [1000 * model.window_s(engine, *setting.split("=", 1))
                         for engine, setting in zip(table["engine"], table["setting"],
                                                    strict=True)]
    # Measured from the acknowledgements' own times (see labs.infra.acks.lost_window_ms).
    table["lost_ms"] = table["lost_window_ms"]
    order = {engine: index for index, engine in enumerate(ENGINES)}
    return table.sort_values(["engine", "safety", "cut"],
                             key=lambda c: c.map(order) if c.name == "engine" else c) \
        .reset_index(drop=True)


def _cut(row) -> Cut:
    return Cut(engine=row.engine, setting=row.setting, safety=row.safety, cut=int(row.cut),
               acknowledged=int(row.acknowledged), acknowledged_found=int(row.acknowledged_found),
               lost=int(row.acknowledged_lost), unacknowledged_found=int(row.unacknowledged_found),
               model_most_lost=float(row.model_max_lost), lost_ms=float(row.lost_ms),
               bound_ms=float(row.bound_ms), acks_per_s=float(row.acks_per_second),
               boot_s=float(row.boot_s), recovery_s=float(row.recovery_s),
               cut_after_s=float(row.cut_after_s))


def acked_within(run: RecordedRun, cut: Cut, window_ms: float) -> int:
    """Commits the client of `cut` had acknowledged within `window_ms` before its cut,
    counted from its acknowledgement file."""
    value = cut.setting.split("=", 1)[1]
    path = torn_page.leg_file(run, f"{cut.engine}-{value}", cut.cut, "-acks.txt")
    return torn_page.acks_in_window(path, cut.cut_after_s, window_ms / 1000)


def findings(run: RecordedRun) -> Findings:
    cuts = tuple(_cut(row) for row in outcomes(run).itertuples())
    unsafe = [c for c in cuts if c.safety == "unsafe"]
    furthest = max(unsafe, key=lambda c: (c.over_estimate, c.cut))
    return Findings(params=Parameters.from_record(run.meta["parameters"]), cuts=cuts,
                    over_cut_acked_in_window=acked_within(run, furthest, furthest.bound_ms))
