"""The torn-pages chapter's charts: each lab chart draws the first-touch model beside the run.

Controls are Altair params bound to inputs, so they work on the static site.
"""

from __future__ import annotations

import altair as alt
import numpy as np
import pandas as pd

from labs.book.theme import MODEL_COLOR  # (importing the theme also sets it up)
from labs.torn_pages import tables

ON_OFF = alt.Scale(domain=["on", "off"], range=["#D55E00", "#0072B2"])
# measure label (with its unit) -> (column when on, column when off, model column when on,
# model column when off)
MEASURES = {
    "WAL per transaction (bytes)": ("wal_bytes_per_tx_on", "wal_bytes_per_tx_off",
                                    "model_wal_bytes_per_tx_on", None),
    "full-page images per transaction (images)": ("fpi_per_tx_on", "fpi_per_tx_off",
                                                  "model_fpi_per_tx_on", None),
    "transactions per second (TPS)": ("tps_on", "tps_off", "model_tps_on", "model_tps_off"),
    "bytes written to the disk per transaction (bytes)": (
        "device_bytes_per_tx_on", "device_bytes_per_tx_off", "model_device_bytes_per_tx_on",
        "model_device_bytes_per_tx_off"),
    "latency p50 (ms)": ("latency_p50_ms_on", "latency_p50_ms_off", None, None),
    "latency p99 (ms)": ("latency_p99_ms_on", "latency_p99_ms_off", None, None),
}


def _axis_label(param: alt.Parameter, height: int) -> alt.Chart:
    """A y-axis title that follows a dropdown: the chosen measure, with its unit."""
    return alt.Chart(alt.Data(values=[{}])).mark_text(
        angle=270, fontWeight="bold", fontSize=12).encode(
        x=alt.value(-58), y=alt.value(height / 2), text="label:N").transform_calculate(
        label=param.name)


def settings_long(results: pd.DataFrame) -> pd.DataFrame:
    table = tables.settings(results)
    rows = []
    for row in table.to_dict("records"):
        for measure, (col_on, col_off, model_on, model_off) in MEASURES.items():
            for fpw, col, model_col in (("on", col_on, model_on), ("off", col_off, model_off)):
                base = {"disk": row["disk"], "setting": row["setting"],
                        "full_page_writes": fpw, "measure": measure}
                rows.append({**base, "source": "measured", "value": row[col]})
                if model_col and not pd.isna(row.get(model_col, np.nan)):
                    rows.append({**base, "source": "model", "value": row[model_col]})
    return pd.DataFrame(rows)


def settings_chart(results: pd.DataFrame) -> alt.LayerChart:
    """Bars: full_page_writes on and off per checkpoint setting; ticks: the model."""
    long = settings_long(results)
    height = 260
    measure = alt.param(name="measure", value=next(iter(MEASURES)),
                        bind=alt.binding_select(options=list(MEASURES), name="measure "))
    disks = sorted(long["disk"].unique(), key=lambda d: d != tables.NO_LIMIT)
    disk = alt.param(name="disk", value=disks[0],
                     bind=alt.binding_select(options=disks, name="disk "))
    order = tables.setting_order(long["setting"])
    base = alt.Chart(long).encode(
        x=alt.X("setting:N", sort=order, title=None,
                # "checkpoint_timeout 30 s" on two lines, so neighbouring labels never meet
                axis=alt.Axis(labelAngle=0, labelLimit=200, labelExpr=(
                    "split(replace(datum.label, 'checkpoint_timeout ', "
                    "'checkpoint_timeout|'), '|')"))),
        xOffset=alt.XOffset("full_page_writes:N", sort=["on", "off"]),
        y=alt.Y("value:Q", title=None),
        tooltip=["setting", "full_page_writes", "source", "measure",
                 alt.Tooltip("value:Q", format=",.2f")],
    ).transform_filter((alt.datum.measure == measure) & (alt.datum.disk == disk))
    bars = base.transform_filter(alt.datum.source == "measured").mark_bar().encode(
        color=alt.Color("full_page_writes:N", sort=["on", "off"], scale=ON_OFF,
                        title="full_page_writes"))
    # The model's mark has its own colour and shape, and its own legend entry: no colour
    # encoding here, so nothing overrides the black.
    modelled = base.transform_filter(alt.datum.source == "model").mark_point(
        filled=True, size=130, color=MODEL_COLOR, stroke="white", strokeWidth=1.5,
        opacity=1).encode(
        shape=alt.Shape("source:N", scale=alt.Scale(domain=["model"], range=["diamond"]),
                        title=None, legend=alt.Legend(
                            labelExpr="'first-touch model'", symbolFillColor=MODEL_COLOR,
                            symbolStrokeColor="white", symbolSize=130)))
    return alt.layer(bars, modelled, _axis_label(measure, height)).add_params(
        measure, disk).resolve_legend(color="independent", shape="independent").properties(
        width=460, height=height,
        title=alt.TitleParams("pgbench with full_page_writes on and off",
                              subtitle="bars: measured; black diamonds: first-touch model "
                                       "(where it makes a prediction)"))


