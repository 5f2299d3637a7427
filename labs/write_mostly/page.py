"""What the write-mostly lab page shows: tables, figures, provenance and the live panel.

Pure page code: it reads a recorded run (pandas) and never touches a host.
"""

from __future__ import annotations

from typing import Any

import pandas as pd

from labs.book import theme  # noqa: F401  (the book's chart theme and offline renderer)
from labs.book.panel import LabPanel
from labs.errors import LabError
from labs.records import RecordedRun
from labs.write_mostly.model import ARTICLE, implied_rate_mib_s, transfer_hours
from labs.write_mostly.params import CONFIGURATIONS, WRITE_BEHIND, Parameters

PERCENTILES = {"clat_p50_us": "p50", "clat_p99_us": "p99", "clat_p999_us": "p99.9"}
CONFIG_ORDER = [c.name for c in CONFIGURATIONS]
CONFIG_LABELS = {c.name: c.label for c in CONFIGURATIONS}


def latency_table(results: pd.DataFrame) -> pd.DataFrame:
    """Completion latency per configuration, workload and percentile (microseconds)."""
    rows = results[results["config"].isin(CONFIG_ORDER) & results["metric"].isin(PERCENTILES)
                   & (results["leg"] == "array")]
    table = pd.DataFrame({
        "config": rows["config"], "label": rows["config"].map(CONFIG_LABELS),
        "workload": rows["workload"], "qd": rows["qd"].astype(int), "op": rows["op"],
        "percentile": rows["metric"].map(PERCENTILES), "latency_us": rows["value"]})
    return table.reset_index(drop=True)


def leg_table(results: pd.DataFrame, configs: list[str] | None = None) -> pd.DataFrame:
    """Reads and writes each leg served, per configuration and workload (one row per leg)."""
    configs = configs or CONFIG_ORDER
    rows = results[results["config"].isin(configs) & results["metric"].isin(["reads", "writes"])
                   & results["leg"].isin(["fast", "slow"])]
    dims = ["config", "workload", "leg"] + (["phase"] if "phase" in rows else [])
    table = rows.pivot_table(index=dims, columns="metric", values="value", aggfunc="sum",
                             dropna=False).reset_index()
    table = table.dropna(subset=["reads", "writes"], how="all")
    return table


def summary_table(results: pd.DataFrame) -> pd.DataFrame:
    """The figures the chapter quotes: QD1 read/write p50 and p99, and the slow leg's read share."""
    latency = latency_table(results)
    qd1 = latency[latency["qd"] == 1]
    out = []
    for config in CONFIG_ORDER:
        row: dict[str, Any] = {"config": config, "label": CONFIG_LABELS[config]}
        for op, workload in (("read", "randread-qd1"), ("write", "randwrite-qd1")):
            for percentile in ("p50", "p99"):
                value = qd1[(qd1["config"] == config) & (qd1["workload"] == workload)
                            & (qd1["percentile"] == percentile)]["latency_us"]
                row[f"{op}_{percentile}_us"] = float(value.iloc[0]) if len(value) else None
        reads = results[(results["config"] == config) & (results["metric"] == "reads")
                        & results["workload"].str.startswith("randread")]
        total = reads["value"].sum()
        slow = reads[reads["leg"] == "slow"]["value"].sum()
        row["slow_read_share"] = float(slow / total) if total else None
        out.append(row)
    return pd.DataFrame(out)


def resync_table(results: pd.DataFrame) -> pd.DataFrame:
    """Every timed resync of a new fast leg: array size, seconds and the rate it implies."""
    rows = results[(results["workload"] == "resync") & (results["metric"] == "resync_s")]
    table = rows[["config", "size_mib", "value"]].rename(columns={"value": "resync_s"})
    table = table.assign(rate_mib_s=table["size_mib"] / table["resync_s"])
    return table.sort_values("size_mib").reset_index(drop=True)


def drill_events(results: pd.DataFrame) -> pd.DataFrame:
    rows = results[(results["metric"] == "event_s")]
    return rows[["config", "event", "value"]].rename(columns={"value": "t_s"}).reset_index(
        drop=True)


def recovery_timeline(results: pd.DataFrame, drill: str = "drill-fast-leg-lost"
                      ) -> pd.DataFrame:
    rows = results[(results["config"] == drill) & (results["metric"] == "recovery_percent")]
    return rows[["t_s", "value"]].rename(columns={"value": "percent"}).sort_values(
        "t_s").reset_index(drop=True)


