"""The doublewrite chapter's charts (Altair): the model, and the recorded run beside it.

Every control is an Altair parameter bound to an input, evaluated in the browser.
"""

from __future__ import annotations

import altair as alt
import numpy as np
import pandas as pd

from labs.book.theme import MODEL_COLOR, dropdown, slider
from labs.doublewrite.model import PAGE_BYTES, ratio_bound
from labs.doublewrite.tables import leg_table, pair_table, tps_series

ON_OFF = alt.Scale(domain=["ON", "OFF"], range=["#D55E00", "#0072B2"])


def model_chart(results: pd.DataFrame, article_ratio: float) -> alt.TopLevelMixin:
    """The bytes model's ON/OFF ratio against page writes per row, with sliders for the
    doublewrite share and the redo per row; the run's pairs and the article as marks."""
    grid = pd.DataFrame({"pages_per_row": np.logspace(-3, 1.5, 120)})
    share = slider("SHARE", 0.9, 0.0, 1.0, 0.01, label="share of page writes doublewritten")
    redo = slider("REDO", 600, 50, 5000, 50, label="redo bytes per row")
    curve = alt.Chart(grid).transform_calculate(
        ratio=f"(datum.pages_per_row * {PAGE_BYTES} * (1 + SHARE) + REDO)"
              f" / (datum.pages_per_row * {PAGE_BYTES} + REDO)",
        kind="'model: bytes ON / OFF'",
    ).mark_line(color=MODEL_COLOR).encode(
        x=alt.X("pages_per_row:Q", scale=alt.Scale(type="log", domain=[0.001, 30]),
                title="page writes per inserted row (log scale)"),
        y=alt.Y("ratio:Q", scale=alt.Scale(domain=[0.8, 2.3]),
                title="throughput OFF / ON when bandwidth is the limit"),
        tooltip=[alt.Tooltip("pages_per_row:Q", format=".3f"),
                 alt.Tooltip("ratio:Q", format=".2f", title="model ratio")],
    ).add_params(share, redo)
    pairs = pair_table(results)
    # A log axis has no zero: pairs that flushed no page (the model's ratio 1) are left out.
    pairs = pairs[pairs["pages_per_row_off"] > 0].copy()
    pairs["disk"] = np.where(pairs["write_limit_mibps"] > 0, "write-limited", "no limit")
    points = alt.Chart(pairs).mark_point(size=90, filled=True).encode(
        x="pages_per_row_off:Q", y=alt.Y("tps_off_over_on:Q"),
        color=alt.Color("disk:N", title="measured pairs",
                        scale=alt.Scale(domain=["write-limited", "no limit"],
                                        range=["#009E73", "#E69F00"]),
                        legend=alt.Legend(orient="bottom-right", symbolType="circle")),
        tooltip=["setting:N", "repetition:Q",
                 alt.Tooltip("tps_off_over_on:Q", format=".2f", title="measured OFF/ON"),
                 alt.Tooltip("model_ratio:Q", format=".2f", title="model (this pair)"),
                 alt.Tooltip("pages_per_row_off:Q", format=".3f")])
    marks = pd.DataFrame({"y": [ratio_bound(), article_ratio],
                          "label": ["2: every page twice, no redo",
                                    f"article: {article_ratio:.2f} (RDS, 30 M rows)"]})
    rules = alt.Chart(marks).mark_rule(strokeDash=[5, 4], color="#777777").encode(y="y:Q")
    text = alt.Chart(marks).mark_text(align="left", dx=4, dy=-6, color="#555555").encode(
        y="y:Q", x=alt.datum(0.0012), text="label:N")
    return (curve + rules + text + points).properties(
        width=480, height=300, title="Model: how much doublewrite can cost, and what was measured")


LEG_MEASURES = {
    "tps": ("inserts per second", "model_tps", ",.0f"),
    "device_bytes_per_row": ("device bytes written per row", "model_bytes", ",.0f"),
    "latency_avg": ("mean latency (ms)", "model_latency", ".1f"),
    "latency_p99": ("latency p99 (ms)", None, ".1f"),
}


def legs_long(results: pd.DataFrame, threads: int) -> pd.DataFrame:
    """Every leg's measures in long form, each with the model's value where there is one."""
    legs = leg_table(results)
    pairs = pair_table(results).set_index(["buffer_pool_mib", "write_limit_mibps",
                                           "repetition"])
    rows = []
    for leg in legs.itertuples():
        pair = pairs.loc[(leg.buffer_pool_mib, leg.write_limit_mibps, leg.repetition)]
        side = leg.doublewrite.lower()
        model_tps = pair.get(f"model_tps_{side}", np.nan)
        model = {
            "tps": model_tps,
            "device_bytes_per_row": (pair["model_bytes_per_row_on"] if side == "on"
                                     else np.nan),
            # Little's law: `threads` requests always in flight, so mean latency = threads / rate.
            "latency_avg": threads / model_tps * 1000 if model_tps == model_tps else np.nan,
            "latency_p99": np.nan,
        }
        for metric, (label, _, _) in LEG_MEASURES.items():
            rows.append({"setting": leg.setting, "repetition": leg.repetition,
                         "doublewrite": leg.doublewrite, "measure": label,
                         "measured": getattr(leg, metric), "model": model[metric]})
    return pd.DataFrame(rows)


