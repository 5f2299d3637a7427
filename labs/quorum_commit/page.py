"""What the quorum-commit page shows: commit latency per k beside the model's k-th
acknowledgement (labs/models/quorum.py), the drill's timeline and counts, the figures its
text quotes, provenance and the panel.

Pure page code: it reads recorded runs and never touches a VM.
"""

from __future__ import annotations

import altair as alt
import pandas as pd

from labs.book import number_text as nt
from labs.book.guide import quick_figures
from labs.book.panel import LabPanel
from labs.book.provenance import run_summary
from labs.book.theme import (
    MODEL_COLOR,  # (importing the theme also sets it up)
    dropdown,
    slider,
)
from labs.quorum_commit import failover_page, power_cut_page
from labs.quorum_commit import findings as found
from labs.quorum_commit.params import LAYOUTS, STANDBYS, Parameters
from labs.records import RecordedRun

EVENT_COLOR = "#D55E00"  # the drill's moments (copies lost, restarted)
LAYOUT_TEXT = {"even": "every other zone at the cross-zone delay",
               "slow-zone": "zone 2 slow"}


# --- tables ----------------------------------------------------------------------------------

def any_k(run: RecordedRun) -> pd.DataFrame:
    """The ANY k points with one client and synchronous_commit = on (and k = 0, the
    primary alone), per layout."""
    table = found.sweep(run)
    keep = (table["clients"] == 1) & (table["synchronous_commit"] == "on") & \
        table["method"].isin(["none", "ANY"])
    return table[keep].reset_index(drop=True)


def rtt_table(run: RecordedRun) -> pd.DataFrame:
    """The round trips as the page shows them: one row per standby, a column per layout."""
    table = found.rtts(run)
    rows = []
    for (standby, zone), mine in table.groupby(["standby", "zone"]):
        item = {"standby": standby, "zone": int(zone)}
        for row in mine.sort_values("layout", key=lambda c: c.map(LAYOUTS.index)).itertuples():
            item[f"{row.layout}: added (ms)"] = f"{row.added_rtt_ms:g}"
            item[f"{row.layout}: measured (ms)"] = f"{row.rtt_p50_ms:.1f}"
        rows.append(item)
    return pd.DataFrame(rows)


def sweep_table(run: RecordedRun) -> pd.DataFrame:
    """Every point of the sweep as the page shows it."""
    rows = []
    for row in found.sweep(run).to_dict("records"):
        modelled = pd.notna(row.get("model_p50_ms"))

        def shown(column: str, form: str, row=row, modelled=modelled) -> str:
            return format(row[column], form) if modelled or "latency" in column else ""

        rows.append({"layout": row["layout"], "waits for": row["point"],
                     "clients": row["clients"], "commits": row["commits"],
                     "p50 (ms)": shown("latency_p50_ms", ".1f"),
                     "model p50 (ms)": shown("model_p50_ms", ".1f"),
                     "error p50 (%)": shown("error_p50_pct", "+.0f"),
                     "p99 (ms)": shown("latency_p99_ms", ".1f"),
                     "model p99 (ms)": shown("model_p99_ms", ".1f"),
                     "error p99 (%)": shown("error_p99_pct", "+.0f")})
    return pd.DataFrame(rows)


def drill_table(run: RecordedRun) -> pd.DataFrame:
    """Per phase of the drill: standbys up, what the model says, commits acknowledged."""
    return pd.DataFrame([{"phase": p.name, "standbys up": p.standbys_up,
                          "model: commits go on": "yes" if p.model_goes_on else
                          "no (they wait)",
                          "seconds": p.seconds, "commits acknowledged": p.acknowledged,
                          "commits per second": p.rate}
                         for p in found.findings(run).phases])


def survivors_table(run: RecordedRun) -> pd.DataFrame:
    """While the commit waited: each surviving standby's replay position and what it held."""
    f = found.findings(run)
    return pd.DataFrame([{"standby": s.standby, "replay position": s.replay_lsn,
                          "acknowledged commits it holds": s.held,
                          "acknowledged": f.acknowledged_at_wait, "rows it holds": s.rows}
                         for s in f.waiting_survivors])


