"""Every number the write-mostly lab page quotes, computed from a run.

Works on any valid run: what a run did not measure becomes NOT_MEASURED, never an error, so
the page builds from a ci, quick or full run, on disks or loop legs, on any kernel.
"""

from __future__ import annotations

from typing import Any

import pandas as pd

from labs.book import number_text as nt
from labs.book.provenance import load_at_start_and_end
from labs.records import RecordedRun
from labs.write_mostly import tables
from labs.write_mostly.model import (
    backlog_fill_s,
    backlog_stall_s,
    backlog_sustained_iops,
    implied_rate_mib_s,
    relative_error,
    slow_leg_latency_ms,
    transfer_hours,
)
from labs.write_mostly.params import WRITE_BEHIND
from labs.write_mostly.reference import figure, stream_rate
from labs.write_mostly.tables import NOT_MEASURED, resync_polls

OTHER_WRITE_MOSTLY = ("raid1-wm-bitmap", "wb-slot1-create", "wb-slot1-sysfs", "wb-slot0-create",
                      "wb-slot0-sysfs")
NODE_BYTES = 3.5e12  # one i4i.4xlarge node's local NVMe, as Hyperconnect gives it


def ms(value_ms: float | None) -> str:
    return NOT_MEASURED if nt.missing(value_ms) else nt.duration_ms(value_ms)


def us(value_us: float | None) -> str:
    return ms(None if value_us is None else value_us / 1000)


def seconds(value_s: float | None) -> str:
    return ms(None if value_s is None else value_s * 1000)


def model_error(name: str, model: float | None, measured: float | None) -> dict[str, str]:
    """How far the model is from the measurement: NAME, its size ("12 %"; the page says
    whether above or below), and NAME_signed, (model - measured) / measured, which the
    claim tests read for the direction."""
    if model is None or measured is None or measured == 0:
        return {name: NOT_MEASURED, f"{name}_signed": NOT_MEASURED}
    error = relative_error(model, measured)
    return {name: nt.percent(error, size_only=True), f"{name}_signed": f"{error:+.4f}"}


def run_figures(run: RecordedRun) -> dict[str, str]:
    """Every number the lab page quotes about one run, formatted, computed from it."""
    results, meta = run.results, run.meta
    settings = tables.run_settings(meta)
    cap, delay = settings["cap_iops"], settings["delay_ms"]

    def p(config: str, workload: str, metric: str = "clat_p50_us") -> float | None:
        return tables.measured(results, config, workload, metric)

    f: dict[str, str] = {}
    for leg in ("fast", "slow"):
        for workload in ("randread-qd1", "randwrite-qd1"):
            for pct in ("p50", "p99"):
                f[f"{leg}_{workload}_{pct}"] = us(p(f"{leg}-only", workload, f"clat_{pct}_us"))
        qd16 = p(f"{leg}-only", "randread-qd16", "iops")
        f[f"{leg}_read_qd16_iops"] = f"{qd16:,.0f}" if qd16 else NOT_MEASURED
    f["slow_iops_cap"] = f"{cap:g}" if cap else NOT_MEASURED
    f["delay_ms"] = f"{delay:g}"
    f.update(_slow_leg(results, meta, cap, delay))
    f.update(_mirrors(results, p))
    f.update(_write_behind(results, meta))
    f.update(_resync(results, meta))
    f.update(resync_poll_figures(resync_polls(run)))
    f.update(_drills(results))
    wall = results[results.metric == "wall_time_s"].value
    f["wall_min"] = f"{wall.iloc[0] / 60:.0f}" if len(wall) else NOT_MEASURED
    load = load_at_start_and_end(meta)  # the machine's 1-minute load at the start and end
    f["load_before"] = f"{load[0]:.0f}" if load else NOT_MEASURED
    f.update(model_error("wm_write_error", 1000 * slow_leg_latency_ms(cap, delay) if cap else None,
                         tables.measured(results, "raid1-wm", "randwrite-qd1", "clat_p50_us")))
    runtime = tables.recorded_scale(meta).get("runtime_s")
    f["runtime_s"] = f"{runtime:g}" if runtime else NOT_MEASURED
    return f


