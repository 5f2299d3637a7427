"""What the DRBD lab page shows: the recorded run's tables (labs/drbd/results.py) as the
numbers the text quotes, the charts, the tables and the panel. Pure page code: records and
models, never the VMs.
"""

from __future__ import annotations

import altair as alt
import pandas as pd

from labs.book import number_text as nt
from labs.book import theme  # noqa: F401  (the book's chart theme and offline renderer)
from labs.book.panel import LabPanel
from labs.book.provenance import run_summary
from labs.book.tables import wrapping_table
from labs.drbd import model
from labs.drbd.figures import figures  # noqa: F401  (figures: for the page)
from labs.drbd.params import Parameters
from labs.drbd.results import (  # noqa: F401  (the page's tables, for its code cells and tests)
    ARTICLE_JOB_LABELS,
    article_results,
    drill_results,
    fio_results,
    link_results,
    pgbench_results,
    ping_results,
    resync_results,
    sweep_bandwidths,
    zone_results,
)
from labs.records import RecordedRun

PROTOCOL_COLOURS = alt.Scale(domain=["A", "B", "C"], range=["#009E73", "#E69F00", "#0072B2"])
# pgbench's runs without a mirror: the bare disk, and DRBD with its peer disconnected. Every
# share is of the first (of the second in runs made before the lab measured the bare disk).
BASELINE_LABELS = {"local": "local disk (no DRBD)", "drbd-disconnected": "DRBD, peer disconnected"}

# --- charts ----------------------------------------------------------------------------------

def latency_chart(run: RecordedRun) -> alt.LayerChart:
    """Write latency by measured round trip, per protocol: points measured, lines the model;
    a menu picks plain O_DIRECT writes or writes each followed by fdatasync."""
    table = fio_results(run)
    variant = alt.param(name="variant", value="direct", bind=alt.binding_select(
        options=["direct", "fdatasync"], name="writes: "))
    return _sweep_chart(table, variant, "variant", ("measured_ms", "model_ms"),
                        ("write latency, median (ms)", "ms"),
                        "4 KiB writes on DRBD, queue depth 1",
                        "points: measured; dashed: the model")


def _sweep_chart(table: pd.DataFrame, menu, menu_field: str, fields: tuple[str, str],
                 y_title: tuple[str, str], title: str, subtitle: str,
                 model_marks: bool = False) -> alt.LayerChart:
    """Measured points and the model's dashed line by measured round trip, one colour per
    protocol, for the rows the menu picks. `fields`: the measured and the model column;
    `y_title`: the axis title and the unit for tooltips."""
    measured_field, model_field = fields
    table = table[table["protocol"].isin(model.PROTOCOLS)]
    unit = y_title[1]
    tooltip = ["protocol:N", alt.Tooltip("added_rtt_ms:Q", title="added RTT (ms)"),
               alt.Tooltip("rtt_ms:Q", title="measured RTT (ms)", format=".2f"),
               alt.Tooltip(f"{measured_field}:Q", title=f"measured ({unit})", format=".2f"),
               alt.Tooltip(f"{model_field}:Q", title=f"model ({unit})", format=".2f"),
               alt.Tooltip("error_pct:Q", title="error %", format="+.0f")]
    x = alt.X("rtt_ms:Q", title="round trip measured on the link (ms)")
    colour = alt.Color("protocol:N", scale=PROTOCOL_COLOURS, legend=alt.Legend(orient="bottom"))
    base = alt.Chart(table).transform_filter(alt.datum[menu_field] == menu)
    layers = [base.mark_line(strokeDash=[5, 3]).encode(x=x, y=f"{model_field}:Q", color=colour,
                                                       tooltip=tooltip)]
    if model_marks:  # a protocol measured at one round trip has no line: mark its model
        layers.append(base.mark_point(shape="diamond", size=60).encode(
            x=x, y=f"{model_field}:Q", color=colour, tooltip=tooltip))
    layers.append(base.mark_point(filled=True, size=70).encode(
        x=x, y=alt.Y(f"{measured_field}:Q", title=y_title[0], scale=alt.Scale(zero=True)),
        color=colour, tooltip=tooltip))
    return alt.layer(*layers).add_params(menu).properties(
        width=460, height=300, title={"text": title, "subtitle": subtitle})


