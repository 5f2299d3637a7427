"""The doublewrite lab end to end (ci profile) on this machine, as root, with docker.

Every step runs on the real server: the table, the ON/OFF legs on an unlimited and a
write-limited device, the torn page with doublewrite ON and OFF, forced recovery. Asserts
what the page claims, never a measured number: with the buffer pool much smaller than the
table, doublewrite ON makes the device write far more bytes per row but hardly more
operations, and on the write-limited device it costs throughput; the model predicts the ON
leg's bytes from the OFF leg; a torn page is repaired from the doublewrite buffer with it
and stops recovery without it.
"""

import os
import shutil
import tempfile
from pathlib import Path

import docker
import pytest
from conftest import assert_steps_as_planned, interrupt_lab_at, loops_over, owner_label, run_cli

from labs.doublewrite import tables
from labs.doublewrite.page import figures
from labs.infra.containers import OWNER_LABEL
from labs.infra.journal import Journal
from labs.records import list_runs, load_run
from labs.tools import sysbench

pytestmark = pytest.mark.slow


def leftovers(state_dir: Path) -> list:
    owner = owner_label(state_dir)
    return docker.from_env().containers.list(all=True,
                                              filters={"label": f"{OWNER_LABEL}={owner}"})


@pytest.fixture(scope="module")
def ci_run(docker_engine, request):
    # Not under pytest's basetemp: a concurrent pytest session may rename old basetemp
    # folders, and the lab's mount point must not move while it runs.
    base = Path(tempfile.mkdtemp(prefix="storage-labs-test-dblwr-", dir="/var/tmp"))
    work_dir = base / "work"
    env = {**os.environ, "LABS_STATE_DIR": str(base / "state"),
           "LABS_RUNS_DIR": str(base / "runs"), "LABS_WORK_DIR": str(work_dir)}
    result = run_cli(["run", "doublewrite", "--host", "local", "--profile", "ci"], env)
    assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-2000:]
    runs = list_runs("doublewrite", base / "runs")
    assert len(runs) == 1
    run = load_run(runs[0])
    wall = run.results[run.results["metric"] == "wall_time"]["value"].iloc[0]
    print(f"\n[figures] doublewrite ci profile: {wall:.0f} s wall")
    yield {"run": run, "stdout": result.stdout, "stderr": result.stderr, "base": base,
           "work_dir": work_dir, "journal": base / "state" / "journal-local.jsonl"}
    shutil.rmtree(base)


def test_parameters_echoed_and_progress_on_stderr(ci_run):
    lines = ci_run["stdout"].splitlines()
    assert lines[0].startswith("python -m labs run doublewrite --host local --profile ci --seed")
    assert lines[1].startswith("using image storage-labs/mariadb:")
    assert_steps_as_planned(ci_run["stderr"], ci_run["run"])


def test_the_server_ran_with_the_settings_the_page_states(ci_run):
    run = ci_run["run"]
    legs = tables.leg_table(run.results)
    assert set(legs["doublewrite"]) == {"ON", "OFF"}
    assert (legs["rows"] == run.meta["parameters"]["rows"]).all()
    assert (legs.loc[legs["doublewrite"] == "OFF", "innodb_dblwr_pages_written"] == 0).all()
    assert (legs.loc[legs["doublewrite"] == "ON", "innodb_dblwr_pages_written"] > 0).all()
    f = figures(run)
    assert (f["innodb_flush_method"], f["innodb_flush_log_at_trx_commit"]) == ("O_DIRECT", "1")
    assert f["innodb_checksum_algorithm"] == "full_crc32"
    assert run.meta["tool_versions"]["mariadb"].startswith("10.11.")
    assert run.meta["host"]["load_average_before"] and run.meta["host"]["load_average_after"]


def test_doublewrite_doubles_the_bytes_but_not_the_operations(ci_run):
    for pair in tables.pair_table(ci_run["run"].results).itertuples():
        assert pair.bytes_on_over_off > 1.4, pair.setting
        assert pair.writes_on / pair.writes_off < 1.3, pair.setting
        # The model predicts the ON leg's bytes per row from the OFF leg and ON's share.
        assert abs(pair.model_bytes_per_row_on / pair.bytes_per_row_on - 1) < 0.2, pair.setting
        assert pair.dblwr_pages_on / pair.dblwr_batches_on > 8  # many pages per operation


def test_on_a_write_limited_device_doublewrite_costs_throughput(ci_run):
    pairs = tables.pair_table(ci_run["run"].results)
    limited = pairs[pairs["write_limit_mibps"] > 0]
    assert not limited.empty
    for pair in limited.itertuples():
        assert pair.tps_off_over_on > 1.3, pair.setting
        assert pair.elapsed_on_over_off > 1.3, pair.setting
        # The limit binds: neither leg beats the rate the limit allows by much.
        assert pair.tps_off < pair.model_tps_off * 1.15 and pair.tps_on < pair.model_tps_on * 1.15


