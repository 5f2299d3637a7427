"""What the power-loss page shows: acknowledged commits lost, measured beside the model."""

from __future__ import annotations

import math
from typing import NamedTuple

import altair as alt
import pandas as pd

from labs.book import number_text as nt
from labs.book.panel import LabPanel
from labs.book.provenance import run_summary
from labs.book.tables import wrapping_table
from labs.book.theme import MODEL_COLOR  # (importing the theme also sets it up)
from labs.power_loss import doublewrite_page, model, torn_page
from labs.power_loss import findings as found
from labs.power_loss.params import TORN_ROWS, Parameters
from labs.records import RecordedRun

LABELS = {"postgres": "PostgreSQL", "mariadb": "MariaDB (InnoDB)"}
EXERCISE_RATE_PER_S = 5000  # an exercise: a busy server's commit rate


def outcomes(run: RecordedRun) -> pd.DataFrame:
    """One row per database and power cut: acknowledged, lost, the model's bounds, and the
    database's name as the page shows it."""
    table = found.outcomes(run)
    table["database"] = table["engine"].map(LABELS) + ", " + table["setting"]
    return table


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
    """Every number the page quotes: the commit servers' findings, formatted, and the
    torn-page and doublewrite sections' figures."""
    f = found.findings(run)
    return {**run_figures(f), **engine_figures(f), **over_count_figures(f),
            **exercise_figures(f), **(torn_figures(f.torn) if f.torn else {}),
            **(doublewrite_figures(f.doublewrite) if f.doublewrite else {})}


def run_figures(f: found.Findings) -> dict[str, str]:
    return {
        "cuts": nt.count(f.cut_count),
        "acked_total": nt.count(f.acknowledged("safe") + f.acknowledged("unsafe")),
        "safe_lost": nt.count(f.lost("safe")),
        "safe_acked": nt.count(f.acknowledged("safe")),
        "unsafe_lost": nt.count(f.lost("unsafe")),
        "unsafe_acked": nt.count(f.acknowledged("unsafe")),
        # "about N s": the shortest boot, rounded (a claim test checks every boot rounds so)
        "boot_s": nt.count(min(f.boot_s)),
        # "in at most N s": rounded up to a tenth, so that N is never below the longest.
        "recovery_max_s": nt.number(math.ceil(f.longest_recovery_s * 10) / 10, 1),
        "unacked_found": nt.count(f.unacknowledged_found()),
        "unsafe_lost_max": nt.count(max(c.lost for c in f.of("unsafe"))),
    }


def torn_figures(torn: found.TornLegs) -> dict[str, str]:
    """Every number the torn-page section quotes."""
    safe, unsafe = torn.of("safe"), torn.of("unsafe")
    return {
        **torn_page.exercise_figures(torn.median_rate("unsafe")),
        "torn_cuts": nt.count(len(unsafe)),
        "torn_hold_ms": nt.count(torn.hold_ms),
        "torn_rows": nt.count(TORN_ROWS),
        "torn_safe_damaged": nt.count(sum(c.damaged_pages for c in safe)),
        "torn_safe_lost": nt.count(sum(c.lost for c in safe)),
        # the cut whose log the page quotes: the first where recovery stopped
        "torn_fatal_cut": nt.count(torn.first_failed_cut),
        "torn_unsafe_damaged_min": nt.count(min(c.damaged_pages for c in unsafe)),
        "torn_unsafe_damaged_max": nt.count(max(c.damaged_pages for c in unsafe)),
        "torn_unsafe_lost": nt.count(sum(c.lost for c in unsafe)),
        "torn_unsafe_updated": nt.count(sum(c.rows_updated for c in unsafe)),
        "torn_model_total": nt.count(torn.model_total),
        "torn_damaged_total": nt.count(torn.damaged_total),
        "torn_model_error": nt.percent(torn.model_error, signed=True),
        "torn_hold_total": nt.count(torn.hold_total),
        "torn_hold_error": nt.percent(torn.hold_error, signed=True),
        "torn_hold_apart": nt.count(torn.hold_apart),
        "torn_safe_rate": nt.count(torn.median_rate("safe")),
        "torn_unsafe_rate": nt.count(torn.median_rate("unsafe")),
    }


