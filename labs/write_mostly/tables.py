"""Tidy tables of a write-mostly run: latency, per-leg counters, resync, drill timelines.

Every table works on any valid run (any profile, legs or host): a configuration or workload a
run did not measure is simply absent, never a NaN the page has to explain.
"""

from __future__ import annotations

import re
from typing import Any

import pandas as pd

from labs.records import RecordedRun
from labs.tools.mdadm import parse_mdstat
from labs.write_mostly.model import (
    MD_SPEED_LIMIT_MAX_KIB_S,
    backlog_fill_s,
    backlog_stall_s,
    slow_leg_latency_ms,
)
from labs.write_mostly.params import CONFIGURATIONS, WRITE_BEHIND, WRITE_BEHIND_CELLS

NOT_MEASURED = "not measured in this run"  # what a run did not measure, in the page's words
PERCENTILES = {"clat_p50_us": "p50", "clat_p99_us": "p99", "clat_p999_us": "p99.9"}
CONFIG_ORDER = [c.name for c in CONFIGURATIONS]
CONFIG_LABELS = {c.name: c.label for c in CONFIGURATIONS}
CONFIGS = {c.name: c for c in CONFIGURATIONS}


def measured(results: pd.DataFrame, config: str, workload: str, metric: str) -> float | None:
    """One array-level figure of a run, or None if the run did not measure it."""
    rows = results[(results["config"] == config) & (results["workload"] == workload)
                   & (results["metric"] == metric) & (results["leg"] == "array")]
    return float(rows["value"].iloc[0]) if len(rows) else None


def recorded_scale(meta: dict[str, Any]) -> dict[str, Any]:
    """The run's scale as the lab resolved it from its profile (run.json's
    "profile_settings"), empty for a run recorded before it was written down."""
    return meta.get("parameters", {}).get("profile_settings", {})


def run_settings(meta: dict[str, Any]) -> dict[str, Any]:
    """What a run asked for: its legs, the slow leg's cap and delay (None if unknown)."""
    parameters = meta.get("parameters", {})
    cap = parameters.get("slow_cap_iops")
    if cap is None:  # runs recorded before the cap was written down: the lab VM's own
        cap = meta.get("host", {}).get("vm", {}).get("slow_iops") or None
    return {"legs": parameters.get("legs_mode", "disks"), "cap_iops": cap,
            "delay_ms": float(parameters.get("slow_delay_ms", 0)),
            "cap_by": parameters.get("slow_cap_by", "QEMU (throttling.iops-total)"),
            "ceiling_kib_s": meta.get("host", {}).get("md_speed_limit_kib_s", {}).get(
                "max", MD_SPEED_LIMIT_MAX_KIB_S)}


def latency_table(results: pd.DataFrame) -> pd.DataFrame:
    """Completion latency per configuration, workload and percentile (microseconds)."""
    rows = results[results["config"].isin(CONFIG_ORDER) & results["metric"].isin(PERCENTILES)
                   & (results["leg"] == "array")]
    table = pd.DataFrame({
        "config": rows["config"], "label": rows["config"].map(CONFIG_LABELS),
        "workload": rows["workload"], "qd": rows["qd"].astype(int), "op": rows["op"],
        "percentile": rows["metric"].map(PERCENTILES), "latency_us": rows["value"]})
    return table.reset_index(drop=True)


def backlog(results: pd.DataFrame) -> dict[str, float]:
    rows = results[results["metric"] == "write_behind_max_backlog"]
    return dict(zip(rows["config"], rows["value"].astype(float), strict=True))


def model_latency_us(results: pd.DataFrame, meta: dict[str, Any]) -> pd.DataFrame:
    """What the model predicts for the median of each QD1 workload it speaks about.

    The slow leg: the larger of the cap's spacing and the delay (slow_leg_model_us). A
    mirror's write waits for the slow leg, unless its write-behind took writes (then the fast
    leg's own write). A write-mostly mirror's read is
    the fast leg's read.
    """
    settings = run_settings(meta)
    slow = {op: slow_leg_model_us(results, meta, op) for op in ("read", "write")}
    fast = {op: measured(results, "fast-only", f"rand{op}-qd1", "clat_p50_us")
            for op in ("read", "write")}
    used = backlog(results)
    rows = []
    for config in CONFIGURATIONS:
        if config.name == "fast-only":
            continue
        for workload in ("randread-qd1", "randwrite-qd1", "randwrite-qd1-paced"):
            if measured(results, config.name, workload, "clat_p50_us") is None:
                continue
            op = "read" if "read" in workload else "write"
            value: float | None = None
            if config.name == "slow-only":
                value = slow[op]
            elif config.name == "slow-cap-only" and settings["cap_iops"]:
                value = 1e6 / settings["cap_iops"]
            elif config.name == "slow-delay-only":
                value = 1000 * settings["delay_ms"]
            elif config.raid and op == "write":
                behind = used.get(config.name, 0) > 0
                value = fast["write"] if behind else slow["write"]
            elif config.raid and config.write_mostly:
                value = fast["read"]
            if value is not None:
                rows.append({"config": config.name, "label": config.label,
                             "workload": workload, "percentile": "p50", "model_us": value})
    return pd.DataFrame(rows, columns=["config", "label", "workload", "percentile",
                                       "model_us"])


