"""The numbers the lab page quotes from its companion runs: the same lab on Debian 13's kernel
(prefixed new_, beside the shipped run's old_) and on loop-device legs (prefixed loop_).

A companion that is not recorded gives NOT_MEASURED for each of its figures. Pure page code:
reads recorded runs, no host.
"""

from __future__ import annotations

from labs.book import number_text as nt
from labs.records import RecordedRun
from labs.write_mostly import tables
from labs.write_mostly.figures import NOT_MEASURED, model_error, run_figures, us
from labs.write_mostly.model import backlog_sustained_iops, slow_leg_latency_ms
from labs.write_mostly.params import WRITE_BEHIND, Parameters

NEW_RELEASE_KEYS = ("new_kernel", "new_runtime_s", "new_wb_rate_min", "new_wb_rate_max",
                    "new_wb_rate_model", "new_wb_rate_error_max")
LOOP_KEYS = ("loop_fast_write", "loop_slow_write", "loop_model_slow", "loop_slow_error",
             "loop_slow_error_signed", "loop_cap", "loop_cap_iops", "loop_cap_iops_error",
             "loop_cap_iops_error_signed", "loop_cap_p50",
             "loop_cap_mean", "loop_cap_p99", "loop_delay_write", "loop_delay_ms",
             "loop_resync_rate", "loop_cap_allows", "loop_resync_request", "loop_runtime_s")


def release_name(run: RecordedRun) -> str:
    """'Debian 12 (bookworm), kernel 6.1.0-50-amd64' from what the run's host reported."""
    host = run.meta["host"]
    release = host.get("os_release") or {"bookworm": "Debian GNU/Linux 12 (bookworm)",
                                          "trixie": "Debian GNU/Linux 13 (trixie)"}.get(
        host.get("vm", {}).get("release", "bookworm"), "Debian")
    short = release.replace("GNU/Linux ", "")
    return f"{short}, kernel {kernel(run)}"


def kernel(run: RecordedRun) -> str:
    """The kernel the run's host ran ('6.1.0-50-amd64')."""
    return str(run.meta["tool_versions"].get("kernel", run.meta["host"].get("kernel")))


def sustained_rates(run: RecordedRun) -> tuple[list[float], float | None]:
    """The flat-out writer's rate in each cell where writes went behind, and the model's
    (the slow leg's pace: the backlog fills and drains in cycles)."""
    table = tables.write_behind_table(run.results, run.meta)
    behind = table[table["max_backlog"] > 0] if len(table) else table
    if behind.empty or not behind["fast_iops"].iloc[0] or not behind["slow_iops"].iloc[0]:
        return [], None
    model = backlog_sustained_iops(WRITE_BEHIND, float(behind["fast_iops"].iloc[0]),
                                   float(behind["slow_iops"].iloc[0]))
    return [float(v) for v in behind["write_iops"]], model


def release_figures(shipped: RecordedRun, newer: RecordedRun | None) -> dict[str, str]:
    """The shipped run's kernel (old_kernel), and the same lab on Debian 13's (new_): its
    kernel, its workloads' runtime, and the flat-out writer's rates where writes went behind,
    against the model's. NOT_MEASURED for each new_ figure without that run."""
    if newer is None:
        return {"old_kernel": kernel(shipped), **dict.fromkeys(NEW_RELEASE_KEYS, NOT_MEASURED)}
    rates, model = sustained_rates(newer)
    errors = [abs(model - rate) / rate for rate in rates] if model else []
    return {"old_kernel": kernel(shipped), "new_kernel": kernel(newer),
            "new_runtime_s": run_figures(newer)["runtime_s"],
            "new_wb_rate_min": f"{min(rates):,.0f}" if rates else NOT_MEASURED,
            "new_wb_rate_max": f"{max(rates):,.0f}" if rates else NOT_MEASURED,
            "new_wb_rate_model": f"{model:,.0f}" if model else NOT_MEASURED,
            "new_wb_rate_error_max": nt.percent(max(errors)) if errors else NOT_MEASURED}


def loop_figures(run: RecordedRun | None) -> dict[str, str]:
    """The loop-device legs: the legs alone, the cap and the delay apart, and the resync
    that the cgroup limit does not reach (prefixed loop_)."""
    if run is None:
        return dict.fromkeys(LOOP_KEYS, NOT_MEASURED)
    f = run_figures(run)
    results, meta = run.results, run.meta
    settings = tables.run_settings(meta)
    cap, delay = settings["cap_iops"], settings["delay_ms"]
    model_both = slow_leg_latency_ms(cap, delay) if cap else None
    slow = tables.measured(results, "slow-only", "randwrite-qd1", "clat_p50_us")

    def cap_alone(metric: str) -> float | None:
        return tables.measured(results, "slow-cap-only", "randwrite-qd1", metric)

    request = tables.resync_request_kib(results)
    resynced = not tables.resync_table(results, meta).empty
    return {"loop_fast_write": f["fast_randwrite-qd1_p50"], "loop_slow_write": us(slow),
            "loop_model_slow": f["model_slow_ms"],
            **model_error("loop_slow_error", model_both, slow / 1000 if slow else None),
            "loop_cap": f"{cap:g}" if cap else NOT_MEASURED,
            "loop_cap_iops": (f"{cap_alone('iops'):,.0f}" if cap_alone("iops")
                              else NOT_MEASURED),
            **model_error("loop_cap_iops_error", cap, cap_alone("iops")),
            "loop_cap_p50": us(cap_alone("clat_p50_us")),
            "loop_cap_mean": us(cap_alone("lat_mean_us")),
            "loop_cap_p99": us(cap_alone("clat_p99_us")),
            "loop_delay_write": f["part_delay_write"], "loop_delay_ms": f["delay_ms"],
            "loop_resync_rate": (f"{tables.model_resync_rate(results, meta):.0f} MiB/s"
                                 if resynced else NOT_MEASURED),
            "loop_cap_allows": (f"{cap * request / 1024:.1f} MiB/s" if cap and request
                                else NOT_MEASURED),
            "loop_resync_request": f"{request:.0f} KiB" if request else NOT_MEASURED,
            "loop_runtime_s": f["runtime_s"]}


def loop_cap_default() -> str:
    """The cgroup limit a loop run asks for unless told otherwise (--loop-slow-iops)."""
    return f"{Parameters.__dataclass_fields__['loop_slow_iops'].default:g}"
