"""The write-mostly lab end to end on a lab VM: the chapter's claims, measured.

The ci profile runs twice, at the same time, on the session's shared pair (conftest.lab_vms):
on vm1's two data disks (QEMU caps the slow one) and on loop devices inside vm2 (a cgroup io
limit caps the slow one). Each VM has its own QEMU; the two runs share only this machine's
cores. The ci profile runs every configuration, workload and drill of the full one, only
shorter. The assertions are the relations the chapter states, never numbers:
reads avoid the write-mostly leg, writes wait for the slow leg unless written behind, the cap
caps, each drill's data check passes, and the check itself catches one misplaced block.
Both runs must also feed the lab page: every figure and every chart.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest
from conftest import assert_steps_as_planned, report

from labs import rawfiles
from labs.infra.hosts import LocalHost
from labs.infra.journal import Journal
from labs.records import list_runs, load_run
from labs.tools import mdadm as md
from labs.write_mostly import charts, cut_blocks, tables
from labs.write_mostly import page as lab
from labs.write_mostly.legs import SUPPORT_PROBE
from labs.write_mostly.params import WRITE_BEHIND_CELLS

ROOT = Path(__file__).resolve().parents[1]


def cli(env: dict, *args: str, timeout_s: float = 900) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "labs", *args], cwd=ROOT,
                          env={**os.environ, **env}, capture_output=True, text=True,
                          timeout=timeout_s)


HOSTS = {"disks": "vm1", "loop": "vm2"}


def start_lab(lab_vms, legs: str) -> subprocess.Popen:
    # Output to files, not pipes: a pipe nobody reads while the other run is awaited would
    # fill and stall its lab.
    with (lab_vms.base / f"write-mostly-{legs}.out").open("w") as out, \
            (lab_vms.base / f"write-mostly-{legs}.err").open("w") as err:
        # The lab keeps its own copies of the two files; ours close here.
        return subprocess.Popen([sys.executable, "-m", "labs", "run", "write-mostly",
                                 "--host", HOSTS[legs], "--profile", "ci", "--legs", legs],
                                cwd=ROOT, env={**os.environ, **lab_vms.env}, stdout=out,
                                stderr=err, text=True)


def wait_for_both(processes: dict[str, subprocess.Popen], started: float) -> dict[str, float]:
    """Each lab's wall time once both have ended (or 1500 s have passed)."""
    ended: dict[str, float] = {}
    while len(ended) < len(processes) and time.monotonic() - started < 1500:
        for legs, process in processes.items():
            if legs not in ended and process.poll() is not None:
                ended[legs] = time.monotonic() - started
        time.sleep(1)
    return ended


def finish_lab(lab_vms, request, legs: str, process: subprocess.Popen, wall_s: float | None,
               before: set) -> dict:
    env, base, host = lab_vms.env, lab_vms.base, HOSTS[legs]
    stdout = (base / f"write-mostly-{legs}.out").read_text()
    stderr = (base / f"write-mostly-{legs}.err").read_text()
    assert wall_s is not None, f"write-mostly --legs {legs}: still running after 1500 s"
    assert process.returncode == 0, f"write-mostly --profile ci --legs {legs}: {stderr[-3000:]}"
    (path,) = [p for p in set(list_runs("write-mostly", base / "runs")) - before
               if p.name.endswith(host)]
    run = load_run(path)
    assert_steps_as_planned(stderr, run)
    report(request.config, f"write-mostly --profile ci --legs {legs} on the shared {host}, "
                           f"beside the other run: {wall_s:.0f} s "
                           f"(load {os.getloadavg()[0]:.1f})")
    leftovers = cli(env, "vm", "run", host, "--",
                    "cat /proc/mdstat; dmsetup ls --target delay; losetup -a; "
                    "grep instance-store /proc/mounts || true", timeout_s=120)
    return {"env": env, "stdout": stdout, "stderr": stderr, "leftovers": leftovers,
            "run": run, "wall_s": wall_s, "host": host}


