"""What the torn-pages lab page shows: tables, figures, charts and the live panel.

Pure page code (pandas, Altair, the book's plumbing): it reads a recorded run and never
touches a host or a container.
"""

from __future__ import annotations

import altair as alt
import pandas as pd

from labs import PROJECT_ROOT
from labs.book import theme  # noqa: F401  (the book's chart theme and offline renderer)
from labs.book.panel import LabPanel
from labs.records import RecordedRun, run_summary
from labs.torn_pages.params import Parameters

SETTING_ORDER = ["checkpoint_timeout 30 s", "checkpoint_timeout 300 s", "forced CHECKPOINT"]
SETTING_KEYS = {"checkpoint_timeout 30 s": "cpt30s", "checkpoint_timeout 300 s": "cpt300s",
                "forced CHECKPOINT": "forced"}
LEG_MEASURES = {
    "wal_bytes_per_tx": "WAL bytes per transaction",
    "wal_fpi_per_tx": "full-page images per transaction",
    "tps": "transactions per second",
    "latency_p50": "latency p50 (ms)",
    "latency_p99": "latency p99 (ms)",
}
BURST_SERIES = {
    "wal_fpi_per_tx_interval": "full-page images per transaction",
    "wal_bytes_per_tx_interval": "WAL bytes per transaction",
    "wal_mib_per_second": "WAL written (MiB/s)",
    "wal_fpi_per_second": "full-page images per second",
    "tps_per_second": "transactions per second",
}
REFERENCE_DIR = PROJECT_ROOT / "data" / "reference"


def _setting(row) -> str:
    if row["workload"] == "forced-checkpoint":
        return "forced CHECKPOINT"
    return f"checkpoint_timeout {int(row['checkpoint_timeout_s'])} s"


def _disk(limit_mibps) -> str:
    return f"writes limited to {int(limit_mibps)} MiB/s" if limit_mibps else "no limit"


def leg_summary(results):
    """One row per pgbench leg: disk, setting, full_page_writes, and measures as columns."""
    legs = results[results["workload"].isin(["steady", "forced-checkpoint"])
                   & results["time_s"].isna()].copy()
    legs["setting"] = legs.apply(_setting, axis=1)
    legs["disk"] = legs["write_limit_mibps"].map(_disk)
    table = legs.pivot_table(index=["disk", "setting", "full_page_writes"], columns="metric",
                             values="value", aggfunc="first").reset_index()
    table.columns.name = None
    return table


def fpw_ratios(results):
    """Per setting: the on/off values and their ratios (the chapter's headline numbers)."""
    table = leg_summary(results)
    rows = []
    pairs = sorted(set(zip(table["disk"], table["setting"], strict=True)),
                   key=lambda p: (p[0] != "no limit", p[0], SETTING_ORDER.index(p[1])))
    for disk, setting in pairs:
        same = table[(table["disk"] == disk) & (table["setting"] == setting)]
        on = same[same["full_page_writes"] == "on"].iloc[0]
        off = same[same["full_page_writes"] == "off"].iloc[0]
        rows.append({
            "disk": disk, "setting": setting,
            "tps_on": on["tps"], "tps_off": off["tps"],
            "tps_off_over_on": off["tps"] / on["tps"],
            "wal_bytes_per_tx_on": on["wal_bytes_per_tx"],
            "wal_bytes_per_tx_off": off["wal_bytes_per_tx"],
            "wal_on_over_off": on["wal_bytes_per_tx"] / off["wal_bytes_per_tx"],
            "fpi_per_tx_on": on["wal_fpi_per_tx"],
            "latency_p99_ms_on": on["latency_p99"], "latency_p99_ms_off": off["latency_p99"],
        })
    return pd.DataFrame(rows)


def burst_timeline(results):
    """The forced-checkpoint legs, per second: WAL MiB/s, FPIs/s and TPS."""
    rows = results[(results["workload"] == "forced-checkpoint")
                   & results["metric"].isin(list(BURST_SERIES))].copy()
    rows["series"] = rows["metric"].map(BURST_SERIES)
    return rows[["full_page_writes", "series", "time_s", "value"]].reset_index(drop=True)


