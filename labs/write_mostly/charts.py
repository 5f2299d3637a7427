"""The write-mostly lab page's charts (Altair), drawn from a recorded run."""

from __future__ import annotations

import altair as alt
import pandas as pd

from labs.book.theme import dropdown, slider
from labs.write_mostly.model import ARTICLE, implied_rate_mib_s
from labs.write_mostly.params import WORKLOADS
from labs.write_mostly.tables import (
    CONFIG_LABELS,
    CONFIG_ORDER,
    drill_events,
    latency_table,
    leg_table,
    recovery_timeline,
    resync_table,
)


def latency_chart(results: pd.DataFrame) -> alt.TopLevelMixin:
    """Completion latency per configuration; dropdowns pick the workload and the percentile."""
    table = latency_table(results)
    workloads = [w for w in WORKLOADS if w in set(table["workload"])]
    workload = dropdown("WORKLOAD", workloads[0], workloads, label="workload")
    percentile = dropdown("PCT", "p50", ["p50", "p99", "p99.9"], label="percentile")
    order = [CONFIG_LABELS[c] for c in CONFIG_ORDER if c in set(table["config"])]
    base = alt.Chart(table).transform_filter(
        "datum.workload == WORKLOAD && datum.percentile == PCT")
    bars = base.mark_bar().encode(
        y=alt.Y("label:N", sort=order, title=None, axis=alt.Axis(labelLimit=330)),
        x=alt.X("latency_us:Q", scale=alt.Scale(type="log", domain=[10, 1_000_000]),
                title="completion latency (µs, log scale)"),
        x2=alt.datum(10),  # bars start at the axis: a log scale has no zero
        color=alt.Color("label:N", sort=order, legend=None),
        tooltip=["label:N", "workload:N", "percentile:N",
                 alt.Tooltip("latency_us:Q", format=",.0f", title="latency (µs)")])
    text = base.mark_text(align="left", dx=4).encode(
        y=alt.Y("label:N", sort=order), x="latency_us:Q",
        text=alt.Text("latency_us:Q", format=",.0f"))
    return (bars + text).add_params(workload, percentile).properties(
        width=420, height=alt.Step(26),
        title="4 KiB completion latency by configuration")


def legs_chart(results: pd.DataFrame) -> alt.TopLevelMixin:
    """Which leg served the reads and the writes, as shares of each configuration's I/O."""
    table = leg_table(results)
    rows = []
    for config in [c for c in CONFIG_ORDER if c in set(table["config"])]:
        for op, prefix, metric in (("reads", "randread", "reads"),
                                   ("writes", "randwrite", "writes")):
            part = table[(table["config"] == config) & table["workload"].str.startswith(prefix)]
            for leg in ("fast", "slow"):
                rows.append({"label": CONFIG_LABELS[config], "op": op, "leg": f"{leg} leg",
                             "count": float(part[part["leg"] == leg][metric].sum())})
    data = pd.DataFrame(rows)
    totals = data.groupby(["label", "op"])["count"].transform("sum")
    data["share"] = data["count"] / totals.where(totals > 0, 1)
    order = [CONFIG_LABELS[c] for c in CONFIG_ORDER if CONFIG_LABELS[c] in set(data["label"])]
    return alt.Chart(data).mark_bar().encode(
        y=alt.Y("label:N", sort=order, title=None, axis=alt.Axis(labelLimit=330)),
        x=alt.X("share:Q", axis=alt.Axis(format="%"), title="share of the I/Os the legs served"),
        color=alt.Color("leg:N", title=None, scale=alt.Scale(domain=["fast leg", "slow leg"])),
        column=alt.Column("op:N", title=None),
        tooltip=["label:N", "op:N", "leg:N", alt.Tooltip("count:Q", format=",.0f"),
                 alt.Tooltip("share:Q", format=".2%")],
    ).properties(width=220, height=alt.Step(24),
                 title="Where the reads and the writes landed (per-device counters)")