@pytest.fixture(scope="module")
def both_runs(lab_vms, request):
    # Side by side: the two runs take a core each, and the session saves one run's time.
    before = set(list_runs("write-mostly", lab_vms.base / "runs"))
    started = time.monotonic()
    processes = {legs: start_lab(lab_vms, legs) for legs in HOSTS}
    try:
        ended = wait_for_both(processes, started)
    finally:
        for process in processes.values():
            if process.poll() is None:
                process.kill()
                process.wait()
    return {"processes": processes, "ended": ended, "before": before}


@pytest.fixture(scope="module")
def disks(lab_vms, request, both_runs):
    return finish_lab(lab_vms, request, "disks", both_runs["processes"]["disks"],
                      both_runs["ended"].get("disks"), both_runs["before"])


@pytest.fixture(scope="module")
def loop(lab_vms, request, both_runs):
    return finish_lab(lab_vms, request, "loop", both_runs["processes"]["loop"],
                      both_runs["ended"].get("loop"), both_runs["before"])


def test_command_line_echoes_its_parameters_first(disks):
    first = disks["stdout"].splitlines()[0]
    assert first.startswith("python -m labs run write-mostly --host vm1 --profile ci --seed 42 "
                            "--legs disks")
    assert disks["run"].meta["parameters"]["command_line"] == first
    assert "[write-mostly" in disks["stderr"]  # progress lines name the step
    # The control's failed check is announced as expected, not as an error.
    assert "data check one-block-moved: FAILED (expected: this is the control)" in disks["stderr"]


@pytest.mark.lab_host  # its run comes through request.getfixturevalue(legs)
@pytest.mark.parametrize("legs", ["disks", "loop"])
def test_reads_avoid_the_write_mostly_leg(legs, request):
    results = request.getfixturevalue(legs)["run"].results
    for config in ("raid1-wm", "raid1-wm-bitmap", *WRITE_BEHIND_CELLS):
        assert tables.read_share(results, config) < 0.01, config
    # The raw legs show the counters see the right device at all.
    assert tables.read_share(results, "slow-only") > 0.99
    assert tables.read_share(results, "fast-only") < 0.01


@pytest.mark.lab_host  # its run comes through request.getfixturevalue(legs)
@pytest.mark.parametrize("legs", ["disks", "loop"])
def test_the_cap_caps_and_writes_wait_for_the_slow_leg(legs, request):
    recorded = request.getfixturevalue(legs)["run"]
    results, settings = recorded.results, tables.run_settings(recorded.meta)
    cap = settings["cap_iops"]
    assert cap == 200  # the shared VM's QEMU throttle, and the loop legs' default io limit
    # The slow device alone, at depth 16: no more operations per second than the cap.
    capped = tables.measured(results, "slow-only", "randwrite-qd16", "iops")
    fast = tables.measured(results, "fast-only", "randwrite-qd16", "iops")
    assert capped < 1.25 * cap < fast, (capped, cap, fast)
    # The cap alone at depth 1: no more operations per second than the cap either.
    assert tables.measured(results, "slow-cap-only", "randwrite-qd1", "iops") < 1.25 * cap
    # Flat out at depth 1, every write of a mirror without write-behind waits for the slow
    # leg: it is no faster than the capped device alone (0.7: percentiles come from histogram
    # bins, and a busy machine's timer ticks make single short runs vary).
    capped_us = tables.measured(results, "slow-cap-only", "randwrite-qd1", "clat_p50_us")
    for config in ("raid1", "raid1-wm", "raid1-wm-bitmap"):
        assert tables.measured(results, config, "randwrite-qd1", "clat_p50_us") >= \
            0.7 * capped_us, config
    # Where the kernel wrote behind (max_backlog_used > 0), writes left the slow leg's regime,
    # as the page says: the paced writer's median in at least one such cell was nearer the
    # fast leg's own than the write-mostly mirror's without write-behind. (Not the cap alone's
    # median: a cgroup io limit on loop legs lets short bursts through, so that median is
    # small. Not a fixed share of the mirror's either: on a loaded machine the fast leg's own
    # median rises, and one cell's sat on exactly half the mirror's.)
    wm_paced_us = tables.measured(results, "raid1-wm", "randwrite-qd1-paced", "clat_p50_us")
    fast_paced_us = tables.measured(results, "fast-only", "randwrite-qd1-paced", "clat_p50_us")
    between_us = (fast_paced_us + wm_paced_us) / 2
    wb = tables.write_behind_table(results, recorded.meta)
    assert set(wb["config"]) == set(WRITE_BEHIND_CELLS)
    behind = wb[wb["max_backlog"] > 0]
    assert len(behind) and (behind["paced_p50_us"] < between_us).any(), (fast_paced_us,
                                                                           wm_paced_us, wb)
    # How write-mostly was set does not change whether writes go behind; the slot may.
    for slot in (0, 1):
        pair = wb[wb["slot"] == slot].set_index("marked")["max_backlog"] > 0
        assert pair["create"] == pair["sysfs"], wb


