"""What the consistency page shows: the availability grid and the stale reads, each beside
the model (labs/consistency/model.py), the figures its text quotes, provenance, the panel.

Pure page code: it reads recorded runs and never touches a container.
"""

from __future__ import annotations

import json
from collections import Counter

import altair as alt
import pandas as pd

from labs.book import number_text as nt
from labs.book import theme  # noqa: F401  (the book's chart theme and offline renderer)
from labs.book.panel import LabPanel
from labs.book.provenance import run_summary
from labs.book.theme import dropdown
from labs.consistency import model
from labs.consistency.params import CASES, NODES, OLD, Parameters
from labs.records import RecordedRun

MODEL_COLOR = "#D55E00"
MISSED = {case: down for case, (_, _, down) in CASES.items()}  # nodes down at each overwrite
LEVELS = list(model.LEVELS)
CASE_TEXT = {"A": "row A: written at ONE, node 3 down",
             "B": "row B: written at QUORUM, node 3 down",
             "C": "row C: written at ONE, nodes 2 and 3 down"}
CASE_SHORT = {"A": "A (ONE; 3 down)", "B": "B (QUORUM; 3 down)", "C": "C (ONE; 2, 3 down)"}


# --- tables ----------------------------------------------------------------------------------

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


def stale_overview(run: RecordedRun) -> pd.DataFrame:
    """Per row and read level: the model's two answers, then the stale reads through each
    node."""
    table = stale(run)
    yes_no = {1: "yes", 0: "no"}
    out = []
    for (case, level), group in table.groupby(["case", "read_level"], sort=False):
        first = group.iloc[0]
        row = {"row (written at; down)": CASE_SHORT[case], "read at": level,
               "R + W > N": yes_no[first["model_overlap_guaranteed"]],
               "R > missed": yes_no[first["model_fresh_guaranteed"]],
               "uniform model": nt.percent(first["model_uniform_pct"] / 100)}
        for item in group.to_dict("records"):
            row[f"stale via {item['coordinator']}"] = \
                f"{item['stale_reads']} of {item['reads']}"
        out.append(row)
    return pd.DataFrame(out)


def replica_set_counts(run: RecordedRun, case: str | None = None
                       ) -> dict[tuple[int, str], Counter]:
    """(coordinator, level) -> how often each set of replicas ("1 + 3") answered a read, over
    every row or over one row's reads."""
    counts: dict[tuple[int, str], Counter] = {}
    for item in reads(run):
        if case is not None and item["case"] != case:
            continue
        key = (item["coordinator"], item["level"])
        counts.setdefault(key, Counter())[" + ".join(map(str, item["replicas"])) or "?"] += 1
    return counts


def replica_sets(run: RecordedRun) -> pd.DataFrame:
    """Per row and coordinator: which replicas read the row at ONE and at QUORUM, and how
    often (from the traces; ALL always asks all three)."""
    rows = []
    for case in CASES:
        counts = replica_set_counts(run, case)
        for coordinator in sorted({c for c, _ in counts}):
            row = {"row": case, "coordinator": f"node {coordinator}"}
            for level in ("ONE", "QUORUM"):
                found = counts.get((coordinator, level), Counter())
                total = sum(found.values())
                row[f"{level}: nodes read"] = ", ".join(f"{s} ({n} of {total})"
                                                        for s, n in found.most_common())
            rows.append(row)
    return pd.DataFrame(rows)


def availability_overview(run: RecordedRun) -> pd.DataFrame:
    """Nodes stopped x level, each cell what the write and the read did (the model agreeing
    or not)."""
    table = availability(run)
    cells = {}
    for (stopped, level), group in table.groupby(["stopped", "level"]):
        by_operation = group.set_index("operation")
        text = " / ".join("done" if by_operation.loc[op, "succeeded"]
                          else by_operation.loc[op, "outcome"] for op in ("write", "read"))
        if not group["agrees"].all():
            text += " (model: other)"
        cells[(stopped, level)] = text
    frame = pd.DataFrame([{"nodes stopped": stopped, **{level: cells[(stopped, level)]
                                                         for level in LEVELS}}
                          for stopped in sorted({s for s, _ in cells})])
    return frame


# --- charts ----------------------------------------------------------------------------------

