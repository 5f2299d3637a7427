"""What the devices lab page shows: emulated volumes measured beside the model (the
recorded run's tables and the model behind them: labs/devices/results.py).
Pure page code: records and models, never the VM.
"""

from __future__ import annotations

from typing import NamedTuple

import altair as alt
import pandas as pd

from labs.book import number_text as nt
from labs.book import theme  # noqa: F401  (the book's chart theme and offline renderer)
from labs.book.guide import quick_run_times
from labs.book.panel import LabPanel
from labs.book.provenance import run_summary
from labs.book.tables import wrapping_table
from labs.devices.explain import (
    ARTICLE_BLOCK_KIB,
    ARTICLE_RATIO,
    ARTICLE_SIZE_GIB,
    latency_for_ratio,
)
from labs.devices.params import Parameters
from labs.devices.results import (  # noqa: F401  (the page's tables, for its code cells and tests)
    LOCAL,
    VOLUMES,
    burst_results,
    fio_results,
    mariadb_results,
    sysbench_results,
    throttle_of,
    volume_busy_s,
)
from labs.models import cloud_volume
from labs.records import RecordedRun

COLOURS = alt.Scale(domain=list(VOLUMES), range=["#999999", "#0072B2", "#E69F00"])
ARTICLE_INSERT_RATIO = "1.6"  # the stored procedure in 10 sessions, sc1 against gp3
ARTICLE_ROWS = 10_000_000  # each session's inserts in the article
HEADLINE_DEPTH = 16
LINUX_DIRTY_EXPIRE_S = 30  # vm.dirty_expire_centisecs' default: older dirty files go to disk


def _fio(table: pd.DataFrame, volume: str, workload: str, **where) -> pd.Series:
    """The one row of fio_results(run) for this volume, workload and (e.g.) depth."""
    rows = table[(table["volume"] == volume) & (table["workload"] == workload)]
    for column, value in where.items():
        rows = rows[rows[column] == value]
    if len(rows) != 1:
        raise KeyError(f"{volume} {workload} {where}: {len(rows)} rows")
    return rows.iloc[0]


def figures(run: RecordedRun) -> dict[str, str]:
    """Every number the lab page quotes, computed from the run."""
    params = Parameters.of(run)
    deep, shallow = max(params.depths), min(params.depths)
    fio = fio_results(run)
    modelled = fio[fio["model_iops"].notna()]
    f: dict[str, str] = {"deep": str(deep), "shallow": str(shallow),
                         "fio_s": str(params.fio_s), "size_gib": str(params.size_gib)}
    f.update(_volume_figures(run, fio, deep, shallow))
    f.update(_unthrottled_figures(fio, shallow))
    fio_deep = _fio(fio, "sc1", "depth-sweep", depth=deep)
    f["sc1_deep_fio_iops"] = f"{fio_deep['fio_iops']:.1f}"
    f["sc1_deep_wait_s"] = f"{deep / throttle_of(run, 'sc1').iops_total:.1f}"
    f["measurements"] = str(len(modelled))
    f["within_5pct"] = str(int((modelled["error_pct"].abs() <= 5).sum()))
    f["sc1_write_error"] = nt.number(_fio(fio, 'sc1', 'write')['error_pct'], 1, signed=True)
    f.update(_sc1_block_figures(fio))
    f.update(_burst_figures(run))
    f.update(_sysbench_figures(run))
    f.update(_article_figures())
    f.update(mariadb_figures(run))
    f.update(_exercise_figures(run, fio, shallow))
    f.update(_quick_figures())
    return f


def _quick_figures() -> dict[str, str]:
    """The quick profile's measured time on this machine's own disk, in whole minutes
    (data/timings/quick-runs.csv; the lab VM's time is in the page's Run it box)."""
    quick = quick_run_times()
    seconds = quick[(quick["lab"] == "devices") & (quick["host"] == "local")]["seconds"]
    return {"quick_local_min": nt.count(max(1.0, seconds.max() / 60))}


