"""The caches chapter's charts (Altair): models on the explanation page, runs on the lab page."""

from __future__ import annotations

import altair as alt
import numpy as np
import pandas as pd

from labs.book.theme import MODEL_COLOR, dropdown, slider
from labs.caches import model

# ---- explanation page: models only ---------------------------------------------------------

def bytes_per_row_model_chart() -> alt.TopLevelMixin:
    """Cold bytes read per row against row size, for each read unit; sliders in the browser."""
    sizes = [16 * 2**(i / 4) for i in range(0, 45)]  # 16 B .. 32 KiB
    grid = pd.DataFrame({"row_bytes": sizes})
    chunk = slider("CHUNK_KIB", 16, 4, 64, 4, label="compressed chunk (KiB)")
    readahead = slider("READAHEAD_KIB", 128, 0, 2048, 64, label="mmap readahead window (KiB)")
    page = model.PAGE_BYTES
    lines = alt.Chart(grid).transform_calculate(
        page_cache=f"(1 + (datum.row_bytes - 1) / {page}) * {page}",
        direct_io=f"(1 + (datum.row_bytes - 1) / {model.SECTOR_BYTES}) * {model.SECTOR_BYTES}",
        chunk="(1 + (datum.row_bytes - 1) / (CHUNK_KIB * 1024)) * "
              f"(1 + (CHUNK_KIB * 1024 - 1) / {page}) * {page}",
        mmap_readahead=f"max({page}, READAHEAD_KIB * 1024) * "
                       f"(1 + (datum.row_bytes - 1) / max({page}, READAHEAD_KIB * 1024))",
        asked="datum.row_bytes",
    ).transform_fold(["asked", "direct_io", "page_cache", "chunk", "mmap_readahead"],
                     as_=["unit", "bytes"]
    ).transform_calculate(
        label="{'asked': 'the row itself', 'direct_io': 'direct I/O (512 B sectors)', "
              "'page_cache': 'page cache (4 KiB pages)', "
              "'chunk': 'page cache, compressed chunk', "
              "'mmap_readahead': 'memory map with readahead'}[datum.unit]"
    ).mark_line().encode(
        x=alt.X("row_bytes:Q", scale=alt.Scale(type="log", base=2), title="row size (bytes)"),
        y=alt.Y("bytes:Q", scale=alt.Scale(type="log", base=2),
                title="device bytes per cold row read"),
        color=alt.Color("label:N", title=None, legend=alt.Legend(labelLimit=300)),
        strokeDash=alt.condition("datum.unit == 'asked'", alt.value([4, 3]), alt.value([1, 0])),
        tooltip=["label:N", alt.Tooltip("row_bytes:Q", format=",.0f"),
                 alt.Tooltip("bytes:Q", format=",.0f")])
    return lines.add_params(chunk, readahead).properties(
        width=460, height=300, title="What one cold read of a row brings in (model)")


def hit_ratio_model_chart() -> alt.TopLevelMixin:
    """Hit ratio against working set: uniform (cache / working set) and Zipf (Che)."""
    fractions = np.round(np.geomspace(0.1, 10, 41), 4)
    rows = []
    for exponent in (0.6, 0.8, 0.99, 1.2):
        weights = model.zipf_weights(20_000, exponent)
        for fraction in fractions:
            rows.append({"fraction": fraction, "exponent": exponent,
                         "zipf": model.che_hit_ratio(weights, 20_000 / fraction)})
    data = pd.DataFrame(rows)
    skew = dropdown("SKEW", 0.99, [0.6, 0.8, 0.99, 1.2], label="Zipf exponent")
    base = alt.Chart(data).transform_filter("datum.exponent == SKEW")
    zipf = base.mark_line(color=MODEL_COLOR).encode(
        x=alt.X("fraction:Q", scale=alt.Scale(type="log"),
                title="working set / cache size"),
        y=alt.Y("zipf:Q", title="hit ratio", scale=alt.Scale(domain=[0, 1])),
        tooltip=[alt.Tooltip("fraction:Q", format=".2f"), alt.Tooltip("zipf:Q", format=".2f")])
    uniform = alt.Chart(pd.DataFrame({"fraction": fractions})).transform_calculate(
        uniform="min(1, 1 / datum.fraction)").mark_line(strokeDash=[5, 3]).encode(
        x="fraction:Q", y="uniform:Q",
        tooltip=[alt.Tooltip("fraction:Q", format=".2f"), alt.Tooltip("uniform:Q", format=".2f")])
    return (uniform + zipf).add_params(skew).properties(
        width=460, height=280,
        title="Hit ratio: uniform keys (dashed) and Zipf keys (solid), model")


