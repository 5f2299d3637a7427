"""The write-mostly lab end to end on a lab VM: the chapter's claims, measured.

The quick profile runs once on the session's shared vm1 (conftest.lab_vms); every test reads the
run it recorded. The assertions are the relations the chapter states, never numbers:
reads avoid the write-mostly leg, writes wait for the slow leg unless written behind, each
drill's data check passes, and the check itself catches one misplaced block.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from conftest import report

from labs import rawfiles
from labs.infra.journal import Journal
from labs.records import list_runs, load_run
from labs.tools import mdadm as md
from labs.write_mostly.tables import latency_table, leg_table, summary_table

ROOT = Path(__file__).resolve().parents[1]


def cli(env: dict, *args: str, timeout_s: float = 900) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "labs", *args], cwd=ROOT,
                          env={**os.environ, **env}, capture_output=True, text=True,
                          timeout=timeout_s)


@pytest.fixture(scope="module")
def quick_run(lab_vms, request):
    """The quick profile on the session's shared vm1 (conftest.lab_vms)."""
    env, base = lab_vms.env, lab_vms.base
    started = time.monotonic()
    ran = cli(env, "run", "write-mostly", "--host", "vm1", "--quick", timeout_s=1200)
    wall_s = time.monotonic() - started
    assert ran.returncode == 0, f"write-mostly --quick failed: {ran.stderr[-3000:]}"
    report(request.config, f"write-mostly --quick on the shared vm1: {wall_s:.0f} s")
    leftovers = cli(env, "vm", "run", "vm1", "--",
                    "cat /proc/mdstat; dmsetup ls --target delay", timeout_s=120)
    return {"env": env, "base": base, "stdout": ran.stdout, "stderr": ran.stderr,
            "leftovers": leftovers, "runs": base / "runs", "wall_s": wall_s}


@pytest.fixture(scope="module")
def run(quick_run):
    runs = list_runs("write-mostly", quick_run["runs"])
    assert len(runs) == 1, f"expected one recorded run, found {runs}"
    return load_run(runs[0])


def test_command_line_echoes_its_parameters_first(quick_run, run):
    first = quick_run["stdout"].splitlines()[0]
    assert first.startswith("python -m labs run write-mostly --host vm1 --profile quick "
                            "--seed 42")
    assert run.meta["parameters"]["command_line"] == first
    assert "[write-mostly" in quick_run["stderr"]  # progress lines name the step


def test_reads_avoid_the_write_mostly_leg(run):
    summary = summary_table(run.results).set_index("config")
    for config in ("raid1-wm", "raid1-wm-wb"):
        assert summary.loc[config, "slow_read_share"] < 0.01, summary.loc[config]
    # The raw legs show the counters see the right disk at all.
    assert summary.loc["slow-only", "slow_read_share"] > 0.99
    assert summary.loc["fast-only", "slow_read_share"] < 0.01


def test_writes_wait_for_the_slow_leg_unless_written_behind(run):
    latency = latency_table(run.results)

    def p50(config, workload):
        row = latency[(latency.config == config) & (latency.workload == workload)
                      & (latency.percentile == "p50")]
        assert len(row) == 1, (config, workload)
        return float(row.latency_us.iloc[0])

    # Flat out at depth 1, every write waits for the slow leg: the mirror is at least as slow.
    # (0.9: fio's percentiles come from histogram bins, and the guest's timer ticks make the
    # slow leg's delay vary by a few percent from one run to the next.)
    slow = p50("slow-only", "randwrite-qd1")
    for config in ("raid1", "raid1-wm"):
        assert p50(config, "randwrite-qd1") >= 0.9 * slow, config
    assert p50("raid1-wm-wb", "randwrite-qd1") < 0.5 * slow
    # Paced below the slow leg's capacity: without write-behind writes stay in the slow leg's
    # regime (a few dozen samples, quantised by timer ticks: compare against half of it);
    # with write-behind they leave it.
    paced_slow = p50("slow-only", "randwrite-qd1-paced")
    assert p50("raid1-wm", "randwrite-qd1-paced") > 0.5 * paced_slow
    assert p50("raid1-wm-wb", "randwrite-qd1-paced") < 0.5 * paced_slow
    backlog = run.results[run.results.metric == "write_behind_max_backlog"].set_index(
        "config")["value"]
    assert backlog["raid1-wm-wb"] > 0


