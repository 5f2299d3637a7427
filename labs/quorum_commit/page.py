"""What the quorum-commit page shows: commit latency per k beside the model's k-th
acknowledgement (labs/models/quorum.py), the drill's timeline and counts, the figures its
text quotes, provenance and the panel.

Pure page code: it reads recorded runs and never touches a VM.
"""

from __future__ import annotations

import json

import altair as alt
import pandas as pd

from labs.book import theme  # noqa: F401  (the book's chart theme and offline renderer)
from labs.book.guide import quick_figures
from labs.book.panel import LabPanel
from labs.book.provenance import run_summary
from labs.book.theme import dropdown, slider
from labs.quorum_commit import failover_page, power_cut_page
from labs.quorum_commit.params import LAYOUTS, STANDBYS, Parameters
from labs.records import RecordedRun

MODEL_COLOR = "#D55E00"
LAYOUT_TEXT = {"even": "every other zone at the cross-zone delay",
               "slow-zone": "zone 2 slow"}
PHASES = ("all up", "zone lost", "zone + 1 lost", "back")


# --- tables ----------------------------------------------------------------------------------

def sweep(run: RecordedRun) -> pd.DataFrame:
    """One row per (layout, point): measured p50/p99 and mean, commits, the model, error."""
    results = run.results
    rows = results[results["config"].isin(LAYOUTS) & (results["workload"] != "ping")]
    table = rows.pivot_table(index=["layout", "workload", "method", "k", "clients",
                                    "synchronous_commit"],
                             columns="metric", values="value").reset_index()
    table = table.rename(columns={"workload": "point"})
    for column in ("k", "clients", "commits", "failed"):
        table[column] = table[column].astype(int)
    table["error_p50_pct"] = 100 * (table["model_p50_ms"] - table["latency_p50_ms"]) \
        / table["latency_p50_ms"]
    table["error_p99_pct"] = 100 * (table["model_p99_ms"] - table["latency_p99_ms"]) \
        / table["latency_p99_ms"]
    # The sweep's own order: the primary alone, ANY 1..5, FIRST k, remote_apply, clients.
    table["order"] = table.apply(lambda r: (
        0 if r["method"] == "none" else 2 if r["method"] == "FIRST"
        else 3 if r["synchronous_commit"] != "on" else 4 if r["clients"] > 1 else 1,
        r["k"]), axis=1)
    table["layout_order"] = table["layout"].map(LAYOUTS.index)
    return table.sort_values(["layout_order", "order"]).drop(
        columns=["order", "layout_order"]).reset_index(drop=True)


def any_k(run: RecordedRun) -> pd.DataFrame:
    """The ANY k points with one client and synchronous_commit = on (and k = 0, the
    primary alone), per layout."""
    table = sweep(run)
    keep = (table["clients"] == 1) & (table["synchronous_commit"] == "on") & \
        table["method"].isin(["none", "ANY"])
    return table[keep].reset_index(drop=True)


def rtts(run: RecordedRun) -> pd.DataFrame:
    """The measured round trip to each standby in each layout, beside what netem added."""
    results = run.results
    ping = results[(results["workload"] == "ping")]
    table = ping.pivot_table(index=["config", "standby", "zone", "added_rtt_ms"],
                             columns="metric", values="value").reset_index()
    table = table.rename(columns={"config": "layout"})
    table["zone"] = table["zone"].astype(int)
    table["base_ms"] = table["rtt_p50_ms"] - table["added_rtt_ms"]
    return table


def rtt_table(run: RecordedRun) -> pd.DataFrame:
    """The round trips as the page shows them: one row per standby, a column per layout."""
    table = rtts(run)
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
    for row in sweep(run).to_dict("records"):
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


def drill(run: RecordedRun) -> pd.DataFrame:
    """Per phase of the drill: standbys up, what the model says, commits acknowledged."""
    results = run.results
    rows = results[results["config"] == "drill"]
    out = []
    for phase in PHASES:
        mine = rows[rows["workload"] == phase]
        model = mine[mine["metric"] == "model_commits_go_on"].iloc[0]
        acked = mine[mine["metric"] == "commits_acknowledged"].iloc[0]
        rate = mine[mine["metric"] == "commits_per_s"].iloc[0]
        out.append({"phase": phase, "standbys up": int(model["standbys_up"]),
                    "model: commits go on": "yes" if model["value"] else "no (they wait)",
                    "seconds": float(acked["seconds"]),
                    "commits acknowledged": int(acked["value"]),
                    "commits per second": float(rate["value"])})
    return pd.DataFrame(out)


