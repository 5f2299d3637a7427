"""What a consistency run found: the availability grid and the stale reads as tables, and
the counts the page's text quotes, as typed values (the page formats them, the claim tests
in tests/test_consistency_recorded.py assert them).

Pure page code: it reads a recorded run and never touches a container.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

import pandas as pd

from labs.consistency import model
from labs.consistency.params import CASES, NODES, OLD, Parameters
from labs.records import RecordedRun

MISSED = {case: down for case, (_, _, down) in CASES.items()}  # nodes down at each overwrite
LEVELS = list(model.LEVELS)
CASE_TEXT = {"A": "row A: written at ONE, node 3 down",
             "B": "row B: written at QUORUM, node 3 down",
             "C": "row C: written at ONE, nodes 2 and 3 down"}


def availability(run: RecordedRun) -> pd.DataFrame:
    """One row per (nodes stopped, operation, level): what happened, and the model's answer."""
    results = run.results
    measured = results[results["metric"] == "succeeded"]
    predicted = results[results["metric"] == "model_succeeds"]
    keys = ["stopped", "workload", "level"]
    answered = results[results["metric"] == "answer_time"][keys + ["value"]].rename(
        columns={"value": "answer_ms"})
    table = measured[keys + ["nodes_up", "outcome", "value"]].merge(
        predicted[keys + ["value"]], on=keys, suffixes=("", "_model")).merge(answered, on=keys)
    table = table.rename(columns={"workload": "operation", "value": "succeeded",
                                  "value_model": "model_succeeds"})
    table["stopped"] = table["stopped"].astype(int)
    table["nodes_up"] = table["nodes_up"].astype(int)
    table["succeeded"] = table["succeeded"].astype(bool)
    table["model_succeeds"] = table["model_succeeds"].astype(bool)
    table["agrees"] = table["succeeded"] == table["model_succeeds"]
    table["needs"] = table["level"].map(lambda level: model.replicas_needed(level, NODES))
    return table.sort_values(["stopped", "operation", "level"],
                             key=lambda c: c.map(LEVELS.index) if c.name == "level" else c
                             ).reset_index(drop=True)


def stale(run: RecordedRun) -> pd.DataFrame:
    """One row per (row, read level, coordinator): reads made, stale ones, the model."""
    results = run.results
    rows = results[results["config"].str.startswith("case ")]
    table = rows.pivot_table(index=["write_level", "read_level", "replicas_missed", "row",
                                    "coordinator"],
                             columns="metric", values="value").reset_index()
    table["case"] = table["row"].astype(int).map({key: case for case, (key, _, _)
                                                  in CASES.items()})
    table["coordinator"] = table["coordinator"].astype(int)
    table["stale_pct"] = 100 * table["stale_reads"] / table["reads"]
    table["model_uniform_pct"] = 100 * table["model_stale_probability_uniform"]
    table["case_text"] = table["case"].map(CASE_TEXT)
    for column in ("reads", "stale_reads", "fresh_reads", "reads_only_by_missed_replicas",
                   "reads_by_the_coordinator_alone", "model_overlap_guaranteed",
                   "model_fresh_guaranteed", "replicas_missed"):
        table[column] = table[column].astype(int)
    return table.sort_values(["case", "read_level", "coordinator"],
                             key=lambda c: c.map(LEVELS.index) if c.name == "read_level"
                             else c).reset_index(drop=True)


def reads(run: RecordedRun) -> list[dict]:
    """Every traced read (raw/reads.jsonl): row, level, coordinator, value, replicas read."""
    text = (run.raw_dir / "reads.jsonl").read_text()
    return [json.loads(line) for line in text.splitlines() if line.strip()]


def possible_by_holder(table: pd.DataFrame) -> dict[str, pd.DataFrame]:
    """The reads where a stale answer is possible (R <= replicas that missed the write), split
    into those through a coordinator that holds the new value ("holder") and those through
    one that missed it ("missed")."""
    possible = table[table["model_fresh_guaranteed"] == 0]
    missed = possible.apply(lambda r: r["coordinator"] in MISSED[r["case"]], axis=1)
    return {"holder": possible[~missed], "missed": possible[missed]}