def _slow_leg(results: pd.DataFrame, meta: dict[str, Any], cap: float | None,
              delay: float) -> dict[str, str]:
    parts = tables.slow_leg_parts(results, meta).set_index(["config", "op"])

    def part(config: str, op: str, column: str) -> float | None:
        if (config, op) not in parts.index:
            return None
        value = parts.loc[(config, op), column]
        return None if value is None or pd.isna(value) else float(value)

    f = {}
    model_both = slow_leg_latency_ms(cap, delay) if cap else None
    f["model_spacing_ms"] = f"{1000 / cap:g} ms" if cap else NOT_MEASURED
    f["model_slow_ms"] = f"{model_both:g} ms" if model_both else NOT_MEASURED
    spacing = 1000 / cap if cap else None
    read_both = part("slow-only", "read", "measured_ms")
    read_cap = part("slow-cap-only", "read", "measured_ms")
    read_delay = part("slow-delay-only", "read", "measured_ms")
    write_both = part("slow-only", "write", "measured_ms")
    write_cap = part("slow-cap-only", "write", "measured_ms")
    write_delay = part("slow-delay-only", "write", "measured_ms")
    f.update({"part_both_read": ms(read_both), "part_cap_read": ms(read_cap),
              "part_delay_read": ms(read_delay),
              "parts_sum_read": ms(_summed(read_cap, read_delay)),
              "part_both_write": ms(write_both), "part_cap_write": ms(write_cap),
              "part_delay_write": ms(write_delay),
              "parts_sum_write": ms(_summed(write_cap, write_delay))})
    f.update(model_error("part_both_read_error", model_both, read_both))
    f.update(model_error("part_both_write_error", model_both, write_both))
    f.update(model_error("part_cap_write_error", spacing, write_cap))
    f.update(model_error("part_delay_write_error", delay or None, write_delay))
    f["delay_ratio"] = (f"{write_delay / delay:.1f}" if write_delay is not None and delay
                        else NOT_MEASURED)
    return f


def _summed(cap_alone: float | None, delay_alone: float | None) -> float | None:
    """The slow leg's two parts measured apart, added (None: one was not measured)."""
    return cap_alone + delay_alone if cap_alone and delay_alone else None


def _mirrors(results: pd.DataFrame, p: Any) -> dict[str, str]:
    f = {}
    plain, wm = tables.read_share(results, "raid1"), tables.read_share(results, "raid1-wm")
    f["plain_share"] = nt.percent(plain, 1) if plain is not None else NOT_MEASURED
    f["wm_share"] = nt.percent(wm, 2) if wm is not None else NOT_MEASURED
    f["fast_read_p50"] = us(p("fast-only", "randread-qd1"))
    f["wm_read_p50"] = us(p("raid1-wm", "randread-qd1"))
    # The model of a write-mostly mirror's read is the fast leg's read; the other write-mostly
    # arrays of the same run read from the same fast leg, so their spread is the run's own.
    f.update(model_error("wm_read_error", p("fast-only", "randread-qd1"),
                         p("raid1-wm", "randread-qd1")))
    others = [v for v in (p(c, "randread-qd1") for c in OTHER_WRITE_MOSTLY) if v is not None]
    f["wm_read_others_min"] = us(min(others) if others else None)
    f["wm_read_others_max"] = us(max(others) if others else None)
    f["plain_read_qd16_p99"] = us(p("raid1", "randread-qd16", "clat_p99_us"))
    f["wm_read_qd16_p99"] = us(p("raid1-wm", "randread-qd16", "clat_p99_us"))
    f["wm_write_p50"] = us(p("raid1-wm", "randwrite-qd1"))
    f["wm_write_p99"] = us(p("raid1-wm", "randwrite-qd1", "clat_p99_us"))
    f["wm_paced_p50"] = us(p("raid1-wm", "randwrite-qd1-paced"))
    f["slow_write_p50"] = us(p("slow-only", "randwrite-qd1"))
    f["bitmap_write_p50"] = us(p("raid1-wm-bitmap", "randwrite-qd1"))
    f["slow_qd16_write_iops"] = _iops(p("slow-only", "randwrite-qd16", "iops"))
    return f