def article_chart(run: RecordedRun) -> alt.LayerChart:
    """The article's throughput jobs on DRBD by round trip, per protocol, beside the model;
    a menu picks the job."""
    job = alt.param(name="job", value=ARTICLE_JOB_LABELS["seq-write-1m"],
                    bind=alt.binding_select(options=list(ARTICLE_JOB_LABELS.values()),
                                            name="job: "))
    return _sweep_chart(article_results(run), job, "label", ("mib_s", "model_mib_s"),
                        ("throughput (MiB/s)", "MiB/s"),
                        "The article's jobs on DRBD, queue depth 1",
                        "filled points: measured; open diamonds and dashes: the model",
                        model_marks=True)


def article_table(run: RecordedRun):
    """Every throughput job: the local disk, DRBD disconnected, each protocol and round
    trip, measured beside the model."""
    table = article_results(run)
    host = Parameters.of(run).host
    order = {f"local-{host}": 0, "drbd-disconnected": 1}
    table = table[table["config"].isin(order) | table["protocol"].isin(model.PROTOCOLS)].copy()
    table["order"] = table["config"].map(order).fillna(2)
    table = table.sort_values(["order", "protocol", "added_rtt_ms"])
    where = ["local disk" if c == f"local-{host}" else "DRBD, peer disconnected" if o == 1
             else f"{p}, +{a:g} ms (RTT {r:.1f})" for c, o, p, a, r in
             zip(table["config"], table["order"], table["protocol"], table["added_rtt_ms"],
                 table["rtt_ms"], strict=True)]
    wide = pd.DataFrame({"where": where, "label": table["label"],
                         "value": [f"{nt.number(m)}" if pd.isna(p) else
                                   f"{nt.number(m)} ({nt.number(p)})" for m, p in
                                   zip(table["mib_s"], table["model_mib_s"], strict=True)]})
    wide = wide.pivot(index="where", columns="label", values="value")
    wide = wide.reindex(index=list(dict.fromkeys(where)),
                        columns=list(ARTICLE_JOB_LABELS.values()))
    wide.columns.name = None
    # The link's bandwidth the model used for each mirrored row (one TCP stream, measured).
    streams = dict(zip(where, table["link_mib_s"], strict=True))
    wide["one TCP stream"] = ["" if where_.startswith(("local", "DRBD, peer")) else
                              nt.number(streams[where_]) for where_ in wide.index]
    return wrapping_table(wide.reset_index().rename(columns={"where": "MiB/s (model)"}))


def pgbench_chart(run: RecordedRun) -> alt.LayerChart:
    """pgbench TPS as a share of the local disk's, by round trip: C at every round trip
    beside the model's line, A and B at the largest."""
    table = pgbench_results(run)
    base = table.attrs["base"]
    table = table[table["protocol"].isin(model.PROTOCOLS)]
    # Room right of the largest round trip, so that its points do not sit on the edge.
    x = alt.X("rtt_ms:Q", title="round trip measured on the link (ms)",
              scale=alt.Scale(domain=[0, float(table["rtt_ms"].max()) + 2]))
    colour = alt.Color("protocol:N", scale=PROTOCOL_COLOURS, legend=alt.Legend(orient="bottom"))
    # A, B and C at the largest round trip may land on one spot: a shape each keeps all three
    # visible.
    shape = alt.Shape("protocol:N", scale=alt.Scale(domain=["A", "B", "C"],
                                                    range=["triangle-up", "square", "circle"]),
                      legend=alt.Legend(orient="bottom"))
    tooltip = ["protocol:N", alt.Tooltip("rtt_ms:Q", title="RTT (ms)", format=".2f"),
               alt.Tooltip("tps:Q", format=",.0f"),
               alt.Tooltip("ratio_pct:Q", title=f"% of {BASELINE_LABELS[base]}", format=".0f"),
               alt.Tooltip("model_ratio_pct:Q", title="model %", format=".0f")]
    measured = alt.Chart(table).mark_point(filled=False, size=120, strokeWidth=2).encode(
        x=x, y=alt.Y("ratio_pct:Q", title=f"TPS, % of {BASELINE_LABELS[base]}",
                     scale=alt.Scale(domain=[0, 110])), color=colour, shape=shape,
        tooltip=tooltip)
    c_only = table[(table["protocol"] == "C") & table["model_ratio_pct"].notna()]
    predicted = alt.Chart(c_only).mark_line(strokeDash=[5, 3]).encode(
        x=x, y="model_ratio_pct:Q", color=colour, tooltip=tooltip)
    return alt.layer(predicted, measured).properties(
        width=460, height=300, title={"text": "pgbench, 10 clients, on DRBD",
                                      "subtitle": "points: measured; dashed: the model (C)"})


