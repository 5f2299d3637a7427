"""Every number and every shape word the write-mostly lab page quotes, computed from a run.

Works on any valid run: what a run did not measure becomes NOT_MEASURED, never an error, so
the page builds from a ci, quick or full run, on disks or loop legs, on any kernel.
"""

from __future__ import annotations

from typing import Any

import pandas as pd

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
from labs.write_mostly.resync_text import resync_poll_figures, resync_polls
from labs.write_mostly.tables import NOT_MEASURED

OTHER_WRITE_MOSTLY = ("raid1-wm-bitmap", "wb-slot1-create", "wb-slot1-sysfs", "wb-slot0-create",
                      "wb-slot0-sysfs")
NUMBER_WORDS = {1: "one", 2: "two", 3: "three", 4: "four", 5: "five"}
NODE_BYTES = 3.5e12  # one i4i.4xlarge node's local NVMe, as Hyperconnect gives it


def us(value: float | None) -> str:
    if value is None or pd.isna(value):
        return NOT_MEASURED
    return f"{value / 1000:.1f} ms" if value >= 1000 else f"{value:.0f} µs"


def seconds(value_s: float | None) -> str:
    return us(None if value_s is None else value_s * 1e6)


def ms(value_ms: float | None) -> str:
    return us(None if value_ms is None else value_ms * 1000)


def error_text(model: float | None, measured: float | None) -> str:
    """'12 % above' / '3 % below' / 'within 1 %' of the measurement."""
    if model is None or measured is None or measured == 0:
        return NOT_MEASURED
    error = relative_error(model, measured)
    if abs(error) < 0.01:
        return "within 1% of"
    return f"{abs(error):.0%} {'above' if error > 0 else 'below'}"


def ratio_text(value: float | None, reference: float | None, what: str = "") -> str:
    """How value compares with reference, in words: 'about the same as', '2.1 times'."""
    if value is None or reference is None or reference == 0:
        return NOT_MEASURED
    ratio = value / reference
    if 0.85 <= ratio <= 1.15:
        return f"about the same as{what}"
    if ratio > 1:
        return f"{ratio:.1f} times{what}"
    return f"{1 / ratio:.1f} times less than{what}"


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
    f["slow_iops_cap"] = f"{cap:g}" if cap else "an unknown number of"
    f["slow_cap_by"] = settings["cap_by"] or "nothing the lab knows of"
    f["delay_ms"] = f"{delay:g}"
    f["legs_mode"] = {"disks": "the lab VM's two data disks",
                      "loop": "two loop devices over files in the lab's work dir"}.get(
        settings["legs"], settings["legs"])
    f.update(_slow_leg(results, meta, cap, delay))
    f.update(_mirrors(results, p))
    f.update(_write_behind(results, meta))
    f.update(_resync(results, meta))
    f.update(resync_poll_figures(resync_polls(run)))
    f.update(_drills(results))
    wall = results[results.metric == "wall_time_s"].value
    f["wall_min"] = f"{wall.iloc[0] / 60:.0f}" if len(wall) else NOT_MEASURED
    load = meta["host"].get("load_average", {}).get("controller_before")
    f["load_before"] = f"{load[0]:.0f}" if load else "unknown"
    f["wm_write_error"] = error_text(
        1000 * slow_leg_latency_ms(cap, delay) if cap else None,
        tables.measured(results, "raid1-wm", "randwrite-qd1", "clat_p50_us"))
    f["profile"] = meta["parameters"].get("profile", "?")
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
    for op in ("read", "write"):
        both = part("slow-only", op, "measured_ms")
        cap_alone = part("slow-cap-only", op, "measured_ms")
        delay_alone = part("slow-delay-only", op, "measured_ms")
        f[f"part_cap_{op}"] = ms(cap_alone)
        f[f"part_delay_{op}"] = ms(delay_alone)
        f[f"part_both_{op}"] = ms(both)
        f[f"part_cap_{op}_error"] = error_text(1000 / cap if cap else None, cap_alone)
        f[f"part_delay_{op}_error"] = error_text(delay or None, delay_alone)
        f[f"part_both_{op}_error"] = error_text(model_both, both)
        summed = (cap_alone + delay_alone) if cap_alone and delay_alone else None
        f[f"parts_sum_{op}"] = ms(summed)
        f[f"parts_sum_{op}_vs_both"] = ratio_text(both, summed, " the sum")
    for op in ("read", "write"):
        both, summed = part("slow-only", op, "measured_ms"), part("slow-only", op, "parts_sum_ms")
        f[f"parts_add_{op}"] = (NOT_MEASURED if both is None or summed is None else
                                "added up" if abs(both - summed) <= 0.15 * summed else
                                "did not add up")
    # How the parts might combine: the cap may count time from the last operation it let
    # through, so an operation that has waited out the delay passes it at once; that makes
    # both together no slower than the delay alone, but never faster.
    faster = [op for op in ("read", "write")
              if (b := part("slow-only", op, "measured_ms")) is not None
              and (d := part("slow-delay-only", op, "measured_ms")) is not None and b < d]
    f["parts_combine"] = (
        f"Together they were even faster than the delay alone for {_and_list(faster)}s, which "
        "no way of combining the two parts explains. Each part was measured once, at another "
        "moment. The timer ticks of a loaded emulated machine move single medians by "
        "milliseconds, so this run cannot say how the two combine." if faster else
        "Where they do not add up, a likely reason is that the cap counts time from the last "
        "operation it let through. An operation that has already waited out the delay may "
        "then pass it at once. The timer ticks of a loaded emulated machine add enough noise "
        "that this run cannot settle it.")
    delay_alone = part("slow-delay-only", "write", "measured_ms")
    f["delay_vs_asked"] = (NOT_MEASURED if delay_alone is None or not delay else
                           "about what was asked" if delay_alone < 1.5 * delay else
                           f"{delay_alone / delay:.1f} times what was asked")
    return f