def slow_leg_parts(results: pd.DataFrame, meta: dict[str, Any]) -> pd.DataFrame:
    """The slow leg's parts at depth 1: measured median against the model, per operation."""
    settings = run_settings(meta)
    cap, delay = settings["cap_iops"], settings["delay_ms"]
    parts = [("slow-cap-only", "the cap alone", (1000 / cap) if cap else None),
             ("slow-delay-only", "the delay alone", delay),
             ("slow-only", "cap and delay", slow_leg_latency_ms(cap, delay) if cap else None)]
    rows = []
    for config, part, model_ms in parts:
        for op in ("read", "write"):
            value = measured(results, config, f"rand{op}-qd1", "clat_p50_us")
            if value is None:
                continue
            parts_sum = None
            if config == "slow-only":
                alone = [measured(results, c, f"rand{op}-qd1", "clat_p50_us")
                         for c in ("slow-cap-only", "slow-delay-only")]
                if None not in alone:
                    parts_sum = sum(alone) / 1000
            rows.append({"config": config, "part": part, "op": op, "measured_ms": value / 1000,
                         "model_ms": model_ms, "parts_sum_ms": parts_sum,
                         "error": (model_ms - value / 1000) / (value / 1000)
                         if model_ms else None})
    return pd.DataFrame(rows, columns=["config", "part", "op", "measured_ms", "model_ms",
                                       "parts_sum_ms", "error"])


def slow_leg_model_us(results: pd.DataFrame, meta: dict[str, Any], op: str) -> float | None:
    """The model's slow leg at depth 1, in µs: the cap's spacing plus the delay asked for."""
    settings = run_settings(meta)
    return 1000 * slow_leg_latency_ms(settings["cap_iops"], settings["delay_ms"])


def write_timeline(results: pd.DataFrame) -> pd.DataFrame:
    """Every write of the flat-out writer at depth 1, first seconds, per write-behind cell."""
    rows = results[results["metric"] == "write_clat_us"]
    return pd.DataFrame({"config": rows["config"], "label": rows["config"].map(CONFIG_LABELS),
                         "t_s": rows["t_s"].astype(float) if "t_s" in rows else [],
                         "latency_ms": rows["value"] / 1000}).reset_index(drop=True)