BURST_SERIES = {
    "images per transaction, in the WAL (images)": ("fpi_per_tx", "model_fpi_per_tx"),
    "images per transaction, pg_stat_wal (images)": ("stats_fpi_per_tx", None),
    "accounts pages changed per transaction (pages)": ("accounts_pages_per_tx", None),
    "WAL per transaction (bytes)": ("wal_bytes_per_tx", "model_wal_bytes_per_tx"),
    "transactions per second (TPS)": ("tps", None),
}
LEG_NAMES = {("forced-checkpoint", "on"): "on, new transactions",
             ("forced-checkpoint", "off"): "off",
             ("forced-checkpoint-replay", "on"): "on, previous leg's transactions replayed"}
LEG_COLORS = alt.Scale(domain=list(LEG_NAMES.values()),
                       range=["#D55E00", "#0072B2", "#CC79A7"])


def burst_long(results: pd.DataFrame) -> pd.DataFrame:
    table = tables.intervals(results)
    if table.empty:
        return pd.DataFrame(columns=["leg_name", "series", "source", "time_s", "value"])
    base_bytes = tables.legs(results)
    off = base_bytes[(base_bytes["workload"] == "forced-checkpoint")
                     & (base_bytes["full_page_writes"] == "off")]["wal_bytes_per_tx"]
    size = tables.image_bytes(results)
    if not off.empty:
        table["model_wal_bytes_per_tx"] = float(off.iloc[0]) + size * table["model_fpi_per_tx"]
    table = table[~table["few_commits"]]
    rows = []
    for row in table.to_dict("records"):
        name = LEG_NAMES.get((row["workload"], row["full_page_writes"]), row["leg"])
        for series, (column, model_column) in BURST_SERIES.items():
            base = {"leg_name": name, "series": series, "time_s": row["time_s"]}
            if not pd.isna(row[column]):
                rows.append({**base, "source": "measured", "value": row[column]})
            if model_column and model_column in row and not pd.isna(row[model_column]):
                rows.append({**base, "source": "model", "value": row[model_column]})
    return pd.DataFrame(rows)