class VolumeFigures(NamedTuple):
    """One emulated volume's throttle, and what fio measured on it, as the page prints them."""

    limit_iops: str
    limit_mib_s: str
    iops_size_kib: str  # the size above which a request counts as several
    deep_iops: str  # random reads at the deepest queue
    deep_error: str  # the model's error there
    qd1_iops: str  # ... and one at a time
    qd1_model: str
    qd1_ms: str
    seq_mib_s: str  # sequential reads
    seq_error: str


def _volume(run: RecordedRun, fio: pd.DataFrame, volume: str, deep: int,
            shallow: int) -> VolumeFigures:
    limit = throttle_of(run, volume)
    d = _fio(fio, volume, "depth-sweep", depth=deep)
    s = _fio(fio, volume, "depth-sweep", depth=shallow)
    q = _fio(fio, volume, "sequential")
    return VolumeFigures(
        limit_iops=f"{limit.iops_total:,}", limit_mib_s=f"{limit.bps_total / cloud_volume.MIB:.1f}",
        iops_size_kib=f"{limit.iops_size // 1024:,}",
        deep_iops=f"{d['iops']:,.1f}", deep_error=nt.number(d['error_pct'], 1, signed=True),
        qd1_iops=f"{s['iops']:,.1f}", qd1_model=f"{s['model_iops']:,.1f}",
        qd1_ms=f"{s['lat_mean_ms']:.2f}",
        seq_mib_s=f"{q['mib_s']:.1f}", seq_error=nt.number(q['error_pct'], 1, signed=True))


def _volume_figures(run: RecordedRun, fio: pd.DataFrame, deep: int,
                    shallow: int) -> dict[str, str]:
    """The two emulated volumes' figures, each under its own key."""
    gp3, sc1 = _volume(run, fio, "gp3", deep, shallow), _volume(run, fio, "sc1", deep, shallow)
    return {"gp3_limit_iops": gp3.limit_iops, "gp3_limit_mib_s": gp3.limit_mib_s,
            "gp3_iops_size_kib": gp3.iops_size_kib, "gp3_deep_iops": gp3.deep_iops,
            "gp3_deep_error": gp3.deep_error, "gp3_qd1_iops": gp3.qd1_iops,
            "gp3_qd1_model": gp3.qd1_model, "gp3_qd1_ms": gp3.qd1_ms,
            "gp3_seq_mib_s": gp3.seq_mib_s, "gp3_seq_error": gp3.seq_error,
            "sc1_limit_iops": sc1.limit_iops, "sc1_limit_mib_s": sc1.limit_mib_s,
            "sc1_iops_size_kib": sc1.iops_size_kib, "sc1_deep_iops": sc1.deep_iops,
            "sc1_deep_error": sc1.deep_error, "sc1_qd1_iops": sc1.qd1_iops,
            "sc1_qd1_model": sc1.qd1_model, "sc1_qd1_ms": sc1.qd1_ms,
            "sc1_seq_mib_s": sc1.seq_mib_s, "sc1_seq_error": sc1.seq_error}


def _unthrottled_figures(fio: pd.DataFrame, shallow: int) -> dict[str, str]:
    u = _fio(fio, "unthrottled", "depth-sweep", depth=shallow)
    sweep = fio[(fio.volume == "unthrottled") & (fio.workload == "depth-sweep")]
    return {"unthrottled_qd1_iops": f"{u['iops']:,.0f}",
            "unthrottled_qd1_ms": f"{u['lat_mean_ms']:.2f}",
            "unthrottled_top_iops": f"{sweep['iops'].max():,.0f}"}


