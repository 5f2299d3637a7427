"""What the power-loss page shows: acknowledged commits lost, measured beside the model."""

from __future__ import annotations

import math

import altair as alt
import pandas as pd

from labs.book import theme  # noqa: F401  (the book's chart theme and offline renderer)
from labs.book.panel import LabPanel
from labs.book.provenance import run_summary
from labs.book.tables import wrapping_table
from labs.power_loss import doublewrite_page, model, torn_page
from labs.power_loss.params import Parameters
from labs.records import RecordedRun

LABELS = {"postgres": "PostgreSQL", "mariadb": "MariaDB (InnoDB)"}


def outcomes(run: RecordedRun) -> pd.DataFrame:
    """One row per database and power cut: acknowledged, lost, the model's bounds."""
    rows = run.results[run.results["workload"] == "power-cut"]
    table = rows.pivot_table(index=["engine", "setting", "safety", "cut"], columns="metric",
                             values="value").reset_index()
    table.columns.name = None
    table["database"] = table["engine"].map(LABELS) + ", " + table["setting"]
    # The model in time: how long before the cut a lost commit can have been acknowledged.
    table["bound_ms"] = [1000 * model.window_s(engine, *setting.split("=", 1))
                         for engine, setting in zip(table["engine"], table["setting"],
                                                    strict=True)]
    # Measured from the acknowledgements' own times (see labs.infra.acks.lost_window_ms).
    table["lost_ms"] = table["lost_window_ms"]
    order = {"postgres": 0, "mariadb": 1}
    return table.sort_values(["engine", "safety", "cut"],
                             key=lambda c: c.map(order) if c.name == "engine" else c) \
        .reset_index(drop=True)


def summary(run: RecordedRun) -> pd.DataFrame:
    """Per database and setting, all cuts together; the worst cut beside its own bound."""
    table = outcomes(run)
    rows = []
    for database, cuts in table.groupby("database", sort=False):
        worst = cuts.sort_values(["acknowledged_lost", "cut"]).iloc[-1]
        longest = cuts.sort_values(["lost_ms", "cut"]).iloc[-1]
        rows.append({
            "Database, setting (what the book calls it)": f"{database} ({worst['safety']})",
            "Acknowledged": f"{cuts['acknowledged'].sum():,.0f}",
            "Lost": f"{cuts['acknowledged_lost'].sum():,.0f}",
            # The model's count is an estimate (rate times window), not a bound: no "≤".
            "Most lost in one cut (model: rate × window)":
                f"{worst['acknowledged_lost']:.0f} ({worst['model_max_lost']:.0f})"
                + (f", cut {worst['cut']:.0f}" if worst["acknowledged_lost"] else ""),
            "Oldest lost commit, ms before the cut (model)":
                f"{longest['lost_ms']:,.0f} (≤ {longest['bound_ms']:,.0f})"})
    return pd.DataFrame(rows)


def summary_table(run: RecordedRun):
    """The summary as the page shows it: headers that wrap, nothing wider than the page."""
    return torn_page.wrapping_header(summary(run))


def figures(run: RecordedRun) -> dict[str, str]:
    """Every number the page quotes, computed from the run."""
    return {**run_figures(run), **exercise_figures(run), **torn_page.torn_figures(run),
            **doublewrite_page.doublewrite_figures(run)}