def burst_chart(results: pd.DataFrame) -> alt.LayerChart:
    """Interval by interval around a forced CHECKPOINT, measured (solid) and modelled
    (dashed); a dropdown picks the series, the legend highlights a leg."""
    long = burst_long(results)
    marks = tables.forced_checkpoints(results)
    marks["leg_name"] = [LEG_NAMES.get((w, f), w) for w, f in
                         zip(marks["workload"], marks["full_page_writes"], strict=True)]
    if "forced_checkpoint_redo_at" not in marks:
        marks["forced_checkpoint_redo_at"] = marks["forced_checkpoint_at"]
    height = 280
    series = alt.param(name="series", value=next(iter(BURST_SERIES)),
                       bind=alt.binding_select(options=list(BURST_SERIES), name="series "))
    legend = alt.selection_point(fields=["leg_name"], bind="legend")
    color = alt.Color("leg_name:N", title="full_page_writes", scale=LEG_COLORS,
                      legend=alt.Legend(labelLimit=400))
    base = alt.Chart(long).encode(
        x=alt.X("time_s:Q", title="seconds since the leg's pgbench started (just after a "
                                  "checkpoint)"),
        y=alt.Y("value:Q", title=None), color=color,
        opacity=alt.condition(legend, alt.value(1.0), alt.value(0.12)),
        tooltip=["leg_name", "source", "series", alt.Tooltip("time_s:Q", format=".1f"),
                 alt.Tooltip("value:Q", format=",.3f")],
    ).transform_filter(alt.datum.series == series)
    measured = base.transform_filter(alt.datum.source == "measured").mark_line(point=True)
    modelled = base.transform_filter(alt.datum.source == "model").mark_line(
        strokeDash=[6, 4], strokeWidth=2)
    rules = alt.Chart(marks).mark_rule(strokeDash=[2, 2]).encode(
        x="forced_checkpoint_redo_at:Q", color=color,
        tooltip=[alt.Tooltip("forced_checkpoint_redo_at:Q", format=".1f",
                             title="checkpoint began (s)")])
    return alt.layer(measured, modelled, rules, _axis_label(series, height)).add_params(
        series, legend).properties(
        width=560, height=height,
        title=alt.TitleParams("The burst after a checkpoint",
                              subtitle=["solid: measured, one point per interval between "
                                        "WAL samples; dashed: first-touch model",
                                        "dotted rule: the forced CHECKPOINT began",
                                        "intervals with fewer than a tenth of their leg's "
                                        "median commits are left out"]))


def comparison_table(results: pd.DataFrame, reference: pd.DataFrame) -> pd.DataFrame:
    """Throughput without the protection over throughput with it: the article, and this
    run (measured, and modelled where the model predicts TPS)."""
    times = reference.set_index("doublewrite")["duration_s"]
    rows = [{"case": "RDS for MySQL, 30 M-row insert (article)", "source": "measured",
             "ratio": times["on"] / times["off"], "group": "InnoDB doublewrite"}]
    for row in tables.settings(results).to_dict("records"):
        if row["setting"] == tables.FORCED:
            continue
        case = f"PostgreSQL, {row['setting'].replace('checkpoint_timeout ', 'timeout ')}, " \
               f"{row['disk'].replace('writes limited to ', 'disk ')}"
        rows.append({"case": case, "source": "measured", "ratio": row["tps_off_over_on"],
                     "group": "full_page_writes"})
        if not pd.isna(row.get("model_tps_off_over_on", np.nan)):
            rows.append({"case": case, "source": "model", "ratio": row["model_tps_off_over_on"],
                         "group": "full_page_writes"})
    return pd.DataFrame(rows)


def comparison_chart(results: pd.DataFrame, reference: pd.DataFrame) -> alt.LayerChart:
    """How much faster without the second copy: bars measured, ticks the model, the rule
    at 2 the AWS documentation's "up to two times"."""
    data = comparison_table(results, reference)
    order = list(dict.fromkeys(data["case"]))
    base = alt.Chart(data).encode(
        y=alt.Y("case:N", sort=order, title=None, axis=alt.Axis(labelLimit=360)),
        x=alt.X("ratio:Q", title="throughput without the protection ÷ with it (×)",
                scale=alt.Scale(domainMin=0)),
        tooltip=["case", "source", alt.Tooltip("ratio:Q", format=".2f")])
    bars = base.transform_filter(alt.datum.source == "measured").mark_bar().encode(
        color=alt.Color("group:N", title="what is switched off",
                        scale=alt.Scale(range=["#009E73", "#0072B2"])))
    ticks = base.transform_filter(alt.datum.source == "model").mark_tick(
        color="black", thickness=3, size=18)
    one = alt.Chart(pd.DataFrame({"x": [1.0]})).mark_rule(color="grey").encode(x="x:Q")
    two = alt.Chart(pd.DataFrame({"x": [2.0], "label": ["AWS: up to 2×"]})).mark_rule(
        strokeDash=[5, 3], color="black").encode(x="x:Q", tooltip=["label"])
    return alt.layer(bars, ticks, one, two).properties(
        width=420, height=alt.Step(26),
        title=alt.TitleParams("Without the second copy of each page",
                              subtitle="bars: measured; black ticks: first-touch model on the "
                                       "write-limited disk; dashed: AWS's 'up to 2×'"))