def streaming_comparison(measured_resync_mib_s: float, sizes_tb: tuple[float, ...] = (
        0.5, 1.0, 1.8, 2.5, 3.5)) -> pd.DataFrame:
    """Hours to refill a node of each size: by resync (measured rate, md's default ceiling)
    and by streaming from peers at the rate Hyperconnect's 12 to 24 hours for 1.8 TB imply."""
    stream_fast = implied_rate_mib_s(ARTICLE["stream_node_bytes"], ARTICLE["stream_hours"][0])
    stream_slow = implied_rate_mib_s(ARTICLE["stream_node_bytes"], ARTICLE["stream_hours"][1])
    methods = {
        f"resync at this run's rate ({measured_resync_mib_s:.0f} MiB/s)": measured_resync_mib_s,
        "resync at md's default ceiling (195 MiB/s)": 200000 / 1024,
        f"streaming from peers, best case ({stream_fast:.0f} MiB/s)": stream_fast,
        f"streaming from peers, worst case ({stream_slow:.0f} MiB/s)": stream_slow,
    }
    rows = [{"method": method, "rate_mib_s": rate, "node_tb": size,
             "hours": transfer_hours(size * 1e12, rate)}
            for method, rate in methods.items() for size in sizes_tb]
    return pd.DataFrame(rows)


def provenance(run: RecordedRun) -> pd.DataFrame:
    """Where a recorded run came from, as a two-column table (the command, not every step)."""
    meta = run.meta
    host = meta["host"]
    vm = host.get("vm", {})
    legs = meta["parameters"]
    rows = [
        ("run", f"{meta['lab']}/{meta['run_id']}"),
        ("command", meta["parameters"].get("command_line", "-")),
        ("seed", str(meta["seed"])),
        ("host", f"{host.get('name')}, kernel {host.get('kernel')}, {host.get('cpu_count')} "
                 f"CPUs" + (f", lab VM under {vm.get('accel', '?').upper()}" if vm else "")),
        ("legs", f"fast {legs.get('fast_device')}; slow {legs.get('slow_device')} throttled by "
                 f"QEMU to {vm.get('slow_iops', '?')} I/O per second, plus dm-delay "
                 f"{legs.get('slow_delay_ms')} ms"),
        ("tools", ", ".join(f"{k} {v}" for k, v in sorted(meta["tool_versions"].items()))),
        ("project commit", meta["git_commit"][:12]),
        ("started / finished (UTC)", f"{meta['started_at']} / {meta['finished_at']}"),
    ]
    return pd.DataFrame(rows, columns=["", "recorded run"])


def panel() -> LabPanel:
    """The live panel of the lab page: run the lab on a lab host, record it, redraw."""
    from labs.write_mostly.charts import latency_chart

    return LabPanel(Parameters, fields=("host", "profile", "seed", "slow_delay_ms"),
                    chart=lambda recorded: latency_chart(recorded.results),
                    title="write-mostly RAID1 on a lab VM", defaults={"profile": "quick"})


def _us(value: float) -> str:
    return f"{value / 1000:.1f} ms" if value >= 1000 else f"{value:.0f} µs"


