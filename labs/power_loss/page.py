"""What the power-loss page shows: acknowledged commits lost, measured beside the model."""

from __future__ import annotations

import altair as alt
import pandas as pd

from labs.book import theme  # noqa: F401  (the book's chart theme and offline renderer)
from labs.book.panel import LabPanel
from labs.power_loss import model
from labs.power_loss.params import Parameters
from labs.records import RecordedRun, run_summary

LABELS = {"postgres": "PostgreSQL", "mariadb": "MariaDB (InnoDB)"}


def outcomes(run: RecordedRun) -> pd.DataFrame:
    """One row per database and power cut: acknowledged, lost, the model's bound."""
    rows = run.results[run.results["workload"] == "power-cut"]
    table = rows.pivot_table(index=["engine", "setting", "safety", "cut"], columns="metric",
                             values="value").reset_index()
    table.columns.name = None
    table["database"] = table["engine"].map(LABELS) + ", " + table["setting"]
    # The loss as time: how many milliseconds of acknowledged commits the cut took.
    rate = table["acks_per_second"].where(table["acks_per_second"] > 0)
    table["lost_ms"] = (1000 * table["acknowledged_lost"] / rate).fillna(0.0)
    table["bound_ms"] = (1000 * table["model_max_lost"] / rate).fillna(0.0)
    return table


def summary(run: RecordedRun) -> pd.DataFrame:
    """Per setting, all cuts together: what a reader should take away."""
    table = outcomes(run)
    grouped = table.groupby(["database", "safety"], sort=False).agg(
        acknowledged=("acknowledged", "sum"), lost=("acknowledged_lost", "sum"),
        most_lost_in_one_cut=("acknowledged_lost", "max"),
        model_bound=("model_max_lost", "max"), most_lost_ms=("lost_ms", "max"),
        bound_ms=("bound_ms", "max"), rate=("acks_per_second", "median")).reset_index()
    return grouped.rename(columns={
        "database": "Database and setting", "safety": "The book calls it",
        "acknowledged": "Commits acknowledged", "lost": "Acknowledged, then lost",
        "most_lost_in_one_cut": "Most lost in one cut",
        "model_bound": "Model: at most (one cut)", "most_lost_ms": "Most lost (ms of commits)",
        "bound_ms": "Model bound (ms)", "rate": "Commits/s (median)"})


def summary_table(run: RecordedRun):
    """The summary as the page shows it: whole numbers, headers that wrap."""
    wrap = [{"selector": "th", "props": [("white-space", "normal"), ("vertical-align", "bottom")]}]
    return summary(run).style.hide(axis="index").format(precision=0, thousands=",") \
        .set_table_styles(wrap)


def figures(run: RecordedRun) -> dict[str, str]:
    """Every number the page quotes, computed from the run."""
    return {**run_figures(run), **exercise_figures(run)}


def run_figures(run: RecordedRun) -> dict[str, str]:
    table = outcomes(run)
    safe, unsafe = table[table["safety"] == "safe"], table[table["safety"] == "unsafe"]
    within = (unsafe["acknowledged_lost"] <= unsafe["model_max_lost"]).all()
    figures = {
        "cuts": str(int(table["cut"].max())),
        "acked_total": f"{int(table['acknowledged'].sum()):,}",
        "safe_lost": f"{int(safe['acknowledged_lost'].sum())}",
        "safe_acked": f"{int(safe['acknowledged'].sum()):,}",
        "unsafe_lost": f"{int(unsafe['acknowledged_lost'].sum())}",
        "unsafe_acked": f"{int(unsafe['acknowledged'].sum()):,}",
        "unsafe_cuts_with_loss": f"{int((unsafe['acknowledged_lost'] > 0).sum())}",
        "unsafe_legs": f"{len(unsafe)}",
        "unsafe_within_model": "within" if within else "not always within",
        "boot_s": f"{table['boot_s'].median():.0f}",
        "recovery_max_s": f"{table['recovery_s'].max():.0f}",
        "unacked_found": f"{int(table['unacknowledged_found'].sum())}",
        "unsafe_lost_max": f"{int(unsafe['acknowledged_lost'].max())}",
    }
    for (engine, safety), rows in table.groupby(["engine", "safety"]):
        figures[f"{engine}_{safety}_rate"] = f"{rows['acks_per_second'].median():.0f}"
    for engine, rows in unsafe.groupby("engine"):
        figures[f"{engine}_lost_ms_min"] = f"{rows['lost_ms'].min():.0f}"
        figures[f"{engine}_lost_ms_max"] = f"{rows['lost_ms'].max():.0f}"
        figures[f"{engine}_bound_ms"] = f"{rows['bound_ms'].max():.0f}"
        figures[f"{engine}_lost_max"] = f"{int(rows['acknowledged_lost'].max())}"
    return figures