def _sc1_block_figures(fio: pd.DataFrame) -> dict[str, str]:
    sc1_16k = _fio(fio, "sc1", "block-sweep", block_kib=16)
    sc1_1m = _fio(fio, "sc1", "block-sweep", block_kib=1024)
    return {"sc1_16k_iops": f"{sc1_16k['iops']:.1f}",
            "sc1_1m_iops": f"{sc1_1m['iops']:.1f}",
            "sc1_16k_mib_s": f"{sc1_16k['mib_s']:.2f}",
            "sc1_1m_error": f"{abs(sc1_1m['error_pct']):.1f}",
            "sc1_1m_mib_s": f"{sc1_1m['mib_s']:.1f}"}


def _burst_figures(run: RecordedRun) -> dict[str, str]:
    """The time-scaled sc1's burst and baseline, measured beside its throttle."""
    burst = burst_results(run)
    limit = throttle_of(run, "sc1-burst")
    full = burst[burst["second"] <= limit.burst_seconds - 1]
    after = burst[burst["second"] >= limit.burst_seconds + 2]
    burst_measured = full["mib_s"].iloc[1:].median()
    fallen = burst[burst["mib_s"] < 0.5 * burst["mib_s"].max()]
    return {"burst_model_s": f"{limit.burst_seconds:.0f}",
            "burst_mib_s": f"{limit.bps_total_max / cloud_volume.MIB:.0f}",
            "base_mib_s": f"{limit.bps_total / cloud_volume.MIB:.0f}",
            "burst_measured_mib_s": f"{burst_measured:.1f}",
            # A volume that delivers less than the burst rate fills QEMU's bucket more slowly.
            "burst_at_measured_s":
                f"{limit.burst_seconds_at(burst_measured * cloud_volume.MIB):.0f}",
            "base_measured_mib_s": f"{after['mib_s'].median():.1f}",
            "burst_ended_s": f"{fallen['second'].min():.0f}"}


def _sysbench_figures(run: RecordedRun) -> dict[str, str]:
    params = Parameters.of(run)
    sysb = sysbench_results(run).set_index("volume")
    f = {"sysbench_s": str(params.sysbench_s), "sysbench_mib": str(params.sysbench_mib)}
    f["sb_unthrottled_ops"] = f"{sysb.loc['unthrottled', 'ops_per_s']:,.1f}"
    f["sb_gp3_ops"] = f"{sysb.loc['gp3', 'ops_per_s']:,.1f}"
    f["sb_gp3_model"] = f"{sysb.loc['gp3', 'model_ops_per_s']:,.1f}"
    f["sb_gp3_error"] = nt.number(sysb.loc["gp3", "error_pct"], 1, signed=True)
    f["sb_sc1_ops"] = f"{sysb.loc['sc1', 'ops_per_s']:,.1f}"
    f["sb_sc1_model"] = f"{sysb.loc['sc1', 'model_ops_per_s']:,.1f}"
    f["sb_sc1_error"] = nt.number(sysb.loc["sc1", "error_pct"], 1, signed=True)
    ratio = sysb.loc["gp3", "ops_per_s"] / sysb.loc["sc1", "ops_per_s"]
    model_ratio = sysb.loc["gp3", "model_ops_per_s"] / sysb.loc["sc1", "model_ops_per_s"]
    f["sb_ratio"] = f"{ratio:.0f}"
    f["sb_model_ratio"] = f"{model_ratio:.0f}"
    first = sysb.loc["unthrottled", "ops_per_s"]
    again = sysb.loc["unthrottled", "again_ops_per_s"]
    reference = sysb.loc["unthrottled", "reference_ops_per_s"]
    f["sb_unthrottled_again_ops"] = f"{again:,.1f}"
    f["sb_unthrottled_reference_ops"] = f"{reference:,.1f}"
    f["sb_unthrottled_apart_pct"] = f"{100 * abs(again - first) / min(again, first):.1f}"
    f["sb_unthrottled_ms_per_op"] = f"{1000 / reference:.2f}"
    f["sb_fsyncs_per_op"] = f"{sysb.loc['gp3', 'fsyncs_per_s'] / sysb.loc['gp3', 'ops_per_s']:.2f}"
    return f


