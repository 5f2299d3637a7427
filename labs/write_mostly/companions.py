"""What the lab page says about its companion runs (Debian 13's kernel; loop-device legs), as
Markdown paragraphs computed from the runs.

A companion that is not recorded gets one sentence saying so and the command that records
it, never a placeholder inside a sentence. Pure page code: reads recorded runs, no host.
"""

from __future__ import annotations

from labs.records import RecordedRun
from labs.write_mostly import tables
from labs.write_mostly.figures import error_text, run_figures, us
from labs.write_mostly.model import backlog_sustained_iops, slow_leg_latency_ms
from labs.write_mostly.params import WRITE_BEHIND, Parameters

TRIXIE_COMMAND = ("`python -m labs vm up --release trixie`, then "
                  "`python -m labs run write-mostly --host vm1`")
LOOP_COMMAND = "`python -m labs run write-mostly --host vm1 --legs loop`"
LOCAL_COMMAND = "`sudo .venv/bin/python -m labs run write-mostly --host local`"


def release_name(run: RecordedRun) -> str:
    """'Debian 12 (kernel 6.1.0-50-amd64)' from what the run's host reported."""
    host = run.meta["host"]
    release = host.get("os_release") or {"bookworm": "Debian GNU/Linux 12 (bookworm)",
                                          "trixie": "Debian GNU/Linux 13 (trixie)"}.get(
        host.get("vm", {}).get("release", "bookworm"), "Debian")
    short = release.replace("GNU/Linux ", "")
    return f"{short}, kernel {run.meta['tool_versions'].get('kernel', host.get('kernel'))}"


def profile_note(run: RecordedRun, shipped: RecordedRun) -> str:
    """'' for a run of the shipped run's profile; else what its shorter profile means."""
    parameters = run.meta["parameters"]
    profile, ours = parameters.get("profile"), shipped.meta["parameters"].get("profile")
    if profile == ours:
        return ""
    runtime = parameters.get("profile_settings", {}).get("runtime_s")
    longer = shipped.meta["parameters"].get("profile_settings", {}).get("runtime_s")
    return (f"it used the {profile} profile, whose workloads ran {runtime:g} s each instead of "
            f"{longer:g} s, on smaller arrays, so its medians rest on fewer operations than "
            "this page's run")


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


def kernels_text(run: RecordedRun, newer: RecordedRun | None) -> str:
    """Section 4's verdicts: write-behind on this run's kernel and, if recorded, Debian 13's."""
    old = run_figures(run)
    lines = [f"On {release_name(run)}, writes went behind {old['wb_verdict']}."]
    if newer is None:
        lines.append(f"How write-mostly was set {old['how_set_verdict']}.")
        lines.append("The same lab on Debian 13's kernel is not recorded for this page; "
                     f"{TRIXIE_COMMAND} records it.")
        return " ".join(lines)
    new = run_figures(newer)
    lines.append(f"On {release_name(newer)}, writes went behind {new['wb_verdict']}.")
    if old["how_set_verdict"] == new["how_set_verdict"] == "made no difference":
        lines.append("How write-mostly was set made no difference on either kernel: sysfs and "
                     "`mdadm --write-mostly` set the same flag.")
    else:
        lines.append(f"How write-mostly was set {old['how_set_verdict']} on the first and "
                     f"{new['how_set_verdict']} on the second.")
    rates, model = sustained_rates(newer)
    if rates and model:
        errors = [error_text(model, rate) for rate in rates]
        lines.append(
            "On Debian 13 the flat-out writer averaged "
            + _and([f"{rate:,.0f}" for rate in rates])
            + " writes per second in the cells where writes went behind (in the table's order); "
            f"the model of a backlog that fills and drains in cycles gives {model:,.0f}, the "
            f"slow leg's pace, which is {_and(errors)} those, so write-behind did not raise "
            "the sustained rate there either.")
    note = profile_note(newer, run)
    if note:
        lines.append(f"The Debian 13 run is shorter: {note}. The backlog counts need only a few "
                     "writes to show whether any went behind.")
    return " ".join(lines)