def timeline(run: RecordedRun) -> pd.DataFrame:
    """Commits acknowledged in each half second of the drill."""
    table = found.acks(run)
    step_s = 0.5
    end = found.events(run)["end"]
    bins = (table["seconds"] // step_s).astype(int)
    counts = bins.value_counts().reindex(range(int(end // step_s) + 1), fill_value=0)
    return pd.DataFrame({"second": counts.index * step_s,
                         "commits_per_s": counts.to_numpy() / step_s})


# --- charts ----------------------------------------------------------------------------------

def latency_chart(run: RecordedRun) -> alt.LayerChart:
    """Commit latency per k (ANY k, one client): measured p50 (bars) and p99 (ticks) beside
    the model's (lines); a control for the layout and one that picks a k to read."""
    table = any_k(run)
    table = table[table["method"] == "ANY"].assign(
        layout_text=lambda t: t["layout"].map(LAYOUT_TEXT))
    # It opens on the even layout: the text below the chart starts there.
    layout = dropdown("LAYOUT", "even", list(LAYOUTS),
                      [LAYOUT_TEXT[x] for x in LAYOUTS], label="layout")
    chosen = slider("K", 3, 1, STANDBYS, 1, label="k (ANY k)")
    base = alt.Chart(table).transform_filter("datum.layout == LAYOUT")
    x = alt.X("k:O", title="ANY k: standbys a commit waits for")
    bars = base.mark_bar(color="#0072B2").encode(
        x=x, y=alt.Y("latency_p50_ms:Q", title="commit latency (ms)"),
        opacity=alt.condition("datum.k == K", alt.value(1.0), alt.value(0.45)),
        tooltip=["point", alt.Tooltip("latency_p50_ms:Q", format=".1f", title="measured p50"),
                 alt.Tooltip("model_p50_ms:Q", format=".1f", title="model p50"),
                 alt.Tooltip("latency_p99_ms:Q", format=".1f", title="measured p99"),
                 alt.Tooltip("model_p99_ms:Q", format=".1f", title="model p99"),
                 alt.Tooltip("commits:Q", title="commits")])
    p99 = base.mark_tick(color="#0072B2", thickness=2, size=30).encode(x=x, y="latency_p99_ms:Q")
    model = base.mark_line(color=MODEL_COLOR, point=True, strokeDash=[5, 3]).encode(
        x=x, y="model_p50_ms:Q")
    # The chosen k's numbers, in the top left corner (over the short bars of small k).
    label = base.transform_filter("datum.k == K").mark_text(
        align="left", baseline="top", fontSize=12).encode(
        x=alt.value(6), y=alt.value(4), text=alt.Text("label:N")).transform_calculate(
        label="'ANY ' + datum.k + ': measured ' + format(datum.latency_p50_ms, '.1f') + "
              "' ms, model ' + format(datum.model_p50_ms, '.1f') + ' ms (p50)'")
    return (bars + p99 + model + label).add_params(layout, chosen).properties(
        width=460, height=280,
        title="Commit latency under ANY k: measured p50 (bars), p99 (ticks), model p50 "
              "(dashed)")


def timeline_chart(run: RecordedRun) -> alt.LayerChart:
    """Commits per second through the drill, with the moments copies were lost and back."""
    table = timeline(run)
    marks = found.events(run)
    rules = pd.DataFrame([{"second": marks[f"{phase} starts"], "event": text}
                          for phase, text in (("zone lost", "zone lost"),
                                              ("zone + 1 lost", "one more copy lost"),
                                              ("back", "copies restarted"))])
    line = alt.Chart(table).mark_area(color="#0072B2", opacity=0.7,
                                      interpolate="step-after").encode(
        x=alt.X("second:Q", title="seconds into the drill"),
        y=alt.Y("commits_per_s:Q", title="commits acknowledged per second"))
    rule = alt.Chart(rules).mark_rule(color=EVENT_COLOR, strokeDash=[4, 3]).encode(
        x="second:Q")
    text = alt.Chart(rules).mark_text(align="left", dx=4, dy=-4, baseline="top",
                                      color=EVENT_COLOR, angle=0).encode(
        x="second:Q", y=alt.value(0), text="event:N")
    return (line + rule + text).properties(
        width=560, height=220, title="The drill: commits acknowledged per second (ANY "
                                     f"{found.findings(run).drill_k})")


def chart(run: RecordedRun) -> alt.LayerChart:
    return latency_chart(run)


# --- figures for the text --------------------------------------------------------------------

def power_cuts_alone(run: RecordedRun) -> bool:
    """A run of the power cuts alone (`--part power-cut`): no sweep, no drill."""
    return Parameters.of(run).part == "power-cut"


def figures(run: RecordedRun) -> dict[str, str]:
    """Every number the page quotes: this run's (its failover's prefixed fo_), and its
    power-cut section's (prefixed pc_, from the companion run named by SHIPPED-power-cut,
    when it is here)."""
    if power_cuts_alone(run):
        return power_cut_page.figures(run)
    companion = power_cut_page.companion_run()
    return {**sweep_and_drill_figures(run), **failover_page.figures(run),
            **(power_cut_page.figures(companion) if companion else {})}


def sweep_and_drill_figures(run: RecordedRun) -> dict[str, str]:
    """Every number the sweep's and the drill's sections quote, from the findings."""
    f = found.findings(run)
    return {**_run_figures(f), **_sweep_figures(f), **_verdict_figures(f),
            **_drill_figures(f)}


def _ms(value: float) -> str:
    return nt.number(value, 1)


def _pct(value: float, signed: bool = False) -> str:
    return nt.number(value, 0, signed=signed)


def _run_figures(f: found.Findings) -> dict[str, str]:
    """The run's wall time, the standbys' flush, the links and the set-up's steps."""
    return {"wall_time_min": nt.number(f.wall_time_s / 60, 1),
            "quick_minutes": quick_figures()["quick_quorum_commit_min"],  # quick-runs.csv
            "flush_p50_ms": _ms(f.flush_p50_ms),
            "flush_p99_ms": _ms(f.flush_p99_ms),
            "base_rtt_max_ms": _ms(f.base_rtt_max_ms),
            "setup_primary_s": nt.number(f.setup_primary_s, 0),
            "setup_base_backups_s": nt.number(f.setup_base_backups_s, 0),
            "setup_standbys_s": nt.number(f.setup_standbys_s, 0)}


def _sweep_figures(f: found.Findings) -> dict[str, str]:
    """The points the text quotes, each by name."""
    even, slow = "even", "slow-zone"
    return {"even_none0_p50": _ms(f.point(even, "no standby").p50_ms),
            "even_none0_p99": _ms(f.point(even, "no standby").p99_ms),
            "even_any1_p50": _ms(f.point(even, "ANY 1").p50_ms),
            "even_any2_p50": _ms(f.point(even, "ANY 2").p50_ms),
            "even_any3_p50": _ms(f.point(even, "ANY 3").p50_ms),
            "even_any5_p50": _ms(f.point(even, "ANY 5").p50_ms),
            "even_any3_apply_p50": _ms(f.point(even, "ANY 3, remote_apply").p50_ms),
            "even_any3_multi_p50": _ms(f.point(even, "ANY 3", clients=4).p50_ms),
            "even_any3_commits": nt.count(f.point(even, "ANY 3").commits),
            "even_any3_multi_commits": nt.count(f.point(even, "ANY 3", clients=4).commits),
            "slow_zone_none0_p50": _ms(f.point(slow, "no standby").p50_ms),
            "slow_zone_any2_p50": _ms(f.point(slow, "ANY 2").p50_ms),
            "slow_zone_any2_model_p50": _ms(f.point(slow, "ANY 2").model_p50_ms),
            "slow_zone_any3_p50": _ms(f.point(slow, "ANY 3").p50_ms),
            "slow_zone_any4_p50": _ms(f.point(slow, "ANY 4").p50_ms),
            "slow_zone_any5_p50": _ms(f.point(slow, "ANY 5").p50_ms),
            "slow_zone_first3_p50": _ms(f.point(slow, "FIRST 3").p50_ms),
            "slow_zone_any3_apply_p50": _ms(f.point(slow, "ANY 3, remote_apply").p50_ms),
            "slow_any3_rise_pct": _pct(100 * f.slow_zone_rise("ANY 3")[0]),
            "slow_any3_model_rise_pct": _pct(100 * f.slow_zone_rise("ANY 3")[1]),
            "slow_any4_rise_pct": _pct(100 * f.slow_zone_rise("ANY 4")[0]),
            "ex_any2_rtt_ms": _ms(f.exercise_any2_rtt_ms),
            "ex_any2_sum_ms": _ms(f.exercise_any2_sum_ms)}


def _verdict_figures(f: found.Findings) -> dict[str, str]:
    """How close the model came: at the median, and in the tails."""
    least, most = f.one_client_errors_pct
    fewest, most_commits = f.p99_commits
    return {"points_with_model": nt.count(len(f.modelled)),
            "points_within_10": nt.count(f.within),
            "max_abs_error_p50_pct": _pct(abs(f.worst.error_p50_pct)),
            "one_err_min_pct": _pct(least, signed=True),
            "one_err_max_pct": _pct(most, signed=True),
            "p99_too_low": nt.count(f.p99_too_low),
            "p99_worst_pct": _pct(f.p99_worst_pct()),
            "p99_worst_one_client_pct": _pct(f.p99_worst_pct(one_client=True)),
            "p99_commits_min": nt.count(fewest),
            "p99_commits_max": nt.count(most_commits),
            # 1 % of a point's commits lie above its p99
            "p99_tail_min": nt.count(fewest / 100),
            "p99_tail_max": nt.count(most_commits / 100)}


def _drill_figures(f: found.Findings) -> dict[str, str]:
    """The drill: its phases' rates, the commit that waited, the way back, the end."""
    return {"drill_all_up_rate": nt.number(f.phase("all up").rate, 0),
            "drill_zone_lost_rate": nt.number(f.phase("zone lost").rate, 0),
            "drill_phases_acked": nt.count(f.phases_acknowledged),
            "drill_acked_before_phases": nt.count(f.acked_before_phases),
            "drill_acked_after_end": nt.count(f.acked_after_end),
            "syncrep_waiters": nt.count(f.syncrep_waiters),
            "syncrep_wait_s": nt.number(f.syncrep_wait_s, 1),
            "acked_at_wait": nt.count(f.acknowledged_at_wait),
            "primary_rows_at_wait": nt.count(f.primary_rows_at_wait),
            "survivor_rows_max": nt.count(f.survivor_rows_max),
            "restarted_after_s": nt.number(f.restarted_after_s, 1),
            "resumed_after_s": nt.number(f.resumed_after_s, 1),
            "stall_s": nt.number(f.stall_s, 1),
            "caught_up_after_s": nt.number(f.caught_up_after_s, 1),
            "end_acked": nt.count(f.end_acknowledged),
            "end_copies_holding_all": nt.count(f.end_copies_holding_all)}


# --- provenance, panel, headline -------------------------------------------------------------

def provenance(run: RecordedRun) -> pd.DataFrame:
    return run_summary(run)


def panel() -> LabPanel:
    # needs_root: the lab VM runs from root's image cache (`sudo ... vm build` / `vm up`).
    return LabPanel(Parameters, fields=("host", "profile", "quorum", "slow_zone_ms"),
                    chart=chart, title="Quorum commit over six PostgreSQL copies in a lab VM",
                    defaults={"profile": "quick"}, needs_root=True)


def headline(run: RecordedRun) -> pd.DataFrame:
    """Commit latency p50 per point, beside the model's k-th acknowledgement."""
    from labs.book.compare import headline_table

    if power_cuts_alone(run):
        return power_cut_page.headline(run)
    rows = [{"measure": "commit latency p50", "config": f"{row['layout']}, {row['point']}, "
                                                       f"{row['clients']} client(s)",
             "value": row["latency_p50_ms"], "unit": "ms", "better": "lower",
             "model": row.get("model_p50_ms")}
            for row in found.sweep(run).to_dict("records")]
    return headline_table(rows)
