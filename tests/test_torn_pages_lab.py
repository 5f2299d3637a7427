"""The torn-pages lab end to end (ci profile: every step, small) on this machine, as root,
with docker.

Asserts what the chapter claims, never measured numbers:
WAL bytes per transaction are higher with full_page_writes on, under every checkpoint
setting; images per transaction jump after a forced checkpoint; the torn page fails its
checksum; recovery with a full-page image restores it; without one, recovery stops
(checksums) or silently shows wrong rows (no checksums). The run then feeds the page's
figures and every chart, as a reader's own run would.
"""

import os
import shutil
import tempfile
from pathlib import Path

import docker
import pytest
from conftest import assert_steps_as_planned, interrupt_lab_at, loops_over, owner_label, run_cli

from labs import rawfiles
from labs.infra.containers import OWNER_LABEL
from labs.infra.journal import Journal
from labs.records import list_runs, load_run
from labs.tools import pgbench
from labs.torn_pages import burst, page, tables

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def quick_run(docker_engine):
    # Not under pytest's basetemp: a concurrent pytest session may rename old basetemp
    # folders, and the lab's mount point must not move while it runs.
    base = Path(tempfile.mkdtemp(prefix="storage-labs-test-torn-", dir="/var/tmp"))
    work_dir = base / "work"
    env = {**os.environ, "LABS_STATE_DIR": str(base / "state"),
           "LABS_RUNS_DIR": str(base / "runs"), "LABS_WORK_DIR": str(work_dir)}
    result = run_cli(["run", "torn-pages", "--host", "local", "--profile", "ci"], env)
    assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-2000:]
    runs = list_runs("torn-pages", base / "runs")
    assert len(runs) == 1
    yield {"run": load_run(runs[0]), "stdout": result.stdout, "stderr": result.stderr,
           "base": base,
           "work_dir": work_dir, "journal": base / "state" / "journal-local.jsonl"}
    shutil.rmtree(base)


def summary_rows(results):
    return results[results["time_s"].isna()]


def value(results, **where):
    rows = summary_rows(results)
    for key, wanted in where.items():
        rows = rows[rows[key] == wanted]
    assert len(rows) == 1, where
    return float(rows["value"].iloc[0])


def test_parameters_echoed_and_image_choice_printed(quick_run):
    lines = quick_run["stdout"].splitlines()
    assert lines[0].startswith("python -m labs run torn-pages --host local --profile ci "
                               "--seed")
    assert lines[1].startswith("using image ")
    # Progress goes to stderr, results to stdout.
    assert_steps_as_planned(quick_run["stderr"], quick_run["run"])


def test_wal_per_transaction_higher_with_full_page_writes(quick_run):
    results = quick_run["run"].results
    legs = summary_rows(results).dropna(subset=["checkpoint_timeout_s"])
    legs = legs[legs["workload"] != "forced-checkpoint-replay"]
    pairs = legs[["workload", "write_limit_mibps", "checkpoint_timeout_s"]].drop_duplicates()
    # a checkpoint setting on each of two disks, plus the forced-checkpoint legs
    assert len(pairs) >= 3
    for workload, limit, timeout_s in pairs.itertuples(index=False):
        where = dict(workload=workload, checkpoint_timeout_s=timeout_s, write_limit_mibps=limit)
        on, off = (value(results, metric="wal_bytes_per_tx", full_page_writes=fpw, **where)
                   for fpw in ("on", "off"))
        assert on > off, f"{where}: {on} <= {off}"
        # Off, a handful of images remain (operations that always log whole pages).
        fpi_on, fpi_off = (value(results, metric="wal_fpi_per_tx", full_page_writes=fpw,
                                 **where) for fpw in ("on", "off"))
        assert fpi_off * 100 < fpi_on, where


def test_on_a_write_limited_disk_full_page_writes_cost_throughput(quick_run):
    results = quick_run["run"].results
    slow = summary_rows(results)
    slow = slow[slow["write_limit_mibps"] > 0]
    assert not slow.empty
    for timeout_s in slow["checkpoint_timeout_s"].unique():
        on, off = (value(results, metric="tps", full_page_writes=fpw,
                         checkpoint_timeout_s=timeout_s,
                         write_limit_mibps=slow["write_limit_mibps"].iloc[0])
                   for fpw in ("on", "off"))
        assert off > on, f"checkpoint_timeout={timeout_s}s: off {off} <= on {on}"


def test_images_per_transaction_jump_after_the_forced_checkpoint(quick_run):
    # Counted in the WAL itself (pg_walinspect), on both sides of the checkpoint's redo point.
    run = quick_run["run"]
    w = burst.burst_legs(run)
    windows = burst.burst_windows(w)
    before = tables.window_mean(w["fresh"], "fpi_per_tx", *windows["before"])
    after = tables.window_mean(w["fresh"], "fpi_per_tx", *windows["after"])
    assert after > before, (before, after)
    assert tables.window_mean(w["off"], "fpi_per_tx", 0, w["end"]) < 0.01