def _iops(value: float | None) -> str:
    return f"{value:,.0f}" if value is not None else NOT_MEASURED


def _write_behind(results: pd.DataFrame, meta: dict[str, Any]) -> dict[str, str]:
    table = tables.write_behind_table(results, meta)
    f = {"wb_depth": str(WRITE_BEHIND)}
    f.update(_backlog_by_cell(table))
    behind = table[table["max_backlog"] > 0] if len(table) else table
    first = behind.iloc[0] if len(behind) else None
    f.update(_first_cell_latency(results, first))
    f.update(_first_cell_rate(table, first))
    check = tables.fill_time_check(table) if len(table) else {"measured_s": None,
                                                              "model_s": None, "stall_s": None}
    f.update(_fill_and_stall(table, check))
    f.update(_fill_from_fast_leg(table, check))
    longest = first["longest_wait_s"] if first is not None else None
    f["wb_first_longest_wait"] = seconds(None if longest is None or pd.isna(longest)
                                         else float(longest))
    return f


def _backlog_by_cell(table: pd.DataFrame) -> dict[str, str]:
    """Per write-behind cell (slot and how it was set): the most held behind."""
    cells = table.set_index("config") if len(table) else pd.DataFrame()

    def backlog(cell: str) -> str:
        return f"{cells.loc[cell, 'max_backlog']:.0f}" if cell in cells.index else NOT_MEASURED

    return {"backlog_slot0_create": backlog("wb-slot0-create"),
            "backlog_slot0_sysfs": backlog("wb-slot0-sysfs"),
            "backlog_slot1_create": backlog("wb-slot1-create"),
            "backlog_slot1_sysfs": backlog("wb-slot1-sysfs")}


def _first_cell_latency(results: pd.DataFrame, first: pd.Series | None) -> dict[str, str]:
    """The latencies of the first cell whose writes went behind, beside write-mostly alone."""
    f = {}
    f["wb_write_p50"] = us(first["write_p50_us"] if first is not None else None)
    f["wb_paced_p50"] = us(first["paced_p50_us"] if first is not None else None)
    # The paced writer from submission (fio's lat: slat + clat), as an application waits:
    # md can hold a write inside the submission call, which the medians above do not see.
    paced_wb = (tables.measured(results, first["config"], "randwrite-qd1-paced", "lat_mean_us")
                if first is not None else None)
    paced_wm = tables.measured(results, "raid1-wm", "randwrite-qd1-paced", "lat_mean_us")
    f["wb_paced_lat_mean"], f["wm_paced_lat_mean"] = us(paced_wb), us(paced_wm)
    f["wb_paced_lat_ratio"] = (f"{paced_wm / paced_wb:.1f}" if paced_wb and paced_wm
                               else NOT_MEASURED)
    f["wb_write_mean"] = us(first["write_mean_us"] if first is not None else None)
    lat_mean = first["write_lat_mean_us"] if first is not None else None
    f["wb_write_lat_mean"] = us(lat_mean)
    f["wb_write_slat_mean"] = us(lat_mean - first["write_mean_us"]
                                 if first is not None and lat_mean is not None else None)
    f["wb_write_rate_from_mean"] = _iops(1e6 / lat_mean if lat_mean else None)
    return f


def _first_cell_rate(table: pd.DataFrame, first: pd.Series | None) -> dict[str, str]:
    """The flat-out writer's rate in the first cell whose writes went behind, against the
    backlog cycle's model."""
    f = {}
    sustained = (backlog_sustained_iops(WRITE_BEHIND, float(first["fast_iops"]),
                                        float(first["slow_iops"]))
                 if first is not None and first["fast_iops"] and first["slow_iops"] else None)
    f["wb_write_rate_model"] = _iops(sustained)
    f.update(model_error("wb_write_rate_error", sustained,
                         float(first["write_iops"]) if first is not None else None))
    # The cell whose log shows the backlog's cycle (the first whose backlog filled).
    filled = table[table["fill_s"].notna()] if len(table) else table
    cycle = float(filled["write_iops"].iloc[0]) if len(filled) else None
    f["wb_cycle_iops"] = _iops(cycle)
    f.update(model_error("wb_cycle_rate_error", sustained, cycle))
    f["wb_write_p999"] = us(first["write_p999_us"] if first is not None else None)
    f["wb_write_iops"] = _iops(first["write_iops"] if first is not None else None)
    return f