def doublewrite_figures(dw: found.DoublewriteLegs) -> dict[str, str]:
    """Every number the doublewrite section quotes."""
    safe, unsafe = dw.of("safe"), dw.of("unsafe")

    def fewest(cuts: list[found.DoublewriteCut], name: str) -> str:
        return nt.count(min(getattr(c, name) for c in cuts))

    def most(cuts: list[found.DoublewriteCut], name: str) -> str:
        return nt.count(max(getattr(c, name) for c in cuts))

    return {
        "dw_cuts": nt.count(len(unsafe)),
        "dw_safe_torn_min": fewest(safe, "torn_pages"),
        "dw_safe_torn_max": most(safe, "torn_pages"),
        "dw_safe_torn_total": nt.count(sum(c.torn_pages for c in safe)),
        "dw_safe_damaged": nt.count(sum(c.damaged_pages for c in safe)),
        "dw_safe_lost": nt.count(sum(c.lost for c in safe)),
        "dw_unsafe_torn_min": fewest(unsafe, "torn_pages"),
        "dw_unsafe_torn_max": most(unsafe, "torn_pages"),
        "dw_unsafe_torn_total": nt.count(sum(c.torn_pages for c in unsafe)),
        # the cut whose log the page quotes: the first where recovery failed
        "dw_unsafe_quote_cut": nt.count(dw.first_failed_cut),
        "dw_unsafe_unreadable_min": fewest(unsafe, "rows_unreadable"),
        "dw_unsafe_unreadable_max": most(unsafe, "rows_unreadable"),
        "dw_unsafe_run_length": nt.count(dw.unreadable_run_length),
        "dw_unsafe_rows_per_page": nt.number(dw.rows_per_damaged_page, 1),
        "dw_unsafe_lost": nt.count(sum(c.lost for c in unsafe)),
        "dw_unsafe_updated": nt.count(sum(c.rows_updated for c in unsafe)),
        "dw_unsafe_damaged": nt.count(sum(c.damaged_pages for c in unsafe)),
        "dw_model_total": nt.count(dw.model_total),
        "dw_torn_total": nt.count(dw.torn_total),
        "dw_model_error": nt.percent(dw.model_error, signed=True),
        "dw_hold_updates": nt.count(dw.hold_total),
        # "... % fewer than that count"
        "dw_hold_error": nt.count(100 * abs(dw.hold_error)),
        "dw_hold_apart": nt.count(dw.hold_apart),
        # One decimal: the gap is of the unrounded medians, and whole numbers would not show it.
        "dw_safe_rate": nt.number(dw.median_rate("safe"), 1),
        "dw_unsafe_rate": nt.number(dw.median_rate("unsafe"), 1),
        "dw_rate_gap": nt.count(100 * dw.rate_gap),
    }


class EngineFigures(NamedTuple):
    """One engine's figures as the page prints them."""

    safe_rate: str
    unsafe_rate: str
    speedup: str  # the unsafe setting's commit rate over the safe one's
    lost_ms_min: str  # lost commits' ages, over the cuts that took something
    lost_ms_max: str
    bound_ms: str  # the model's bound on that age
    lossy_cuts: str  # cuts that lost anything


def _engine_figures(f: found.Findings, engine: str) -> EngineFigures:
    # Over the cuts that took something: a cut that lost nothing has no oldest loss.
    lossy = f.lossy(engine)
    return EngineFigures(
        safe_rate=nt.count(f.rate(engine, "safe")), unsafe_rate=nt.count(f.rate(engine, "unsafe")),
        speedup=nt.number(f.speedup(engine), 1),
        lost_ms_min=nt.count(min(c.lost_ms for c in lossy)),
        lost_ms_max=nt.count(max(c.lost_ms for c in lossy)),
        bound_ms=nt.count(max(c.bound_ms for c in f.of("unsafe", engine))),
        lossy_cuts=nt.count(len(lossy)))