def survivors(run: RecordedRun) -> pd.DataFrame:
    """While the commit waited: each surviving standby's replay position and what it held."""
    results = run.results
    rows = results[(results["config"] == "drill") & (results["workload"] == "zone + 1 lost")]
    found = rows[rows["metric"] == "acknowledged_found"]
    held = rows[rows["metric"] == "rows_found"].set_index("standby")["value"]
    return pd.DataFrame([{"standby": r["standby"], "replay position": r["replay_lsn"],
                          "acknowledged commits it holds": int(r["value"]),
                          "acknowledged": int(r["acknowledged"]),
                          "rows it holds": int(held[r["standby"]])}
                         for r in found.to_dict("records")])


def acks(run: RecordedRun) -> pd.DataFrame:
    return pd.read_csv(run.raw_dir / "drill" / "acks.csv")


def events(run: RecordedRun) -> dict[str, float]:
    return json.loads((run.raw_dir / "drill" / "events.json").read_text())


def timeline(run: RecordedRun) -> pd.DataFrame:
    """Commits acknowledged in each half second of the drill."""
    table = acks(run)
    step_s = 0.5
    end = events(run)["end"]
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
    marks = events(run)
    rules = pd.DataFrame([{"second": marks[f"{phase} starts"], "event": text}
                          for phase, text in (("zone lost", "zone lost"),
                                              ("zone + 1 lost", "one more copy lost"),
                                              ("back", "copies restarted"))])
    line = alt.Chart(table).mark_area(color="#0072B2", opacity=0.7,
                                      interpolate="step-after").encode(
        x=alt.X("second:Q", title="seconds into the drill"),
        y=alt.Y("commits_per_s:Q", title="commits acknowledged per second"))
    rule = alt.Chart(rules).mark_rule(color=MODEL_COLOR, strokeDash=[4, 3]).encode(
        x="second:Q")
    text = alt.Chart(rules).mark_text(align="left", dx=4, dy=-4, baseline="top",
                                      color=MODEL_COLOR, angle=0).encode(
        x="second:Q", y=alt.value(0), text="event:N")
    return (line + rule + text).properties(
        width=560, height=220, title="The drill: commits acknowledged per second (ANY "
                                     f"{int(drill_k(run))})")


def first_ack_after(run: RecordedRun, moment_s: float) -> float:
    """Seconds from `moment_s` to the first acknowledgement after it."""
    times = acks(run)["seconds"]
    return float(times[times > moment_s].min() - moment_s)


def longest_gap_s(run: RecordedRun) -> float:
    """The longest time between two acknowledgements in a row (the stall)."""
    return float(acks(run)["seconds"].diff().max())


def drill_k(run: RecordedRun) -> int:
    results = run.results
    return int(results[results["metric"] == "model_commits_go_on"]["k"].iloc[0])


def chart(run: RecordedRun) -> alt.LayerChart:
    return latency_chart(run)


# --- figures for the text --------------------------------------------------------------------

def figures(run: RecordedRun) -> dict[str, str]:
    """Every number the page quotes: this run's (its failover's prefixed fo_), and its
    power-cut section's (prefixed pc_, from the companion run named by SHIPPED-power-cut,
    when it is here)."""
    if run.meta["parameters"].get("part") == "power-cut":  # the power cuts alone
        return power_cut_page.figures(run)
    companion = power_cut_page.companion_run()
    return {**sweep_and_drill_figures(run), **failover_page.figures(run),
            **(power_cut_page.figures(companion) if companion else {})}


def sweep_and_drill_figures(run: RecordedRun) -> dict[str, str]:
    results = run.results
    value = results.set_index(["config", "workload", "metric"])["value"]
    table = sweep(run)
    ping = rtts(run)
    phases = drill(run).set_index("phase")
    held = survivors(run)
    marks = events(run)
    out = _overall_figures(run, value, table, ping)
    out.update(_sweep_point_figures(table))
    out.update(comparisons(run, table, ping))
    out.update(_rtt_figures(ping))
    out.update(_phase_figures(phases))
    out.update(_wait_figures(run, results, value, held, marks))
    out.update(_end_figures(results))
    out.update(drill_outside_phases(run))
    out.update(p99_sample_sizes(table))
    return out


