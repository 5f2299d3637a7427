"""The write-mostly lab page's charts (Altair), drawn from a recorded run, each with its model.

Every chart works on any valid run: a configuration a run did not measure has no bar, and a
chart with nothing to draw shows one line saying so.
"""

from __future__ import annotations

import math
from typing import Any

import altair as alt
import pandas as pd

from labs.book.theme import MODEL_COLOR, dropdown, slider
from labs.write_mostly import tables
from labs.write_mostly.model import MD_SPEED_LIMIT_MAX_KIB_S
from labs.write_mostly.params import WORKLOADS, WRITE_BEHIND
from labs.write_mostly.reference import figure, stream_rate


def nothing_to_draw(message: str) -> alt.Chart:
    return alt.Chart(pd.DataFrame({"text": [message]})).mark_text(
        fontSize=13, align="left", x=5).encode(text="text:N").properties(width=420, height=30)


def slow_leg_chart(results: pd.DataFrame, meta: dict[str, Any]) -> alt.TopLevelMixin:
    """The slow leg's parts at depth 1: measured medians (bars) and the model (black ticks)."""
    parts = tables.slow_leg_parts(results, meta)
    if parts.empty:
        return nothing_to_draw("This run did not measure the slow leg's parts.")
    order = ["the cap alone", "the delay alone", "cap and delay"]
    y = alt.Y("part:N", sort=order, title=None)
    bars = alt.Chart().mark_bar().encode(
        y=y, x=alt.X("measured_ms:Q", title="median completion latency at depth 1 (ms)"),
        color=alt.Color("part:N", sort=order, legend=None),
        tooltip=[alt.Tooltip("part:N", title="what"), alt.Tooltip("op:N", title="operation"),
                 alt.Tooltip("measured_ms:Q", format=".2f", title="measured (ms)"),
                 alt.Tooltip("model_ms:Q", format=".2f", title="model (ms)")])
    ticks = alt.Chart().transform_filter("isValid(datum.model_ms)").mark_tick(
        color=MODEL_COLOR, thickness=3, size=22).encode(
        y=y, x="model_ms:Q",
        tooltip=[alt.Tooltip("part:N", title="what"),
                 alt.Tooltip("model_ms:Q", format=".2f", title="model: cap + delay (ms)")])
    summed = alt.Chart().transform_filter("isValid(datum.parts_sum_ms)").mark_tick(
        color="#888888", thickness=3, size=22).encode(
        y=y, x="parts_sum_ms:Q",
        tooltip=[alt.Tooltip("part:N", title="what"),
                 alt.Tooltip("parts_sum_ms:Q", format=".2f",
                             title="the two parts as measured apart, added (ms)")])
    layers = alt.layer(bars, ticks, summed, data=parts)
    return layers.properties(width=380, height=alt.Step(28)).facet(
        row=alt.Row("op:N", title=None, header=alt.Header(labelExpr="datum.value + 's'")),
    ).properties(title="The slow leg, part by part (black: model; grey: parts added)")


