"""The Device speed chapter's charts (Altair), drawn from the models' tables in page.py."""

from __future__ import annotations

import altair as alt
import pandas as pd

from labs.book.theme import dropdown

PART_COLOURS = alt.Scale(domain=["seek", "rotation", "transfer"],
                         range=["#0072B2", "#E69F00", "#009E73"])
POLICY_COLOURS = alt.Scale(domain=["FIFO", "SSTF", "SPTF"], range=["#999999", "#0072B2",
                                                                   "#D55E00"])
VOLUME_COLOURS = alt.Scale(domain=["gp3", "sc1 burst", "sc1 baseline"],
                           range=["#0072B2", "#E69F00", "#D55E00"])


# An axis label for a size in KiB: 4 KiB, 64 MiB, 1 GiB.
SIZE_LABEL = ("datum.value >= 1048576 ? format(datum.value / 1048576, '~g') + ' GiB' : "
              "datum.value >= 1024 ? format(datum.value / 1024, '~g') + ' MiB' : "
              "format(datum.value, '~g') + ' KiB'")


def _size_label(size_kib: float) -> str:
    return f"{size_kib / 1024:g} MiB" if size_kib >= 1024 else f"{size_kib:g} KiB"


def random_read_chart(parts: pd.DataFrame, size_kib: int = 4) -> alt.LayerChart:
    """Where one random read's time goes, per drive, for a chosen request size."""
    sizes = sorted(parts["size_kib"].unique().tolist())
    size = dropdown("SIZE", size_kib, sizes, labels=[_size_label(s) for s in sizes],
                    label="request size")
    base = alt.Chart(parts).transform_filter("datum.size_kib == SIZE")
    bars = base.mark_bar().encode(
        y=alt.Y("drive:N", title=None),
        x=alt.X("sum(ms):Q", title="time of one random read (ms)"),
        color=alt.Color("part:N", scale=PART_COLOURS, title=None,
                        legend=alt.Legend(orient="bottom")),
        order=alt.Order("part_order:Q"),
        tooltip=["drive:N", "part:N", alt.Tooltip("ms:Q", format=".3f")],
    ).transform_calculate(
        part_order="datum.part == 'seek' ? 0 : datum.part == 'rotation' ? 1 : 2")
    # The rate the drive delivers at this size, at the end of each bar.
    totals = base.transform_aggregate(
        total_ms="sum(ms)", mb_s="max(mb_s)", groupby=["drive"]
    ).transform_calculate(
        label="format(datum.total_ms, '.2f') + ' ms  ->  ' + format(datum.mb_s, '.2f') + ' MB/s'"
    ).mark_text(align="left", dx=4, fontSize=12, color="white", fontWeight="bold").encode(
        y="drive:N", x=alt.datum(0), text="label:N")
    return alt.layer(bars, totals).add_params(size).properties(
        width=460, height=120, title="Where one random read's time goes")


def throughput_chart(rates: pd.DataFrame) -> alt.LayerChart:
    """MB/s of back-to-back random requests by request size, log-log, both drives."""
    lines = alt.Chart(rates).mark_line().encode(
        x=alt.X("size_kib:Q", scale=alt.Scale(type="log"), title="request size",
                axis=alt.Axis(values=[4, 64, 1024, 16384, 262144, 1048576],
                              labelExpr=SIZE_LABEL)),
        y=alt.Y("mb_s:Q", scale=alt.Scale(type="log"), title="throughput (MB/s)"),
        color=alt.Color("drive:N", title=None, legend=alt.Legend(orient="bottom")),
        tooltip=["drive:N", alt.Tooltip("size_kib:Q", title="KiB", format=",.0f"),
                 alt.Tooltip("mb_s:Q", title="MB/s", format=".3g"),
                 alt.Tooltip("ms:Q", title="ms per request", format=".3g")])
    return (lines + lines.mark_point(size=20)).properties(
        width=460, height=280, title="Bigger requests buy back the positioning time")


def scheduler_chart(sweep: pd.DataFrame, drive: str = "Cheetah 15K.5") -> alt.LayerChart:
    """IOPS of FIFO, SSTF and SPTF by queue depth on one seeded workload."""
    drives = sorted(sweep["drive"].unique().tolist())
    chosen = dropdown("DRIVE", drive, drives, label="drive")
    base = alt.Chart(sweep).transform_filter("datum.drive == DRIVE").encode(
        x=alt.X("queue_depth:Q", scale=alt.Scale(type="log", base=2),
                axis=alt.Axis(values=[1, 2, 4, 8, 16, 32, 64]), title="queue depth"),
        y=alt.Y("iops:Q", title="random 4 KiB reads per second"),
        color=alt.Color("policy:N", scale=POLICY_COLOURS, title=None,
                        legend=alt.Legend(orient="bottom")),
        tooltip=["policy:N", "queue_depth:Q", alt.Tooltip("iops:Q", format=".0f")])
    return (base.mark_line() + base.mark_point(filled=True)).add_params(chosen).properties(
        width=460, height=280, title="A deeper queue lets the disk choose what to serve next")


