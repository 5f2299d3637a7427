"""What the power-loss page shows: acknowledged commits lost, measured beside the model."""

from __future__ import annotations

import math

import altair as alt
import pandas as pd

from labs.book import theme  # noqa: F401  (the book's chart theme and offline renderer)
from labs.book.panel import LabPanel
from labs.book.tables import wrapping_table
from labs.power_loss import doublewrite_page, model, torn_page
from labs.power_loss.params import Parameters
from labs.records import RecordedRun, run_summary

LABELS = {"postgres": "PostgreSQL", "mariadb": "MariaDB (InnoDB)"}
ENGINE_NAMES = {"postgres": "PostgreSQL", "mariadb": "InnoDB"}


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
    within_time = (unsafe["lost_ms"] <= unsafe["bound_ms"]).all()
    within_count = (unsafe["acknowledged_lost"] <= unsafe["model_max_lost"]).all()
    figures = {
        "cuts": str(int(table["cut"].max())),
        "acked_total": f"{int(table['acknowledged'].sum()):,}",
        "safe_lost": f"{int(safe['acknowledged_lost'].sum())}",
        "safe_acked": f"{int(safe['acknowledged'].sum()):,}",
        "unsafe_lost": f"{int(unsafe['acknowledged_lost'].sum())}",
        "unsafe_acked": f"{int(unsafe['acknowledged'].sum()):,}",
        "unsafe_loss_pattern": loss_pattern(unsafe),
        "unsafe_time_sentence": (
            "Every lost commit had been acknowledged within the model's window before the cut."
            if within_time else "Some lost commits had been acknowledged earlier before the "
                                "cut than the model's window allows: the bound did not hold."),
        "unsafe_within_count": ("No cut took more than that estimate." if within_count else
                                "Not every cut stayed under that estimate."),
        "unsafe_count_note": "" if within_count else over_count_note(run, unsafe),
        "boot_s": boot_span(table["boot_s"]),
        # "in at most N s": rounded up to a tenth, so that N is never below the longest.
        "recovery_max_s": f"{math.ceil(table['recovery_s'].max() * 10) / 10:.1f}",
        "unacked_found": f"{int(table['unacknowledged_found'].sum())}",
        "unacked_where": unacked_where(table),
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
        short = int((lossy["lost_ms"] < lossy["bound_ms"] / 2).sum())
        figures[f"{engine}_short_cuts"] = (
            f"each of the {short} cuts that took commits" if short == len(lossy)
            else f"{short} of the {len(lossy)} cuts that took commits")
    return figures


def loss_pattern(unsafe: pd.DataFrame) -> str:
    """In how many cuts each unsafe database lost commits: "PostgreSQL lost commits in 2 of
    the 3 cuts, InnoDB in every cut"."""
    pieces = []
    for engine, rows in unsafe.groupby("engine", sort=False):
        lossy = int((rows["acknowledged_lost"] > 0).sum())
        pieces.append(f"{ENGINE_NAMES[engine]} " + (
            "in every cut" if lossy == len(rows) else "in no cut" if lossy == 0 else
            f"in {lossy} of the {len(rows)} cuts"))
    if all(piece.endswith("in every cut") for piece in pieces):
        return "both lost commits in every cut"
    first, *rest = pieces
    return ", ".join([first.replace(" in ", " lost commits in ", 1), *rest])


def boot_span(boot_s: pd.Series) -> str:
    """"about 23" when every boot took the same whole number of seconds, "22 to 25" if not."""
    low, high = round(boot_s.min()), round(boot_s.max())
    return f"about {low}" if low == high else f"{low} to {high}"


def unacked_where(table: pd.DataFrame) -> str:
    """Under which settings the rows nobody saw acknowledged were found."""
    found = table.groupby("safety")["unacknowledged_found"].sum()
    safe, unsafe = int(found.get("safe", 0)), int(found.get("unsafe", 0))
    if not unsafe:
        return "all of them under the safe settings"
    if not safe:
        return "all of them under the unsafe settings"
    return f"{safe} under the safe settings and {unsafe} under the unsafe ones"


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
    of_bound = f"{worst['lost_ms'] / 600 * 100:.0f} % of the manual's bound of three (600 ms)"
    return {
        "ex_rate": f"{rate_per_s:,}",
        "ex_pg_bound": f"{pg_bound:,.0f}", "ex_innodb_bound": f"{innodb_bound:,.0f}",
        "ex_cut": f"{int(worst['cut'])}",
        "ex_lost": f"{int(worst['acknowledged_lost'])}",
        "ex_lost_ms": f"{worst['lost_ms']:.0f}",
        "ex_wakeups": f"{wakeups:.1f}",
        "ex_wakeups_verdict": (f"more than one wake-up, and within the three the manual "
                               f"allows, {of_bound}" if 1 < wakeups <= 3 else
                               f"no more than one wake-up, {of_bound}" if wakeups <= 1 else
                               "more than the three wake-ups the manual allows"),
    }


def acks_before_cut(run: RecordedRun, row, window_ms: float) -> int:
    """Commits the client of `row` (a row of outcomes) had acknowledged within `window_ms`
    before its cut, counted from its acknowledgement file."""
    value = row.setting.split("=", 1)[1]
    path = torn_page.leg_file(run, f"{row.engine}-{value}", row.cut, "-acks.txt")
    return torn_page.acks_in_window(path, row.cut_after_s, window_ms / 1000)


def over_count_note(run: RecordedRun, unsafe: pd.DataFrame) -> str:
    """Why a cut lost more commits than its rate times the window: the model's rate is the
    client's average over its last ten seconds, not the rate of the window itself."""
    worst = unsafe.assign(over=unsafe["acknowledged_lost"] - unsafe["model_max_lost"]) \
        .sort_values(["over", "cut"]).iloc[-1]
    in_window = acks_before_cut(run, worst, worst["bound_ms"])
    return (f" The model's rate is the client's average over its last ten seconds: "
            f"{worst['acks_per_second']:.0f} a second for {worst['database']} in cut "
            f"{worst['cut']:.0f}. In the {worst['bound_ms']:,.0f} ms before that cut, its "
            f"client had acknowledged {in_window} commits, and the cut took "
            f"{worst['acknowledged_lost']:.0f} of them.")


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