def latency_chart(results: pd.DataFrame, meta: dict[str, Any] | None = None,
                  workload_shown: str | None = None) -> alt.TopLevelMixin:
    """Completion latency per configuration; dropdowns pick the workload (`workload_shown`
    first, else the first measured) and the percentile; black ticks mark what the model
    predicts for the median, where it speaks."""
    table = tables.latency_table(results)
    if table.empty:
        return nothing_to_draw("This run measured no latencies.")
    workloads = [w for w in WORKLOADS if w in set(table["workload"])]
    workload = dropdown("WORKLOAD", workload_shown if workload_shown in workloads
                        else workloads[0], workloads, label="workload")
    percentile = dropdown("PCT", "p50", ["p50", "p99", "p99.9"], label="percentile")
    order = [tables.CONFIG_LABELS[c] for c in tables.CONFIG_ORDER if c in set(table["config"])]
    y = alt.Y("label:N", sort=order, title=None, axis=alt.Axis(labelLimit=360))
    selected = "datum.workload == WORKLOAD && datum.percentile == PCT"
    base = alt.Chart(table).transform_filter(selected)
    bars = base.mark_bar().encode(
        y=y, x=alt.X("latency_us:Q", scale=alt.Scale(type="log", domain=[10, 3_000_000],
                                                      nice=False),
                     title="completion latency (µs, log scale)"),
        x2=alt.datum(10),  # bars start at the axis: a log scale has no zero
        color=alt.Color("label:N", sort=order, legend=None,
                        scale=alt.Scale(scheme="tableau20")),
        tooltip=[alt.Tooltip("label:N", title="configuration"),
                 alt.Tooltip("workload:N", title="workload"),
                 alt.Tooltip("percentile:N", title="percentile"),
                 alt.Tooltip("latency_us:Q", format=",.0f", title="latency (µs)")])
    text = base.mark_text(align="left", dx=4).encode(
        y=y, x="latency_us:Q", text=alt.Text("latency_us:Q", format=",.0f"))
    layers = [bars, text]
    model = tables.model_latency_us(results, meta) if meta else pd.DataFrame()
    if not model.empty:
        layers.append(alt.Chart(model).transform_filter(selected).mark_tick(
            color=MODEL_COLOR, thickness=3, size=20).encode(
            y=y, x="model_us:Q",
            tooltip=[alt.Tooltip("label:N", title="configuration"),
                     alt.Tooltip("model_us:Q", format=",.0f", title="model (µs)")]))
    # 290 px beside labels of up to 360: the whole chart fits the page's column.
    return alt.layer(*layers).add_params(workload, percentile).properties(
        width=290, height=alt.Step(24),
        title="4 KiB completion latency by configuration (black: the model's median)")


def legs_chart(results: pd.DataFrame) -> alt.TopLevelMixin:
    """Which leg served the reads and the writes, as shares of each configuration's I/O."""
    table = tables.leg_table(results)
    rows = []
    for config in [c for c in tables.CONFIG_ORDER if c in set(table["config"])]:
        for op, prefix, metric in (("reads", "randread", "reads"),
                                   ("writes", "randwrite", "writes")):
            part = table[(table["config"] == config) & table["workload"].str.startswith(prefix)]
            for leg in ("fast", "slow"):
                rows.append({"label": tables.CONFIG_LABELS[config], "op": op,
                             "leg": f"{leg} leg",
                             "count": float(part[part["leg"] == leg][metric].sum())})
    data = pd.DataFrame(rows)
    if data.empty:
        return nothing_to_draw("This run counted no I/O per leg.")
    totals = data.groupby(["label", "op"])["count"].transform("sum")
    data["share"] = data["count"] / totals.where(totals > 0, 1)
    order = [tables.CONFIG_LABELS[c] for c in tables.CONFIG_ORDER
             if tables.CONFIG_LABELS[c] in set(data["label"])]
    # The model: a write-mostly mirror reads only the fast leg; every mirror writes both.
    model = []
    for config in [c for c in tables.CONFIG_ORDER if tables.CONFIG_LABELS[c] in set(data["label"])]:
        settings = tables.CONFIGS[config]
        fast_share = {"reads": 1.0 if settings.write_mostly or settings.leg == "fast" else
                      0.0 if settings.leg == "slow" else None,
                      "writes": 0.5 if settings.raid else None}
        for op, share in fast_share.items():
            if share is not None:
                model.append({"label": settings.label, "op": op, "model_fast_share": share})
    y = alt.Y("label:N", sort=order, title=None, axis=alt.Axis(labelLimit=370))
    bars = alt.Chart().transform_filter("isValid(datum.share)").mark_bar().encode(
        y=y, x=alt.X("share:Q", axis=alt.Axis(format="%"),
                     title="share of the I/Os the legs served"),
        color=alt.Color("leg:N", title=None, scale=alt.Scale(domain=["fast leg", "slow leg"])),
        tooltip=[alt.Tooltip("label:N", title="configuration"),
                 alt.Tooltip("op:N", title="operation"), alt.Tooltip("leg:N", title="leg"),
                 alt.Tooltip("count:Q", format=",.0f", title="operations"),
                 alt.Tooltip("share:Q", format=".2%", title="share")])
    ticks = alt.Chart().transform_filter("isValid(datum.model_fast_share)").mark_tick(
        color=MODEL_COLOR, thickness=3, size=20).encode(
        y=y, x="model_fast_share:Q",
        tooltip=[alt.Tooltip("label:N", title="configuration"),
                 alt.Tooltip("model_fast_share:Q", format=".0%",
                             title="model: the fast leg's share")])
    both = pd.concat([data, pd.DataFrame(model)], ignore_index=True)
    return alt.layer(bars, ticks, data=both).properties(width=260, height=alt.Step(20)).facet(
        row=alt.Row("op:N", title=None, header=alt.Header(
            labelAngle=0, labelOrient="top", labelAnchor="start", labelFontWeight="bold"))
    ).configure_legend(orient="bottom").properties(
        title="Where the reads and the writes landed (black: the model's fast-leg share)")