def test_latency_comes_from_the_histogram_of_every_leg(ci_run):
    run = ci_run["run"]
    legs = tables.leg_table(run.results)
    for leg in legs.itertuples():
        text = (run.raw_dir / "bench" / leg.leg / "sysbench.txt").read_text()
        histogram = sysbench.parse_histogram(text)
        assert histogram.events == leg.rows
        assert leg.latency_p50 <= leg.latency_p95 <= leg.latency_p99 <= leg.latency_max * 1.05


def test_torn_page_is_repaired_from_the_doublewrite_buffer(ci_run):
    torn = tables.torn_table(ci_run["run"].results)["ON"]
    assert torn["torn_checksum_ok"] == 0 and torn["torn_lsn_consistent"] == 0
    assert torn["changed_bytes_first_part"] > 0 and torn["changed_bytes_rest"] > 0
    assert torn["checkpoint_before_page_change"] == 1
    assert torn["doublewrite_copies_of_v1"] >= 1 and torn["flush_dblwr_pages"] >= 1
    assert torn["restart_completed"] == 1 and torn["log_recovered_from_doublewrite"] == 1
    assert torn["rows_visible"] == torn["rows_new_version"] == torn["rows_expected"] == 48
    assert torn["check_table_ok"] == 1 and torn["page_checksum_ok_after_restart"] == 1
    assert torn["checksum_full_crc32"] == 1 and torn["checksum_none_refused"] == 1


def test_without_doublewrite_recovery_stops_and_forcing_it_loses_data(ci_run):
    torn = tables.torn_table(ci_run["run"].results)["OFF"]
    assert torn["doublewrite_copies_of_v1"] == 0 and torn["flush_dblwr_pages"] == 0
    assert torn["restart_completed"] == 0 and torn["restart_exit_code"] != 0
    assert torn["log_unable_to_apply_log"] == 1 and torn["log_recovered_from_doublewrite"] == 0
    # force_recovery=1: the server runs, the torn table cannot be read, the rest is intact.
    assert torn["force1_started"] == 1 and torn["force1_select_error_1877"] == 1
    assert torn["force1_other_rows_updated"] == 1
    # force_recovery=6: no redo at all; the committed update of the other table is gone.
    assert torn["force6_started"] == 1 and torn["force6_other_rows_updated"] == 0
    log = (ci_run["run"].raw_dir / "torn" / "dblwr-off" / "restart.log").read_text()
    assert "Unable to apply log to corrupted page 3 in file ./lab/torn_t.ibd" in log


def test_nothing_left_behind(ci_run):
    assert Journal("local", ci_run["journal"]).live_entries() == []
    assert leftovers(ci_run["base"] / "state") == []
    assert not list(ci_run["work_dir"].glob("doublewrite/*"))
    assert loops_over(ci_run["work_dir"]) == []


def test_bad_parameters_are_one_line_usage_errors(tmp_path):
    env = {**os.environ, "LABS_STATE_DIR": str(tmp_path), "LABS_RUNS_DIR": str(tmp_path)}
    for args in (["--buffer-pools-mib", "8,8"], ["--buffer-pools-mib", "x"],
                 ["--no-torn-page"], ["--key-distribution", "zipf"], ["--rows", "10"]):
        result = run_cli(["run", "doublewrite", "--quick", *args], env, timeout=60)
        assert result.returncode == 2, args
        assert len(result.stderr.strip().splitlines()) == 1, result.stderr
    assert not any(tmp_path.glob("doublewrite/*"))


def test_ctrl_c_during_the_inserts_cleans_up(docker_engine):
    base = Path(tempfile.mkdtemp(prefix="storage-labs-test-dblwr-ctrlc-", dir="/var/tmp"))
    work_dir = base / "work"
    env = {**os.environ, "LABS_STATE_DIR": str(base / "state"),
           "LABS_RUNS_DIR": str(base / "runs"), "LABS_WORK_DIR": str(work_dir),
           "PYTHONUNBUFFERED": "1"}
    # Ctrl-C at step 3: sysbench is filling the table inside the container.
    returncode, stderr = interrupt_lab_at(
        ["run", "doublewrite", "--host", "local", "--profile", "ci"], env, "step 3/")
    assert returncode == 130, stderr
    assert stderr.strip().splitlines()[-1:] == [
        "python -m labs: interrupted (run `python -m labs clean` if a lab was running)"]
    assert Journal("local", base / "state" / "journal-local.jsonl").live_entries() == []
    assert leftovers(base / "state") == []
    assert not list(work_dir.glob("doublewrite/*"))
    assert loops_over(work_dir) == []
    assert list_runs("doublewrite", base / "runs") == []
    shutil.rmtree(base)