def figures(run: RecordedRun) -> dict[str, str]:
    """Every number the lab page quotes, formatted, computed from a recorded run."""
    results = run.results
    summary = summary_table(results).set_index("config")
    latency = latency_table(results)
    resync = resync_table(results)

    def p(config: str, workload: str, percentile: str = "p50") -> float:
        row = latency[(latency.config == config) & (latency.workload == workload)
                      & (latency.percentile == percentile)]
        if row.empty:
            raise LabError(f"run {run.run_id}: no {percentile} latency for {config}/{workload}")
        return float(row.latency_us.iloc[0])

    def iops(config: str, workload: str) -> float:
        rows = results[(results.config == config) & (results.workload == workload)
                       & (results.metric == "iops")]
        return float(rows.value.iloc[0])

    f: dict[str, str] = {}
    for leg in ("fast", "slow"):
        for workload in ("randread-qd1", "randwrite-qd1"):
            for percentile in ("p50", "p99"):
                f[f"{leg}_{workload}_{percentile}"] = _us(p(f"{leg}-only", workload, percentile))
        f[f"{leg}_read_qd16_iops"] = f"{iops(f'{leg}-only', 'randread-qd16'):,.0f}"
    f["slow_iops_cap"] = str(run.meta["host"].get("vm", {}).get("slow_iops", "?"))
    f["delay_ms"] = str(run.meta["parameters"]["slow_delay_ms"])
    f["plain_share"] = f"{summary.loc['raid1', 'slow_read_share']:.1%}"
    f["wm_share"] = f"{summary.loc['raid1-wm', 'slow_read_share']:.2%}"
    f["fast_read_p50"] = _us(p("fast-only", "randread-qd1"))
    f["wm_read_p50"] = _us(p("raid1-wm", "randread-qd1"))
    f["plain_read_qd16_p99"] = _us(p("raid1", "randread-qd16", "p99"))
    f["wm_read_qd16_p99"] = _us(p("raid1-wm", "randread-qd16", "p99"))
    f["wm_write_p50"] = _us(p("raid1-wm", "randwrite-qd1"))
    f["wb_write_p50"] = _us(p("raid1-wm-wb", "randwrite-qd1"))
    f["wb_paced_p50"] = _us(p("raid1-wm-wb", "randwrite-qd1-paced"))
    f["wm_paced_p50"] = _us(p("raid1-wm", "randwrite-qd1-paced"))
    f["wb_qd16_iops"] = f"{iops('raid1-wm-wb', 'randwrite-qd16'):,.0f}"
    f["slow_qd16_write_iops"] = f"{iops('slow-only', 'randwrite-qd16'):,.0f}"
    backlog = results[results.metric == "write_behind_max_backlog"].set_index("config")["value"]
    f["backlog_slot0"] = f"{backlog['raid1-wm-wb']:.0f}"
    f["backlog_slot1"] = f"{backlog['raid1-wm-wb-slot1']:.0f}"
    f["slot1_write_p50"] = _us(p("raid1-wm-wb-slot1", "randwrite-qd1"))
    rate = float(resync.size_mib.sum() / resync.resync_s.sum())
    stream_rate = implied_rate_mib_s(ARTICLE["stream_node_bytes"], ARTICLE["stream_hours"][0])
    ceiling_mib_s = 200000 / 1024
    f["resync_rate"] = f"{rate:.0f} MiB/s"
    f["resync_sizes"] = ", ".join(f"{s:.0f} MiB in {t:.1f} s" for s, t in
                                  zip(resync.size_mib, resync.resync_s, strict=True))
    f["node_resync_h"] = f"{transfer_hours(3.5e12, rate):.0f}"
    f["stream_rate"] = f"{stream_rate:.0f} MiB/s"
    ratio = rate / stream_rate
    f["resync_vs_stream"] = ("faster than" if ratio > 1.2 else
                             "slower than" if ratio < 0.8 else "about as fast as")
    f["ceiling_h"] = f"{transfer_hours(3.5e12, ceiling_mib_s):.1f}"
    f["article_estimate_h"] = (
        f"{ARTICLE['resync_array_kib'] / ARTICLE['resync_md_speed_kib_s'] / 3600:.1f}")
    wall = results[results.metric == "wall_time_s"].value.iloc[0]
    f["wall_min"] = f"{wall / 60:.0f}"
    readd = results[(results.config == "drill-slow-leg-lost") & (results.metric == "resync_s")]
    f["readd_s"] = f"{readd.value.iloc[0]:.1f} s"
    replace = resync[resync.config == "drill-fast-leg-lost"].iloc[0]
    f["replace_resync"] = f"{replace.size_mib:.0f} MiB in {replace.resync_s:.1f} s"
    # Exercises.
    fast_write_iops = iops("fast-only", "randwrite-qd1")
    slow_write_iops = iops("slow-only", "randwrite-qd16")
    burst_s = WRITE_BEHIND / max(fast_write_iops - slow_write_iops, 1)
    f["ex_fast_w"] = f"{fast_write_iops:,.0f}"
    f["ex_slow_w"] = f"{slow_write_iops:,.0f}"
    f["ex_burst_ms"] = f"{burst_s * 1000:.0f} ms"
    f["ex_lost_kib"] = f"{WRITE_BEHIND * 4:,} KiB"
    f["ex_node_resync_h"] = f"{transfer_hours(3.5e12, rate):.1f}"
    f["ex_node_stream_h"] = f"{transfer_hours(3.5e12, stream_rate):.1f}"
    f["ex_ceiling_h"] = f"{transfer_hours(3.5e12, ceiling_mib_s):.1f}"
    return f