def _overall_figures(run: RecordedRun, value: pd.Series, table: pd.DataFrame,
                     ping: pd.DataFrame) -> dict[str, str]:
    """The run's wall time, the disk's flush, the sweep's error counts and the set-up times."""
    out = {"wall_time_min": f"{value[('lab', 'all', 'wall_time')] / 60:.1f}",
           "flush_p50_ms": f"{value[('flush', 'fio 8k write+fdatasync', 'p50_ms')]:.1f}",
           "flush_p99_ms": f"{value[('flush', 'fio 8k write+fdatasync', 'p99_ms')]:.1f}",
           "points": str(len(table)),
           "points_with_model": str(int(table["model_p50_ms"].notna().sum())),
           "points_within_10": str(int((table["error_p50_pct"].abs() <= 10).sum())),
           "max_abs_error_p50_pct": f"{table['error_p50_pct'].abs().max():.0f}",
           "p99_too_low": str(int((table["error_p99_pct"] < 0).sum())),
           "p99_worst_pct": f"{-table['error_p99_pct'].min():.0f}",
           "p99_worst_one_client_pct":
               f"{-table[table['clients'] == 1]['error_p99_pct'].min():.0f}",
           "base_rtt_max_ms": f"{ping['base_ms'].max():.1f}",
           "k": str(drill_k(run)),
           "quick_minutes": quick_figures()["quick_quorum_commit_min"]}  # quick-runs.csv
    for part in ("namespaces", "primary", "base_backups", "standbys"):
        out[f"setup_{part}_s"] = f"{value[('copies', 'set-up', f'{part}_s')]:.0f}"
    return out


def _sweep_point_figures(table: pd.DataFrame) -> dict[str, str]:
    """Each point's latencies, model and error, keyed like even_any3_p50."""
    out = {}
    for row in table.to_dict("records"):
        key = (f"{row['layout'].replace('-', '_')}_{row['method'].lower()}{row['k']}"
               f"{'' if row['synchronous_commit'] == 'on' else '_apply'}"
               f"{'' if row['clients'] == 1 else '_multi'}")
        for metric in ("latency_p50_ms", "latency_p99_ms", "model_p50_ms", "model_p99_ms",
                       "error_p50_pct"):
            if pd.notna(row.get(metric)):
                out[f"{key}_{metric.removesuffix('_ms').replace('latency_', '')}"] = \
                    f"{row[metric]:.0f}" if metric.startswith("error") else f"{row[metric]:.1f}"
        out[f"{key}_commits"] = str(row["commits"])
    return out


def _rtt_figures(ping: pd.DataFrame) -> dict[str, str]:
    return {f"{row['layout'].replace('-', '_')}_{row['standby']}_rtt": f"{row['rtt_p50_ms']:.1f}"
            for row in ping.to_dict("records")}


def _phase_figures(phases: pd.DataFrame) -> dict[str, str]:
    out = {}
    for phase, row in phases.iterrows():
        key = phase.replace(" + ", "_plus_").replace(" ", "_")
        out[f"drill_{key}_acked"] = str(row["commits acknowledged"])
        out[f"drill_{key}_rate"] = f"{row['commits per second']:.0f}"
        out[f"drill_{key}_s"] = f"{row['seconds']:.1f}"
    return out


def _wait_figures(run: RecordedRun, results: pd.DataFrame, value: pd.Series,
                  held: pd.DataFrame, marks: dict[str, float]) -> dict[str, str]:
    """The commit that waited once a zone and one more copy were lost, and the way back."""
    wait = results[(results["config"] == "drill") & (results["workload"] == "zone + 1 lost")]
    by_metric = wait.drop_duplicates("metric").set_index("metric")["value"]
    acknowledged = int(held["acknowledged"].iloc[0])
    return {
        "syncrep_waiters": str(int(by_metric["syncrep_waiters"])),
        "syncrep_wait_s": f"{by_metric['syncrep_wait_s']:.1f}",
        "acked_at_wait": str(acknowledged),
        "primary_rows_at_wait": str(int(by_metric["primary_rows"])),
        "survivors": " and ".join(held["standby"]),
        "survivor_rows_max": str(int(held["rows it holds"].max())),
        "survivors_holding_all": str(int((held["acknowledged commits it holds"]
                                          == acknowledged).sum())),
        "newest_survivor_found": str(int(by_metric["newest_survivor_acknowledged_found"])),
        "restarted_after_s": f"{value[('drill', 'back', 'restarted_after_s')]:.1f}",
        # From the acknowledgements themselves (the lab only looks once all are started).
        "resumed_after_s": f"{first_ack_after(run, marks['back starts']):.1f}",
        "stall_s": f"{longest_gap_s(run):.1f}",
        "caught_up_after_s": f"{value[('drill', 'back', 'caught_up_after_s')]:.1f}",
        "drill_s": f"{marks['end']:.0f}",
    }


