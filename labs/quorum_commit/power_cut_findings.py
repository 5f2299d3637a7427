"""What a run of the quorum-commit lab's power cuts found, as typed values: the page's
power-cut section (book/quorum/quorum-commit.md) formats them and the claim tests assert
them.

Computed from the recorded run alone (the companion run the page ships, `--part
power-cut`, or any run with cuts), with its parameters read back as the lab's dataclass.
"""

from __future__ import annotations

from dataclasses import dataclass

import pandas as pd

from labs.quorum_commit.params import Parameters
from labs.records import RecordedRun

SAFE_SETTINGS = ("on", "remote_write")  # wait for the standbys' own copy
WAL_WRITER_DELAY_MS = 200  # PostgreSQL's default: off's commits reach the disk within this


@dataclass(frozen=True)
class PowerCut:
    """One cut of every copy's power, under one synchronous_commit setting."""

    setting: str
    k: int  # ANY k
    acknowledged: int
    newest_found: int  # acknowledged commits the newest standby held after the cut
    lost: int  # acknowledged commits the newest standby lacked
    primary_found: int  # acknowledged commits the primary's own disk held
    acks_per_s: float
    model_most_lost: float  # the model's count: a ceiling or an estimate (the page says)
    model_window_ms: float
    lost_window_ms: float  # how long before the cut the oldest lost commit was acknowledged
    boot_s: float
    recovery_s: float

    @property
    def primary_lost(self) -> int:
        return self.acknowledged - self.primary_found

    @property
    def lost_span_ms(self) -> float:
        """How long the lost commits took to make, at the client's rate."""
        return 1000 * self.lost / self.acks_per_s

    @property
    def share_of_model(self) -> float | None:
        """What the cut took, as a share of the model's count (None: the model's is 0)."""
        return self.lost / self.model_most_lost if self.model_most_lost > 0 else None


@dataclass(frozen=True)
class StandbyAfterCut:
    """What one standby held after one cut."""

    setting: str
    standby: str  # s1 ... s5
    zone: int
    replay_lsn: str
    acknowledged: int
    held: int  # the acknowledged rows it held


@dataclass(frozen=True)
class PowerCutFindings:
    params: Parameters
    cuts: tuple[PowerCut, ...]
    standbys: tuple[StandbyAfterCut, ...]
    near_rtt_ms: float  # the nearest standby's median round trip
    kth_rtt_ms: float  # the k-th nearest's
    to_standby_ms: float  # the WAL's way to a standby: half the round trip, without netem
    flush_p50_ms: float  # a standby's median write and flush
    wall_time_s: float

    def cut(self, setting: str) -> PowerCut:
        return next(c for c in self.cuts if c.setting == setting)

    def after(self, setting: str) -> list[StandbyAfterCut]:
        return [s for s in self.standbys if s.setting == setting]

    def standbys_agreed(self, setting: str) -> bool:
        """All five standbys held the same rows at the same replay position."""
        held = self.after(setting)
        return len({s.held for s in held}) == 1 and len({s.replay_lsn for s in held}) == 1

    def fewest(self, setting: str) -> StandbyAfterCut | None:
        """The standby that held the fewest rows (None: they agreed)."""
        if self.standbys_agreed(setting):
            return None
        return min(self.after(setting), key=lambda s: s.held)

    @property
    def newest_standby_held_the_most(self) -> bool:
        """The standby the lab chose holds the most; none holds more than the primary."""
        return all(c.newest_found == max(s.held for s in self.after(c.setting))
                   and c.newest_found <= c.primary_found for c in self.cuts)

    def lost_nothing(self, setting: str) -> bool:
        found = self.cut(setting)
        return found.lost == 0 and found.primary_found == found.acknowledged

    @property
    def slower_as_settings_wait_longer(self) -> bool:
        """Each setting that waits longer committed more slowly (in the run's order)."""
        rates = [c.acks_per_s for c in self.cuts]
        return rates == sorted(rates, reverse=True) and len(set(rates)) == len(rates)


def cuts_table(run: RecordedRun) -> pd.DataFrame:
    """One row per cut, in the order of the run: the counts, the rate and the model."""
    results = run.results
    rows = results[results["config"] == "power cut"]
    rows = rows[rows["standby"].isna() | (rows["metric"] != "standby_acknowledged_found")]
    table = rows.pivot_table(index=["cut", "synchronous_commit", "k"], columns="metric",
                             values="value", aggfunc="first").reset_index()
    newest = rows[rows["metric"] == "acknowledged_lost"].set_index("cut")["standby"]
    table["newest standby"] = table["cut"].map(newest)
    return table.sort_values("cut").reset_index(drop=True)


def _cut(row: dict) -> PowerCut:
    return PowerCut(setting=row["synchronous_commit"], k=int(row["k"]),
                    acknowledged=int(row["acknowledged"]),
                    newest_found=int(row["acknowledged_found"]),
                    lost=int(row["acknowledged_lost"]),
                    primary_found=int(row["primary_acknowledged_found"]),
                    acks_per_s=float(row["acks_per_second"]),
                    model_most_lost=float(row["model_max_lost"]),
                    model_window_ms=float(row["model_window_ms"]),
                    lost_window_ms=float(row["lost_window_ms"]), boot_s=float(row["boot_s"]),
                    recovery_s=float(row["recovery_s"]))


def _standbys(run: RecordedRun) -> tuple[StandbyAfterCut, ...]:
    results = run.results
    zones = results[results["workload"] == "ping"].groupby("standby")["zone"].first()
    rows = results[(results["config"] == "power cut")
                   & (results["metric"] == "standby_acknowledged_found")]
    return tuple(StandbyAfterCut(setting=r["synchronous_commit"], standby=r["standby"],
                                 zone=int(zones[r["standby"]]), replay_lsn=r["replay_lsn"],
                                 acknowledged=int(r["acknowledged"]), held=int(r["value"]))
                 for r in rows.to_dict("records"))


def findings(run: RecordedRun) -> PowerCutFindings:
    params = Parameters.of(run)
    cuts = tuple(_cut(row) for row in cuts_table(run).to_dict("records"))
    results = run.results
    ping = results[(results["workload"] == "ping") & (results["metric"] == "rtt_p50_ms")]
    rtts = sorted(ping["value"])
    value = results.set_index(["config", "metric"])["value"]
    return PowerCutFindings(
        params=params, cuts=cuts, standbys=_standbys(run), near_rtt_ms=float(rtts[0]),
        kth_rtt_ms=float(rtts[cuts[0].k - 1]),
        # netem holds only what a standby sends: half the round trip without the added
        # delay (the lab's power_cut.cuts computes it the same way)
        to_standby_ms=float(((ping["value"] - ping["added_rtt_ms"]) / 2).min()),
        flush_p50_ms=float(value["flush", "p50_ms"]),
        wall_time_s=float(value["lab", "wall_time"]))
