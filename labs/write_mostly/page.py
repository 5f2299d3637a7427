"""What the write-mostly lab page shows: figures, tables, provenance and the live panel.

Pure page code: it reads recorded runs (pandas) and never touches a host.

The page shows the shipped run (data/runs/write-mostly/SHIPPED, Debian 12's kernel on the
lab VM's disks) and beside it three companion runs named the same way: SHIPPED-trixie (the same
lab on Debian 13's kernel), SHIPPED-loop (loop-device legs) and SHIPPED-power-cut (the
power-cut drill alone, `--part power-cut`).
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from labs.book import number_text as nt
from labs.book import theme  # noqa: F401  (the book's chart theme and offline renderer)
from labs.book.panel import LabPanel
from labs.book.provenance import load_at_start_and_end
from labs.records import RUN_ID_PATTERN, RecordedRun, load_run, runs_root
from labs.write_mostly import charts, tables
from labs.write_mostly.companions import (
    loop_cap_default,
    loop_figures,
    release_figures,
    release_name,
)
from labs.write_mostly.figures import NOT_MEASURED, ms, run_figures, us
from labs.write_mostly.params import WRITE_BEHIND_CELLS, Parameters
from labs.write_mostly.power_cut_page import (
    page_cut_figures,
    power_cut_figures,
    power_cut_headline,
)

__all__ = ["companion_run", "figures", "legs_display", "panel", "provenance",
           "release_figures", "resync_display", "write_behind_display"]

COMPANIONS = {"trixie": "SHIPPED-trixie", "loop": "SHIPPED-loop",
              "power-cut": "SHIPPED-power-cut"}


def companion_run(role: str, root: Path | None = None) -> RecordedRun | None:
    """The run the page shows beside the shipped one ("trixie", "loop" or "power-cut"), if
    it ships one."""
    marker = Path(root or runs_root()) / "write-mostly" / COMPANIONS[role]
    if not marker.is_file():
        return None
    run_id = marker.read_text().strip()
    if not RUN_ID_PATTERN.match(run_id):
        return None
    return load_run(marker.parent / run_id)


def figures(run: RecordedRun) -> dict[str, str]:
    """Every number the lab page quotes: this run's, and the companion runs' (Debian 13's
    kernel, prefixed new_ beside this run's old_; loop legs, prefixed loop_; the power-cut
    drill, prefixed cut_)."""
    if Parameters.of(run).part == "power-cut":  # the power-cut drill alone
        return power_cut_figures(run)
    return {**run_figures(run),
            **release_figures(run, companion_run("trixie")),
            **loop_figures(companion_run("loop")),
            **page_cut_figures(companion_run("power-cut")),
            "loop_cap_default": loop_cap_default()}


def provenance(run: RecordedRun) -> pd.DataFrame:
    """Where a recorded run came from, as a two-column table (the command, not every step)."""
    meta = run.meta
    host = meta["host"]
    vm = host.get("vm", {})
    params = Parameters.of(run)
    settings = tables.run_settings(meta)
    cap = (f"capped at {settings['cap_iops']:g} I/O per second by {settings['cap_by']}"
           if settings["cap_iops"] else "no cap the lab knows of")
    if settings["legs"] == "loop":
        legs = (f"loop devices over files in the lab's work dir: fast {params.fast_device}; "
                f"slow {params.slow_device}, {cap}, plus dm-delay {params.slow_delay_ms} ms")
    else:
        legs = (f"fast {params.fast_device}; slow {params.slow_device} {cap}, plus dm-delay "
                f"{params.slow_delay_ms} ms")
    # The recorder's load of the machine running QEMU (older runs kept it in their host facts).
    load = load_at_start_and_end(meta)
    rows = [
        ("run", f"{meta['lab']}/{meta['run_id']} ({params.profile} profile)"),
        # Kept in the record beside the parameters, not one of them.
        ("command", run.command_line() or "-"),
        ("seed", str(meta["seed"])),
        ("host", f"{host.get('name')}, {release_name(run)}, {host.get('cpu_count')} CPUs"
                 + (f", lab VM under {vm.get('accel', '?').upper()}" if vm else "")),
        ("legs", legs),
        ("tools", ", ".join(f"{k} {v}" for k, v in sorted(meta["tool_versions"].items()))),
        ("project commit", meta["git_commit"][:12]),
        ("started / finished (UTC)", f"{meta['started_at']} / {meta['finished_at']}"),
    ]
    if load:
        rows.append(("load of the machine running QEMU (1-min average, 2 cores)",
                     f"{load[0]:.1f} before, {load[1]:.1f} after"))
    return pd.DataFrame(rows, columns=["", "recorded run"])


def panel() -> LabPanel:
    """The live panel of the lab page: run the lab on a lab host, record it, redraw."""
    return LabPanel(Parameters, fields=("host", "profile", "legs", "seed", "slow_delay_ms"),
                    chart=lambda recorded: charts.latency_chart(recorded.results,
                                                                recorded.meta),
                    title="write-mostly RAID1 on a lab VM or loop devices",
                    # root: md and loop devices, and the lab VM runs from root's image cache
                    defaults={"profile": "quick"}, needs_root=True)


def legs_display(run: RecordedRun) -> pd.DataFrame:
    """The legs alone and the slow leg's parts at depth 1, as the page's table shows them."""
    rows = []
    labels = {"fast-only": "fast leg", "slow-only": "slow leg (cap and delay)",
              "slow-cap-only": "slow leg's cap alone",
              "slow-delay-only": "the delay alone, on the fast device"}
    for config, label in labels.items():
        values = {f"{op} p50": us(tables.measured(run.results, config, f"rand{op}-qd1",
                                                  "clat_p50_us")) for op in ("read", "write")}
        if all(v == NOT_MEASURED for v in values.values()):
            continue
        rows.append({"what": label, **values,
                     "reads per second at depth 16": _count(tables.measured(
                         run.results, config, "randread-qd16", "iops"))})
    return pd.DataFrame(rows)


def _count(value: float | None) -> str:
    return f"{value:,.0f}" if value is not None else "—"


def write_behind_display(runs: dict[str, RecordedRun]) -> pd.DataFrame:
    """The write-behind cells by slot and by how write-mostly was set, one column pair per
    run (e.g. per Debian release): the largest backlog and the flat-out writer's median."""
    rows = []
    for name in WRITE_BEHIND_CELLS:
        config = tables.CONFIGS[name]
        row = {"slow leg's slot": str(config.slow_slot),
               "write-mostly set": "at creation" if config.marked == "create" else "via sysfs"}
        for label, run in runs.items():
            table = tables.write_behind_table(run.results, run.meta)
            cell = table[table["config"] == name] if len(table) else table
            row[f"{label}: most writes behind"] = (f"{cell['max_backlog'].iloc[0]:.0f}"
                                                   if len(cell) else "—")
            row[f"{label}: write median"] = (us(cell["write_p50_us"].iloc[0]) if len(cell)
                                             else "—")
        rows.append(row)
    return pd.DataFrame(rows)


