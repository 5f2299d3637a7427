"""What the power-loss page shows: acknowledged commits lost, measured beside the model."""

from __future__ import annotations

import altair as alt
import pandas as pd

from labs.book import theme  # noqa: F401  (the book's chart theme and offline renderer)
from labs.book.panel import LabPanel
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
    return table


def summary(run: RecordedRun) -> pd.DataFrame:
    """Per setting, all cuts together: what a reader should take away."""
    table = outcomes(run)
    grouped = table.groupby(["database", "safety"], sort=False).agg(
        cuts=("cut", "count"), acknowledged=("acknowledged", "sum"),
        lost=("acknowledged_lost", "sum"), most_lost_in_one_cut=("acknowledged_lost", "max"),
        model_bound=("model_max_lost", "max"),
        recovery_s=("recovery_s", "median")).reset_index()
    return grouped.rename(columns={
        "database": "Database and setting", "safety": "The book calls it", "cuts": "Power cuts",
        "acknowledged": "Commits acknowledged", "lost": "Acknowledged, then lost",
        "most_lost_in_one_cut": "Most lost in one cut",
        "model_bound": "Model: at most (per cut)", "recovery_s": "Recovery (s, median)"})


def figures(run: RecordedRun) -> dict[str, str]:
    table = outcomes(run)
    safe, unsafe = table[table["safety"] == "safe"], table[table["safety"] == "unsafe"]
    figures = {
        "cuts": str(int(table["cut"].max())),
        "acked_total": f"{int(table['acknowledged'].sum()):,}",
        "safe_lost": f"{int(safe['acknowledged_lost'].sum())}",
        "safe_acked": f"{int(safe['acknowledged'].sum()):,}",
        "unsafe_lost": f"{int(unsafe['acknowledged_lost'].sum())}",
        "unsafe_acked": f"{int(unsafe['acknowledged'].sum()):,}",
        "unsafe_within_model": ("within" if (unsafe["acknowledged_lost"]
                                            <= unsafe["model_max_lost"] + 1).all()
                                else "NOT within"),
        "boot_s": f"{table['boot_s'].median():.0f}",
    }
    for database, rows in table.groupby("database"):
        key = database.split(",")[0].split()[0].lower() + "_" + \
            rows["setting"].iloc[0].split("=")[1]
        figures[f"lost_{key}"] = f"{int(rows['acknowledged_lost'].sum())}"
        figures[f"rate_{key}"] = f"{rows['acks_per_second'].median():.0f}"
    return figures


def chart(run: RecordedRun) -> alt.LayerChart:
    table = outcomes(run)
    order = list(dict.fromkeys(table["database"]))
    base = alt.Chart(table).encode(
        y=alt.Y("database:N", sort=order, title=None, axis=alt.Axis(labelLimit=360)))
    measured = base.mark_point(size=90, filled=True).encode(
        x=alt.X("acknowledged_lost:Q", title="acknowledged commits lost to the power cut"),
        color=alt.Color("safety:N", title="the book calls the setting",
                        scale=alt.Scale(domain=["safe", "unsafe"],
                                        range=["#009E73", "#D55E00"])),
        tooltip=["database:N", "cut:Q", alt.Tooltip("acknowledged:Q", format=",.0f"),
                 "acknowledged_lost:Q", alt.Tooltip("model_max_lost:Q", format=".1f")])
    bound = base.mark_tick(thickness=3, size=24, color="#555555").encode(
        x="model_max_lost:Q")
    return alt.layer(bound, measured).properties(
        width=460, height=alt.Step(40),
        title="Lost per power cut (points) and the model's bound (grey tick)")


def provenance(run: RecordedRun) -> pd.DataFrame:
    return run_summary(run)


def panel() -> LabPanel:
    return LabPanel(Parameters, fields=("host", "profile", "cuts", "seed"), chart=chart,
                    title="Power cuts in a lab VM", defaults={"profile": "quick"})