def _fill_and_stall(table: pd.DataFrame, check: dict[str, float | None]) -> dict[str, str]:
    """How long the backlog took to fill and a write then waited, measured and modelled."""
    f = {}
    f["fill_measured"] = seconds(check["measured_s"])
    f["fill_model"] = seconds(check["model_s"]) if check["model_s"] else NOT_MEASURED
    f.update(model_error("fill_error", check["model_s"], check["measured_s"]))
    stall_model = float(table["stall_model_s"].iloc[0]) if len(table) and \
        table["stall_model_s"].notna().any() else None
    f["stall_model"] = seconds(stall_model)
    f["stall_measured"] = seconds(check["stall_s"])
    f.update(model_error("stall_error", stall_model, check["stall_s"]))
    return f


def _fill_from_fast_leg(table: pd.DataFrame, check: dict[str, float | None]) -> dict[str, str]:
    """The fill time predicted from the legs' own rates, and the writer's pace while the
    backlog filled against the fast leg's."""
    f = {}
    f["fill_fast_iops"] = _iops(table["fast_iops"].iloc[0] if len(table) else None)
    fast_w = table["fast_iops"].iloc[0] if len(table) else None
    slow_w = table["slow_iops"].iloc[0] if len(table) else None
    f["ex_fill_from_fast"] = (seconds(backlog_fill_s(WRITE_BEHIND, fast_w, slow_w))
                              if fast_w and slow_w and fast_w > slow_w else NOT_MEASURED)
    f["ex_stall"] = seconds(backlog_stall_s(WRITE_BEHIND, slow_w)) if slow_w else NOT_MEASURED
    # The fill time predicted from the fast leg alone: unlike the writer's own pace before
    # the wait (measured over the same interval as the fill), an independent input.
    f.update(model_error("fill_from_fast_error",
                         backlog_fill_s(WRITE_BEHIND, fast_w, slow_w)
                         if fast_w and slow_w and fast_w > slow_w else None,
                         check["measured_s"]))
    filled = table[table["fill_s"].notna()] if len(table) else table
    f["fill_write_iops"] = _iops(None if filled.empty else
                                 float(filled["fill_write_iops"].median()))
    f["fill_slow_iops"] = _iops(table["slow_iops"].iloc[0] if len(table) else None)
    return f