def write_behind_chart(results: pd.DataFrame, meta: dict[str, Any]) -> alt.TopLevelMixin:
    """Every write of the flat-out writer at depth 1 over its first seconds, per write-behind
    cell (dropdown), with the model: the backlog fills after N / (W − S) seconds, and the
    write that finds it full waits about N / S."""
    timeline = tables.write_timeline(results)
    wb = tables.write_behind_table(results, meta)
    if timeline.empty or wb.empty:
        return nothing_to_draw("This run has no per-write log of the write-behind cells.")
    cells = [c for c in tables.CONFIG_ORDER if c in set(timeline["config"])]
    labels = [tables.CONFIG_LABELS[c] for c in cells]
    indexed = wb.set_index("config")
    default = next((c for c in cells if pd.notna(indexed.loc[c, "fill_s"])),
                   next((c for c in cells if indexed.loc[c, "max_backlog"] > 0), cells[0]))
    cell = dropdown("CELL", tables.CONFIG_LABELS[default], labels, label="write-behind cell")
    points = alt.Chart(timeline).transform_filter("datum.label == CELL").mark_point(
        size=12, filled=True, opacity=0.6).encode(
        # fio logs each write when it completes: a long wait shows at its end, not its start.
        x=alt.X("t_s:Q", title="seconds since the writer started (each write at its completion)"),
        y=alt.Y("latency_ms:Q", scale=alt.Scale(type="log"),
                title="completion latency of each write (ms, log scale)"),
        tooltip=[alt.Tooltip("t_s:Q", format=".3f", title="time (s)"),
                 alt.Tooltip("latency_ms:Q", format=".3f", title="latency (ms)")])
    filled = wb[wb["fill_model_s"].notna()]
    first = filled.iloc[0] if len(filled) else wb.iloc[0]
    marks = []
    if pd.notna(first["fill_model_s"]):
        marks.append({"what": f"model: the backlog of {WRITE_BEHIND} fills "
                              f"({first['fill_model_s'] * 1000:.0f} ms, {first['config']})",
                      "t_s": float(first["fill_model_s"])})
    rule = alt.Chart(pd.DataFrame(marks)).mark_rule(color=MODEL_COLOR, strokeDash=[4, 3]
                                                    ).encode(x="t_s:Q", tooltip=alt.Tooltip(
                                                        "what:N", title="model"))
    levels = []
    if pd.notna(first["stall_model_s"]):
        levels.append({"what": f"model: the write that finds it full waits "
                               f"{first['stall_model_s']:.2f} s",
                       "latency_ms": float(first["stall_model_s"]) * 1000})
    slow_us = tables.slow_leg_model_us(results, meta, "write")
    if slow_us:
        levels.append({"what": "model: one write on the slow leg", "latency_ms": slow_us / 1000})
    level = alt.Chart(pd.DataFrame(levels)).mark_rule(color=MODEL_COLOR).encode(
        y="latency_ms:Q", tooltip=alt.Tooltip("what:N", title="model"))
    layers = [points] + ([rule] if marks else []) + ([level] if levels else [])
    return alt.layer(*layers).add_params(cell).properties(
        width=520, height=260,
        title="Write-behind at depth 1, write by write (black: the model)")