@pytest.mark.lab_host  # its run comes through request.getfixturevalue(legs)
@pytest.mark.parametrize("legs", ["disks", "loop"])
def test_every_drill_keeps_the_data_and_the_check_catches_a_moved_block(legs, request):
    recorded = request.getfixturevalue(legs)["run"]
    results = recorded.results
    checks = results[results.metric == "data_check_ok"]
    control = checks.workload == "data-check-one-block-moved"
    assert len(checks[~control]) >= 5 and (checks[~control].value == 1).all(), checks
    assert (checks[control].value == 0).all()
    assert list(results[results.metric == "corruption_caught"].value) == [1]
    degraded = results[(results.config == "drill-slow-leg-lost") & (results.metric == "degraded")]
    assert list(degraded.value) == [1]
    failed = md.parse_member_states(
        (recorded.raw_dir / "mdstat" / "drill-slow-leg-lost-failed-member-state.txt").read_text())
    assert [name for name, flags in failed.items() if "faulty" in flags] == ["dm-0"]
    # The slot each write-behind cell asked for is the slot sysfs reported.
    for cell in WRITE_BEHIND_CELLS:
        slots = dict(line.split() for line in (recorded.raw_dir / "mdstat" /
                                               f"{cell}-member-slot.txt").read_text().splitlines())
        assert slots["dm-0"] == cell.split("-")[1].removeprefix("slot"), (cell, slots)


def test_a_power_cut_takes_acknowledged_writes_only_with_write_behind(disks, loop):
    """The instance dies (QEMU killed, the fast leg in the VM's memory gone with it); the
    array comes back from the slow leg alone. Without write-behind every acknowledged block
    is there; with it, no more are missing than md may hold behind."""
    results = disks["run"].results
    cuts = results[results["config"] == "drill-power-cut"]
    by = cuts.pivot_table(index=["setting", "cut"], columns="metric", values="value")
    settings = disks["run"].meta["parameters"]["profile_settings"]["power_cut_settings"]
    assert sorted(by.index.get_level_values("setting").unique()) == sorted(settings)
    assert (by["acknowledged"] > 0).all() and (by["boot_s"] > 0).all()
    assert (by["acknowledged_lost"] <= by["acknowledged"]).all()
    safe, unsafe = by.loc["wm-dsync"], by.loc["wb-nosync"]
    assert (safe["acknowledged_lost"] == 0).all() and (safe["write_behind_limit"] == 0).all()
    # Every O_DSYNC write sent the slow disk a cache flush before it returned.
    assert (safe["slow_flushes_before_cut"] >= safe["acknowledged"] * 0.9).all()
    # Unsynced writes did go behind (slot 0, marked at creation), and no more were lost
    # than md may hold behind.
    assert (unsafe["max_backlog_before_cut"] > 0).all()
    assert (unsafe["acknowledged_lost"] <= unsafe["write_behind_limit"]).all()
    assert (unsafe["write_behind_limit"] == 256).all()
    checks = list(disks["run"].raw_dir.glob("power-cut/*-check.json"))
    assert len(checks) == len(by)
    for path in checks:
        cut_blocks.parse_check(path.read_text())
    # Loop legs have no power to cut: the drill is left out, and says so.
    assert not (loop["run"].results["config"] == "drill-power-cut").any()
    assert "no power-cut drill" in loop["stderr"]