def forced_checkpoint_times(results):
    rows = results[results["metric"] == "forced_checkpoint_at"]
    return rows[["full_page_writes", "value"]].rename(columns={"value": "time_s"})


def torn_page_outcomes(results):
    """The torn-page experiments as a small table, one row per variant."""
    rows = results[results["workload"] == "torn-page"]
    table = rows.pivot_table(index="variant", columns="metric", values="value",
                             aggfunc="first")
    order = [v for v in ["tear-stopped", "fpw-on", "fpw-off", "fpw-off-nochecksums"]
             if v in table.index]
    return table.loc[order]


def reference_rds():
    return pd.read_csv(REFERENCE_DIR / "rds-optimized-writes.csv")


def settings_chart(results):
    """Bars per checkpoint setting, full_page_writes on vs off; a dropdown picks the measure."""
    table = leg_summary(results)
    long = table.melt(id_vars=["disk", "setting", "full_page_writes"],
                      value_vars=list(LEG_MEASURES), var_name="metric", value_name="value")
    long["measure"] = long["metric"].map(LEG_MEASURES)
    measure = alt.param(name="measure", value=LEG_MEASURES["wal_bytes_per_tx"],
                        bind=alt.binding_select(options=list(LEG_MEASURES.values()),
                                                name="measure "))
    disks = sorted(long["disk"].unique(), key=lambda d: d != "no limit")
    disk = alt.param(name="disk", value=disks[0],
                     bind=alt.binding_select(options=disks, name="disk "))
    return alt.Chart(long).mark_bar().encode(
        x=alt.X("setting:N", sort=SETTING_ORDER, title=None, axis=alt.Axis(labelAngle=-20)),
        xOffset=alt.XOffset("full_page_writes:N", sort=["on", "off"]),
        y=alt.Y("value:Q", title="value of the chosen measure"),
        color=alt.Color("full_page_writes:N", sort=["on", "off"],
                        scale=alt.Scale(domain=["on", "off"], range=["#D55E00", "#0072B2"])),
        tooltip=["setting", "full_page_writes", "measure",
                 alt.Tooltip("value:Q", format=",.2f")],
    ).add_params(measure, disk).transform_filter(
        (alt.datum.measure == measure) & (alt.datum.disk == disk)).properties(
        width=420, height=260,
        title="pgbench with full_page_writes on and off (each leg starts at a checkpoint)")


def burst_chart(results):
    """Per-second series around a forced CHECKPOINT; dropdown for the series, legend filter."""
    timeline = burst_timeline(results)
    marks = forced_checkpoint_times(results)
    series = alt.param(name="series", value=BURST_SERIES["wal_fpi_per_tx_interval"],
                       bind=alt.binding_select(options=list(BURST_SERIES.values()),
                                               name="series "))
    legend = alt.selection_point(fields=["full_page_writes"], bind="legend")
    color = alt.Color("full_page_writes:N", sort=["on", "off"],
                      scale=alt.Scale(domain=["on", "off"], range=["#D55E00", "#0072B2"]))
    lines = alt.Chart(timeline).mark_line(point=True).encode(
        x=alt.X("time_s:Q", title="seconds since pgbench started"),
        y=alt.Y("value:Q", title="value of the chosen series"),
        color=color,
        opacity=alt.condition(legend, alt.value(1.0), alt.value(0.15)),
        tooltip=["full_page_writes", "series", alt.Tooltip("time_s:Q", format=".1f"),
                 alt.Tooltip("value:Q", format=",.2f")],
    ).add_params(series, legend).transform_filter(alt.datum.series == series)
    rules = alt.Chart(marks).mark_rule(strokeDash=[4, 3]).encode(
        x="time_s:Q", color=color, tooltip=[alt.Tooltip("time_s:Q", title="CHECKPOINT at",
                                                        format=".1f")])
    return (lines + rules).properties(
        width=520, height=260, title="What a checkpoint does to the WAL (dashed: CHECKPOINT)")