def _mirrors(results: pd.DataFrame, p: Any) -> dict[str, str]:
    f = {}
    plain, wm = tables.read_share(results, "raid1"), tables.read_share(results, "raid1-wm")
    f["plain_share"] = f"{plain:.1%}" if plain is not None else NOT_MEASURED
    f["wm_share"] = f"{wm:.2%}" if wm is not None else NOT_MEASURED
    f["fast_read_p50"] = us(p("fast-only", "randread-qd1"))
    f["wm_read_p50"] = us(p("raid1-wm", "randread-qd1"))
    f["wm_read_vs_fast"] = ratio_text(p("raid1-wm", "randread-qd1"),
                                      p("fast-only", "randread-qd1"), " the fast leg's")
    # The model of a write-mostly mirror's read is the fast leg's read; the other write-mostly
    # arrays of the same run read from the same fast leg, so their spread is the run's own.
    f["wm_read_error"] = error_text(p("fast-only", "randread-qd1"),
                                    p("raid1-wm", "randread-qd1"))
    others = [v for v in (p(c, "randread-qd1") for c in OTHER_WRITE_MOSTLY) if v is not None]
    f["wm_read_others_count"] = NUMBER_WORDS.get(len(others), str(len(others)))
    f["wm_read_others"] = (f"from {us(min(others))} to {us(max(others))}" if others
                           else NOT_MEASURED)
    fast_read = p("fast-only", "randread-qd1")
    f["wm_read_others_vs_fast"] = (
        NOT_MEASURED if not others or fast_read is None else
        "some of them faster than the fast leg alone" if min(others) < fast_read else
        "all of them slower than the fast leg alone")
    f["plain_read_qd16_p99"] = us(p("raid1", "randread-qd16", "clat_p99_us"))
    f["wm_read_qd16_p99"] = us(p("raid1-wm", "randread-qd16", "clat_p99_us"))
    f["plain_vs_wm_qd16_p99"] = ratio_text(p("raid1", "randread-qd16", "clat_p99_us"),
                                           p("raid1-wm", "randread-qd16", "clat_p99_us"))
    f["wm_write_p50"] = us(p("raid1-wm", "randwrite-qd1"))
    f["wm_write_p99"] = us(p("raid1-wm", "randwrite-qd1", "clat_p99_us"))
    f["wm_paced_p50"] = us(p("raid1-wm", "randwrite-qd1-paced"))
    f["slow_write_p50"] = us(p("slow-only", "randwrite-qd1"))
    f["wm_write_vs_slow"] = ratio_text(p("raid1-wm", "randwrite-qd1"),
                                       p("slow-only", "randwrite-qd1"), " the slow leg's")
    f["bitmap_write_p50"] = us(p("raid1-wm-bitmap", "randwrite-qd1"))
    f["slow_qd16_write_iops"] = _iops(p("slow-only", "randwrite-qd16", "iops"))
    return f


def _iops(value: float | None) -> str:
    return f"{value:,.0f}" if value is not None else NOT_MEASURED