def run_figures(run: RecordedRun) -> dict[str, str]:
    table = outcomes(run)
    safe, unsafe = table[table["safety"] == "safe"], table[table["safety"] == "unsafe"]
    figures = {
        "cuts": str(int(table["cut"].max())),
        "acked_total": f"{int(table['acknowledged'].sum()):,}",
        "safe_lost": f"{int(safe['acknowledged_lost'].sum())}",
        "safe_acked": f"{int(safe['acknowledged'].sum()):,}",
        "unsafe_lost": f"{int(unsafe['acknowledged_lost'].sum())}",
        "unsafe_acked": f"{int(unsafe['acknowledged'].sum()):,}",
        **over_count_figures(run, unsafe),
        # "about N s": the shortest boot, rounded (the recorded-run test checks the longest
        # rounds to the same)
        "boot_s": f"{round(table['boot_s'].min())}",
        # "in at most N s": rounded up to a tenth, so that N is never below the longest.
        "recovery_max_s": f"{math.ceil(table['recovery_s'].max() * 10) / 10:.1f}",
        "unacked_found": f"{int(table['unacknowledged_found'].sum())}",
        "unsafe_lost_max": f"{int(unsafe['acknowledged_lost'].max())}",
    }
    rates = {}
    for (engine, safety), rows in table.groupby(["engine", "safety"]):
        rates[engine, safety] = rows["acks_per_second"].median()
        figures[f"{engine}_{safety}_rate"] = f"{rates[engine, safety]:.0f}"
    for engine in ("postgres", "mariadb"):
        figures[f"{engine}_speedup"] = f"{rates[engine, 'unsafe'] / rates[engine, 'safe']:.1f}"
    for engine, rows in unsafe.groupby("engine"):
        # Over the cuts that took something: a cut that lost nothing has no oldest loss.
        lossy = rows[rows["acknowledged_lost"] > 0]
        figures[f"{engine}_lost_ms_min"] = f"{lossy['lost_ms'].min():,.0f}"
        figures[f"{engine}_lost_ms_max"] = f"{lossy['lost_ms'].max():,.0f}"
        figures[f"{engine}_bound_ms"] = f"{rows['bound_ms'].max():,.0f}"
        figures[f"{engine}_lossy_cuts"] = str(len(lossy))
    return figures


def chart(run: RecordedRun) -> alt.LayerChart:
    """Per database: how long before the cut its oldest lost commit had been acknowledged
    (a point per cut, its shape the cut), beside the model's bound (a grey tick, the same
    for every cut)."""
    table = outcomes(run)
    order = list(dict.fromkeys(table["database"]))
    y = alt.Y("database:N", sort=order, title=None,
              # Two-line labels (engine, then setting) keep the chart inside the page's column.
              axis=alt.Axis(labelLimit=260, labelExpr="split(datum.label, ', ')"))
    measured = alt.Chart(table).mark_point(size=80, filled=True, opacity=0.8).encode(
        y=y,
        x=alt.X("lost_ms:Q", title=["oldest lost commit: acknowledged this many ms before "
                                    "the cut", "(0: nothing acknowledged was lost)"]),
        color=alt.Color("safety:N", title="the book calls it",
                        legend=alt.Legend(orient="top"),
                        scale=alt.Scale(domain=["safe", "unsafe"],
                                        range=["#009E73", "#D55E00"])),
        shape=alt.Shape("cut:N", title="power cut", legend=alt.Legend(orient="top")),
        tooltip=["database:N", "cut:Q", alt.Tooltip("acknowledged:Q", format=",.0f"),
                 alt.Tooltip("acknowledged_lost:Q", title="lost"),
                 alt.Tooltip("lost_ms:Q", title="oldest lost, ms before the cut", format=".0f"),
                 alt.Tooltip("bound_ms:Q", title="model: at most (ms)", format=".0f"),
                 alt.Tooltip("acks_per_second:Q", title="commits/s", format=".0f")])
    bounds = table.drop_duplicates("database")
    bound = alt.Chart(bounds).mark_tick(thickness=2, size=30, color="#555555").encode(
        y=y, x="bound_ms:Q",
        tooltip=["database:N", alt.Tooltip("bound_ms:Q", title="model: at most (ms)")])
    return alt.layer(bound, measured).properties(
        width=300, height=alt.Step(44),
        title=["Lost commits: how long before the cut they were acknowledged",
               "(points, one per cut) and the model's bound (grey ticks)"])