def _resync(results: pd.DataFrame, meta: dict[str, Any]) -> dict[str, str]:
    f: dict[str, str] = {}
    resync = tables.resync_table(results, meta)
    if resync.empty:
        for key in ("resync_rate", "node_resync_h", "model_resync_rate", "replace_resync_mib",
                    "replace_resync_s",
                    "resync_request", "model_resync_size", "cap_times_request",
                    "ex_node_resync_h", "ex_node_stream_h", "ex_ceiling_h", "ceiling_h",
                    "stream_rate", "stream_needed", "replace_resync_error",
                    "replace_resync_error_signed", *SAME_SIZE_KEYS):
            f[key] = NOT_MEASURED
        return f
    model_rate = tables.model_resync_rate(results, meta)
    rate = model_rate
    f["resync_rate"] = f"{rate:.0f} MiB/s"
    series = resync[resync.config == "drill-resync-size"]
    replace = resync[resync.config == "drill-fast-leg-lost"]
    f["node_resync_h"] = f"{transfer_hours(NODE_BYTES, rate):.0f}"
    best = stream_rate(figure("stream_hours_min"))
    f["stream_rate"] = f"{best:.0f} MiB/s"
    f["model_resync_rate"] = f"{model_rate:.0f} MiB/s"
    f["model_resync_size"] = (f"{series.size_mib.iloc[0]:.0f} MiB" if len(series)
                              else NOT_MEASURED)
    f["replace_resync_mib"] = f"{replace.size_mib.iloc[0]:.0f}" if len(replace) else NOT_MEASURED
    f["replace_resync_s"] = f"{replace.resync_s.iloc[0]:.1f}" if len(replace) else NOT_MEASURED
    f.update(model_error("replace_resync_error",
                         float(replace.model_s.iloc[0]) if len(replace) else None,
                         float(replace.resync_s.iloc[0]) if len(replace) else None))
    f.update(_same_size(series, replace))
    cap = tables.run_settings(meta)["cap_iops"]
    request = tables.resync_request_kib(results)
    f["cap_times_request"] = (f"{cap * request / 1024:.0f} MiB/s" if cap and request
                              else NOT_MEASURED)
    f["resync_request"] = f"{request:.0f} KiB" if request else NOT_MEASURED
    f["ex_node_resync_h"] = f"{transfer_hours(NODE_BYTES, rate):.1f}"
    f["ex_node_stream_h"] = f"{transfer_hours(NODE_BYTES, best):.1f}"
    ceiling = tables.run_settings(meta)["ceiling_kib_s"] / 1024
    f["ex_ceiling_h"] = f"{transfer_hours(NODE_BYTES, ceiling):.1f}"
    f["ceiling_h"] = f["ex_ceiling_h"]
    f["stream_needed"] = f"{implied_rate_mib_s(NODE_BYTES, 1):.0f} MiB/s"
    return f


SAME_SIZE_KEYS = ("resync_same_size", "resync_same_series_s", "resync_same_drill_s")


def _same_size(series: pd.DataFrame, replace: pd.DataFrame) -> dict[str, str]:
    """The two resyncs of one size: the size series' and the instance-replacement drill's."""
    same = series[series.size_mib.isin(replace.size_mib)] if len(replace) else series[:0]
    if same.empty:
        return dict.fromkeys(SAME_SIZE_KEYS, NOT_MEASURED)
    return {"resync_same_size": f"{same.size_mib.iloc[0]:.0f} MiB",
            "resync_same_series_s": f"{same.resync_s.iloc[0]:.1f} s",
            "resync_same_drill_s": f"{replace.resync_s.iloc[0]:.1f} s"}


def resync_poll_figures(polls: pd.DataFrame) -> dict[str, str]:
    """What the polls of /proc/mdstat saw (tables.resync_polls): the longest wait for a poll,
    the smallest copy's last poll still copying and the poll that saw it done, and md's own
    speed figures at each copy's last poll."""
    keys = ("resync_poll_wait", "resync_small_size", "resync_small_last_s",
            "resync_small_percent", "resync_small_done_s", "resync_md_speed_min",
            "resync_md_speed_max")
    if polls.empty:
        return dict.fromkeys(keys, NOT_MEASURED)
    series = polls[polls.config == "drill-resync-size"].sort_values("size_mib")
    small = series.iloc[0] if len(series) else polls.iloc[0]
    speeds = polls["md_speed_mib_s"]
    return {"resync_poll_wait": f"{polls['longest_wait_s'].max():.1f} s",
            "resync_small_size": f"{small.size_mib:.0f} MiB",
            "resync_small_last_s": f"{small.last_running_s:.1f} s",
            "resync_small_percent": nt.percent(small.last_percent / 100, 1),
            "resync_small_done_s": f"{small.done_s:.1f} s",
            "resync_md_speed_min": f"{speeds.min():.0f} MiB/s",
            "resync_md_speed_max": f"{speeds.max():.0f} MiB/s"}


def _drills(results: pd.DataFrame) -> dict[str, str]:
    f = {}
    readd = results[(results.config == "drill-slow-leg-lost") & (results.metric == "resync_s")]
    f["readd_s"] = f"{readd.value.iloc[0]:.1f} s" if len(readd) else NOT_MEASURED
    checks = results[results.metric == "data_check_ok"]
    control = checks.workload == "data-check-one-block-moved"
    passed = checks[~control]
    f["checks_count"] = str(len(passed)) if len(passed) else NOT_MEASURED
    return f