def stale_of(part: pd.DataFrame) -> tuple[int, int]:
    """(stale reads, reads) over some rows of the stale() table."""
    return int(part["stale_reads"].sum()), int(part["reads"].sum())


def model_pct(part: pd.DataFrame) -> float:
    """The uniform model's stale share over some rows of the stale() table, weighted by
    their reads."""
    return float((part["model_uniform_pct"] * part["reads"]).sum() / part["reads"].sum())


@dataclass(frozen=True)
class Reads:
    """Some reads: how many were stale, and the uniform model's stale share for them (%)."""

    stale: int
    reads: int
    model_pct: float = float("nan")

    @property
    def stale_pct(self) -> float:
        return 100 * self.stale / self.reads if self.reads else float("nan")


def _reads(part: pd.DataFrame) -> Reads:
    stale_reads, count = stale_of(part)
    return Reads(stale_reads, count, model_pct(part) if count else float("nan"))


@dataclass(frozen=True)
class Findings:
    params: Parameters
    start_s: float  # the cluster's first start
    restart_s: float  # a stopped node's restart
    wall_time_s: float
    operations: int  # requests of the availability grid
    operations_agreeing: int  # ... that did what the model predicts
    operations_refused: int
    reads_total: int
    stale_total: int
    stale_only_missed: int  # stale reads answered only by replicas that missed the write
    overlap: Reads  # reads where R + W > N
    guaranteed: Reads  # reads where R > the replicas that missed the write
    one_reads: int  # reads at ONE
    one_local: int  # ... answered by the coordinator's own copy alone
    possible_holder: Reads  # reads that may be stale, through a node holding the new value
    possible_missed: Reads  # ... through a node that missed it
    one_holder: Reads  # the same at ONE only
    one_missed: Reads
    row_c_quorum_asked_23: dict[int, tuple[int, int]]  # coordinator -> (reads that asked
    # nodes 2 and 3, the two that missed row C, and how many of those were stale)


def findings(run: RecordedRun) -> Findings:
    table, every = stale(run), reads(run)
    seconds = run.results.set_index(["config", "workload", "metric"])["value"]
    grid = availability(run)
    one = [r for r in every if r["level"] == "ONE"]
    possible = possible_by_holder(table)
    at_one = {name: part[part["read_level"] == "ONE"] for name, part in possible.items()}
    return Findings(
        params=Parameters.of(run),
        start_s=float(seconds[("cluster", "start", "seconds")]),
        restart_s=float(seconds[("cluster", "restart", "seconds")]),
        wall_time_s=float(seconds[("lab", "all", "wall_time")]),
        operations=len(grid), operations_agreeing=int(grid["agrees"].sum()),
        operations_refused=int((~grid["succeeded"]).sum()),
        reads_total=len(every), stale_total=sum(r["value"] == OLD for r in every),
        stale_only_missed=sum(r["value"] == OLD and bool(r["replicas"])
                              and set(r["replicas"]) <= set(MISSED[r["case"]]) for r in every),
        overlap=_reads(table[table["model_overlap_guaranteed"] == 1]),
        guaranteed=_reads(table[table["model_fresh_guaranteed"] == 1]),
        one_reads=len(one), one_local=sum(r["replicas"] == [r["coordinator"]] for r in one),
        possible_holder=_reads(possible["holder"]), possible_missed=_reads(possible["missed"]),
        one_holder=_reads(at_one["holder"]), one_missed=_reads(at_one["missed"]),
        row_c_quorum_asked_23=_row_c_quorum(every))


def _row_c_quorum(every: list[dict]) -> dict[int, tuple[int, int]]:
    """Row C at QUORUM, through nodes 2 and 3: the reads that asked exactly the two nodes
    that missed the write, and the stale ones among them."""
    out = {}
    for coordinator in (2, 3):
        row_c = [r for r in every if (r["case"], r["level"], r["coordinator"])
                 == ("C", "QUORUM", coordinator)]
        both_missed = [r for r in row_c if set(r["replicas"]) <= set(MISSED["C"])]
        out[coordinator] = (len(both_missed), sum(r["value"] == OLD for r in both_missed))
    return out