def test_every_drill_keeps_the_data_and_the_check_catches_a_moved_block(run):
    results = run.results
    checks = results[results.metric == "data_check_ok"]
    control = checks.workload == "data-check-one-block-moved"
    assert len(checks[~control]) >= 5 and (checks[~control].value == 1).all(), checks
    assert (checks[control].value == 0).all()
    caught = results[results.metric == "corruption_caught"]
    assert list(caught.value) == [1]
    degraded = results[(results.config == "drill-slow-leg-lost") & (results.metric == "degraded")]
    assert list(degraded.value) == [1]
    failed = md.parse_member_states(
        (run.raw_dir / "mdstat" / "drill-slow-leg-lost-failed-member-state.txt").read_text())
    assert [name for name, flags in failed.items() if "faulty" in flags] == ["dm-0"]
    failed_mdstat = md.parse_mdstat(
        (run.raw_dir / "mdstat" / "drill-slow-leg-lost-failed.txt").read_text())
    (array,) = failed_mdstat.arrays.values()
    assert array.member("dm-0").faulty and array.degraded
    slot0 = md.parse_member_states(
        (run.raw_dir / "mdstat" / "raid1-wm-wb-member-state.txt").read_text())
    assert "write_mostly" in slot0["dm-0"] and "write_mostly" not in slot0["vdb"]


def test_reads_move_to_the_new_fast_leg_once_in_sync(run):
    legs = leg_table(run.results, ["drill-fast-leg-lost"])
    reads = legs[legs.workload == "randread-qd16"].pivot_table(index="phase", columns="leg",
                                                               values="reads")
    assert reads.loc["slow-leg-only", "fast"] == 0 and reads.loc["slow-leg-only", "slow"] > 0
    after = reads.loc["after-resync"]
    assert after["slow"] < 0.01 * (after["slow"] + after["fast"])
    resync = run.results[(run.results.metric == "resync_s")]
    assert len(resync) >= 2 and (resync.value > 0).all()


def test_raw_outputs_parse_with_the_project_parsers(run):
    fio_files = sorted(run.raw_dir.glob("fio/**/*.json"))
    assert len(fio_files) >= 20
    for path in fio_files:
        rawfiles.parse_fio_file(path)
    snapshots = sorted(run.raw_dir.glob("mdstat/*.txt"))
    assert snapshots
    for path in snapshots:
        if path.name.endswith("-member-state.txt"):
            assert md.parse_member_states(path.read_text())
        elif "poll" not in path.name:
            md.parse_mdstat(path.read_text(), str(path))
    parsed = json.loads(subprocess.run(
        [sys.executable, "-m", "labs", "parse", "fio", str(fio_files[0]), "--json"], cwd=ROOT,
        capture_output=True, text=True, check=True).stdout)
    assert parsed and {"job", "op", "clat_p99_us"} <= set(parsed[0])


def test_nothing_is_left_behind_in_the_vm(quick_run):
    leftovers = quick_run["leftovers"]
    assert leftovers.returncode == 0, leftovers.stderr
    mdstat = md.parse_mdstat(leftovers.stdout.split("unused devices")[0] + "unused devices:")
    assert mdstat.arrays == {}
    assert "wm-slow" not in leftovers.stdout
    journal = Path(quick_run["env"]["LABS_STATE_DIR"]) / "journal-vm1.jsonl"
    assert Journal("vm1", journal).live_entries() == []


@pytest.mark.parametrize("args, message", [
    (["--host", "no-such-host"], "unknown host"),
    (["--slow-delay-ms", "-1"], "--slow-delay-ms"),
    (["--seed", "x"], "invalid int"),
])
def test_bad_input_is_one_line_and_exit_2(tmp_path, args, message):
    env = {"LABS_STATE_DIR": str(tmp_path / "state"), "LABS_INVENTORY": str(tmp_path / "h.toml"),
           "LABS_RUNS_DIR": str(tmp_path / "runs")}
    (tmp_path / "h.toml").write_text("")  # an empty inventory
    result = cli(env, "run", "write-mostly", *args, timeout_s=120)
    assert result.returncode == 2, result.stderr
    assert message in result.stderr and result.stderr.count("\n") == 1
    assert not (tmp_path / "runs").exists() or not any((tmp_path / "runs").rglob("run.json"))