def _end_figures(results: pd.DataFrame) -> dict[str, str]:
    """What every copy held at the drill's end."""
    end = results[(results["config"] == "drill") & (results["workload"] == "end")]
    return {"end_acked": str(int(end["acknowledged"].iloc[0])),
            "end_copies_holding_all": str(int((end["value"] == end["acknowledged"]).sum()))}


def drill_outside_phases(run: RecordedRun) -> dict[str, str]:
    """The drill's phases count the acknowledgements from the first phase's start to the
    drill's end mark; the rest came before that start or after that end."""
    times = acks(run)["seconds"]
    marks = events(run)
    first = min(t for name, t in marks.items() if name.endswith("starts"))
    return {"drill_phases_acked": str(int(drill(run)["commits acknowledged"].sum())),
            "drill_acked_before_phases": str(int((times < first).sum())),
            "drill_acked_after_end": str(int((times >= marks["end"]).sum()))}


def p99_sample_sizes(table: pd.DataFrame) -> dict[str, str]:
    """How many commits each 99th percentile with a model rests on: the fewest and the most,
    and how many commits lie above the p99 at each (1 % of them)."""
    commits = table[table["model_p50_ms"].notna()]["commits"]
    if commits.empty:  # a run whose sweep has no modelled point (none of the profiles)
        commits = pd.Series([0])
    return {"p99_commits_min": str(int(commits.min())),
            "p99_commits_max": str(int(commits.max())),
            "p99_tail_min": f"{commits.min() / 100:.0f}",
            "p99_tail_max": f"{commits.max() / 100:.0f}"}


def comparisons(run: RecordedRun, table: pd.DataFrame, ping: pd.DataFrame) -> dict[str, str]:
    """The figures the text compares: the slow zone's effect at k and k + 1, measured and
    modelled, the one-client points' errors, the first exercise's sum."""
    one = table[table["clients"] == 1]
    p50 = {(r["layout"], r["point"]): r["latency_p50_ms"] for r in one.to_dict("records")}
    model = {(r["layout"], r["point"]): r["model_p50_ms"] for r in one.to_dict("records")}
    k = drill_k(run)
    out = {}
    for name, point in (("any3", f"ANY {k}"), ("any4", f"ANY {k + 1}")):
        if ("even", point) in p50:  # (a run may sweep only some k: the ci profile)
            rise = p50[("slow-zone", point)] / p50[("even", point)] - 1
            out[f"slow_{name}_rise_pct"] = f"{100 * rise:.0f}"
            model_rise = model[("slow-zone", point)] / model[("even", point)] - 1
            out[f"slow_{name}_model_rise_pct"] = f"{100 * model_rise:.0f}"
    errors = one[one["model_p50_ms"].notna()]["error_p50_pct"]
    out["one_err_min_pct"] = f"{errors.min():+.0f}"
    out["one_err_max_pct"] = f"{errors.max():+.0f}"
    second = sorted(ping[ping["layout"] == "slow-zone"]["rtt_p50_ms"])[1]
    flush = run.results.set_index(["config", "metric"])["value"][("flush", "p50_ms")]
    out["ex_any2_rtt_ms"] = f"{second:.1f}"
    out["ex_any2_sum_ms"] = f"{p50[('slow-zone', 'no standby')] + second + flush:.1f}"
    return out


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

    if run.meta["parameters"].get("part") == "power-cut":  # the power cuts alone
        return power_cut_page.headline(run)
    rows = [{"measure": "commit latency p50", "config": f"{row['layout']}, {row['point']}, "
                                                       f"{row['clients']} client(s)",
             "value": row["latency_p50_ms"], "unit": "ms", "better": "lower",
             "model": row.get("model_p50_ms")}
            for row in sweep(run).to_dict("records")]
    return headline_table(rows)
