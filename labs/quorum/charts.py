"""The Quorums chapter's charts (Altair), drawn from the model's tables or a recorded run."""

from __future__ import annotations

import altair as alt
import pandas as pd

from labs.book.theme import dropdown, slider

VERDICT_COLOURS = alt.Scale(
    domain=["valid", "reads can miss the latest write", "two writes can both win"],
    range=["#009E73", "#E69F00", "#D55E00"])


def quorum_grid_chart(grid: pd.DataFrame, nodes: int = 6) -> alt.Chart:
    """Every (W, R) for N copies: which rule breaks, and how many failures each survives."""
    n = slider("N", nodes, 1, int(grid["n"].max()), label="copies N")
    base = alt.Chart(grid).transform_filter("datum.n == N").encode(
        x=alt.X("w:O", title="write quorum W"),
        y=alt.Y("r:O", title="read quorum R", sort="descending"),
    )
    cells = base.mark_rect(stroke="white", strokeWidth=2).encode(
        color=alt.Color("verdict:N", scale=VERDICT_COLOURS, title=None,
                        legend=alt.Legend(orient="bottom", direction="vertical", labelLimit=400)),
        tooltip=[alt.Tooltip("n:Q", title="N"), alt.Tooltip("w:Q", title="W"),
                 alt.Tooltip("r:Q", title="R"), "verdict:N",
                 alt.Tooltip("write_tolerates:Q", title="writes survive failures"),
                 alt.Tooltip("read_tolerates:Q", title="reads survive failures")],
    )
    # Each cell: how many failed nodes writes and reads still survive ("2 | 3").
    labels = base.mark_text(fontSize=11, color="white").transform_calculate(
        label="datum.write_tolerates + ' | ' + datum.read_tolerates"
    ).encode(text="label:N")
    return (cells + labels).add_params(n).properties(
        width=330, height=330, title={
            "text": "Which (W, R) are safe for N copies",
            "subtitle": "in each cell: failed nodes that writes | reads survive"})


def availability_chart(curves: pd.DataFrame, nodes: int = 6, write: int = 4, read: int = 3,
                       azs: int = 3) -> alt.LayerChart:
    """P(writes / reads unavailable) vs per-node unavailability p, log-log."""
    max_nodes = int(curves["n"].max())
    params = [
        slider("N", nodes, 1, max_nodes, label="copies N"),
        slider("W", write, 1, max_nodes, label="write quorum W"),
        slider("R", read, 1, max_nodes, label="read quorum R"),
        dropdown("Z", azs, sorted(curves["z"].unique().tolist()), label="AZs Z"),
        dropdown("Q", 0.0, sorted(curves["q"].unique().tolist()),
                 labels=[f"{q:g}" for q in sorted(curves["q"].unique())],
                 label="p(AZ out)"),
    ]
    # Chances below 1e-16 are left out rather than clamped: a clamp draws a fake floor.
    base = alt.Chart(curves).transform_filter(
        "datum.n == N && datum.z == min(Z, N) && datum.q == Q && datum.unavailable >= 1e-16")
    encode = {
        "x": alt.X("p:Q", scale=alt.Scale(type="log"), title="p: chance a single node is down",
                   axis=alt.Axis(format="~e")),
        "y": alt.Y("unavailable:Q", scale=alt.Scale(type="log", domainMin=1e-16),
                   title="chance the operation is unavailable", axis=alt.Axis(format="~e")),
        "tooltip": ["p:Q", alt.Tooltip("unavailable:Q", format=".3e")],
    }
    operations = ["writes (need W)", "reads (need R)"]
    layers = []
    for op, quorum_param in zip(operations, ("W", "R"), strict=True):
        layers.append(
            base.transform_filter(f"datum.k == {quorum_param}")
            .transform_calculate(operation=f"'{op}'")
            .mark_line(point=True)
            .encode(color=alt.Color("operation:N", title=None,
                                    scale=alt.Scale(domain=operations)),
                    strokeDash=alt.StrokeDash("operation:N", legend=None),
                    # An unsafe layout is drawn faint: it is "available" only by breaking a rule.
                    opacity=alt.condition("R + W > N && 2 * W > N", alt.value(1.0),
                                          alt.value(0.3)),
                    **encode))
    # What is wrong with the chosen layout, said on the chart itself.
    warning = alt.Chart(pd.DataFrame({"x": [0]})).transform_calculate(
        text="W > N || R > N ? 'W and R must be at most N: no such quorum exists' : "
             "R + W <= N ? 'unsafe: R + W <= N, a read can miss the latest write' : "
             "2 * W <= N ? 'unsafe: W <= N/2, two conflicting writes can both win' : ''"
    ).mark_text(align="left", baseline="top", x=8, y=8, color="#D55E00", fontSize=13,
                fontWeight="bold").encode(text="text:N")
    return alt.layer(*layers, warning).add_params(*params).properties(
        width=460, height=300,
        title="Unavailability vs per-node failure chance")