def _write_behind(results: pd.DataFrame, meta: dict[str, Any]) -> dict[str, str]:
    table = tables.write_behind_table(results, meta)
    f = {"wb_depth": str(WRITE_BEHIND)}
    f.update(_backlog_by_cell(table))
    f["wb_verdict"] = behind_verdict(table)
    f["how_set_verdict"] = how_set_verdict(table)
    behind = table[table["max_backlog"] > 0] if len(table) else table
    first = behind.iloc[0] if len(behind) else None
    f.update(_first_cell_latency(results, first))
    f.update(_first_cell_rate(table, first))
    check = tables.fill_time_check(table) if len(table) else {"measured_s": None,
                                                              "model_s": None, "stall_s": None}
    f.update(_fill_and_stall(table, behind, check))
    f.update(_fill_from_fast_leg(table, check))
    f["wb_first_waits"] = _first_cell_waits(first)
    return f


def _backlog_by_cell(table: pd.DataFrame) -> dict[str, str]:
    """Per write-behind cell (slot and how it was set): the most held behind, and the
    flat-out and paced writers' medians."""
    f = {}
    cells = table.set_index("config") if len(table) else pd.DataFrame()
    for name in ("wb-slot0-create", "wb-slot0-sysfs", "wb-slot1-create", "wb-slot1-sysfs"):
        key = name.removeprefix("wb-").replace("-", "_")
        row = cells.loc[name] if name in cells.index else None
        f[f"backlog_{key}"] = f"{row['max_backlog']:.0f}" if row is not None else NOT_MEASURED
        f[f"write_p50_{key}"] = us(row["write_p50_us"] if row is not None else None)
        f[f"paced_p50_{key}"] = us(row["paced_p50_us"] if row is not None else None)
    return f


def _first_cell_latency(results: pd.DataFrame, first: pd.Series | None) -> dict[str, str]:
    """The latencies of the first cell whose writes went behind, beside write-mostly alone."""
    f = {}
    f["wb_first_cell"] = (tables.CONFIG_LABELS[first["config"]] if first is not None
                          else NOT_MEASURED)
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
    f["wb_write_rate_error"] = error_text(
        sustained, float(first["write_iops"]) if first is not None else None)
    f["wb_cycle_rates"] = _cycle_rates(table, first, sustained)
    f["wb_write_p999"] = us(first["write_p999_us"] if first is not None else None)
    f["wb_write_iops"] = _iops(first["write_iops"] if first is not None else None)
    return f


def _fill_and_stall(table: pd.DataFrame, behind: pd.DataFrame,
                    check: dict[str, float | None]) -> dict[str, str]:
    """How long the backlog took to fill and a write then waited, measured and modelled."""
    f = {}
    never = ("never: no write waited for a full backlog in this run"
             if len(behind) else NOT_MEASURED)
    f["fill_measured"] = seconds(check["measured_s"]) if check["measured_s"] else never
    f["fill_model"] = seconds(check["model_s"]) if check["model_s"] else NOT_MEASURED
    f["fill_error"] = error_text(check["model_s"], check["measured_s"])
    stall_model = float(table["stall_model_s"].iloc[0]) if len(table) and \
        table["stall_model_s"].notna().any() else None
    f["stall_model"] = seconds(stall_model)
    f["stall_measured"] = seconds(check["stall_s"]) if check["stall_s"] else never
    f["stall_error"] = error_text(stall_model, check["stall_s"])
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
    f["fill_from_fast_error"] = (error_text(backlog_fill_s(WRITE_BEHIND, fast_w, slow_w),
                                            check["measured_s"])
                                 if fast_w and slow_w and fast_w > slow_w else NOT_MEASURED)
    filled = table[table["fill_s"].notna()] if len(table) else table
    f["fill_cells"] = (", ".join(tables.CONFIG_LABELS[c] for c in filled["config"])
                       if len(filled) else NOT_MEASURED)
    rate_before = float(filled["fill_write_iops"].median()) if len(filled) else None
    f["mirror_vs_fast"] = (NOT_MEASURED if rate_before is None or not fast_w else
                           "faster than" if rate_before > 1.15 * fast_w else
                           "more slowly than" if rate_before < 0.85 * fast_w else
                           "about as fast as")
    f["fill_write_iops"] = _iops(None if filled.empty else
                                 float(filled["fill_write_iops"].median()))
    f["fill_slow_iops"] = _iops(table["slow_iops"].iloc[0] if len(table) else None)
    return f