def _article_figures() -> dict[str, str]:
    # The explanation's reading of the article: one thread on a gp3 that answers in 1 ms,
    # and the answer time that would give the article's ratio exactly.
    at_1ms = cloud_volume.fileio_ratio(ARTICLE_SIZE_GIB, ARTICLE_BLOCK_KIB, queue_depth=1,
                                       gp3_latency_ms=1)["ratio"]
    return {"article_ratio": str(ARTICLE_RATIO),
            "article_ratio_at_1ms": f"{at_1ms:.0f}",
            "article_ratio_latency_ms": f"{latency_for_ratio(ARTICLE_RATIO):.2f}",
            "qemu_min_iops": str(cloud_volume.QEMU_MIN_IOPS)}


def _exercise_figures(run: RecordedRun, fio: pd.DataFrame, shallow: int) -> dict[str, str]:
    """The exercises' answers: sc1's requests in flight, gp3 against sc1 at 16 KiB."""
    u = _fio(fio, "unthrottled", "depth-sweep", depth=shallow)
    gp3_16 = _fio(fio, "gp3", "block-sweep", block_kib=16)
    sc1_16k = _fio(fio, "sc1", "block-sweep", block_kib=16)
    return {"ex_gp3_16": f"{gp3_16['iops']:,.0f}",
            "ex_sc1_16": f"{sc1_16k['iops']:.1f}",
            "ex_ratio_16": f"{gp3_16['iops'] / sc1_16k['iops']:.0f}",
            "ex_sc1_in_flight":
                f"{throttle_of(run, 'sc1').iops_total * u['lat_mean_ms'] / 1000:.3f}"}


def mariadb_figures(run: RecordedRun) -> dict[str, str]:
    """The numbers the page quotes about the MariaDB inserts."""
    params = Parameters.of(run)
    table = mariadb_results(run).set_index(["volume", "sessions"])
    most, fewest = max(params.sessions), min(params.sessions)
    ratios = [table.loc[("sc1", n), "wall_s"] / table.loc[("gp3", n), "wall_s"]
              for n in params.sessions]
    model_ratios = [table.loc[("sc1", n), "model_s"] / table.loc[("gp3", n), "model_s"]
                    for n in params.sessions]
    modelled = table[table["model_s"].notna()]
    sc1_most = table.loc[("sc1", most)]
    sc1_others = table.loc["sc1"].drop(most)
    cpu_one = table.loc[("unthrottled", fewest)]
    cpu_most = table.loc[("unthrottled", most)]
    short = table[table["wall_s"] < LINUX_DIRTY_EXPIRE_S]
    alone_rows_per_s = params.rows * fewest / cpu_one["wall_s"]
    f = {"mdb_rows": f"{params.rows:,}", "mdb_most": str(most),
         "mdb_sessions": ", ".join(map(str, params.sessions)),
         "mdb_ratio_min": f"{min(ratios):.2f}", "mdb_ratio_max": f"{max(ratios):.2f}",
         "mdb_ratio_most": f"{ratios[params.sessions.index(most)]:.2f}",
         "mdb_model_ratio_max": f"{max(model_ratios):.2f}",
         "mdb_error_max": f"{modelled['error_pct'].abs().max():.1f}",
         "mdb_rows_per_s_one": f"{alone_rows_per_s:,.0f}",
         "mdb_rows_per_s_most": f"{params.rows * most / cpu_most['wall_s']:,.0f}",
         "mdb_tables_most_mib": f"{sc1_most['tables_max_mib']:.1f}",
         "mdb_written_most_mib": f"{sc1_most['written_mib']:.2f}",
         "mdb_written_most_requests": f"{sc1_most['write_requests']:.0f}",
         "mdb_headroom": (f"{sc1_most['wall_s'] / sc1_most['busy_s']:.0f}"
                          if sc1_most["busy_s"] else "∞"),  # nothing reached it at all
         "mdb_sc1_most_error": nt.number(sc1_most["error_pct"], 1, signed=True),
         "mdb_sc1_error_max_other": f"{sc1_others['error_pct'].abs().max():.1f}",
         "mdb_short_written_mib": f"{short['written_mib'].max():.2f}",
         "mdb_scale": f"{ARTICLE_ROWS / params.rows:,.0f}",
         "mdb_article_hours": f"{ARTICLE_ROWS / alone_rows_per_s / 3600:.1f}",
         "mdb_busy_max_pct": f"{100 * (modelled['busy_s'] / modelled['wall_s']).max():.1f}",
         "mdb_sc1_busy_most_s": f"{sc1_most['busy_s']:.1f}",
         "mdb_sc1_wall_most_s": f"{sc1_most['wall_s']:.1f}",
         "mdb_counts": str(len(params.sessions)),
         "mdb_gp3_faster": str(sum(table.loc[("gp3", n), "wall_s"]
                                   < table.loc[("unthrottled", n), "wall_s"]
                                   for n in params.sessions)),
         "article_mdb_ratio": ARTICLE_INSERT_RATIO}
    return f