def write_behind_table(results: pd.DataFrame, meta: dict[str, Any]) -> pd.DataFrame:
    """Per write-behind cell: max backlog, write medians, and the backlog's measured fill
    time and stall against the model (None where the run did not measure)."""
    settings = run_settings(meta)
    fast_iops = measured(results, "fast-only", "randwrite-qd1", "iops")
    slow_iops = settings["cap_iops"] or measured(results, "slow-only", "randwrite-qd1", "iops")
    used = backlog(results)
    timeline = write_timeline(results)
    rows = []
    stall_s = backlog_stall_s(WRITE_BEHIND, slow_iops) if slow_iops else None
    for name in WRITE_BEHIND_CELLS:
        config = CONFIGS[name]
        if name not in used:
            continue
        writes = timeline[timeline["config"] == name].sort_values("t_s")
        # A write that waited over half the model's stall found the backlog full; shorter
        # waits (a bitmap update reaching the slow leg) do not count.
        full = writes[writes["latency_ms"] > 500 * stall_s] if stall_s else writes[:0]
        fill_measured = fill_model = write_rate = None
        if len(full) and slow_iops:
            first = full.iloc[0]
            fill_measured = float(first["t_s"] - first["latency_ms"] / 1000)  # when it began
            before = int((writes["t_s"] <= fill_measured).sum())
            write_rate = before / fill_measured if fill_measured > 0 else 0
            if write_rate > slow_iops:
                fill_model = backlog_fill_s(WRITE_BEHIND, write_rate, slow_iops)
        rows.append({
            "config": name, "slot": config.slow_slot, "marked": config.marked,
            "max_backlog": used[name],
            "write_p50_us": measured(results, name, "randwrite-qd1", "clat_p50_us"),
            "paced_p50_us": measured(results, name, "randwrite-qd1-paced", "clat_p50_us"),
            "write_mean_us": measured(results, name, "randwrite-qd1", "clat_mean_us"),
            # fio's lat counts from submission (slat + clat): md may hold a write inside the
            # submission call itself, which clat does not see.
            "write_lat_mean_us": measured(results, name, "randwrite-qd1", "lat_mean_us"),
            "write_p999_us": measured(results, name, "randwrite-qd1", "clat_p999_us"),
            "write_iops": measured(results, name, "randwrite-qd1", "iops"),
            "fill_s": fill_measured, "fill_model_s": fill_model, "fill_write_iops": write_rate,
            "stall_s": float(full["latency_ms"].iloc[0] / 1000) if len(full) else None,
            "longest_wait_s": float(writes["latency_ms"].max() / 1000) if len(writes) else None,
            "stall_model_s": stall_s, "fast_iops": fast_iops, "slow_iops": slow_iops,
        })
    return pd.DataFrame(rows)


def leg_table(results: pd.DataFrame, configs: list[str] | None = None) -> pd.DataFrame:
    """Reads and writes each leg served, per configuration and workload (one row per leg)."""
    configs = configs or CONFIG_ORDER
    rows = results[results["config"].isin(configs) & results["metric"].isin(["reads", "writes"])
                   & results["leg"].isin(["fast", "slow"])]
    dims = ["config", "workload", "leg"] + (["phase"] if "phase" in rows else [])
    table = rows.pivot_table(index=dims, columns="metric", values="value", aggfunc="sum",
                             dropna=False).reset_index()
    return table.dropna(subset=["reads", "writes"], how="all")


def read_share(results: pd.DataFrame, config: str) -> float | None:
    """The share of a configuration's random reads the slow leg served (None: not measured)."""
    reads = results[(results["config"] == config) & (results["metric"] == "reads")
                    & results["workload"].str.startswith("randread")]
    total = reads["value"].sum()
    return float(reads[reads["leg"] == "slow"]["value"].sum() / total) if total else None


def resync_table(results: pd.DataFrame, meta: dict[str, Any] | None = None) -> pd.DataFrame:
    """Every timed resync of a new fast leg: size, seconds, rate, and the model's time (the
    resync-size drill first, largest array first, then the instance-replacement drill).

    `timed_by` says whose clock: "kernel" (md's own log lines, exact) where the run has
    them, else "polls" (from the add to the first poll of /proc/mdstat that saw the copy
    done: an upper bound)."""
    rows = results[(results["workload"] == "resync") & (results["metric"] == "resync_s")]
    table = rows[["config", "size_mib", "value"]].rename(columns={"value": "resync_s"})
    table = table.assign(timed_by="polls")
    # The instance-replacement drill, from its add to its "in sync": runs made before its
    # timer moved to the add started it only after a status call, seconds late.
    added = event_s(results, "drill-fast-leg-lost", "new fast leg added")
    synced = event_s(results, "drill-fast-leg-lost", "in sync")
    if added is not None and synced is not None:
        table.loc[table["config"] == "drill-fast-leg-lost", "resync_s"] = synced - added
    kernel = results[(results["workload"] == "resync") & (results["metric"] == "resync_kernel_s")]
    for row in kernel.itertuples():
        same = (table["config"] == row.config) & (table["size_mib"] == row.size_mib)
        table.loc[same, ["resync_s", "timed_by"]] = [row.value, "kernel"]
    table = table.assign(rate_mib_s=table["size_mib"] / table["resync_s"])
    if meta is not None:
        rate = model_resync_rate(results, meta)
        table = table.assign(model_s=table["size_mib"] / rate)
    table = table.assign(drill_order=(table["config"] != "drill-resync-size").astype(int))
    return table.sort_values(["drill_order", "size_mib"], ascending=[True, False]).drop(
        columns="drill_order").reset_index(drop=True)