def exercise_figures(run: RecordedRun) -> dict[str, str]:
    """The numbers the exercises ask about and their solutions (model and run)."""
    rate_per_s = 5000
    table = outcomes(run)
    unsafe = table[(table["engine"] == "postgres") & (table["safety"] == "unsafe")]
    worst = unsafe.sort_values(["lost_ms", "cut"]).iloc[-1]
    pg_bound = model.max_lost("postgres", "synchronous_commit", "off", rate_per_s)
    innodb_bound = model.max_lost("mariadb", "innodb_flush_log_at_trx_commit", "0", rate_per_s)
    wakeups = worst["lost_ms"] / 200
    return {
        "ex_rate": f"{rate_per_s:,}",
        "ex_pg_bound": f"{pg_bound:,.0f}", "ex_innodb_bound": f"{innodb_bound:,.0f}",
        "ex_cut": f"{int(worst['cut'])}",
        "ex_lost": f"{int(worst['acknowledged_lost'])}",
        "ex_lost_ms": f"{worst['lost_ms']:.0f}",
        "ex_wakeups": f"{wakeups:.1f}",
        # "... % of the manual's bound of three (600 ms)"
        "ex_of_bound": f"{worst['lost_ms'] / 600 * 100:.0f}",
    }


def acks_before_cut(run: RecordedRun, row, window_ms: float) -> int:
    """Commits the client of `row` (a row of outcomes) had acknowledged within `window_ms`
    before its cut, counted from its acknowledgement file."""
    value = row.setting.split("=", 1)[1]
    path = torn_page.leg_file(run, f"{row.engine}-{value}", row.cut, "-acks.txt")
    return torn_page.acks_in_window(path, row.cut_after_s, window_ms / 1000)


def over_count_figures(run: RecordedRun, unsafe: pd.DataFrame) -> dict[str, str]:
    """The cut that lost the most commits beyond its rate times the window (`unsafe`: the
    unsafe rows of outcomes), and the commits its client had acknowledged within that window:
    the model's rate is the client's average over its last ten seconds, not the rate of the
    window itself."""
    worst = unsafe.assign(over=unsafe["acknowledged_lost"] - unsafe["model_max_lost"]) \
        .sort_values(["over", "cut"]).iloc[-1]
    return {
        "unsafe_over_cut": f"{worst['cut']:.0f}",
        "unsafe_over_lost": f"{worst['acknowledged_lost']:.0f}",
        "unsafe_over_model": f"{worst['model_max_lost']:.0f}",
        "unsafe_over_rate": f"{worst['acks_per_second']:.0f}",
        "unsafe_over_window_ms": f"{worst['bound_ms']:,.0f}",
        "unsafe_over_in_window": f"{acks_before_cut(run, worst, worst['bound_ms'])}",
    }


def headline(run: RecordedRun) -> pd.DataFrame:
    """The run's headline measures for labs.book.compare: per database and setting, the most
    commits one cut took and the commit rate. The model here is a bound, not a forecast, so
    no model column: an 'error' against a bound would mean nothing."""
    from labs.book.compare import headline_table

    table = outcomes(run)
    rows = []
    for database, cuts in table.groupby("database", sort=False):
        rows.append({"measure": "acknowledged commits lost in one power cut (most)",
                     "config": database, "value": cuts["acknowledged_lost"].max(),
                     "unit": "count", "better": "lower", "model": None})
        rows.append({"measure": "commits per second before the cut (median)",
                     "config": database, "value": cuts["acks_per_second"].median(),
                     "unit": "tps", "better": "higher", "model": None})
    torn_legs = [(torn_page.torn_outcomes(run), "PostgreSQL")] \
        if torn_page.has_torn_legs(run) else []
    if doublewrite_page.has_doublewrite_legs(run):
        torn_legs.append((doublewrite_page.doublewrite_outcomes(run), "MariaDB (InnoDB)"))
    for legs, database in torn_legs:
        for label, cuts in legs.groupby("label", sort=False):
            rows.append({"measure": "pages damaged after recovery from a power cut (median)",
                         "config": f"{database}, {label}",
                         "value": cuts["damaged_pages"].median(), "unit": "count",
                         "better": "lower", "model": cuts["model_damaged_pages"].median()})
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
    return wrapping_table(provenance(run))


def panel() -> LabPanel:
    # needs_root: the lab VM runs from root's image cache (`sudo ... vm build` / `vm up`).
    return LabPanel(Parameters, fields=("host", "profile", "cuts", "seed"), chart=chart,
                    title="Power cuts in a lab VM", defaults={"profile": "quick"},
                    needs_root=True)