# -- charts --------------------------------------------------------------------------------


def _measured_and_model(table: pd.DataFrame, x: alt.X, y_field: str, model_field: str,
                        y_title: str, title: str) -> alt.LayerChart:
    tooltip = ["volume:N", "block_kib:Q", "depth:Q", alt.Tooltip(f"{y_field}:Q", format=",.1f"),
               alt.Tooltip(f"{model_field}:Q", title="model", format=",.1f"),
               alt.Tooltip("error_pct:Q", title="error %", format="+.1f")]
    colour = alt.Color("volume:N", scale=COLOURS, title=None, legend=alt.Legend(orient="bottom"))
    y = alt.Y(f"{y_field}:Q", scale=alt.Scale(type="log"), title=y_title)
    measured = alt.Chart(table).mark_point(filled=True, size=60).encode(
        x=x, y=y, color=colour, tooltip=tooltip)
    model = alt.Chart(table[table[model_field].notna()]).mark_line(strokeDash=[5, 3]).encode(
        x=x, y=alt.Y(f"{model_field}:Q"), color=colour, tooltip=tooltip)
    return alt.layer(model, measured).properties(
        width=460, height=280, title={"text": title,
                                      "subtitle": "points: measured; dashed: the model"})


def depth_chart(run: RecordedRun) -> alt.LayerChart:
    table = fio_results(run)
    table = table[table["workload"] == "depth-sweep"]
    x = alt.X("depth:Q", scale=alt.Scale(type="log", base=2), title="queue depth",
              axis=alt.Axis(values=sorted(table["depth"].unique().tolist())))
    return _measured_and_model(table, x, "iops", "model_iops", "16 KiB random reads per second",
                               "Emulated volumes by queue depth")


def block_chart(run: RecordedRun) -> alt.LayerChart:
    table = fio_results(run)
    table = table[table["workload"] == "block-sweep"]
    x = alt.X("block_kib:Q", scale=alt.Scale(type="log", base=2), title="read size (KiB)",
              axis=alt.Axis(values=sorted(table["block_kib"].unique().tolist())))
    return _measured_and_model(table, x, "mib_s", "model_mib_s", "data read (MiB/s)",
                               "Emulated volumes by read size, random, queue depth 16")