def test_reads_move_to_the_new_fast_leg_once_in_sync(disks):
    legs = tables.leg_table(disks["run"].results, ["drill-fast-leg-lost"])
    reads = legs[legs.workload == "randread-qd16"].pivot_table(index="phase", columns="leg",
                                                               values="reads")
    assert reads.loc["slow-leg-only", "fast"] == 0 and reads.loc["slow-leg-only", "slow"] > 0
    after = reads.loc["after-resync"]
    assert after["slow"] < 0.01 * (after["slow"] + after["fast"])


@pytest.mark.lab_host  # its run comes through request.getfixturevalue(legs)
@pytest.mark.parametrize("legs", ["disks", "loop"])
def test_md_times_every_resync_of_a_new_fast_leg_in_its_kernel_log(legs, request):
    # The VM's own kernel wrote the lines that begin and end each copy; the lab's polls over
    # SSH see the end only later, so md's time is never longer than theirs (a moment's
    # slack: md may start copying before the add command has returned).
    recorded = request.getfixturevalue(legs)["run"]
    results = recorded.results
    polled = results[(results.workload == "resync") & (results.metric == "resync_s")]
    kernel = results[(results.workload == "resync") & (results.metric == "resync_kernel_s")]
    assert len(polled) >= 2 and len(kernel) == len(polled)
    both = polled.merge(kernel, on=["config", "size_mib"], suffixes=("_polls", "_kernel"))
    assert (both.value_kernel > 0).all() and (both.value_kernel < both.value_polls + 0.5).all()
    table = tables.resync_table(results)
    assert set(table.timed_by) == {"kernel"}
    for drill in ("drill-fast-leg-lost", "drill-resync-size-32mib"):
        log = (recorded.raw_dir / "mdstat" / f"{drill}-kernel-log.txt").read_text()
        array = re.search(r"\bmd\d+\b", log).group()  # the lines kept name only the lab's array
        assert md.parse_sync_log(log, array)[-1].outcome == "done", log


@pytest.mark.lab_host  # its run comes through request.getfixturevalue(legs)
@pytest.mark.parametrize("legs", ["disks", "loop"])
def test_the_run_feeds_every_figure_and_chart_of_the_page(legs, request):
    recorded = request.getfixturevalue(legs)["run"]
    results, meta = recorded.results, recorded.meta
    figures = lab.figures(recorded)
    assert figures and all(isinstance(v, str) for v in figures.values())
    assert figures["backlog_slot0_create"] != "not measured in this run"
    lab.release_figures(recorded, recorded)
    lab.loop_figures(recorded)
    for chart in (charts.slow_leg_chart(results, meta), charts.latency_chart(results, meta),
                  charts.write_behind_chart(results, meta),
                  charts.resync_model_chart(results, meta), charts.legs_chart(results),
                  charts.drills_chart(results, meta), charts.resync_chart(results)):
        assert len(json.dumps(chart.to_dict())) < 600_000
    for table in (lab.provenance(recorded), lab.legs_display(recorded),
                  lab.write_behind_display({"this run": recorded})):
        assert not table.empty and not table.isna().any().any()


def test_raw_outputs_parse_with_the_project_parsers(disks):
    recorded = disks["run"]
    fio_files = sorted(recorded.raw_dir.glob("fio/**/*.json"))
    assert len(fio_files) >= 20
    for path in fio_files:
        rawfiles.parse_fio_file(path)
    for path in sorted(recorded.raw_dir.glob("mdstat/*.txt")):
        if path.name.endswith("-member-state.txt"):
            assert md.parse_member_states(path.read_text())
        elif path.name.endswith("-kernel-log.txt"):
            array = re.search(r"\bmd\d+\b", path.read_text()).group()
            assert md.parse_sync_log(path.read_text(), array)[-1].outcome == "done", path
        elif "poll" not in path.name and not path.name.endswith("-member-slot.txt"):
            md.parse_mdstat(path.read_text(), str(path))
    assert list(recorded.raw_dir.glob("fio/wb-*/randwrite.clat.log"))