def engine_figures(f: found.Findings) -> dict[str, str]:
    """Per engine: its commit rates, the unsafe setting's speed-up, its lost commits' ages."""
    pg, maria = _engine_figures(f, "postgres"), _engine_figures(f, "mariadb")
    return {
        "postgres_safe_rate": pg.safe_rate, "postgres_unsafe_rate": pg.unsafe_rate,
        "postgres_speedup": pg.speedup, "postgres_lost_ms_min": pg.lost_ms_min,
        "postgres_lost_ms_max": pg.lost_ms_max, "postgres_bound_ms": pg.bound_ms,
        "postgres_lossy_cuts": pg.lossy_cuts,
        "mariadb_safe_rate": maria.safe_rate, "mariadb_unsafe_rate": maria.unsafe_rate,
        "mariadb_speedup": maria.speedup, "mariadb_lost_ms_min": maria.lost_ms_min,
        "mariadb_lost_ms_max": maria.lost_ms_max, "mariadb_bound_ms": maria.bound_ms,
        "mariadb_lossy_cuts": maria.lossy_cuts,
    }


def chart(run: RecordedRun) -> alt.LayerChart:
    """Per database: how long before the cut its oldest lost commit had been acknowledged
    (a point per cut, its shape the cut), beside the model's bound (a black tick, the same
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
    bound = alt.Chart(bounds).mark_tick(thickness=2, size=30, color=MODEL_COLOR).encode(
        y=y, x="bound_ms:Q",
        tooltip=["database:N", alt.Tooltip("bound_ms:Q", title="model: at most (ms)")])
    return alt.layer(bound, measured).properties(
        width=300, height=alt.Step(44),
        title=["Lost commits: how long before the cut they were acknowledged",
               "(points, one per cut) and the model's bound (black ticks)"])


def exercise_figures(f: found.Findings) -> dict[str, str]:
    """The numbers the exercises ask about and their solutions (model and run)."""
    worst = f.postgres_oldest_loss
    return {
        "ex_rate": nt.count(EXERCISE_RATE_PER_S),
        "ex_pg_bound": nt.count(model.max_lost("postgres", "synchronous_commit", "off",
                                               EXERCISE_RATE_PER_S)),
        "ex_innodb_bound": nt.count(model.max_lost("mariadb", "innodb_flush_log_at_trx_commit",
                                                   "0", EXERCISE_RATE_PER_S)),
        "ex_cut": nt.count(worst.cut),
        "ex_lost": nt.count(worst.lost),
        "ex_lost_ms": nt.count(worst.lost_ms),
        "ex_wakeups": nt.number(f.postgres_oldest_loss_wakeups, 1),
        # "... % of the manual's bound of three (600 ms)"
        "ex_of_bound": nt.count(100 * f.postgres_oldest_loss_share_of_manual),
    }


def over_count_figures(f: found.Findings) -> dict[str, str]:
    """The cut that lost the most commits beyond its rate times the window, and the commits
    its client had acknowledged within that window: the model's rate is the client's average
    over its last ten seconds, not the rate of the window itself."""
    worst = f.furthest_over_estimate
    return {
        "unsafe_over_cut": nt.count(worst.cut),
        "unsafe_over_lost": nt.count(worst.lost),
        "unsafe_over_model": nt.count(worst.model_most_lost),
        "unsafe_over_rate": nt.count(worst.acks_per_s),
        "unsafe_over_window_ms": nt.count(worst.bound_ms),
        "unsafe_over_in_window": nt.count(f.over_cut_acked_in_window),
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