def model_explorer(base_bytes: float = 420.0, image_bytes: float = 8192.0) -> alt.VConcatChart:
    """The first-touch model in the browser: sliders for the checkpoint interval, the table
    size in pages and the TPS; images per transaction and WAL MiB/s over three intervals."""
    interval = alt.param(name="interval_s", value=300, bind=alt.binding_range(
        min=30, max=1800, step=30, name="checkpoint interval (s) "))
    pages = alt.param(name="table_pages", value=26000, bind=alt.binding_range(
        min=1000, max=1_000_000, step=1000, name="table size (pages of 8 KiB) "))
    tps = alt.param(name="tps", value=1500, bind=alt.binding_range(
        min=100, max=20000, step=100, name="transactions per second "))
    seconds = pd.DataFrame({"fraction": np.linspace(0, 3, 601)})
    since = "(datum.fraction * interval_s) % interval_s"
    base = alt.Chart(seconds).transform_calculate(
        time_s="datum.fraction * interval_s",
        images=f"exp(-tps * ({since}) / table_pages)",
        wal_mibps=f"tps * ({base_bytes} + {image_bytes} * datum.images) / 1048576",
    ).encode(x=alt.X("time_s:Q", title="seconds (a checkpoint starts at 0 and every "
                                       "interval after)"))
    images = base.mark_line(color="#D55E00").encode(
        y=alt.Y("images:Q", title="full-page images per transaction",
                scale=alt.Scale(domain=[0, 1])),
        tooltip=[alt.Tooltip("time_s:Q", format=".0f"), alt.Tooltip("images:Q", format=".3f")])
    average = alt.Chart(seconds).transform_calculate(
        x="interval_s * tps / table_pages",
        mean="table_pages / (tps * interval_s) * (1 - exp(-datum.x))",
        text="'interval average: ' + format(datum.mean, '.3f') + ' images and ' + format("
             + str(base_bytes) + " + " + str(image_bytes) + " * datum.mean, ',.0f') + "
             "' WAL bytes per transaction (' + format(1 + " + str(image_bytes)
             + " * datum.mean / " + str(base_bytes) + ", '.1f') + '× without images)'",
    ).transform_filter("datum.fraction == 0").mark_text(
        align="left", dx=4, dy=-8, fontSize=11).encode(
        x=alt.value(0), y=alt.value(0), text="text:N")
    wal = base.mark_line(color="#0072B2").encode(
        y=alt.Y("wal_mibps:Q", title="WAL written (MiB/s)"),
        tooltip=[alt.Tooltip("time_s:Q", format=".0f"),
                 alt.Tooltip("wal_mibps:Q", format=".2f")])
    return alt.vconcat(
        alt.layer(images, average).properties(width=520, height=200),
        wal.properties(width=520, height=160),
    ).add_params(interval, pages, tps).properties(
        title=alt.TitleParams(
            "The first-touch model: one page changed per transaction, at random",
            subtitle=f"WAL without images: {base_bytes:.0f} bytes per transaction; "
                     f"one image: {image_bytes:.0f} bytes"))