def ssd_chart(curves: pd.DataFrame, channels: int = 8, read_us: int = 100) -> alt.HConcatChart:
    """The SSD model: IOPS and time per request by queue depth (Little's law ties them)."""
    params = [dropdown("CHANNELS", channels, sorted(curves["channels"].unique().tolist()),
                       label="channels"),
              dropdown("READ_US", read_us, sorted(curves["read_us"].unique().tolist()),
                       label="read time (us)")]
    base = alt.Chart(curves).transform_filter(
        "datum.channels == CHANNELS && datum.read_us == READ_US").encode(
        x=alt.X("queue_depth:Q", scale=alt.Scale(type="log", base=2),
                axis=alt.Axis(values=[1, 4, 16, 64, 256]), title="queue depth"),
        tooltip=["queue_depth:Q", alt.Tooltip("iops:Q", format=",.0f"),
                 alt.Tooltip("latency_ms:Q", format=".3f"), "limit:N"])
    iops = (base.mark_line(color="#0072B2") + base.mark_point(color="#0072B2", filled=True)
            ).encode(y=alt.Y("iops:Q", title="random 4 KiB reads per second",
                             axis=alt.Axis(format="~s"))).properties(
        width=260, height=240, title="IOPS grow until every channel is busy")
    latency = (base.mark_line(color="#D55E00") + base.mark_point(color="#D55E00", filled=True)
               ).encode(y=alt.Y("latency_ms:Q", title="time per request (ms)")).properties(
        width=260, height=240, title="then requests queue: time = depth / IOPS")
    return alt.hconcat(iops, latency).add_params(*params).properties(
        title="An SSD's reads by queue depth")


def volume_chart(rates: pd.DataFrame, sc1_gib: int = 300,
                 pattern: str = "random") -> alt.LayerChart:
    """Useful MiB/s by block size: gp3 beside sc1 in burst and at baseline."""
    params = [dropdown("SC1_GIB", sc1_gib, sorted(rates["sc1_gib"].unique().tolist()),
                       labels=[f"{s:,} GiB" for s in sorted(rates["sc1_gib"].unique())],
                       label="sc1 size"),
              dropdown("PATTERN", pattern, ["random", "sequential"], label="pattern")]
    base = alt.Chart(rates).transform_filter(
        "datum.sc1_gib == SC1_GIB && datum.pattern == PATTERN").encode(
        x=alt.X("block_kib:Q", scale=alt.Scale(type="log", base=2),
                axis=alt.Axis(values=[4, 16, 64, 256, 1024]), title="I/O size (KiB)"),
        y=alt.Y("mib_s:Q", scale=alt.Scale(type="log"), title="data moved (MiB/s)"),
        color=alt.Color("volume:N", scale=VOLUME_COLOURS, title=None,
                        legend=alt.Legend(orient="bottom")),
        tooltip=["volume:N", "block_kib:Q", alt.Tooltip("iops:Q", format=",.1f"),
                 alt.Tooltip("mib_s:Q", format=",.2f"), "limit:N"])
    return (base.mark_line() + base.mark_point(filled=True)).add_params(*params).properties(
        width=460, height=300, title="gp3 (300 GiB) beside sc1: what a volume's budget allows")


def sc1_timeline_chart(timeline: pd.DataFrame, sc1_gib: int = 300) -> alt.LayerChart:
    """A sustained scan on sc1 from a full bucket: burst, then baseline."""
    size = dropdown("SC1_GIB", sc1_gib, sorted(timeline["sc1_gib"].unique().tolist()),
                    labels=[f"{s:,} GiB" for s in sorted(timeline["sc1_gib"].unique())],
                    label="sc1 size")
    base = alt.Chart(timeline).transform_filter("datum.sc1_gib == SC1_GIB").encode(
        x=alt.X("hours:Q", title="hours of a continuous 1 MiB sequential scan"),
        tooltip=["hours:Q", alt.Tooltip("mib_s:Q", format=".1f"),
                 alt.Tooltip("credit_pct:Q", title="credit left %", format=".0f")])
    rate = base.mark_line(color="#E69F00", interpolate="step-before").encode(
        y=alt.Y("mib_s:Q", title="MiB/s delivered"))
    return rate.add_params(size).properties(
        width=460, height=240,
        title="A sustained scan on sc1: burst while its credit lasts, then baseline")


def ratio_chart(ratios: pd.DataFrame, article_ratio: float, fit_ms: float) -> alt.LayerChart:
    """gp3/sc1 for 16 KiB random I/O from one thread, by gp3's latency, beside the article."""
    line = alt.Chart(ratios).mark_line(color="#0072B2").encode(
        x=alt.X("latency_ms:Q", scale=alt.Scale(type="log"),
                title="time one gp3 I/O takes (ms)", axis=alt.Axis(format="~g")),
        y=alt.Y("ratio:Q", scale=alt.Scale(type="log"), title="gp3 / sc1 (x faster)"),
        tooltip=[alt.Tooltip("latency_ms:Q", format=".2f"), alt.Tooltip("ratio:Q", format=".0f")])
    article = pd.DataFrame({"ratio": [article_ratio], "latency_ms": [fit_ms],
                            "label": [f"the article: about {article_ratio:g}x"]})
    rule = alt.Chart(article).mark_rule(strokeDash=[4, 3], color="#D55E00").encode(y="ratio:Q")
    point = alt.Chart(article).mark_point(color="#D55E00", size=80, filled=True).encode(
        x="latency_ms:Q", y="ratio:Q")
    text = alt.Chart(article).mark_text(align="left", dx=8, dy=-10, color="#D55E00").encode(
        x="latency_ms:Q", y="ratio:Q", text="label:N")
    return alt.layer(line, rule, point, text).properties(
        width=460, height=260,
        title="One thread, 16 KiB random I/O, 300 GiB volumes: the ratio the limits allow")