def _cycle_rates(table: pd.DataFrame, first: pd.Series | None,
                 model_iops: float | None) -> str:
    """The flat-out writer's measured rate against the cycle model's, in the cell whose log
    shows the cycle (a backlog that filled) and, if it is another, in the first cell."""
    if first is None:
        return NOT_MEASURED
    filled = table[table["fill_s"].notna()]
    first_text = (f"{_iops(first['write_iops'])} (the model is "
                  f"{error_text(model_iops, float(first['write_iops']))} that)")
    if filled.empty:
        return f"in the first cell it measured {first_text}."
    cycle = filled.iloc[0]
    cycle_text = (f"{_iops(cycle['write_iops'])} (the model is "
                  f"{error_text(model_iops, float(cycle['write_iops']))} that)")
    if cycle["config"] == first["config"]:
        return f"it measured {cycle_text}."
    return (f"in the cell whose log shows the cycle ({tables.CONFIG_LABELS[cycle['config']]}) "
            f"it measured {cycle_text}, and in the first cell {first_text}.")


def _first_cell_waits(first: pd.Series | None) -> str:
    """Whether the first write-behind cell's own log shows the cycle the text describes."""
    if first is None or pd.isna(first["longest_wait_s"]) or pd.isna(first["stall_model_s"]):
        return "This run's logs cannot show the cycle."
    longest, whole = 1000 * float(first["longest_wait_s"]), 1000 * float(first["stall_model_s"])
    if longest >= 0.5 * whole:
        return (f"The first cell's log shows it: its longest completion latency was "
                f"{longest:,.0f} ms, against {whole:,.0f} ms for the whole backlog.")
    return (f"The first cell's log does not show it that way. Its longest completion latency "
            f"in the logged seconds was {longest:,.0f} ms, not the {whole:,.0f} ms of a whole "
            "backlog. Completion latency does not count the time md held a write inside the "
            "submission call.")


def behind_verdict(table: pd.DataFrame) -> str:
    """Which of the write-behind cells wrote anything behind, in words."""
    if table.empty:
        return NOT_MEASURED
    behind = table[table["max_backlog"] > 0]
    if len(behind) == len(table):
        return "in every cell: either slot, marked either way"
    if behind.empty:
        return "in no cell"
    slots = sorted(set(behind["slot"]))
    marks = sorted(set(behind["marked"]))
    by_slot = all(table[table["slot"].isin(slots)]["max_backlog"] > 0) and not any(
        table[~table["slot"].isin(slots)]["max_backlog"] > 0)
    if by_slot and len(slots) == 1:
        return (f"only with the slow leg in slot {slots[0]}, whether it was marked at "
                "creation or through sysfs")
    if len(marks) == 1:
        return f"only where the slow leg was marked {marks[0]}"
    return "in " + ", ".join(behind["config"])


def how_set_verdict(table: pd.DataFrame) -> str:
    """Whether marking write-mostly at creation or through sysfs changed anything, in words."""
    if table.empty:
        return NOT_MEASURED
    differs = []
    for slot in sorted(set(table["slot"])):
        cells = table[table["slot"] == slot].set_index("marked")["max_backlog"] > 0
        if len(cells) == 2 and cells.iloc[0] != cells.iloc[1]:
            differs.append(str(slot))
    if not differs:
        return "made no difference"
    return f"made a difference in slot {' and '.join(differs)}"


