"""What a commit-settings run found, as typed values: the page
(book/power-loss/commit-settings.md) formats them and the claim tests assert them.

Computed from the recorded run alone (its results and the raw file of each cut), with its
parameters read back as the lab's dataclass.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass

import pandas as pd

from labs.commit_settings import model
from labs.commit_settings.params import Parameters
from labs.records import RecordedRun


@dataclass(frozen=True)
class Tally:
    """One setting under one fault, summed over the run's cuts."""

    setting: str
    fault: str
    cuts: int
    acked: int
    lost: int
    model_most_lost: int
    cuts_started: int  # cuts after which the server started again by itself
    cuts_losing: int  # cuts that lost at least one acknowledged commit
    oldest_lost_s: float  # the oldest commit lost in any cut, its age at the cut (NaN: none)

    @property
    def window_s(self) -> float:
        return model.SETTINGS[self.setting].window_s(self.fault)

    @property
    def within_model(self) -> bool:
        return self.lost <= self.model_most_lost

    @property
    def loses_all(self) -> bool:
        return self.acked > 0 and self.lost == self.acked


@dataclass(frozen=True)
class Findings:
    params: Parameters
    tallies: tuple[Tally, ...]
    commits_per_s: dict[str, float]  # each setting's acknowledged commits a second
    writing_s: tuple[float, ...]  # each cut's commits, from the first to the freeze (s)
    innodb_log_buffered: bool | None  # InnoDB wrote its log through the page cache (at 2)
    # In every cut, the power cut kept exactly the rows the kernel crash kept.
    power_cut_kept_what_the_kernel_crash_kept: bool
    # In every count, the rows left were 1 to some n: each fault took the newest only.
    every_fault_took_the_newest_only: bool

    @property
    def recoveries(self) -> int:
        """Times a server started again after a fault, over every cut and fault."""
        return sum(t.cuts_started for t in self.tallies)

    @property
    def settings_and_faults_losing_nothing(self) -> set[tuple[str, str]]:
        return {(t.setting, t.fault) for t in self.tallies if t.lost == 0}

    def tally(self, setting: str, fault: str) -> Tally:
        return next(t for t in self.tallies if t.setting == setting and t.fault == fault)

    @property
    def safe_settings_lose_nothing(self) -> bool:
        """Backs "the settings the book calls safe lost nothing to any fault"."""
        return all(t.lost == 0 for t in self.tallies if model.SETTINGS[t.setting].safe)

    @property
    def every_loss_within_the_model(self) -> bool:
        return all(t.within_model for t in self.tallies)

    @property
    def every_server_started_again(self) -> bool:
        """Backs "every server started again by itself after every fault"."""
        return all(t.cuts_started == t.cuts for t in self.tallies)

    def lost_nothing(self, setting: str, fault: str) -> bool:
        return self.tally(setting, fault).lost == 0

    def lost_in_every_cut(self, setting: str, fault: str) -> bool:
        found = self.tally(setting, fault)
        return found.cuts_losing == found.cuts

    def oldest_lost_within_window(self, setting: str) -> bool:
        """Every lost commit of this setting was younger than its fault's window."""
        return all(math.isnan(t.oldest_lost_s) or t.oldest_lost_s < t.window_s
                   for t in self.tallies if t.setting == setting)


def cut_files(run: RecordedRun) -> list[dict]:
    """The raw file of each cut: the trial and the three counts, as the lab wrote it."""
    return [json.loads(path.read_text())
            for path in sorted((run.raw_dir / "cuts").glob("*.json"))]


def model_most(cuts: list[dict]) -> dict[tuple[str, str], int]:
    """The model's most lost per setting and fault, summed over the cuts: computed here from
    each cut's acknowledgement ages, so every run reads the same model."""
    most: dict[tuple[str, str], int] = {}
    for cut in cuts:
        setting = model.SETTINGS[cut["setting"]]
        for fault in model.FAULTS:
            key = (setting.name, fault)
            most[key] = most.get(key, 0) + model.most_lost(cut["trial"]["ack_age_s"],
                                                           setting.window_s(fault))
    return most