def drills_chart(results: pd.DataFrame, meta: dict[str, Any] | None = None
                 ) -> alt.TopLevelMixin:
    """The drills' steps on a time line, and the new fast leg's recovery percentage beside the
    model's (the array's size at the resync model's rate, from when the new leg was added)."""
    events = tables.drill_events(results)
    if events.empty:
        return nothing_to_draw("This run has no drills.")
    tooltip = [alt.Tooltip("config:N", title="drill"), alt.Tooltip("event:N", title="step"),
               alt.Tooltip("t_s:Q", format=".1f", title="seconds")]
    names = {"drill-slow-leg-lost": "the network disk goes away",
             "drill-fast-leg-lost": "the instance is replaced"}
    events = events.assign(drill=events["config"].map(names).fillna(events["config"]))
    points = alt.Chart(events).mark_point(filled=True, size=70).encode(
        x=alt.X("t_s:Q", title="seconds since the drill started"),
        y=alt.Y("event:N", title=None, sort=alt.EncodingSortField("t_s", op="min"),
                axis=alt.Axis(labelLimit=260)),
        color=alt.Color("drill:N", legend=None), tooltip=tooltip)
    steps = points.properties(width=420, height=alt.Step(15)).facet(
        row=alt.Row("drill:N", title=None, sort=list(names.values()),
                    header=alt.Header(labelAngle=0, labelOrient="top", labelAnchor="start",
                                       labelFontWeight="bold"))
    ).resolve_scale(y="independent")
    timeline = tables.recovery_timeline(results)
    recovery = alt.Chart(timeline).mark_line(point=True).encode(
        x=alt.X("t_s:Q", title="seconds since the drill started"),
        y=alt.Y("percent:Q", title="recovery of the new fast leg (%)",
                scale=alt.Scale(domain=[0, 100])),
        tooltip=[alt.Tooltip("t_s:Q", format=".1f", title="seconds"),
                 alt.Tooltip("percent:Q", format=".1f", title="recovered (%)")])
    layers = [recovery]
    added = events[(events["config"] == "drill-fast-leg-lost")
                   & (events["event"] == "new fast leg added")]
    sizes = results[(results["config"] == "drill-fast-leg-lost")
                    & (results["metric"] == "resync_s")]
    if meta is not None and len(added) and len(sizes) and len(timeline):
        rate = tables.model_resync_rate(results, meta)
        start, size = float(added["t_s"].iloc[0]), float(sizes["size_mib"].iloc[0])
        end = start + size / rate
        model = pd.DataFrame({"t_s": [start, end, max(end, float(timeline["t_s"].max()))],
                              "percent": [0.0, 100.0, 100.0]})
        layers.append(alt.Chart(model).mark_line(color=MODEL_COLOR, strokeDash=[4, 3]).encode(
            x="t_s:Q", y="percent:Q"))
    return alt.vconcat(
        steps.properties(title="Failure drills, step by step"),
        alt.layer(*layers).properties(
            width=420, height=160,
            title="The new fast leg catches up (dashed: the model)"))


def resync_model_chart(results: pd.DataFrame, meta: dict[str, Any]) -> alt.TopLevelMixin:
    """Resync seconds against array size: measured (points) and size / model rate (line)."""
    measured = tables.resync_table(results, meta)
    if measured.empty:
        return nothing_to_draw("This run timed no resync.")
    rate = tables.model_resync_rate(results, meta)
    series = measured[measured["config"] == "drill-resync-size"]
    largest = float(series["size_mib"].max()) if len(series) else None
    top = math.ceil(float(measured["size_mib"].max()) * 1.1 / 100) * 100
    line = pd.DataFrame({"size_mib": [0.0, top], "seconds": [0.0, top / rate]})
    which = {"drill-resync-size": "array sizes, one resync each",
             "drill-fast-leg-lost": "the instance-replacement drill (section 5)"}
    measured = measured.assign(which=measured["config"].map(which))
    points = alt.Chart(measured).mark_point(filled=True, size=70).encode(
        x=alt.X("size_mib:Q", title="array size (MiB)",
                scale=alt.Scale(domain=[0, top], nice=False),
                axis=alt.Axis(tickCount=6, labelFlush=False)),
        y=alt.Y("resync_s:Q", title="seconds to resync a new fast leg"),
        color=alt.Color("which:N", title=None, sort=list(which.values()),
                        legend=alt.Legend(orient="bottom", direction="vertical",
                                          labelLimit=400)),
        shape=alt.Shape("which:N", sort=list(which.values()), legend=None),
        tooltip=[alt.Tooltip("which:N", title="resync"),
                 alt.Tooltip("size_mib:Q", format=".0f", title="size (MiB)"),
                 alt.Tooltip("resync_s:Q", format=".1f", title="measured (s)"),
                 alt.Tooltip("model_s:Q", format=".1f", title="model (s)")])
    model = alt.Chart(line).mark_line(color=MODEL_COLOR, strokeDash=[4, 3]).encode(
        x="size_mib:Q", y="seconds:Q")
    return (model + points).properties(
        width=420, height=240,
        title=f"Resync time against size (dashed: the model, size / {rate:.0f} MiB/s, the "
              + (f"{largest:.0f} MiB array's rate)" if largest else "md's ceiling)"))