ZONE_SOURCES = ("the article", "the model", "measured")
ZONE_COLOURS = alt.Scale(domain=list(ZONE_SOURCES), range=["#999999", "#D55E00", "#0072B2"])


def zone_bars(run: RecordedRun) -> pd.DataFrame:
    """One row per zone and source (the article, the model, the measurement under C), the
    fraction of the local disk's TPS in %, for the zones chart."""
    table = zone_results(run)
    rows = []
    for zone in table[table["protocol"] == "C"].itertuples():
        for source, ratio in zip(ZONE_SOURCES, (zone.article_ratio, zone.model_ratio,
                                                zone.ratio), strict=True):
            rows.append({"zone": zone.name, "source": source, "pct": 100 * ratio,
                         "rtt_ms": zone.rtt_ms})
    return pd.DataFrame(rows)


def zones_chart(run: RecordedRun) -> alt.Chart:
    """The article's two zones: its fraction of the local TPS, the model's and the run's
    (protocol C), side by side."""
    bars = zone_bars(run)
    return alt.Chart(bars).mark_bar().encode(
        x=alt.X("source:N", title=None, sort=list(ZONE_SOURCES), axis=alt.Axis(labels=False,
                                                                              ticks=False)),
        y=alt.Y("pct:Q", title="TPS, % of the local disk's", scale=alt.Scale(domain=[0, 100])),
        color=alt.Color("source:N", scale=ZONE_COLOURS, title=None,
                        legend=alt.Legend(orient="bottom")),
        column=alt.Column("zone:N", title=None, sort=["one zone", "two zones"]),
        tooltip=["zone:N", "source:N", alt.Tooltip("pct:Q", title="% of local", format=".1f"),
                 alt.Tooltip("rtt_ms:Q", title="lab round trip (ms)", format=".2f")],
    ).properties(width=170, height=260, title={
        "text": "The article's two zones, protocol C",
        "subtitle": "TPS kept: the article's, the model's and this run's"})


def _percent_or_blank(fractions: pd.Series) -> list[str]:
    return ["" if pd.isna(v) else f"{100 * v:.1f}" for v in fractions]


def zones_table(run: RecordedRun):
    """Each zone and protocol: the round trip asked for and measured, and the fraction of
    the local disk's TPS kept, beside the article's and the model's (C's only)."""
    table = zone_results(run).sort_values(["zone", "protocol"], ascending=[True, False])
    pct = _percent_or_blank
    return wrapping_table(pd.DataFrame({
        "zone": table["name"],
        "protocol": table["protocol"],
        "round trip asked (ms)": table["target_rtt_ms"].map(nt.number),
        "measured (ms)": table["rtt_ms"].map(nt.number),
        "TPS kept (%)": pct(table["ratio"]),
        "the model (%)": pct(table["model_ratio"]),
        "the article (%)": pct(table["article_ratio"].where(table["protocol"] == "C")),
    }))


def chart(run: RecordedRun) -> alt.LayerChart:
    """The panel's chart: write latency by round trip."""
    return latency_chart(run)


# --- tables, headline, provenance, panel ----------------------------------------------------

def drill_table(run: RecordedRun):
    table = drill_results(run).sort_values("protocol", ascending=False)
    return wrapping_table(pd.DataFrame({
        "protocol": table["protocol"],
        "round trip (ms)": table["rtt_ms"].map(nt.number),
        "commits acknowledged": table["acknowledged"].map("{:,.0f}".format),
        "found on the survivor": table["found"].map("{:,.0f}".format),
        "lost": table["lost"].map("{:,.0f}".format),
        "peer noticed after (s)": table["peer_noticed_s"].map("{:.0f}".format),
        "resync (MiB in s)": [f"{b / 2**20:,.0f} in {s:.0f}"
                              for b, s in zip(table["resync_bytes"], table["resync_s"],
                                              strict=True)],
        "MiB that differ afterwards": table["differing_mib"].map("{:.0f}".format),
    }))