def resync_display(run: RecordedRun) -> pd.DataFrame:
    """Every timed resync of a new fast leg beside the model's time (size / the largest
    array's rate) and the model's error, as the page's table shows them."""
    rows = [{"resync": ("size series" if row.config == "drill-resync-size"
                        else "instance replaced (section 5)"),
             "array size": f"{row.size_mib:.0f} MiB", "took": f"{row.resync_s:.1f} s",
             "size / rate": f"{row.model_s:.1f} s",
             "model's error": nt.percent((row.model_s - row.resync_s) / row.resync_s, signed=True)}
            for row in tables.resync_table(run.results, run.meta).itertuples()]
    return pd.DataFrame(rows)


HEADLINE_WORKLOADS = {"randread-qd1": "read latency p50, 4 KiB at depth 1",
                      "randwrite-qd1": "write latency p50, 4 KiB at depth 1"}


def headline(run: RecordedRun) -> pd.DataFrame:
    """The run's headline measures for labs.book.compare: median latency at depth 1 per
    configuration, with the chapter's model built from the same run's legs: a write-mostly
    mirror reads like the fast leg alone; a mirror writes like its slower leg, unless it
    writes behind, when it writes like the fast leg."""
    from labs.book.compare import headline_table
    from labs.write_mostly.params import CONFIGURATIONS

    if Parameters.of(run).part == "power-cut":  # the power-cut drill alone
        return power_cut_headline(run)
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



__all__ += ["loop_figures", "ms", "release_name", "run_figures"]


def explain_figures() -> dict[str, str]:
    """The explanation page's figures: Hyperconnect's, read closely, and the exercises'
    answers, computed from the model (prefixed hc_ and ex_)."""
    from labs.write_mostly.model import (
        MD_SPEED_LIMIT_MAX_KIB_S,
        backlog_fill_s,
        backlog_stall_s,
        implied_rate_mib_s,
        slow_leg_latency_ms,
        transfer_hours,
    )
    from labs.write_mostly.params import WRITE_BEHIND
    from labs.write_mostly.reference import article_figures, figure, stream_rate

    f = article_figures()
    array_bytes = figure("array_recovery_kib") * 1024
    ceiling = MD_SPEED_LIMIT_MAX_KIB_S / 1024
    # Exercise 1: a burst against a network disk that takes 3,000 writes per second.
    f["ex1_write"], f["ex1_slow"] = "5,000", "3,000"
    fill = backlog_fill_s(WRITE_BEHIND, 5000, 3000)
    f["ex1_fill_ms"] = f"{fill * 1000:.0f} ms"
    f["ex1_writes"] = f"{fill * 5000:,.0f}"
    f["ex1_stall_ms"] = f"{backlog_stall_s(WRITE_BEHIND, 3000) * 1000:.0f} ms"
    # Exercise 2: acknowledged writes that may exist only on the local disk.
    f["ex2_kib_4k"] = f"{WRITE_BEHIND * 4:,} KiB"
    f["ex2_mib_64k"] = f"{WRITE_BEHIND * 64 / 1024:.0f} MiB"
    # Exercise 3: the slow leg at depth 1.
    f["ex3_latency"] = f"{slow_leg_latency_ms(3000, 1.0):.2f} ms"
    f["ex3_rate"] = f"{1000 / slow_leg_latency_ms(3000, 1.0):,.0f}"
    # Where the two waits overlap, the larger one alone: the cap adds nothing to an operation
    # that already takes longer than its spacing.
    f["ex3_overlap_latency"] = f"{max(1000 / 3000, 1.0):.2f} ms"
    f["ex3_overlap_rate"] = f"{1000 / max(1000 / 3000, 1.0):,.0f}"
    # Exercise 4: Hyperconnect's array, resynced and streamed.
    f["ex4_ceiling_h"] = f"{transfer_hours(array_bytes, ceiling):.1f}"
    f["ex4_needed"] = f"{implied_rate_mib_s(array_bytes, 1):,.0f} MiB/s"
    fastest = stream_rate(figure("stream_hours_min"))
    slowest = stream_rate(figure("stream_hours_max"))
    f["ex4_stream_h_min"] = f"{transfer_hours(array_bytes, fastest):.0f}"
    f["ex4_stream_h_max"] = f"{transfer_hours(array_bytes, slowest):.0f}"
    f["wb_depth"] = str(WRITE_BEHIND)
    return f


__all__ += ["explain_figures"]