def kth_ack_chart(distribution: pd.DataFrame, percentiles: pd.DataFrame, k: int = 4,
                  slow_ms: float = 4.0) -> alt.LayerChart:
    """Density of the k-th fastest of N acknowledgements, with p50 and p99 marked; the
    controls pick K and the round trip of the third (slow) zone."""
    k_param = slider("K", k, 1, int(distribution["k"].max()), label="acknowledgements waited for")
    slows = sorted(distribution["slow_ms"].unique().tolist())
    slow = dropdown("SLOW", slow_ms, slows, labels=[f"{ms:g} ms" for ms in slows],
                    label="round trip to the third zone")
    zone = alt.Chart(distribution).transform_filter("datum.slow_ms == SLOW")
    chosen = zone.transform_filter("datum.k == K")
    x = alt.X("latency_ms:Q", title="write latency (ms)")
    area = chosen.mark_area(opacity=0.6, line=True, color="#0072B2").encode(
        x=x, y=alt.Y("density:Q", title="probability density (per ms)"))
    others = zone.transform_filter("datum.k != K").mark_line(
        opacity=0.35, strokeWidth=1, color="#777777").encode(x=x, y="density:Q", detail="k:N")
    # Each grey curve named at its peak, so a reader can tell the K's apart.
    peaks = zone.transform_filter("datum.k != K").transform_joinaggregate(
        peak="max(density)", groupby=["k"]).transform_filter(
        "datum.density == datum.peak").transform_calculate(label="'K=' + datum.k")
    names = peaks.mark_text(dy=-7, fontSize=10, color="#555555").encode(
        x="latency_ms:Q", y="density:Q", text="label:N")
    markers = alt.Chart(percentiles).transform_filter("datum.slow_ms == SLOW && datum.k == K"
                                                       ).transform_fold(
        ["p50_ms", "p99_ms"], as_=["percentile", "ms"]).transform_calculate(
        label="replace(datum.percentile, '_ms', '') + ' ' + format(datum.ms, '.2f') + ' ms'",
        row="datum.percentile == 'p50_ms' ? 12 : 28")
    rules = markers.mark_rule(strokeDash=[4, 3], color="#D55E00").encode(x="ms:Q")
    texts = markers.mark_text(align="left", dx=4, color="#D55E00").encode(
        x="ms:Q", y=alt.Y("row:Q", scale=None), text=alt.Text("label:N"))
    return alt.layer(others, names, area, rules, texts).add_params(k_param, slow).properties(
        width=460, height=280,
        title="Time until the K-th of 6 acknowledgements arrives (2 replicas per zone)")


def durability_chart(curves: pd.DataFrame) -> alt.LayerChart:
    """Chance per year of losing write quorum / data vs mean time to repair a copy."""
    options = sorted(curves["mtbf_days"].unique().tolist())
    mtbf = dropdown("MTBF", 365 if 365 in options else options[0], options,
                    labels=[f"{d} days" for d in options], label="mean time between failures")
    lines = alt.Chart(curves).transform_filter("datum.mtbf_days == MTBF").mark_line(
        point=True).encode(
        x=alt.X("mttr_hours:Q", scale=alt.Scale(type="log"),
                title="mean time to repair one copy (hours, log scale)"),
        y=alt.Y("p_per_year:Q", scale=alt.Scale(type="log"), axis=alt.Axis(format="~e"),
                title="chance per year"),
        color=alt.Color("layout:N", title=None),
        strokeDash=alt.StrokeDash("event:N", title=None),
        tooltip=["layout:N", "event:N", alt.Tooltip("mttr_hours:Q", format=".3g"),
                 alt.Tooltip("p_per_year:Q", format=".2e"),
                 alt.Tooltip("mean_years:Q", format=".3g", title="mean years to event")],
    )
    ten_seconds = alt.Chart(pd.DataFrame({"mttr_hours": [10 / 3600],
                                          "label": ["10 s segment repair"]}))
    rule = ten_seconds.mark_rule(color="#777777", strokeDash=[2, 2]).encode(x="mttr_hours:Q")
    text = ten_seconds.mark_text(align="left", dx=4, y=12, color="#555555").encode(
        x="mttr_hours:Q", text="label:N")
    return alt.layer(lines, rule, text).add_params(mtbf).properties(
        width=460, height=300,
        title="Repair time decides how often a second failure arrives in time to hurt")


def montecarlo_chart(results: pd.DataFrame) -> alt.VConcatChart:
    """A recorded Monte Carlo run: estimate with its 95 % interval beside the exact value.

    One row per operation, each with its own axis: the two probabilities can differ by
    orders of magnitude.
    """
    wide = results[results["metric"] != "throughput"].pivot_table(
        index="op", columns="metric", values="value").reset_index()
    rows = []
    for op in ("write", "read"):
        base = alt.Chart(wide[wide["op"] == op]).encode(y=alt.Y("op:N", title=None))
        interval = base.mark_rule(strokeWidth=3).encode(
            x=alt.X("ci95_low:Q", title=f"P({op}s unavailable)", axis=alt.Axis(format=".3e"),
                    scale=alt.Scale(zero=False, padding=20)),
            x2="ci95_high:Q")
        estimate = base.mark_point(size=90, filled=True).encode(
            x="estimate:Q", tooltip=[alt.Tooltip(c, format=".4e") for c in
                                     ("estimate:Q", "ci95_low:Q", "ci95_high:Q", "exact:Q")])
        exact = base.mark_tick(color="#D55E00", thickness=3, size=30).encode(x="exact:Q")
        rows.append(alt.layer(interval, estimate, exact).properties(width=460, height=60))
    # A title in two lines: one line would be wider than the charts and the page's column.
    return alt.vconcat(*rows).resolve_scale(x="independent").properties(
        title={"text": "Monte Carlo estimate beside the exact value",
               "subtitle": "dot and bar: the estimate and its 95 % interval; orange tick: exact"})