def drills_chart(results: pd.DataFrame) -> alt.TopLevelMixin:
    """The drills' steps on a time line, and the new fast leg's recovery percentage."""
    events = drill_events(results)
    points = alt.Chart(events).mark_point(filled=True, size=80).encode(
        x=alt.X("t_s:Q", title="seconds since the drill started"),
        y=alt.Y("config:N", title=None),
        color=alt.Color("config:N", legend=None),
        tooltip=["config:N", "event:N", alt.Tooltip("t_s:Q", format=".1f")])
    labels = alt.Chart(events).mark_text(align="left", angle=315, dx=4, dy=-4,
                                         fontSize=10).encode(
        x="t_s:Q", y="config:N", text="event:N")
    timeline = recovery_timeline(results)
    recovery = alt.Chart(timeline).mark_line(point=True).encode(
        x=alt.X("t_s:Q", title="seconds since the drill started"),
        y=alt.Y("percent:Q", title="recovery of the new fast leg (%)",
                scale=alt.Scale(domain=[0, 100])),
        tooltip=[alt.Tooltip("t_s:Q", format=".1f"), alt.Tooltip("percent:Q", format=".1f")])
    return alt.vconcat(
        (points + labels).properties(width=520, height=160, title="Failure drills, step by step"),
        recovery.properties(width=520, height=160,
                            title="Instance replacement: the new fast leg catches up"))


def resync_chart(results: pd.DataFrame) -> alt.TopLevelMixin:
    """Refill time against node size: resync at the measured rate vs streaming from peers.

    The slider sets the streaming rate; the chart recomputes in the browser.
    """
    measured = resync_table(results)
    rate = float(measured["size_mib"].sum() / measured["resync_s"].sum())
    sizes = [round(0.1 * i, 1) for i in range(1, 41)]
    stream_default = round(implied_rate_mib_s(ARTICLE["stream_node_bytes"],
                                              ARTICLE["stream_hours"][0]))
    grid = pd.DataFrame({"node_tb": sizes})
    stream = slider("STREAM", stream_default, 5, 400, 5,
                           label="streaming from peers (MiB/s)")
    lines = alt.Chart(grid).transform_calculate(
        resync_lab=f"datum.node_tb * 1e12 / ({rate} * 1048576) / 3600",
        resync_ceiling="datum.node_tb * 1e12 / (200000 * 1024) / 3600",
        streaming="datum.node_tb * 1e12 / (STREAM * 1048576) / 3600",
    ).transform_fold(["resync_lab", "resync_ceiling", "streaming"], as_=["method", "hours"]
                     ).transform_calculate(
        label="datum.method == 'resync_lab' ? 'resync at this run\\'s rate (" +
              f"{rate:.0f} MiB/s)' : datum.method == 'resync_ceiling' ? " +
              "'resync at md\\'s default ceiling (195 MiB/s)' : 'streaming from peers'"
    ).mark_line().encode(
        x=alt.X("node_tb:Q", title="data on the node (TB)"),
        y=alt.Y("hours:Q", title="hours to refill a replaced node", scale=alt.Scale(type="log")),
        color=alt.Color("label:N", title=None, legend=alt.Legend(labelLimit=400)),
        tooltip=["label:N", "node_tb:Q", alt.Tooltip("hours:Q", format=".1f")])
    reported = pd.DataFrame([
        {"node_tb": ARTICLE["stream_node_bytes"] / 1e12, "hours": h,
         "what": f"reported: streaming {h:g} h"} for h in ARTICLE["stream_hours"]] + [
        {"node_tb": ARTICLE["resync_array_kib"] * 1024 / 1e12,
         "hours": ARTICLE["resync_reported_hours"], "what": "reported: RAID resync about 1 h"}])
    points = alt.Chart(reported).mark_point(shape="diamond", size=110, filled=True,
                                            color="#000000").encode(
        x="node_tb:Q", y="hours:Q", tooltip=["what:N", "node_tb:Q", "hours:Q"])
    return (lines + points).add_params(stream).properties(
        width=460, height=300,
        title="Refilling a replaced node: resync from the network disk vs streaming")