def burst_chart(run: RecordedRun) -> alt.LayerChart:
    table = burst_results(run)
    x = alt.X("second:Q", title="seconds of 1 MiB sequential reads")
    measured = alt.Chart(table).mark_line(
        color="#E69F00", point=alt.OverlayMarkDef(color="#E69F00")).encode(
        x=x, y=alt.Y("mib_s:Q", title="MiB/s"),
        tooltip=["second:Q", alt.Tooltip("mib_s:Q", format=".1f"),
                 alt.Tooltip("model_mib_s:Q", title="model", format=".1f")])
    model = alt.Chart(table).mark_line(strokeDash=[5, 3], color="#000000").encode(
        x=x, y="model_mib_s:Q")
    return alt.layer(model, measured).properties(
        width=460, height=240, title={"text": "A 1 TiB sc1, time scaled: burst, then baseline",
                                      "subtitle": "orange: measured; dashed: the model"})


def sysbench_chart(run: RecordedRun) -> alt.LayerChart:
    table = sysbench_results(run)
    long = pd.concat([table.assign(kind="measured", value=table["ops_per_s"]),
                      table.assign(kind="measured", value=table["again_ops_per_s"]),
                      table.assign(kind="model", value=table["model_ops_per_s"])])
    long = long[long["value"].notna()]
    # Points, not bars: a bar on a log scale has no zero to start from.
    dots = alt.Chart(long).mark_point(filled=True, size=140, opacity=0.8).encode(
        y=alt.Y("volume:N", sort=list(VOLUMES), title=None),
        x=alt.X("value:Q", scale=alt.Scale(type="log"),
                title="reads + writes per second (log scale)"),
        color=alt.Color("kind:N", scale=alt.Scale(domain=["measured", "model"],
                                                  range=["#0072B2", "#000000"]),
                        title=None, legend=alt.Legend(orient="bottom")),
        shape=alt.Shape("kind:N", scale=alt.Scale(domain=["measured", "model"],
                                                  range=["circle", "diamond"]), legend=None),
        tooltip=["volume:N", "kind:N", alt.Tooltip("value:Q", format=",.1f")])
    return dots.properties(width=420, height=150,
                           title="sysbench fileio rndrw, one thread, 16 KiB, O_DIRECT")


def mariadb_chart(run: RecordedRun) -> alt.LayerChart:
    """Time until every session finished, by session count, per volume, beside the model."""
    table = mariadb_results(run)
    x = alt.X("sessions:Q", title="sessions inserting at once",
              axis=alt.Axis(values=sorted(table["sessions"].unique().tolist())))
    tooltip = ["volume:N", "sessions:Q", alt.Tooltip("wall_s:Q", title="seconds", format=".2f"),
               alt.Tooltip("model_s:Q", title="model", format=".2f"),
               alt.Tooltip("error_pct:Q", title="error %", format="+.1f"),
               alt.Tooltip("written_mib:Q", title="MiB written to the volume", format=",.2f")]
    colour = alt.Color("volume:N", scale=COLOURS, title=None, legend=alt.Legend(orient="bottom"))
    measured = alt.Chart(table).mark_point(filled=True, size=70, opacity=0.8).encode(
        x=x, y=alt.Y("wall_s:Q", title="seconds until every session finished"),
        color=colour, shape=alt.Shape("volume:N", legend=None), tooltip=tooltip)
    model = alt.Chart(table[table["model_s"].notna()]).mark_line(strokeDash=[5, 3]).encode(
        x=x, y="model_s:Q", color=colour, detail="volume:N", tooltip=tooltip)
    rows = Parameters.of(run).rows
    by = table.set_index(["volume", "sessions"])["model_s"]
    same = all(by[("gp3", n)] == by[("sc1", n)] for n in table["sessions"].unique())
    subtitle = (["points: measured; dashed: the model, one line for gp3 and sc1",
                 "(neither volume is the bottleneck, so both predict the same)"] if same
                else "points: measured; dashed: the model")
    return alt.layer(model, measured).properties(
        width=460, height=260,
        title={"text": f"MariaDB: {rows:,} single-row inserts a session, MyISAM temporary table",
               "subtitle": subtitle})