# ---- lab page: the run with the model ---------------------------------------------------

def block_chart(table: pd.DataFrame) -> alt.TopLevelMixin:
    """Block level: device bytes per byte asked, by method and readahead; model ticks."""
    data = table.assign(per_byte=table["measured"] / table["record_bytes"],
                        model_per_byte=table["model"] / table["record_bytes"],
                        readahead=table["readahead_kib"].map(lambda k: f"readahead {k} KiB"))
    phase = dropdown("BLOCK_PHASE", "cold", ["cold", "warm"], label="pass")
    base = alt.Chart(data).transform_filter("datum.phase == BLOCK_PHASE")
    bars = base.mark_bar().encode(
        x=alt.X("record_bytes:O", title="bytes asked per read"),
        xOffset="method:N",
        # symlog, not log: a warm pass reads 0 bytes; ticks at powers of 8 so that small
        # bars can be read too.
        y=alt.Y("per_byte:Q", scale=alt.Scale(type="symlog"),
                axis=alt.Axis(values=[0, 1, 8, 64, 512, 4096, 32768],
                              labelExpr="format(datum.value, ',')"),
                title="device bytes read per byte asked"),
        color=alt.Color("method:N", title="read method"),
        tooltip=["method:N", "readahead:N", "record_bytes:O", "phase:N",
                 alt.Tooltip("measured:Q", format=",.0f", title="bytes per read"),
                 alt.Tooltip("model:Q", format=",.0f", title="model"),
                 alt.Tooltip("latency_p50_us:Q", format=",.1f", title="p50 (µs)")])
    ticks = base.mark_tick(color=MODEL_COLOR, thickness=3, size=14).encode(
        x="record_bytes:O", xOffset="method:N", y="model_per_byte:Q")
    return (bars + ticks).add_params(phase).properties(width=200, height=260).facet(
        column=alt.Column("readahead:N", title=None)).properties(
        title="Block level: bytes the device read per byte asked (bars), model (ticks)")


def engine_chart(table: pd.DataFrame) -> alt.TopLevelMixin:
    """Device bytes per row read, per engine setting and row size, cold or warm; model ticks."""
    phase = dropdown("ENGINE_PHASE", "cold", ["cold", "warm"], label="pass")
    options = sorted({int(v) for v in table["readahead_kib"]}, reverse=True)
    readahead = dropdown("ENGINE_RA", options[0], options, [f"{k:,} KiB" for k in options],
                         label="readahead")
    data = table.assign(row=table["row_bytes"].map(lambda b: f"{b:,} B rows"))
    base = alt.Chart(data).transform_filter(
        "datum.phase == ENGINE_PHASE && datum.readahead_kib == ENGINE_RA")
    bars = base.mark_bar().encode(
        y=alt.Y("label:N", title=None, axis=alt.Axis(labelLimit=300)),
        x=alt.X("measured:Q", title="device bytes per row read"),
        color=alt.Color("engine:N", title=None),
        tooltip=["label:N", "row:N", "phase:N",
                 alt.Tooltip("readahead_kib:Q", title="readahead (KiB)"),
                 alt.Tooltip("measured:Q", format=",.0f"), alt.Tooltip("model:Q", format=",.0f"),
                 alt.Tooltip("error:Q", format="+.0%"),
                 alt.Tooltip("device_reads_per_read:Q", format=".2f", title="device reads")])
    ticks = base.mark_tick(color=MODEL_COLOR, thickness=3, size=16).encode(
        y="label:N", x="model:Q")
    # One row size under another: three side by side do not fit the page's width.
    return (bars + ticks).add_params(phase, readahead).properties(
        width=420, height=alt.Step(20)).facet(
        facet=alt.Facet("row:N", title=None, sort=alt.SortField("row_bytes"),
                        header=alt.Header(labelAnchor="start", labelFontWeight="bold")),
        columns=1).properties(
        title="Device bytes per row read (bars) and the model (ticks)")


