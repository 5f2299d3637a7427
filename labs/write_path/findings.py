"""What a write-path run found, as typed values: the page (book/power-loss/write-path.md)
formats them and the claim tests assert them.

Computed from the recorded run alone (its results and the raw file of each cut), with its
parameters read back as the lab's dataclass.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

import pandas as pd

from labs.records import RecordedRun
from labs.write_path import model
from labs.write_path.params import Parameters

SAFE_WAYS = ("write+fsync", "direct+dsync")  # the ways the book calls safe


@dataclass(frozen=True)
class Tally:
    """One way of writing under one fault, summed over the run's cuts."""

    way: str
    fault: str
    cuts: int
    acked: int
    lost: int
    model_most_lost: int
    cuts_with_file: int  # cuts after which the records' file was there at all

    @property
    def lost_share(self) -> float:
        return self.lost / self.acked if self.acked else float("nan")

    @property
    def within_model(self) -> bool:
        return self.lost <= self.model_most_lost


@dataclass(frozen=True)
class Findings:
    params: Parameters
    tallies: tuple[Tally, ...]
    direct_newest_lost_only: bool  # every O_DIRECT cut lost a run of the newest records only
    direct_oldest_lost_age_s: float  # the oldest O_DIRECT record a cut took, at the cut
    direct_window_s: float  # the model's window for O_DIRECT under a power cut
    direct_cuts_losing_some_not_all: int  # O_DIRECT cuts that kept some records, lost others
    direct_first_write_s: float  # when the writer's first record came, after the trial began
    # Per O_DIRECT cut, the commit timer's model of the boundary between kept and lost
    # records (its age at the cut) less the measured one: positive, the model's is older.
    direct_boundary_errors_s: tuple[float, ...]

    @property
    def direct_commit_model_lost_s(self) -> float:
        """The commit timer's model of how long before each cut the last commit came."""
        return model.direct_lost_s(self.params.write_s, self.direct_first_write_s)

    def tally(self, way: str, fault: str) -> Tally:
        return next(t for t in self.tallies if t.way == way and t.fault == fault)

    @property
    def safe_ways_lose_nothing(self) -> bool:
        """Backs "write() + fsync() and O_DIRECT | O_DSYNC lose nothing to any fault"."""
        return all(t.lost == 0 for t in self.tallies if t.way in SAFE_WAYS)

    @property
    def crash_takes_only_the_own_buffer(self) -> bool:
        """Backs "a process crash takes only what never left the program"."""
        crash = [t for t in self.tallies if t.fault == "process crash"]
        return all((t.lost == t.acked) if t.way == "app-buffer" else (t.lost == 0)
                   for t in crash)

    @property
    def kernel_crash_takes_only_memory(self) -> bool:
        """Backs "a kernel crash takes what was only in memory, and nothing the disk had"."""
        in_memory = ("app-buffer", "write")
        return all((t.lost == t.acked) if t.way in in_memory else (t.lost == 0)
                   for t in self.tallies if t.fault == "kernel crash")

    @property
    def every_loss_within_the_model(self) -> bool:
        return all(t.within_model for t in self.tallies)

    def loses_everything(self, way: str, fault: str) -> bool:
        found = self.tally(way, fault)
        return found.acked > 0 and found.lost == found.acked


def cut_files(run: RecordedRun) -> list[dict]:
    """The raw file of each cut: the trial, both counts and the replay, as the lab wrote it."""
    return [json.loads(path.read_text())
            for path in sorted((run.raw_dir / "cuts").glob("*.json"))]


def tally_table(run: RecordedRun) -> pd.DataFrame:
    """One row per way and fault: cuts, acknowledged, lost, the model's most, files found."""
    results = run.results
    acked = results[results["metric"] == "acked"].groupby("way")["value"].agg(["sum", "count"])
    rows = []
    for (way, fault), group in results.dropna(subset=["fault"]).groupby(["way", "fault"]):
        value = group.groupby("metric")["value"].sum()
        rows.append({"way": way, "fault": fault, "cuts": int(acked.loc[way, "count"]),
                     "acked": int(acked.loc[way, "sum"]), "lost": int(value["lost"]),
                     "model_most_lost": int(value["model_most_lost"]),
                     "cuts_with_file": int(value["files_found"])})
    order = {name: i for i, name in enumerate(model.WAYS)}
    table = pd.DataFrame(rows)
    return table.sort_values(["fault", "way"], key=lambda c: c.map(
        order if c.name == "way" else {f: i for i, f in enumerate(model.FAULTS)})
    ).reset_index(drop=True)


def record_ages(run: RecordedRun, way: str) -> pd.DataFrame:
    """Every acknowledged record of one way: its cut, its age at the cut, kept or lost by the
    power cut."""
    rows = []
    for cut in cut_files(run):
        if cut["way"] != way:
            continue
        bits = cut["power cut"]["kept_bits"]
        for seq, (age, bit) in enumerate(zip(cut["trial"]["ack_age_s"], bits, strict=True)):
            rows.append({"cut": cut["cut"], "seq": seq, "age_s": age,
                         "kept": bit == "1"})
    return pd.DataFrame(rows, columns=["cut", "seq", "age_s", "kept"])


def cut_edges(ages: pd.DataFrame) -> pd.DataFrame:
    """Per cut: records kept and lost, the youngest kept and the oldest lost at the cut, and
    the oldest acknowledgement (the writer's first record); NaN where a cut kept or lost none."""
    by_cut = ages.groupby("cut")
    kept_ages = ages["age_s"].where(ages["kept"])
    lost_ages = ages["age_s"].where(~ages["kept"])
    return pd.DataFrame({
        "kept": by_cut["kept"].sum(),
        "lost": by_cut["kept"].count() - by_cut["kept"].sum(),
        "youngest_kept_s": kept_ages.groupby(ages["cut"]).min(),
        "oldest_lost_s": lost_ages.groupby(ages["cut"]).max(),
        "oldest_ack_s": by_cut["age_s"].max(),
    })


def _boundary_errors(mixed: pd.DataFrame, write_s: float) -> tuple[float, ...]:
    """Per cut that kept some records and lost others: the commit timer's boundary (from
    that cut's own first write) less the measured one (midway between the youngest kept
    record and the oldest lost one)."""
    measured = (mixed["youngest_kept_s"] + mixed["oldest_lost_s"]) / 2
    modelled = [model.direct_lost_s(write_s, write_s - oldest) for oldest in mixed["oldest_ack_s"]]
    return tuple(float(m - e) for m, e in zip(modelled, measured, strict=True))


def findings(run: RecordedRun) -> Findings:
    table = tally_table(run)
    tallies = tuple(Tally(**row) for row in table.to_dict("records"))
    params = Parameters.of(run)
    edges = cut_edges(record_ages(run, "direct"))
    mixed = edges[(edges["kept"] > 0) & (edges["lost"] > 0)]
    # The oldest acknowledgement's age at the cut is the writing time less the writer's start.
    first_write = params.write_s - edges["oldest_ack_s"].median()
    return Findings(params=params, tallies=tallies,
                    # In each cut, every lost record is newer than every kept one.
                    direct_newest_lost_only=bool(
                        (mixed["oldest_lost_s"] < mixed["youngest_kept_s"]).all()),
                    direct_oldest_lost_age_s=float(edges["oldest_lost_s"].max()),
                    direct_window_s=model.WAYS["direct"].cut_window_s,
                    direct_cuts_losing_some_not_all=len(mixed),
                    direct_first_write_s=float(first_write),
                    direct_boundary_errors_s=_boundary_errors(mixed, params.write_s))