def test_the_page_builds_from_this_run(quick_run):
    # Any valid run, of any profile, feeds the page's figures and every chart.
    import json

    run = quick_run["run"]
    figures = page.figures(run)
    assert figures and all(isinstance(v, str) and "nan" not in v for v in figures.values())
    for chart in (page.settings_chart(run.results), page.burst_chart(run.results),
                  page.comparison_chart(run.results)):
        assert len(json.dumps(chart.to_dict())) < 600_000
    assert not page.settings_table(run.results).empty
    assert not tables.torn_page_table(run.results).empty
    assert page.server_log_lines(run, "fpw-off")


def test_torn_page_fails_its_checksum(quick_run):
    results = quick_run["run"].results
    torn = dict(variant="tear-stopped")
    assert value(results, metric="changed_bytes_second_half", **torn) > 0
    assert value(results, metric="checksum_check_failed_intact", **torn) == 0
    raw = quick_run["run"].path / "raw" / "torn" / "tear-stopped"
    outputs = {name: (raw / name).read_text() for name in
               ("pg_checksums-intact.txt", "pg_checksums-torn.txt", "select.txt")}
    assert value(results, metric="checksum_check_failed_torn", **torn) == 1, outputs
    assert value(results, metric="select_reported_invalid_page", **torn) == 1, outputs


def test_full_page_image_restores_the_torn_page(quick_run):
    results = quick_run["run"].results
    on = dict(variant="fpw-on")
    assert value(results, metric="checksum_model_matches_postgresql", **on) == 1
    assert value(results, metric="fpi_bytes_for_page_in_wal", **on) > 0
    assert value(results, metric="recovery_completed", **on) == 1
    assert value(results, metric="rows_visible", **on) == 40
    assert value(results, metric="updated_rows_visible", **on) == 10
    assert value(results, metric="checksum_check_failed_after_recovery", **on) == 0


def test_without_full_page_image_recovery_stops_or_lies(quick_run):
    results = quick_run["run"].results
    off = dict(variant="fpw-off")
    assert value(results, metric="fpi_bytes_for_page_in_wal", **off) == 0
    assert value(results, metric="recovery_completed", **off) == 0
    assert value(results, metric="recovery_reported_invalid_page", **off) == 1
    silent = dict(variant="fpw-off-nochecksums")
    assert value(results, metric="recovery_completed", **silent) == 1
    assert value(results, metric="rows_visible", **silent) != 40  # silent corruption


def test_raw_pgbench_output_parses_with_logs_from_each_thread(quick_run):
    run = quick_run["run"]
    leg = run.raw_dir / "bench" / "steady-nolimit-cpt30s-fpw-on"
    logs = rawfiles.pgbench_log_files(leg, "pgbench_log")
    assert len(logs) == 2  # 2 threads
    summary = pgbench.parse_summary((leg / "summary.txt").read_text())
    assert rawfiles.parse_pgbench_logs(logs).transactions == summary.transactions
    assert run.meta["tool_versions"]["image"]
    assert "pgbench" in run.meta["tool_versions"]


def test_nothing_left_behind(quick_run):
    assert Journal("local", quick_run["journal"]).live_entries() == []
    client = docker.from_env()
    owner = owner_label(quick_run["base"] / "state")
    mine = client.containers.list(all=True, filters={"label": f"{OWNER_LABEL}={owner}"})
    assert mine == []
    assert not list(quick_run["work_dir"].glob("torn-pages/*"))  # the run's folder is gone
    assert loops_over(quick_run["work_dir"]) == []


def test_bad_parameters_are_one_line_usage_errors(tmp_path):
    env = {**os.environ, "LABS_STATE_DIR": str(tmp_path), "LABS_RUNS_DIR": str(tmp_path)}
    for args in (["--scale", "2", "--clients", "4"], ["--host", "vm9"],
                 ["--checkpoint-timeouts-s", "10,300"], ["--checkpoint-timeouts-s", "x"]):
        result = run_cli(["run", "torn-pages", "--quick", *args], env, timeout=60)
        assert result.returncode == 2, args
        assert len(result.stderr.strip().splitlines()) == 1, result.stderr
    assert not any(tmp_path.glob("torn-pages/*"))


def test_ctrl_c_cleans_up(docker_engine):
    tmp_path = Path(tempfile.mkdtemp(prefix="storage-labs-test-ctrlc-", dir="/var/tmp"))
    work_dir = tmp_path / "work"
    env = {**os.environ, "LABS_STATE_DIR": str(tmp_path / "state"),
           "LABS_RUNS_DIR": str(tmp_path / "runs"), "LABS_WORK_DIR": str(work_dir),
           "PYTHONUNBUFFERED": "1"}
    # Ctrl-C at step 3: PostgreSQL is starting on the loop file system.
    returncode, stderr = interrupt_lab_at(
        ["run", "torn-pages", "--host", "local", "--quick"], env, "step 3/")
    assert returncode == 130, stderr
    assert stderr.strip().splitlines()[-1:] == [
        "python -m labs: interrupted (run `python -m labs clean` if a lab was running)"]
    journal = tmp_path / "state" / "journal-local.jsonl"
    assert Journal("local", journal).live_entries() == []
    owner = owner_label(tmp_path / "state")
    leftovers = docker.from_env().containers.list(
        all=True, filters={"label": f"{OWNER_LABEL}={owner}"})
    assert leftovers == []
    assert not list(work_dir.glob("torn-pages/*"))
    assert list_runs("torn-pages", tmp_path / "runs") == []
    shutil.rmtree(tmp_path)