def mariadb_bytes_chart(run: RecordedRun) -> alt.Chart:
    """How large the temporary tables grew, against what reached the volume."""
    table = mariadb_results(run)
    table = table[table["volume"] == "sc1"]
    long = pd.concat([
        table.assign(kind="the tables' files at their largest", mib=table["tables_max_mib"]),
        table.assign(kind="written to sc1 while they ran", mib=table["written_mib"])])
    return alt.Chart(long).mark_bar().encode(
        x=alt.X("mib:Q", title="MiB"),
        y=alt.Y("kind:N", title=None, axis=alt.Axis(labels=False, ticks=False)),
        row=alt.Row("sessions:O", title="sessions", header=alt.Header(labelAngle=0)),
        color=alt.Color("kind:N", scale=alt.Scale(range=["#E69F00", "#555555"]), title=None,
                        legend=alt.Legend(orient="bottom", direction="vertical",
                                          labelLimit=0)),
        tooltip=["sessions:O", "kind:N", alt.Tooltip("mib:Q", format=",.2f")],
    ).properties(width=380, height=22, title="sc1: what the inserts made, what the volume saw")


# -- the lab contract ----------------------------------------------------------------------


def chart(run: RecordedRun) -> alt.LayerChart:
    """The panel's chart: the depth sweep."""
    return depth_chart(run)


def headline(run: RecordedRun) -> pd.DataFrame:
    """The run's headline measures for labs.book.compare, each beside the model."""
    from labs.book.compare import headline_table

    params = Parameters.of(run)
    # Depth 16 is in the quick and the full profile: their runs compare on it.
    deep = HEADLINE_DEPTH if HEADLINE_DEPTH in params.depths else max(params.depths)
    fio = fio_results(run)
    rows = []
    for volume in [v for v in (*VOLUMES, LOCAL) if v in set(fio["volume"])]:
        d = _fio(fio, volume, "depth-sweep", depth=deep)
        rows.append({"measure": f"16 KiB random reads per second, depth {deep}",
                     "config": volume, "value": d["iops"], "unit": "iops",
                     "better": "higher", "model": d["model_iops"]})
        s = _fio(fio, volume, "sequential")
        rows.append({"measure": "1 MiB sequential reads, MiB/s", "config": volume,
                     "value": s["mib_s"], "unit": "MiB/s", "better": "higher",
                     "model": s["model_mib_s"]})
    for row in sysbench_results(run).itertuples():
        rows.append({"measure": "sysbench fileio rndrw, reads + writes per second",
                     "config": row.volume, "value": row.ops_per_s, "unit": "iops",
                     "better": "higher", "model": row.model_ops_per_s})
    most = max(params.sessions)
    ran_inserts = (run.results["workload"] == "mariadb-inserts").any()  # not on --host local
    inserts = mariadb_results(run) if ran_inserts else pd.DataFrame(columns=["sessions"])
    made = params.rows * most  # rows a second compare across profiles' row counts
    for row in inserts[inserts["sessions"] == most].itertuples():
        rows.append({"measure": f"MariaDB inserts, {most} sessions, rows a second",
                     "config": row.volume, "value": made / row.wall_s, "unit": "rows/s",
                     "better": "higher", "model": made / row.model_s})
    return headline_table(rows)


def provenance(run: RecordedRun) -> pd.DataFrame:
    table = run_summary(run)
    commands = run.meta["commands"]
    table.loc[table[""] == "command", "recorded run"] = (
        f"{commands[0]} (then {len(commands) - 1} commands in the VM and its monitor, "
        f"listed in run.json)")
    return table


def provenance_table(run: RecordedRun):
    return wrapping_table(provenance(run))


def panel() -> LabPanel:
    # needs_root: the lab VM runs from root's image cache (`sudo ... vm build` / `vm up`).
    return LabPanel(Parameters, fields=("host", "profile", "size_gib", "seed"), chart=chart,
                    title="Cloud volumes emulated in a lab VM", defaults={"profile": "quick"},
                    needs_root=True)
