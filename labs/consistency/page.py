"""What the consistency page shows: the availability grid and the stale reads, each beside
the model (labs/consistency/model.py), the figures its text quotes, provenance, the panel.

Pure page code: it reads recorded runs and never touches a container.
"""

from __future__ import annotations

from collections import Counter

import altair as alt
import pandas as pd

from labs.book import number_text as nt
from labs.book import theme  # noqa: F401  (the book's chart theme and offline renderer)
from labs.book.panel import LabPanel
from labs.book.provenance import run_summary
from labs.book.theme import MODEL_COLOR, dropdown
from labs.consistency.findings import (  # noqa: F401  (the page's tables, for its cells)
    CASE_TEXT,
    LEVELS,
    MISSED,
    Findings,
    availability,
    findings,
    reads,
    stale,
)
from labs.consistency.params import CASES, NODES, Parameters
from labs.records import RecordedRun

CASE_SHORT = {"A": "A (ONE; 3 down)", "B": "B (QUORUM; 3 down)", "C": "C (ONE; 2, 3 down)"}


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
        color=MODEL_COLOR, thickness=3, size=90).encode(
        x=alt.X("read_level:N", sort=LEVELS), y="model_uniform_pct:Q")
    return (bars + labels + ticks).add_params(case).properties(
        width=420, height=260,
        title=alt.TitleParams("Stale reads per coordinator (bars, stale/reads)",
                              subtitle="black ticks: a uniform choice of replicas"))


# --- figures for the text --------------------------------------------------------------------

def coordinators_that_changed_replicas(run: RecordedRun, level: str = "ONE") -> list[int]:
    """Coordinators whose reads at `level` did not always ask the same replicas."""
    seen: dict[int, set] = {}
    for item in reads(run):
        if item["level"] == level:
            seen.setdefault(item["coordinator"], set()).add(tuple(item["replicas"]))
    return sorted(c for c, sets in seen.items() if len(sets) > 1)


def figures(run: RecordedRun) -> dict[str, str]:
    """Every number the page quotes, formatted from the run's findings."""
    found = findings(run)
    figures = _overview_figures(found)
    figures.update(_possible_stale_figures(found))
    figures.update(_row_c_quorum_figures(found))
    figures.update(_per_read_figures(stale(run)))
    return figures


def _overview_figures(found: Findings) -> dict[str, str]:
    """The cluster's times, the availability grid's counts and the reads' totals."""
    return {
        "start_s": nt.number(found.start_s, 0),
        "restart_s": nt.number(found.restart_s, 1),
        "wall_time_min": nt.number(found.wall_time_s / 60, 1),
        "operations": nt.count(found.operations),
        "operations_agreeing": nt.count(found.operations_agreeing),
        "operations_refused": nt.count(found.operations_refused),
        "reads_per_case": nt.count(found.params.reads_per_case),
        "quick_reads_per_case": nt.count(Parameters.for_profile("quick").reads_per_case),
        "reads_total": nt.count(found.reads_total),
        "stale_total": nt.count(found.stale_total),
        "stale_only_missed": nt.count(found.stale_only_missed),
        "overlap_reads": nt.count(found.overlap.reads),
        "overlap_stale": nt.count(found.overlap.stale),
        "guaranteed_reads": nt.count(found.guaranteed.reads),
        "guaranteed_stale": nt.count(found.guaranteed.stale),
        "one_reads": nt.count(found.one_reads),
        "one_local": nt.count(found.one_local),
        "one_local_pct": nt.number(100 * found.one_local / found.one_reads, 0),
    }


def _possible_stale_figures(found: Findings) -> dict[str, str]:
    # The reads the rules allow to be stale, through a coordinator that holds the new value
    # and through one that missed it; then the same at ONE only.
    holder, missed = found.possible_holder, found.possible_missed
    return {
        "possible_holder_stale": nt.count(holder.stale),
        "possible_holder_reads": nt.count(holder.reads),
        "possible_holder_pct": nt.number(holder.stale_pct, 0),
        "possible_holder_model_pct": nt.number(holder.model_pct, 0),
        "possible_missed_stale": nt.count(missed.stale),
        "possible_missed_reads": nt.count(missed.reads),
        "possible_missed_pct": nt.number(missed.stale_pct, 0),
        "possible_missed_model_pct": nt.number(missed.model_pct, 0),
        "one_holder_stale": nt.count(found.one_holder.stale),
        "one_holder_reads": nt.count(found.one_holder.reads),
        "one_missed_stale": nt.count(found.one_missed.stale),
        "one_missed_reads": nt.count(found.one_missed.reads),
    }


def _row_c_quorum_figures(found: Findings) -> dict[str, str]:
    # Row C at QUORUM through nodes 2 and 3: reads that asked exactly the two nodes that
    # missed its write, and the stale ones among them.
    through_2, through_3 = found.row_c_quorum_asked_23[2], found.row_c_quorum_asked_23[3]
    return {"c_quorum_n2_asked_23": nt.count(through_2[0]),
            "c_quorum_n2_asked_23_stale": nt.count(through_2[1]),
            "c_quorum_n3_asked_23": nt.count(through_3[0]),
            "c_quorum_n3_asked_23_stale": nt.count(through_3[1])}


def _per_read_figures(table: pd.DataFrame) -> dict[str, str]:
    """Stale reads of the cells the text quotes (row, read level, coordinator), and the
    model for row C at QUORUM."""
    cells = table.set_index(["case", "read_level", "coordinator"])

    def cell(case: str, level: str, coordinator: int, column: str) -> str:
        return nt.count(cells.loc[(case, level, coordinator), column])

    return {
        "a_one_n1_reads": cell("A", "ONE", 1, "reads"),
        "a_one_n1_stale": cell("A", "ONE", 1, "stale_reads"),
        "a_one_n2_stale": cell("A", "ONE", 2, "stale_reads"),
        "c_quorum_n1_stale": cell("C", "QUORUM", 1, "stale_reads"),
        "c_quorum_n2_reads": cell("C", "QUORUM", 2, "reads"),
        "c_quorum_n2_stale": cell("C", "QUORUM", 2, "stale_reads"),
        "c_quorum_n3_stale": cell("C", "QUORUM", 3, "stale_reads"),
        "c_quorum_model_pct": nt.number(cells.loc[("C", "QUORUM", 1), "model_uniform_pct"], 0),
    }


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