def tally_table(run: RecordedRun, cuts: list[dict] | None = None) -> pd.DataFrame:
    """One row per setting and fault: cuts, acknowledged, lost, the model's most, cuts
    started, cuts losing, the oldest lost commit's age. `cuts`: the run's cut files, when
    the caller has read them already."""
    results = run.results
    most = model_most(cut_files(run) if cuts is None else cuts)
    acked = results[results["metric"] == "acked"].groupby("setting")["value"].agg(
        ["sum", "count"])
    rows = []
    for (setting, fault), group in results.dropna(subset=["fault"]).groupby(
            ["setting", "fault"]):
        by_metric = group.groupby("metric")["value"]
        lost = group[group["metric"] == "lost"]["value"]
        oldest = group[group["metric"] == "oldest_lost_age_s"]["value"]
        rows.append({"setting": setting, "fault": fault, "cuts": int(acked.loc[setting, "count"]),
                     "acked": int(acked.loc[setting, "sum"]), "lost": int(lost.sum()),
                     "model_most_lost": most[(setting, fault)],
                     "cuts_started": int(by_metric.sum()["started"]),
                     "cuts_losing": int((lost > 0).sum()),
                     "oldest_lost_s": float(oldest.max()) if len(oldest) else math.nan})
    table = pd.DataFrame(rows)
    order = {name: i for i, name in enumerate(model.SETTINGS)}
    faults = {name: i for i, name in enumerate(model.FAULTS)}
    return table.sort_values(["fault", "setting"], key=lambda column: column.map(
        order if column.name == "setting" else faults)).reset_index(drop=True)


def lost_ages(run: RecordedRun) -> pd.DataFrame:
    """Per cut, setting and fault that lost commits: the oldest lost commit's age at the cut,
    beside the model's window."""
    results = run.results
    oldest = results[results["metric"] == "oldest_lost_age_s"]
    return pd.DataFrame({
        "setting": oldest["setting"].to_numpy(), "fault": oldest["fault"].to_numpy(),
        "cut": oldest["cut"].astype(int).to_numpy(), "oldest_lost_s": oldest["value"].to_numpy(),
        "window_s": [model.SETTINGS[s].window_s(f)
                     for s, f in zip(oldest["setting"], oldest["fault"], strict=True)]})


def _commit_rates(cuts: list[dict]) -> dict[str, float]:
    """Each setting's acknowledged commits a second, over all its cuts' writing."""
    rates: dict[str, list[float]] = {}
    for cut in cuts:
        trial = cut["trial"]
        span_s = max(trial["ack_age_s"]) - min(trial["ack_age_s"])
        if span_s > 0:
            rates.setdefault(cut["setting"], []).append((trial["acked"] - 1) / span_s)
    return {setting: sum(values) / len(values) for setting, values in rates.items()}


def _log_buffered(cuts: list[dict]) -> bool | None:
    """Whether InnoDB wrote its log through the page cache at setting 2 (None: not run)."""
    values = {cut["in_force"].get("innodb_log_file_buffering") for cut in cuts
              if cut["setting"] == "innodb-2"}
    return None if not values else values == {"1"}


def findings(run: RecordedRun) -> Findings:
    cuts = cut_files(run)
    table = tally_table(run, cuts)
    same = all(cut["power cut"]["rows"] == cut["kernel crash"]["rows"] for cut in cuts)
    newest_only = all(cut[fault]["rows"] == list(range(1, len(cut[fault]["rows"]) + 1))
                      for cut in cuts for fault in model.FAULTS)
    return Findings(params=Parameters.of(run),
                    tallies=tuple(Tally(**row) for row in table.to_dict("records")),
                    commits_per_s=_commit_rates(cuts), innodb_log_buffered=_log_buffered(cuts),
                    writing_s=tuple(cut["trial"]["writing_s"] for cut in cuts),
                    power_cut_kept_what_the_kernel_crash_kept=same,
                    every_fault_took_the_newest_only=newest_only)