def resync_chart(results: pd.DataFrame, meta: dict[str, Any] | None = None
                 ) -> alt.TopLevelMixin:
    """Refill time against node size: resync at the model's rate (the largest timed array's,
    as the text uses) vs streaming from peers.

    The slider sets the streaming rate; the chart recomputes in the browser.
    """
    measured = tables.resync_table(results)
    if measured.empty:
        return nothing_to_draw("This run timed no resync.")
    rate = tables.model_resync_rate(results, meta or {})
    ceiling = MD_SPEED_LIMIT_MAX_KIB_S / 1024
    grid = pd.DataFrame({"node_tb": [round(0.1 * i, 1) for i in range(1, 41)]})
    stream = slider("STREAM", round(stream_rate(figure("stream_hours_min"))), 5, 400, 5,
                    label="streaming from peers (MiB/s)")
    lines = alt.Chart(grid).transform_calculate(
        resync_lab=f"datum.node_tb * 1e12 / ({rate} * 1048576) / 3600",
        resync_ceiling=f"datum.node_tb * 1e12 / ({ceiling} * 1048576) / 3600",
        streaming="datum.node_tb * 1e12 / (STREAM * 1048576) / 3600",
    ).transform_fold(["resync_lab", "resync_ceiling", "streaming"], as_=["method", "hours"]
                     ).transform_calculate(
        label="datum.method == 'resync_lab' ? 'resync at this run\\'s model rate (" +
              f"{rate:.0f} MiB/s, the largest array\\'s)' : datum.method == 'resync_ceiling' ? " +
              f"'resync at md\\'s default ceiling ({ceiling:.0f} MiB/s)' : 'streaming from peers'"
    ).mark_line().encode(
        x=alt.X("node_tb:Q", title="data on the node (TB)"),
        y=alt.Y("hours:Q", title="hours to refill a replaced node", scale=alt.Scale(type="log")),
        color=alt.Color("label:N", title=None, legend=alt.Legend(labelLimit=400)),
        tooltip=[alt.Tooltip("label:N", title="how"),
                 alt.Tooltip("node_tb:Q", format=".1f", title="data (TB)"),
                 alt.Tooltip("hours:Q", format=".1f", title="hours")])
    array_tb = figure("array_recovery_kib") * 1024 / 1e12
    reported = pd.DataFrame([
        {"node_tb": figure("stream_node_tb"), "hours": h,
         "what": f"reported: streaming {h:g} h"}
        for h in (figure("stream_hours_min"), figure("stream_hours_max"))] + [
        {"node_tb": array_tb, "hours": figure("rebuild_hours_reported"),
         "what": "reported: RAID rebuild about 1 h"},
        {"node_tb": array_tb, "hours": figure("recovery_md_finish_min") / 60,
         "what": "md's own estimate at the start of that rebuild"}])
    points = alt.Chart(reported).mark_point(shape="diamond", size=110, filled=True,
                                            color=MODEL_COLOR).encode(
        x="node_tb:Q", y="hours:Q",
        tooltip=[alt.Tooltip("what:N", title="figure"),
                 alt.Tooltip("node_tb:Q", format=".2f", title="data (TB)"),
                 alt.Tooltip("hours:Q", format=".1f", title="hours")])
    return (lines + points).add_params(stream).properties(
        width=460, height=300,
        title="Refilling a replaced node: resync from the network disk vs streaming")


# --- the explanation page's models, with controls that run in the browser -------------------