def _resync(results: pd.DataFrame, meta: dict[str, Any]) -> dict[str, str]:
    f: dict[str, str] = {}
    resync = tables.resync_table(results, meta)
    if resync.empty:
        for key in ("resync_rate", "resync_sizes", "node_resync_h", "resync_vs_stream",
                    "model_resync_rate", "replace_resync", "resync_request",
                    "model_resync_size", "cap_times_request", "ex_node_resync_h",
                    "ex_node_stream_h", "ex_ceiling_h", "ceiling_h", "stream_rate",
                    "stream_needed", "resync_errors", "replace_resync_error", "resync_shape"):
            f[key] = NOT_MEASURED
        return f
    model_rate = tables.model_resync_rate(results, meta)
    rate = model_rate
    f["resync_rate"] = f"{rate:.0f} MiB/s"
    series = resync[resync.config == "drill-resync-size"]
    replace = resync[resync.config == "drill-fast-leg-lost"]
    f["resync_sizes"] = _and_list([f"{s:.0f} MiB in {t:.1f} s" for s, t in
                                   zip(series.size_mib, series.resync_s, strict=True)])
    f["node_resync_h"] = f"{transfer_hours(NODE_BYTES, rate):.0f}"
    best = stream_rate(figure("stream_hours_min"))
    ratio = rate / best
    f["resync_vs_stream"] = ("faster than" if ratio > 1.2 else
                             "slower than" if ratio < 0.8 else "about as fast as")
    f["stream_rate"] = f"{best:.0f} MiB/s"
    f["model_resync_rate"] = f"{model_rate:.0f} MiB/s"
    f["model_resync_size"] = (f"{series.size_mib.iloc[0]:.0f} MiB" if len(series)
                              else NOT_MEASURED)
    others = series.iloc[1:]
    # The model's error per size, never summed over sizes.
    f["resync_errors"] = (_and_list([f"{error_text(m, t)} the {t:.1f} s measured for {s:.0f} MiB"
                                     for s, t, m in zip(others.size_mib, others.resync_s,
                                                        others.model_s, strict=True)])
                          if len(others) else "one size only: nothing left to predict")
    f["replace_resync"] = (f"{replace.size_mib.iloc[0]:.0f} MiB in "
                           f"{replace.resync_s.iloc[0]:.1f} s" if len(replace) else NOT_MEASURED)
    f["replace_resync_error"] = (error_text(float(replace.model_s.iloc[0]),
                                            float(replace.resync_s.iloc[0]))
                                 if len(replace) else NOT_MEASURED)
    f["resync_shape"] = resync_shape(series, replace,
                                     by_kernel=bool((resync["timed_by"] == "kernel").all()))
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


def _and_list(items: list[str]) -> str:
    """'a', 'a and b', 'a, b and c'."""
    if len(items) <= 1:
        return "".join(items)
    return ", ".join(items[:-1]) + " and " + items[-1]


def resync_shape(series: pd.DataFrame, replace: pd.DataFrame, by_kernel: bool) -> str:
    """What the resync times say about time = size / rate, in one sentence. Two copies of one
    size that took as long say "not by chance" only when md's kernel log timed them: a poll
    that saw a copy done says only that it was done by then."""
    others = series.iloc[1:]
    if others.empty:
        return "With one array size, this run does not test the model on other sizes."
    close = (abs(others.model_s - others.resync_s) <= 0.2 * others.resync_s).all()
    if close:
        return "So here the time grew in proportion to the size, as the model says."
    same = others[others.size_mib.isin(replace.size_mib)] if len(replace) else others[:0]
    if len(same):
        a, b = float(same.resync_s.iloc[0]), float(replace.resync_s.iloc[0])
        size = float(same.size_mib.iloc[0])
        if abs(a - b) <= 0.1 * max(a, b) and by_kernel:
            return (f"The smaller arrays took longer than size / rate, and not by chance: two "
                    f"resyncs of the same {size:.0f} MiB, in the size series and in the drill, "
                    f"took {a:.1f} s and {b:.1f} s.")
        if not by_kernel:
            return (f"The smaller arrays were seen done later than size / rate says. Two "
                    f"resyncs of the same {size:.0f} MiB, in the size series and in the drill, "
                    f"were seen done {a:.1f} s and {b:.1f} s after their adds. But a copy is "
                    "seen done only at the lab's next look, as the next paragraph shows.")
        return (f"The smaller arrays took longer than size / rate, and two resyncs of the same "
                f"{size:.0f} MiB took {a:.1f} s and {b:.1f} s: the time beyond the model "
                "varies from one resync to the next.")
    return ("The smaller arrays took longer than size / rate; with one resync per size, this run "
            "cannot tell a fixed cost of starting a recovery from the spread between resyncs.")


def _drills(results: pd.DataFrame) -> dict[str, str]:
    f = {}
    readd = results[(results.config == "drill-slow-leg-lost") & (results.metric == "resync_s")]
    f["readd_s"] = f"{readd.value.iloc[0]:.1f} s" if len(readd) else NOT_MEASURED
    checks = results[results.metric == "data_check_ok"]
    control = checks.workload == "data-check-one-block-moved"
    passed = checks[~control]
    f["checks_passed"] = (f"all {len(passed)} passed" if len(passed) and (passed.value == 1).all()
                          else f"{int((passed.value == 1).sum())} of {len(passed)} passed")
    caught = results[results.metric == "corruption_caught"].value
    f["control_outcome"] = ("failed, as it must" if len(caught) and caught.iloc[0] == 1
                            else NOT_MEASURED)
    return f