def comparison_chart(results):
    """The article's figure (InnoDB doublewrite on/off) beside this run (full_page_writes)."""
    ref = reference_rds()
    ref["minutes"] = ref["duration_s"] / 60
    ref["protection"] = ref["doublewrite"].map({"on": "doublewrite on",
                                                "off": "doublewrite off (atomic 16 KiB)"})
    article = alt.Chart(ref).mark_bar().encode(
        x=alt.X("protection:N", title=None, sort=["doublewrite on"],
                axis=alt.Axis(labelAngle=-30)),
        y=alt.Y("minutes:Q", title="minutes to insert 30 M rows (lower is better)"),
        color=alt.Color("protection:N", legend=None,
                        scale=alt.Scale(range=["#0072B2", "#D55E00"])),
        tooltip=["configuration", alt.Tooltip("minutes:Q", format=".1f")],
    ).properties(width=200, height=260,
                 title="RDS for MySQL (Jade 2025): 2.1x")
    ours = fpw_ratios(results)
    ours = ours[ours["setting"] != "forced CHECKPOINT"].copy()
    ours["setting"] = ours["setting"].str.replace("checkpoint_timeout ", "timeout ") + \
        ", " + ours["disk"].str.replace("writes limited to ", "disk ")
    long = ours.melt(id_vars=["setting"], value_vars=["tps_on", "tps_off"],
                     var_name="leg", value_name="tps")
    long["protection"] = long["leg"].map({"tps_on": "full_page_writes on",
                                          "tps_off": "full_page_writes off"})
    lab = alt.Chart(long).mark_bar().encode(
        x=alt.X("setting:N", sort=list(ours["setting"]), title=None,
                axis=alt.Axis(labelAngle=-30)),
        xOffset=alt.XOffset("protection:N", sort=["full_page_writes on"]),
        y=alt.Y("tps:Q", title="pgbench TPS (higher is better)"),
        color=alt.Color("protection:N", sort=["full_page_writes on"],
                        scale=alt.Scale(range=["#D55E00", "#0072B2"])),
        tooltip=["setting", "protection", alt.Tooltip("tps:Q", format=",.0f")],
    ).properties(width=360, height=260, title="PostgreSQL 15, this run")
    return alt.hconcat(article, lab).resolve_scale(color="independent")


def figures(run: RecordedRun) -> dict[str, str]:
    """The headline numbers of a run, formatted for the page's text."""
    figures: dict[str, str] = {}
    for row in fpw_ratios(run.results).itertuples():
        disk = "nolimit" if row.disk == "no limit" else "limited"
        setting = SETTING_KEYS.get(row.setting, row.setting.replace(" ", "_"))
        key = f"{disk}_{setting}"
        figures[f"{key}_tps_off_over_on"] = f"{row.tps_off_over_on:.2f}"
        figures[f"{key}_wal_on_over_off"] = f"{row.wal_on_over_off:.1f}"
    return figures


def provenance(run: RecordedRun) -> pd.DataFrame:
    return run_summary(run)


def panel() -> LabPanel:
    """The live panel of the lab page (needs root and a container engine to run)."""
    return LabPanel(Parameters, fields=("host", "profile", "write_mibps", "seed"),
                    chart=lambda recorded: settings_chart(recorded.results),
                    title="Torn pages: full_page_writes on and off, then a torn page",
                    needs_root=True, defaults={"profile": "quick"})


HEADLINE_MEASURES = {"tps": ("transactions per second", "tps", "higher"),
                     "wal_bytes_per_tx": ("WAL bytes per transaction", "bytes/tx", "lower")}


def headline(run: RecordedRun) -> pd.DataFrame:
    """The run's headline measures for labs.book.compare: per pgbench leg, transactions per
    second and WAL bytes per transaction (this lab has no model of them: model is NaN)."""
    from labs.book.compare import headline_table

    rows = []
    for leg in leg_summary(run.results).to_dict("records"):
        setting = leg["setting"].replace("checkpoint_timeout", "timeout")
        config = f"{setting}, {leg['disk']}, full_page_writes {leg['full_page_writes']}"
        for metric, (measure, unit, better) in HEADLINE_MEASURES.items():
            if pd.notna(leg.get(metric)):
                rows.append({"measure": measure, "config": config, "value": leg[metric],
                             "unit": unit, "better": better, "model": None})
    return headline_table(rows)