def legs_chart(results: pd.DataFrame, threads: int) -> alt.TopLevelMixin:
    """Per setting, ON beside OFF; dropdowns for the measure and the repetition. Black ticks:
    the model (inserts per second and mean latency on the write-limited device; the ON
    leg's bytes per row predicted from the OFF leg)."""
    long = legs_long(results, threads)
    measures = [label for label, _, _ in LEG_MEASURES.values()]
    measure = dropdown("MEASURE", measures[0], measures, label="measure")
    reps = sorted(long["repetition"].unique().tolist())
    rep = dropdown("REP", reps[0], reps, label="repetition")
    order = list(dict.fromkeys(long["setting"]))
    base = alt.Chart(long).transform_filter("datum.measure == MEASURE && datum.repetition == REP")
    bars = base.mark_bar().encode(
        y=alt.Y("setting:N", sort=order, title=None, axis=alt.Axis(labelLimit=320)),
        yOffset=alt.YOffset("doublewrite:N", sort=["ON", "OFF"]),
        # A log scale: the settings differ by orders of magnitude; bars start at the axis.
        x=alt.X("measured:Q", scale=alt.Scale(type="log"),
                title="measured (bars) and model (black ticks), log scale",
                axis=alt.Axis(labelFlush=True, values=[10.0**k for k in range(-1, 6)],
                              labelExpr=(
                    "datum.value < 1 ? format(datum.value, '.1') : format(datum.value, '~s')"))),
        x2=alt.datum(0.1),
        color=alt.Color("doublewrite:N", scale=ON_OFF, title="innodb_doublewrite"),
        tooltip=["setting:N", "doublewrite:N", "measure:N",
                 alt.Tooltip("measured:Q", format=",.1f"), alt.Tooltip("model:Q", format=",.1f")])
    ticks = base.transform_filter("isValid(datum.model)").mark_tick(
        color=MODEL_COLOR, thickness=3, size=14).encode(
        y=alt.Y("setting:N", sort=order), yOffset=alt.YOffset("doublewrite:N", sort=["ON", "OFF"]),
        x="model:Q")
    # Narrow enough that the setting labels and the last axis label fit the page's column.
    return (bars + ticks).add_params(measure, rep).properties(
        width=340, height=alt.Step(22), title="Each leg, measured beside the model")


def ratio_chart(results: pd.DataFrame, article_ratio: float) -> alt.TopLevelMixin:
    """ON over OFF per setting: the run's elapsed-time and bytes ratios, the model's ratio
    (black tick) and the article's 2.1 (dashed)."""
    pairs = pair_table(results)
    measures = {"elapsed_on_over_off": "time to insert the rows, ON / OFF",
                "bytes_on_over_off": "device bytes per row, ON / OFF"}
    long = pairs.melt(id_vars=["setting", "repetition", "model_ratio"],
                      value_vars=list(measures), var_name="metric", value_name="ratio")
    long["measure"] = long["metric"].map(measures)
    choice = dropdown("RATIO", measures["elapsed_on_over_off"], list(measures.values()),
                      label="ratio")
    order = list(dict.fromkeys(pairs["setting"]))
    base = alt.Chart(long).transform_filter("datum.measure == RATIO")
    points = base.mark_point(filled=True, size=110, color="#0072B2").encode(
        y=alt.Y("setting:N", sort=order, title=None, axis=alt.Axis(labelLimit=320)),
        x=alt.X("ratio:Q", scale=alt.Scale(domain=[0.5, 2.4]), title="ON / OFF"),
        tooltip=["setting:N", "repetition:Q", alt.Tooltip("ratio:Q", format=".2f"),
                 alt.Tooltip("model_ratio:Q", format=".2f", title="model")])
    ticks = base.mark_tick(color=MODEL_COLOR, thickness=3, size=18).encode(
        y=alt.Y("setting:N", sort=order), x="model_ratio:Q")
    article = alt.Chart(pd.DataFrame({"x": [article_ratio]})).mark_rule(
        strokeDash=[5, 4], color="#D55E00").encode(x="x:Q")
    return (points + ticks + article).add_params(choice).properties(
        width=420, height=alt.Step(34),
        title="ON / OFF: this run (dots), the model (ticks), the article (dashed)")


def timeline_chart(results: pd.DataFrame) -> alt.TopLevelMixin:
    """Inserts per second through each leg; dropdowns pick the setting and the repetition."""
    series = tps_series(results)
    pairs = pair_table(results)
    settings = list(dict.fromkeys(series["setting"]))
    limited = [s for s in settings if "≤" in s]
    setting = dropdown("SETTING", (limited or settings)[0], settings, label="setting")
    reps = sorted(series["repetition"].unique().tolist())
    rep = dropdown("TREP", reps[0], reps, label="repetition")
    models = pairs.dropna(subset=["model_tps_on"]) if "model_tps_on" in pairs else pairs.head(0)
    model_rows = pd.DataFrame(
        [{"setting": r.setting, "repetition": r.repetition, "doublewrite": side,
          "tps": getattr(r, f"model_tps_{side.lower()}")}
         for r in models.itertuples() for side in ("ON", "OFF")],
        columns=["setting", "repetition", "doublewrite", "tps"])
    line = alt.Chart(series).mark_line(point=True).encode(
        x=alt.X("time_s:Q", title="seconds since the inserts started"),
        y=alt.Y("tps:Q", title="inserts per second"),
        color=alt.Color("doublewrite:N", scale=ON_OFF, title="innodb_doublewrite"),
        tooltip=["doublewrite:N", "time_s:Q", alt.Tooltip("tps:Q", format=",.0f")],
    ).transform_filter("datum.setting == SETTING && datum.repetition == TREP")
    rules = alt.Chart(model_rows).mark_rule(strokeDash=[6, 3]).encode(
        y="tps:Q", color=alt.Color("doublewrite:N", scale=ON_OFF),
        tooltip=["doublewrite:N", alt.Tooltip("tps:Q", format=",.0f", title="model")],
    ).transform_filter("datum.setting == SETTING && datum.repetition == TREP")
    return (line + rules).add_params(setting, rep).properties(
        width=480, height=260,
        title="Inserts per second (dashed: the model's rate at the write limit)")
