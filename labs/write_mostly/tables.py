"""Tidy tables of a write-mostly run: latency, per-leg counters, resync, drill timelines."""

from __future__ import annotations

from typing import Any

import pandas as pd

from labs.write_mostly.model import ARTICLE, implied_rate_mib_s, transfer_hours
from labs.write_mostly.params import CONFIGURATIONS

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
