"""What the write-mostly lab page shows: figures, provenance and the live panel.

Pure page code: it reads a recorded run (pandas) and never touches a host.
"""

from __future__ import annotations

import pandas as pd

from labs.book import theme  # noqa: F401  (the book's chart theme and offline renderer)
from labs.book.panel import LabPanel
from labs.errors import LabError
from labs.records import RecordedRun
from labs.write_mostly import charts
from labs.write_mostly.model import ARTICLE, implied_rate_mib_s, transfer_hours
from labs.write_mostly.params import WRITE_BEHIND, Parameters
from labs.write_mostly.tables import latency_table, resync_table, summary_table


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
    return LabPanel(Parameters, fields=("host", "profile", "seed", "slow_delay_ms"),
                    chart=lambda recorded: charts.latency_chart(recorded.results),
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


HEADLINE_WORKLOADS = {"randread-qd1": "read latency p50, 4 KiB at depth 1",
                      "randwrite-qd1": "write latency p50, 4 KiB at depth 1"}


def headline(run: RecordedRun) -> pd.DataFrame:
    """The run's headline measures for labs.book.compare: median latency at depth 1 per
    configuration, with the chapter's model built from the same run's legs: a write-mostly
    mirror reads like the fast leg alone; a mirror writes like its slower leg, unless it
    writes behind, when it writes like the fast leg."""
    from labs.book.compare import headline_table
    from labs.write_mostly.params import CONFIGURATIONS

    results = run.results
    rows = results[(results["metric"] == "clat_p50_us") & (results["leg"] == "array")
                   & results["workload"].isin(list(HEADLINE_WORKLOADS))]
    p50 = {(row.config, row.workload): float(row.value) for row in rows.itertuples()}
    table = []
    for config in CONFIGURATIONS:
        for workload, measure in HEADLINE_WORKLOADS.items():
            if (config.name, workload) not in p50:
                continue  # a quick profile leaves some configurations out
            if workload.startswith("randread"):
                model = p50.get(("fast-only", workload)) if config.write_mostly else None
            elif config.raid:
                legs = "fast-only" if config.write_behind else "slow-only"
                model = p50.get((legs, workload))
            else:
                model = None
            table.append({"measure": measure, "config": config.label,
                          "value": p50[(config.name, workload)], "unit": "us",
                          "better": "lower", "model": model})
    return headline_table(table)