def pgbench_table(run: RecordedRun):
    """Each pgbench run: TPS, its share of the bare disk's, the model's, and the processors
    it kept busy."""
    table = pgbench_results(run)
    tps_base = table.attrs["base"]
    order = {"local": 0, "drbd-disconnected": 1}
    table = table.assign(order=table["config"].map(order).fillna(2)).sort_values(
        ["order", "protocol", "added_rtt_ms"])
    return wrapping_table(pd.DataFrame({
        "run": [BASELINE_LABELS.get(c, f"{p}, +{a:g} ms (RTT {r:.1f})") for c, p, a, r in
                zip(table["config"], table["protocol"], table["added_rtt_ms"],
                    table["rtt_ms"], strict=True)],
        "TPS": table["tps"].map("{:,.0f}".format),
        f"% of {BASELINE_LABELS[tps_base]}": table["ratio_pct"].map("{:.0f}".format),
        "model %": table["model_ratio_pct"].map(lambda v: "" if pd.isna(v) else f"{v:.0f}"),
        "processors busy (vm1 + vm2)": [f"{p:.1f} + {q:.1f}" for p, q in
                                        zip(table["primary_cores"], table["peer_cores"],
                                            strict=True)],
    }))


def headline(run: RecordedRun) -> pd.DataFrame:
    """The run's headline measures for labs.book.compare, each beside the model."""
    from labs.book.compare import headline_table

    fio = fio_results(run)
    rows = []
    first = min(Parameters.of(run).added_rtt_ms)
    direct = fio[(fio["variant"] == "direct") & (fio["added_rtt_ms"] == first)
                 & fio["protocol"].isin(model.PROTOCOLS)]
    for row in direct.itertuples():
        rows.append({"measure": f"4 KiB write p50 on DRBD, +{first:g} ms", "config": row.protocol,
                     "value": row.measured_ms, "unit": "ms", "better": "lower",
                     "model": row.model_ms})
    if not (run.results["workload"] == "pgbench").any():  # --part sweep: no pgbench
        return headline_table(rows)
    tps = pgbench_results(run)
    for row in tps[tps["protocol"] == "none"].itertuples():
        rows.append({"measure": "pgbench TPS, 10 clients", "config": BASELINE_LABELS[row.config],
                     "value": row.tps, "unit": "tps", "better": "higher", "model": None})
    c = tps[(tps["protocol"] == "C") & (tps["added_rtt_ms"] == first)]
    for row in c.itertuples():
        rows.append({"measure": "pgbench TPS, 10 clients", "config": f"C, +{first:g} ms",
                     "value": row.tps, "unit": "tps", "better": "higher",
                     "model": row.model_tps})
    # The article's two zones on the run's own time scale: fractions, comparable across
    # machines where the rates are not.
    zones = zone_results(run)
    for row in zones[zones["protocol"] == "C"].itertuples() if not zones.empty else ():
        rows.append({"measure": "pgbench TPS kept, % of the local disk's",
                     "config": f"C, {row.name}",
                     "value": 100 * row.ratio, "unit": "percent", "better": "higher",
                     "model": 100 * row.model_ratio})
    return headline_table(rows)


def provenance(run: RecordedRun) -> pd.DataFrame:
    table = run_summary(run)
    commands = run.meta["commands"]
    table.loc[table[""] == "command", "recorded run"] = (
        f"{commands[0]} (then {len(commands) - 1} commands in the two VMs, listed in run.json)")
    return table


def provenance_table(run: RecordedRun):
    return wrapping_table(provenance(run))


def panel() -> LabPanel:
    # needs_root: the lab VMs run from root's image cache (`sudo ... vm build` / `vm up`).
    return LabPanel(Parameters, fields=("host", "peer", "profile", "seed"), chart=chart,
                    title="DRBD between two lab VMs", defaults={"profile": "quick"},
                    needs_root=True)