def chart(run: RecordedRun) -> alt.LayerChart:
    """Per database and cut: the commits lost (points) and the model's bound (ticks)."""
    table = outcomes(run)
    order = list(dict.fromkeys(table.sort_values(["engine", "safety"])["database"]))
    base = alt.Chart(table).encode(
        # Two-line labels (engine, then setting) keep the chart inside the page's column.
        y=alt.Y("database:N", sort=order, title=None,
                axis=alt.Axis(labelLimit=260, labelExpr="split(datum.label, ', ')")))
    measured = base.mark_point(size=90, filled=True, opacity=0.8).encode(
        x=alt.X("acknowledged_lost:Q", title="acknowledged commits lost to the power cut"),
        color=alt.Color("safety:N", title="the book calls it",
                        legend=alt.Legend(orient="top"),
                        scale=alt.Scale(domain=["safe", "unsafe"],
                                        range=["#009E73", "#D55E00"])),
        tooltip=["database:N", "cut:Q", alt.Tooltip("acknowledged:Q", format=",.0f"),
                 alt.Tooltip("acknowledged_lost:Q", title="lost"),
                 alt.Tooltip("acks_per_second:Q", title="commits/s", format=".0f"),
                 alt.Tooltip("lost_ms:Q", title="lost (ms of commits)", format=".0f"),
                 alt.Tooltip("model_max_lost:Q", title="model: at most", format=".0f")])
    bound = base.mark_tick(thickness=2, size=22, color="#555555").encode(
        x="model_max_lost:Q",
        tooltip=["database:N", "cut:Q",
                 alt.Tooltip("model_max_lost:Q", title="model: at most", format=".0f")])
    return alt.layer(bound, measured).properties(
        width=340, height=alt.Step(48),
        title="Lost in each power cut (points) and the model's bound for that cut (grey ticks)")


def exercise_figures(run: RecordedRun) -> dict[str, str]:
    """The numbers the exercises ask about and their solutions (model and run)."""
    rate_per_s = 5000
    table = outcomes(run)
    unsafe = table[(table["engine"] == "postgres") & (table["safety"] == "unsafe")]
    worst = unsafe.sort_values("lost_ms").iloc[-1]
    pg_bound = model.max_lost("postgres", "synchronous_commit", "off", rate_per_s)
    innodb_bound = model.max_lost("mariadb", "innodb_flush_log_at_trx_commit", "0", rate_per_s)
    return {
        "ex_rate": f"{rate_per_s:,}",
        "ex_pg_bound": f"{pg_bound:,.0f}", "ex_innodb_bound": f"{innodb_bound:,.0f}",
        "ex_cut": f"{int(worst['cut'])}",
        "ex_lost": f"{int(worst['acknowledged_lost'])}",
        "ex_cut_rate": f"{worst['acks_per_second']:.1f}",
        "ex_lost_ms": f"{worst['lost_ms']:.0f}",
        "ex_wakeups": f"{worst['lost_ms'] / 200:.1f}",
    }


def headline(run: RecordedRun) -> pd.DataFrame:
    """The run's headline measures for labs.book.compare: per database and setting, the most
    commits one cut took (beside the model's bound) and the commit rate."""
    from labs.book.compare import headline_table

    rows = []
    for _, row in summary(run).iterrows():
        name = row["Database and setting"]
        rows.append({"measure": "acknowledged commits lost in one power cut (most)",
                     "config": name, "value": row["Most lost in one cut"], "unit": "count",
                     "better": "lower", "model": row["Model: at most (one cut)"]})
        rows.append({"measure": "commits per second before the cut (median)", "config": name,
                     "value": row["Commits/s (median)"], "unit": "tps", "better": "higher",
                     "model": None})
    return headline_table(rows)


def provenance(run: RecordedRun) -> pd.DataFrame:
    """Where the run comes from: the lab's command in full, the commands it ran in the VM
    counted (they are all in run.json)."""
    table = run_summary(run)
    commands = run.meta["commands"]
    table.loc[table[""] == "command", "recorded run"] = (
        f"{commands[0]} (then {len(commands) - 1} commands in the VM, listed in run.json)")
    return table


def provenance_table(run: RecordedRun):
    """The provenance table styled so long values wrap instead of running off the page."""
    return provenance(run).style.hide(axis="index").set_properties(
        **{"white-space": "normal", "word-break": "break-word", "text-align": "left"})


def panel() -> LabPanel:
    return LabPanel(Parameters, fields=("host", "profile", "cuts", "seed"), chart=chart,
                    title="Power cuts in a lab VM", defaults={"profile": "quick"})