def availability_chart(run: RecordedRun) -> alt.TopLevelMixin:
    """A grid: nodes stopped x level, per operation; colour is what happened, the text the
    model's answer."""
    table = availability(run).assign(
        result=lambda t: t["succeeded"].map({True: "done", False: "refused"}),
        model=lambda t: t["model_succeeds"].map({True: "done", False: "refused"}),
        stopped_text=lambda t: t["stopped"].map(lambda s: f"{s} of {NODES} stopped"))
    base = alt.Chart(table).encode(
        x=alt.X("level:N", sort=LEVELS, title="consistency level",
                axis=alt.Axis(labelAngle=0)),
        y=alt.Y("stopped_text:N", title=None))
    cells = base.mark_rect(stroke="white", strokeWidth=2).encode(
        color=alt.Color("result:N", scale=alt.Scale(domain=["done", "refused"],
                                                    range=["#009E73", "#CC79A7"]),
                        title="what node 1 answered"),
        tooltip=["operation:N", "level:N", "nodes_up:Q", "needs:Q", "outcome:N",
                 alt.Tooltip("model:N", title="the model says"),
                 alt.Tooltip("answer_ms:Q", format=".1f", title="answered in (ms)")])
    text = base.mark_text(fontSize=12, color="white").encode(
        text=alt.Text("model:N"))
    return (cells + text).properties(width=240, height=150).facet(
        column=alt.Column("operation:N", title=None, sort=["write", "read"])).properties(
        title=alt.TitleParams(
            "Each level with nodes stopped: what happened (colour), the model (text)",
            subtitle="colour: what node 1 answered; white text: what the model predicts"))


def stale_chart(run: RecordedRun) -> alt.TopLevelMixin:
    """Share of stale reads per read level and coordinator (bars, labelled "stale/reads"),
    the uniform model (ticks), one row at a time."""
    table = stale(run).assign(
        via=lambda t: t["coordinator"].map(lambda c: f"via node {c}"),
        label=lambda t: [f"{s}/{n}" for s, n in zip(t["stale_reads"], t["reads"],
                                                    strict=True)])
    case = dropdown("STALE_CASE", "A", ["A", "B", "C"],
                    labels=[CASE_TEXT[c] for c in "ABC"], label="row")
    base = alt.Chart(table).transform_filter("datum.case == STALE_CASE").encode(
        x=alt.X("read_level:N", sort=LEVELS, title="read at", axis=alt.Axis(labelAngle=0)),
        xOffset=alt.XOffset("via:N"))
    bars = base.mark_bar().encode(
        y=alt.Y("stale_pct:Q", scale=alt.Scale(domain=[0, 105]),
                title="reads that returned the old value (%)"),
        color=alt.Color("via:N", title="coordinator",
                        scale=alt.Scale(range=["#009E73", "#E69F00", "#0072B2"])),
        tooltip=["case_text:N", "read_level:N", "via:N", "reads:Q", "stale_reads:Q",
                 alt.Tooltip("model_uniform_pct:Q", format=".0f", title="uniform model (%)")])
    labels = base.mark_text(dy=-6, fontSize=10).encode(y="stale_pct:Q", text="label:N")
    # Black, not the model orange elsewhere on the page: beside the amber bars that would blur.
    ticks = alt.Chart(table).transform_filter("datum.case == STALE_CASE").mark_tick(
        color="black", thickness=3, size=90).encode(
        x=alt.X("read_level:N", sort=LEVELS), y="model_uniform_pct:Q")
    return (bars + labels + ticks).add_params(case).properties(
        width=420, height=260,
        title=alt.TitleParams("Stale reads per coordinator (bars, stale/reads)",
                              subtitle="black ticks: a uniform choice of replicas"))


# --- figures for the text --------------------------------------------------------------------

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


def coordinators_that_changed_replicas(run: RecordedRun, level: str = "ONE") -> list[int]:
    """Coordinators whose reads at `level` did not always ask the same replicas."""
    seen: dict[int, set] = {}
    for item in reads(run):
        if item["level"] == level:
            seen.setdefault(item["coordinator"], set()).add(tuple(item["replicas"]))
    return sorted(c for c, sets in seen.items() if len(sets) > 1)


def figures(run: RecordedRun) -> dict[str, str]:
    table = stale(run)
    every = reads(run)
    figures = _overview_figures(run, table, every)
    figures.update(_possible_stale_figures(table))
    figures.update(_row_c_quorum_figures(every))
    figures.update(_per_read_figures(table))
    return figures


def _overview_figures(run: RecordedRun, table: pd.DataFrame,
                      every: list[dict]) -> dict[str, str]:
    """The cluster's times, the availability grid's counts and the reads' totals."""
    results = run.results
    seconds = results.set_index(["config", "workload", "metric"])["value"]
    grid = availability(run)
    stale_reads = [r for r in every if r["value"] == OLD]
    guaranteed = table[table["model_fresh_guaranteed"] == 1]
    overlap = table[table["model_overlap_guaranteed"] == 1]
    one = [r for r in every if r["level"] == "ONE"]
    one_local = sum(r["replicas"] == [r["coordinator"]] for r in one)
    return {
        "start_s": f"{seconds[('cluster', 'start', 'seconds')]:.0f}",
        "restart_s": f"{seconds[('cluster', 'restart', 'seconds')]:.1f}",
        "wall_time_min": f"{seconds[('lab', 'all', 'wall_time')] / 60:.1f}",
        "operations": str(len(grid)),
        "operations_agreeing": str(int(grid["agrees"].sum())),
        "operations_refused": str(int((~grid["succeeded"]).sum())),
        "reads_per_case": str(int(table["reads"].iloc[0])),
        "quick_reads_per_case": str(Parameters.PROFILES["quick"]["reads_per_case"]),
        "reads_total": str(len(every)),
        "stale_total": str(len(stale_reads)),
        "stale_only_missed": str(sum(bool(r["replicas"])
                                     and set(r["replicas"]) <= set(MISSED[r["case"]])
                                     for r in stale_reads)),
        "overlap_reads": str(int(overlap["reads"].sum())),
        "overlap_stale": str(int(overlap["stale_reads"].sum())),
        "guaranteed_reads": str(int(guaranteed["reads"].sum())),
        "guaranteed_stale": str(int(guaranteed["stale_reads"].sum())),
        "one_reads": str(len(one)),
        "one_local": str(one_local),
        "one_local_pct": f"{100 * one_local / len(one):.0f}",
    }