def backlog_model_chart() -> alt.TopLevelMixin:
    """Write-behind backlog over time: depth N, slow-leg rate S and write rate W are sliders.
    The backlog grows at W − S until it holds N writes; the write that finds it full waits
    N / S while the slow leg drains all of it, then the cycle starts again."""
    depth = slider("DEPTH", WRITE_BEHIND, 16, 2048, 16, label="write-behind depth (writes)")
    slow = slider("SLOW", 200, 50, 5000, 50, label="slow leg drains (writes/s)")
    write = slider("WRITE", 2000, 100, 20000, 100, label="writer asks for (writes/s)")
    grid = pd.DataFrame({"u": [i / 400 for i in range(401)]})
    fill = "(WRITE > SLOW ? DEPTH / (WRITE - SLOW) : 1e9)"
    cycle = f"({fill} + DEPTH / SLOW)"
    horizon = f"(WRITE > SLOW ? 2 * {cycle} : 1)"
    line = alt.Chart(grid).transform_calculate(
        t_s=f"datum.u * {horizon}",
    ).transform_calculate(
        tau=f"WRITE > SLOW ? datum.t_s % {cycle} : datum.t_s",
    ).transform_calculate(
        backlog=f"WRITE <= SLOW ? 0 : datum.tau < {fill} ? (WRITE - SLOW) * datum.tau "
                f": max(0, DEPTH - SLOW * (datum.tau - {fill}))",
    ).mark_line().encode(
        x=alt.X("t_s:Q", title="seconds since the burst began",
                axis=alt.Axis(labelFlush=False)),
        y=alt.Y("backlog:Q", title="writes waiting for the slow leg"),
        tooltip=[alt.Tooltip("t_s:Q", format=".3f", title="time (s)"),
                 alt.Tooltip("backlog:Q", format=",.0f", title="writes waiting")])
    first = alt.Chart(pd.DataFrame({"u": [0]})).transform_calculate(
        text=f"WRITE > SLOW ? 'the backlog is full after ' + format({fill} * 1000, ',.0f') + "
             f"' ms (' + format({fill} * WRITE, ',.0f') + ' writes)' : 'the slow leg keeps up: "
             "no write ever waits for it'").mark_text(align="left", fontSize=12).encode(
        x=alt.value(5), y=alt.value(-30), text="text:N")
    second = alt.Chart(pd.DataFrame({"u": [0]})).transform_calculate(
        text="WRITE > SLOW ? 'then one write waits ' + format(DEPTH / SLOW, ',.2f') + "
             "' s while it drains, and again: ' + format(SLOW, ',.0f') + "
             "' writes/s on average' : ''").mark_text(align="left", fontSize=12).encode(
        x=alt.value(5), y=alt.value(-14), text="text:N")
    return (line + first + second).add_params(depth, slow, write).properties(
        width=460, height=240, title=alt.TitleParams(
            "Write-behind: the backlog over time (model)",
            offset=40))


def refill_model_chart() -> alt.TopLevelMixin:
    """Hours to refill a replaced node: resync from the network disk against streaming from
    peers; the array size and both rates are sliders."""
    size = slider("SIZE_TB", 3.75, 0.5, 16, 0.25, label="data on the node (TB)")
    resync = slider("RESYNC", round(MD_SPEED_LIMIT_MAX_KIB_S / 1024), 10, 2000, 5,
                    label="resync rate (MiB/s)")
    stream = slider("STREAM_RATE", round(stream_rate(figure("stream_hours_min"))), 5, 400, 5,
                    label="streaming from peers (MiB/s)")
    data = pd.DataFrame({"how": ["resync from the network disk", "streaming from peers"]})
    return alt.Chart(data).transform_calculate(
        rate="datum.how == 'streaming from peers' ? STREAM_RATE : RESYNC",
        hours="SIZE_TB * 1e12 / (datum.rate * 1048576) / 3600",
    ).mark_bar().encode(
        y=alt.Y("how:N", title=None, axis=alt.Axis(labelLimit=260)),
        x=alt.X("hours:Q", title="hours to refill a replaced node (model: size / rate)"),
        color=alt.Color("how:N", legend=None),
        tooltip=[alt.Tooltip("how:N", title="how"),
                 alt.Tooltip("rate:Q", format=",.0f", title="rate (MiB/s)"),
                 alt.Tooltip("hours:Q", format=",.1f", title="hours")],
    ).add_params(size, resync, stream).properties(
        width=420, height=alt.Step(34), title="Refilling a replaced node (model)")