def event_s(results: pd.DataFrame, drill: str, event: str) -> float | None:
    """When a drill's event happened, in seconds since the drill started (None: not recorded)."""
    if "event" not in results.columns:
        return None
    rows = results[(results["config"] == drill) & (results["metric"] == "event_s")
                   & (results["event"] == event)]
    return float(rows["value"].iloc[0]) if len(rows) else None


def resync_polls(run: RecordedRun) -> pd.DataFrame:
    """What the lab's polls of /proc/mdstat saw during each timed resync of a new fast leg
    (raw/mdstat/<drill>-poll.txt), in seconds since the add: the last poll that still saw
    the copy running (its percent and md's own speed figure), the poll that saw it done,
    and the longest wait for a poll. The lab sees a resync end only at its next poll."""
    rows = []
    added = event_s(run.results, "drill-fast-leg-lost", "new fast leg added")
    for resync in resync_table(run.results).itertuples():
        if resync.config == "drill-resync-size":
            name, since_s = f"{resync.config}-{resync.size_mib:.0f}mib", 0.0
        elif added is not None:
            name, since_s = resync.config, added  # its polls count from the drill's start
        else:
            continue
        path = run.raw_dir / "mdstat" / f"{name}-poll.txt"
        if not path.is_file():
            continue
        polls = []
        for chunk in re.split(r"^# t_s=", path.read_text(), flags=re.M)[1:]:
            stamp, _, text = chunk.partition("\n")
            arrays = list(parse_mdstat(text, str(path)).arrays.values())
            sync = arrays[0].sync if arrays else None
            polls.append((float(stamp) - since_s, sync))
        running = [(t, sync) for t, sync in polls if sync is not None and sync.percent is not None]
        done = [t for t, sync in polls if sync is None]
        if not running or not done:
            continue
        times = [0.0] + [t for t, _ in polls]
        waits = [b - a for a, b in zip(times[:-1], times[1:], strict=True)]
        last_t, last = running[-1]
        rows.append({"config": resync.config, "size_mib": resync.size_mib,
                     "last_running_s": last_t, "last_percent": last.percent,
                     "md_speed_mib_s": (last.speed_kib_s or 0) / 1024,
                     "done_s": min(t for t in done if t > last_t),
                     "longest_wait_s": max(waits)})
    return pd.DataFrame(rows)


def resync_request_kib(results: pd.DataFrame) -> float | None:
    """The mean size of the slow leg's reads while a new fast leg was resynced."""
    rows = results[(results["config"] == "drill-resync-size") & (results["leg"] == "slow")
                   & results["workload"].str.startswith("resync-")]
    reads = rows[rows["metric"] == "reads"]["value"].sum()
    read_bytes = rows[rows["metric"] == "read_bytes"]["value"].sum()
    return float(read_bytes / reads / 1024) if reads else None


def model_resync_rate(results: pd.DataFrame, meta: dict[str, Any]) -> float:
    """MiB/s the model assumes for every resync: the largest timed array's rate (where md's
    fixed start-up costs weigh least), so time = size / rate can be checked on the smaller
    ones. Without a timed resync: md's ceiling."""
    rows = results[(results["config"] == "drill-resync-size") & (results["metric"] == "resync_s")]
    if rows.empty:
        return run_settings(meta)["ceiling_kib_s"] / 1024
    largest = rows.sort_values("size_mib").iloc[-1]
    return float(largest["size_mib"] / largest["value"])


def drill_events(results: pd.DataFrame) -> pd.DataFrame:
    rows = results[(results["metric"] == "event_s")]
    return rows[["config", "event", "value"]].rename(columns={"value": "t_s"}).reset_index(
        drop=True)


def recovery_timeline(results: pd.DataFrame, drill: str = "drill-fast-leg-lost"
                      ) -> pd.DataFrame:
    rows = results[(results["config"] == drill) & (results["metric"] == "recovery_percent")]
    return rows[["t_s", "value"]].rename(columns={"value": "percent"}).sort_values(
        "t_s").reset_index(drop=True)


def fill_time_check(table: pd.DataFrame) -> dict[str, float | None]:
    """Model against measurement for the cells whose backlog filled: when the first write
    found it full, and how long that write waited (medians over the cells)."""
    filled = table[table["fill_s"].notna()] if "fill_s" in table else table[:0]
    if filled.empty:
        return {"measured_s": None, "model_s": None, "stall_s": None}
    return {"measured_s": float(filled["fill_s"].median()),
            "model_s": float(filled["fill_model_s"].median()),
            "stall_s": float(filled["stall_s"].median())}