def _possible_stale_figures(table: pd.DataFrame) -> dict[str, str]:
    # The reads the rules allow to be stale, through a coordinator that holds the new value
    # and through one that missed it; then the same at ONE only.
    possible = possible_by_holder(table)
    holder_stale, holder_reads = stale_of(possible["holder"])
    missed_stale, missed_reads = stale_of(possible["missed"])
    one_holder_stale, one_holder_reads = stale_of(
        possible["holder"][possible["holder"]["read_level"] == "ONE"])
    one_missed_stale, one_missed_reads = stale_of(
        possible["missed"][possible["missed"]["read_level"] == "ONE"])
    return {
        "possible_holder_stale": str(holder_stale),
        "possible_holder_reads": str(holder_reads),
        "possible_holder_pct": f"{100 * holder_stale / holder_reads:.0f}",
        "possible_holder_model_pct": f"{model_pct(possible['holder']):.0f}",
        "possible_missed_stale": str(missed_stale),
        "possible_missed_reads": str(missed_reads),
        "possible_missed_pct": f"{100 * missed_stale / missed_reads:.0f}",
        "possible_missed_model_pct": f"{model_pct(possible['missed']):.0f}",
        "one_holder_stale": str(one_holder_stale),
        "one_holder_reads": str(one_holder_reads),
        "one_missed_stale": str(one_missed_stale),
        "one_missed_reads": str(one_missed_reads),
    }


def _row_c_quorum_figures(every: list[dict]) -> dict[str, str]:
    figures = {}
    for coordinator in (2, 3):  # row C at QUORUM: how often each asked nodes 2 and 3
        row_c = [r for r in every if (r["case"], r["level"], r["coordinator"])
                 == ("C", "QUORUM", coordinator)]
        both_missed = [r for r in row_c if set(r["replicas"]) <= set(MISSED["C"])]
        figures[f"c_quorum_n{coordinator}_asked_23"] = str(len(both_missed))
        figures[f"c_quorum_n{coordinator}_asked_23_stale"] = str(
            sum(r["value"] == OLD for r in both_missed))
    return figures


def _per_read_figures(table: pd.DataFrame) -> dict[str, str]:
    """Stale reads per row, read level and coordinator, and the model per row and level."""
    figures = {}
    for item in table.to_dict("records"):
        key = f"{item['case'].lower()}_{item['read_level'].lower()}_n{item['coordinator']}"
        figures[f"{key}_stale"] = str(item["stale_reads"])
        figures[f"{key}_reads"] = str(item["reads"])
    for item in table.drop_duplicates(["case", "read_level"]).to_dict("records"):
        key = f"{item['case'].lower()}_{item['read_level'].lower()}"
        figures[f"{key}_model_pct"] = f"{item['model_uniform_pct']:.0f}"
    return figures


# --- provenance, panel, headline -------------------------------------------------------------

# Not in the run's record: labs/consistency/cluster.py sets it on every node it starts.
NODE_SETTINGS = "hinted_handoff_enabled: false in every node's cassandra.yaml"


def provenance(run: RecordedRun) -> pd.DataFrame:
    summary = run_summary(run)
    settings = pd.DataFrame([("node settings (lab code)", NODE_SETTINGS)],
                            columns=summary.columns)
    return pd.concat([summary, settings], ignore_index=True)


def panel() -> LabPanel:
    return LabPanel(Parameters, fields=("profile", "reads_per_case", "seed"), chart=stale_chart,
                    title="Consistency levels on a three-node Cassandra cluster",
                    needs_root=True, defaults={"profile": "quick"})


def headline(run: RecordedRun) -> pd.DataFrame:
    """Stale reads (%) through the node that missed the write, per row and read level, with
    the uniform-choice model's figure."""
    from labs.book.compare import headline_table

    rows = []
    for row in stale(run).to_dict("records"):
        if row["model_fresh_guaranteed"]:
            continue  # always 0 %: nothing to compare
        rows.append({"measure": "stale reads", "config": f"{row['case_text']}, read at "
                                                        f"{row['read_level']} via node "
                                                        f"{row['coordinator']}",
                     "value": row["stale_pct"], "unit": "percent", "better": "lower",
                     "model": row["model_uniform_pct"]})
    return headline_table(rows)