def sweep_chart(table: pd.DataFrame) -> alt.TopLevelMixin:
    """Hit ratio against working set for each cache; the model as lines."""
    pattern = dropdown("PATTERN", "uniform", ["uniform", "zipf"], label="key pattern")
    base = alt.Chart(table).transform_filter("datum.pattern == PATTERN")
    x = alt.X("fraction:Q", title="working set / cache size (as the lab sized it)")
    points = base.mark_point(size=80, filled=True).encode(
        x=x, y=alt.Y("measured:Q", title="hit ratio",
                     scale=alt.Scale(domain=[0, 1.05], nice=False)),
        color=alt.Color("label:N", title=None, legend=alt.Legend(labelLimit=300)),
        tooltip=["label:N", "pattern:N", alt.Tooltip("hot_rows:Q", format=","),
                 alt.Tooltip("working_set_mib:Q", format=".1f", title="hot rows (MiB)"),
                 alt.Tooltip("measured:Q", format=".2f"), alt.Tooltip("model:Q", format=".2f"),
                 alt.Tooltip("latency_p50:Q", format=",.1f"), "latency_unit:N"])
    lines = base.mark_line(strokeDash=[5, 3]).encode(x=x, y="model:Q", color="label:N")
    return (lines + points).add_params(pattern).properties(
        width=460, height=300, title="Hit ratio against working set: measured (points), "
                                     "model (dashed)")


def throttled_chart(table: pd.DataFrame) -> alt.TopLevelMixin:
    data = table.melt(id_vars=["label", "phase"], value_vars=["unthrottled_ms", "measured",
                                                              "model"],
                      var_name="what", value_name="ms")
    data["what"] = data["what"].map({"unthrottled_ms": "unthrottled device",
                                     "measured": "throttled device", "model": "model"})
    phase = dropdown("SLOW_PHASE", "cold", ["cold", "warm"], label="pass")
    # A log axis has no zero: the bars start from the axis' left end.
    return alt.Chart(data).transform_filter("datum.phase == SLOW_PHASE").transform_calculate(
        start="0.002").mark_bar().encode(
        y=alt.Y("label:N", title=None, axis=alt.Axis(labelLimit=300)),
        x2="start:Q",
        yOffset="what:N",
        # Log: warm reads take microseconds, throttled misses tens of milliseconds.
        x=alt.X("ms:Q", scale=alt.Scale(type="log", domain=[0.002, 300]),
                axis=alt.Axis(values=[0.01, 0.1, 1, 10, 100],
                              labelExpr="format(datum.value, ',')"),
                title="mean read latency (ms, log scale)"),
        color=alt.Color("what:N", title=None,
                        scale=alt.Scale(domain=["unthrottled device", "throttled device",
                                                "model"],
                                        range=["#0072B2", "#009E73", MODEL_COLOR])),
        tooltip=["label:N", "what:N", alt.Tooltip("ms:Q", format=",.2f")],
    ).add_params(phase).properties(width=440, height=alt.Step(14),
                                   title="A read on a throttled device (mean)")