def loop_text(run: RecordedRun, loop: RecordedRun | None) -> str:
    """Section 7's measurements on loop legs, if a loop run is recorded."""
    if loop is None:
        return (f"No run with loop legs is recorded for this page; {LOOP_COMMAND} on a "
                f"Debian 12 lab VM records one, and {LOCAL_COMMAND} does the same on your own "
                "machine.")
    f = run_figures(loop)
    results, meta = loop.results, loop.meta
    settings = tables.run_settings(meta)
    cap, delay = settings["cap_iops"], settings["delay_ms"]
    model_both = slow_leg_latency_ms(cap, delay) if cap else None
    slow = tables.measured(results, "slow-only", "randwrite-qd1", "clat_p50_us")
    cap_p50 = tables.measured(results, "slow-cap-only", "randwrite-qd1", "clat_p50_us")
    cap_mean = tables.measured(results, "slow-cap-only", "randwrite-qd1", "lat_mean_us")
    cap_iops = tables.measured(results, "slow-cap-only", "randwrite-qd1", "iops")
    lines = [f"The loop-device run shown here ran inside a lab VM with {release_name(loop)}."]
    note = profile_note(loop, run)
    if note:
        lines.append(f"It is shorter than this page's main run: {note}.")
    if slow is not None and model_both:
        lines.append(
            f"At depth 1, writes took {f['fast_randwrite-qd1_p50']} on the fast loop device and "
            f"{us(slow)} on the slow one at the median; the model of cap plus delay, "
            f"{model_both:g} ms, is {error_text(model_both, slow / 1000)} that.")
    cap_p99 = tables.measured(results, "slow-cap-only", "randwrite-qd1", "clat_p99_us")
    if cap and cap_iops and cap_p50 and cap_mean:
        lines.append(
            f"The cap alone let {cap_iops:,.0f} writes per second through where {cap:g} were "
            f"asked for (the model is {error_text(cap, cap_iops)} that); half its writes took "
            f"under {us(cap_p50)} and its mean was {us(cap_mean)}"
            + (f", because a few waited much longer (p99: {us(cap_p99)})."
               if cap_p99 and cap_p50 < 0.6 * cap_mean else "."))
    if f["part_delay_write"] and delay:
        lines.append(f"The delay alone took {f['part_delay_write']} per write where {delay:g} ms "
                     "was asked for, as on the lab VM's disks.")
    request = tables.resync_request_kib(results)
    resync = tables.resync_table(results, meta)
    series = resync[resync["config"] == "drill-resync-size"]
    if cap and request and len(series):
        allowed = cap * request / 1024
        rate = tables.model_resync_rate(results, meta)
        lines.append(
            "The limit follows the I/O of the processes in the scope, through md and "
            "device-mapper down to the loop device, but not md's own resync, which a kernel "
            f"thread outside the scope does: that run's largest resync ran at {rate:.0f} MiB/s, "
            f"{'above' if rate > allowed else 'not above'} the {allowed:.1f} MiB/s that the cap "
            f"would allow for requests of {request:.0f} KiB.")
    same = f["wb_verdict"] == run_figures(run)["wb_verdict"] and (
        loop.meta["tool_versions"].get("kernel") == run.meta["tool_versions"].get("kernel"))
    lines.append(f"Writes went behind {f['wb_verdict']}"
                 + (", the same cells as on the lab VM's disks with the same kernel." if same
                    else "."))
    return " ".join(lines)


def _and(items: list[str]) -> str:
    return items[0] if len(items) == 1 else ", ".join(items[:-1]) + " and " + items[-1]


def loop_cap_default() -> str:
    """The cgroup limit a loop run asks for unless told otherwise (--loop-slow-iops)."""
    return f"{Parameters.__dataclass_fields__['loop_slow_iops'].default:g}"