@pytest.mark.lab_host  # its run comes through request.getfixturevalue(legs)
@pytest.mark.parametrize("legs", ["disks", "loop"])
def test_nothing_is_left_behind_in_the_vm(legs, request):
    outcome = request.getfixturevalue(legs)
    leftovers = outcome["leftovers"]
    assert leftovers.returncode == 0, leftovers.stderr
    mdstat = md.parse_mdstat(leftovers.stdout.split("unused devices")[0] + "unused devices:")
    assert mdstat.arrays == {}
    assert "wm-slow" not in leftovers.stdout and "wm-fast" not in leftovers.stdout
    assert "instance-store" not in leftovers.stdout  # the power cut's tmpfs and its loop
    host = outcome["host"]
    journal = Path(outcome["env"]["LABS_STATE_DIR"]) / f"journal-{host}.jsonl"
    assert Journal(host, journal).live_entries() == []


def test_a_host_without_md_is_refused_in_one_line(tmp_path):
    """This machine's own kernel: refused before anything is made if it lacks md or dm."""
    env = {"LABS_STATE_DIR": str(tmp_path / "state"), "LABS_INVENTORY": str(tmp_path / "h.toml"),
           "LABS_RUNS_DIR": str(tmp_path / "runs"), "LABS_WORK_DIR": str(tmp_path / "work")}
    (tmp_path / "h.toml").write_text("")
    found = set(LocalHost().sudo(SUPPORT_PROBE, timeout_s=120, check=False).stdout.split())
    result = cli(env, "run", "write-mostly", "--host", "local", "--profile", "ci",
                 timeout_s=300) if "md" not in found or "dm-delay" not in found else None
    if result is None:  # a host with md and dm-delay: the loop legs are its default
        assert {"md", "dm", "dm-delay"} <= found
        return
    assert result.returncode == 2, result.stderr
    assert result.stderr.count("\n") == 1 and "host local: its kernel has no" in result.stderr
    assert not (tmp_path / "runs").exists() or not any((tmp_path / "runs").rglob("run.json"))
    assert not (tmp_path / "work").exists() or not any((tmp_path / "work").iterdir())


@pytest.mark.parametrize("args, message", [
    (["--host", "no-such-host"], "unknown host"),
    (["--slow-delay-ms", "-1"], "--slow-delay-ms"),
    (["--seed", "x"], "invalid int"),
    (["--legs", "tape"], "--legs"),
    (["--legs", "loop", "--fast-device", "/dev/vdb"], "--legs loop makes its own"),
    (["--loop-slow-iops", "0"], "--loop-slow-iops"),
    (["--part", "everything"], "--part"),
    (["--part", "power-cut", "--legs", "loop"], "--part power-cut cuts a lab VM's power"),
    (["--quick", "--data-mib", "100"], "--data-mib 100: the drills' checked data must fit"),
    (["--power-cut-settings", "wm-dsync,all"], "--power-cut-settings all: use one of"),
    (["--resync-sizes-mib", "64,x"], "--resync-sizes-mib"),
])
def test_bad_input_is_one_line_and_exit_2(tmp_path, args, message):
    env = {"LABS_STATE_DIR": str(tmp_path / "state"), "LABS_INVENTORY": str(tmp_path / "h.toml"),
           "LABS_RUNS_DIR": str(tmp_path / "runs")}
    (tmp_path / "h.toml").write_text("")  # an empty inventory
    result = cli(env, "run", "write-mostly", *args, timeout_s=120)
    assert result.returncode == 2, result.stderr
    assert message in result.stderr and result.stderr.count("\n") == 1
    assert not (tmp_path / "runs").exists() or not any((tmp_path / "runs").rglob("run.json"))
