"""The consistency lab end to end (ci profile) on this machine, as root, with docker.

One real run on a real three-node Cassandra cluster, then what the model guarantees, checked
on it: every request at a level does what the count of live replicas predicts, and no read
that must meet the latest write returns an older one. Bad input stops with one line and
creates nothing; a killed run leaves nothing after `python -m labs clean`.
"""

import json
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest
from conftest import (
    PROJECT_ROOT,
    assert_steps_as_planned,
    journal_and_container_leftovers,
    kill_at_step_then_clean,
    local_lab_env,
    run_cli,
)

from labs.consistency import model, page
from labs.consistency.params import CASES, NEW, OLD
from labs.infra import images
from labs.records import list_runs, load_run

pytestmark = pytest.mark.slow


SQUAT_AT = "2 node(s) stopped"  # nodes 3 and 2 are stopped; their addresses are free


@pytest.fixture(scope="module")
def ci_run(docker_engine):
    """One ci run, with another container started on the engine's default bridge while two
    nodes are stopped, as a reader's own container might be: there it would take the lowest
    free address, node 2's, and node 2 would come back with node 3's old one."""
    base = Path(tempfile.mkdtemp(prefix="storage-labs-test-consistency-", dir="/var/tmp"))
    lab = subprocess.Popen([sys.executable, "-m", "labs", "run", "consistency", "--host",
                            "local", "--profile", "ci"], cwd=PROJECT_ROOT,
                           env=local_lab_env(base), stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, text=True)
    stderr, squatter = [], None
    try:
        for line in lab.stderr:
            stderr.append(line)
            if SQUAT_AT in line and squatter is None:
                squatter = docker_engine.containers.run(
                    images.RECIPES["cassandra"].tag, ["sleep", "900"], entrypoint=[],
                    detach=True, labels={"storage-labs.test": "squatter"})
        stdout = lab.stdout.read()
        lab.wait(timeout=900)
    finally:
        if lab.poll() is None:
            lab.kill()
        if squatter is not None:
            squatter.remove(force=True)
    assert lab.returncode == 0, "".join(stderr[-30:])
    (run,) = list_runs("consistency", base / "runs")
    yield {"recorded": load_run(run), "stdout": stdout, "stderr": "".join(stderr),
           "squatter": squatter is not None, "base": base}
    shutil.rmtree(base, ignore_errors=True)


def test_a_container_started_meanwhile_does_not_take_a_stopped_nodes_place(ci_run):
    # The nodes have a network of their own: the other container, on the default bridge,
    # could not take an address they had (the run above succeeded with it there).
    assert ci_run["squatter"], f"the run never printed {SQUAT_AT!r}"
    assert "starting nodes 2 and 3 again" in ci_run["stderr"]


def test_parameters_echoed_and_progress_counted(ci_run):
    lines = ci_run["stdout"].splitlines()
    assert lines[0].startswith("python -m labs run consistency --host local --profile ci")
    assert lines[1].startswith("using image storage-labs/cassandra:5.0.9")
    assert_steps_as_planned(ci_run["stderr"], ci_run["recorded"])


def test_every_request_did_what_the_model_predicts(ci_run):
    grid = page.availability(ci_run["recorded"])
    assert len(grid) == 3 * 3 * 2  # 0, 1, 2 stopped x three levels x write and read
    assert grid["agrees"].all(), grid[~grid["agrees"]]
    refused = grid[~grid["succeeded"]]
    assert set(refused["outcome"]) == {"Unavailable"}
    # Refused only where fewer replicas were up than the level waits for.
    assert (refused["nodes_up"] < refused["needs"]).all()
    assert len(refused) == 6


def test_no_read_that_must_meet_the_write_returned_the_old_value(ci_run):
    table = page.stale(ci_run["recorded"])
    assert len(table) == 3 * 3 * 3  # rows x levels x coordinators
    fresh_by_rule = table[table["model_fresh_guaranteed"] == 1]
    assert len(fresh_by_rule) == 5 * 3  # A and B at QUORUM and ALL, C at ALL; via each node
    assert fresh_by_rule["stale_reads"].sum() == 0
    assert (table["stale_reads"] + table["fresh_reads"] == table["reads"]).all()


def test_every_read_names_enough_replicas_and_stale_ones_only_missed_ones(ci_run):
    reads = page.reads(ci_run["recorded"])
    assert reads
    for item in reads:
        assert item["value"] in (OLD, NEW)
        assert len(item["replicas"]) >= model.replicas_needed(item["level"], 3), item
        if item["value"] == OLD:
            assert set(item["replicas"]) <= set(CASES[item["case"]][2]), item
        else:  # a fresh read reached a replica that holds the write
            assert set(item["replicas"]) - set(CASES[item["case"]][2]), item


def test_the_run_keeps_the_traces_and_the_ring_it_saw(ci_run):
    raw = ci_run["recorded"].raw_dir
    lines = (raw / "reads.jsonl").read_text().splitlines()
    assert json.loads(lines[0])["coordinator"] in (1, 2, 3)
    for stopped in (0, 1, 2):
        status = (raw / "nodetool" / f"status-{stopped}-stopped.txt").read_text().splitlines()
        assert sum(line.startswith("DN") for line in status) == stopped


def test_nothing_left_behind(ci_run):
    assert journal_and_container_leftovers(ci_run["base"]) == []


@pytest.mark.parametrize("args, message", [
    (["--host", "vm1"], "run it with --host local"),
    (["--reads-per-case", "0"], "--reads-per-case must be at least 1"),
    (["--heap-mib", "128"], "--heap-mib must be at least 256"),
    (["--heap-mib", "512", "--memory-mib", "600"], "leaves a 512 MiB heap too little room"),
    (["--memory-mib", "32768", "--heap-mib", "8192"], "MiB of free memory"),
])
def test_bad_input_is_one_line_and_creates_nothing(docker_engine, tmp_path, args, message):
    result = run_cli(["run", "consistency", "--profile", "ci", *args], local_lab_env(tmp_path),
                     timeout=120)
    # One line on stderr; stdout may hold the echoed command line (a lab prints it before it
    # checks the machine's memory).
    assert result.returncode == 2, result.stderr
    assert result.stderr.strip().splitlines() == [result.stderr.strip()], result.stderr
    assert message in result.stderr and "Traceback" not in result.stderr
    assert journal_and_container_leftovers(tmp_path) == []
    assert list_runs("consistency", tmp_path / "runs") == []


def test_a_killed_run_leaves_nothing_after_clean(docker_engine):
    base = Path(tempfile.mkdtemp(prefix="storage-labs-test-consistency-kill-", dir="/var/tmp"))
    # At "stopping node 3": three containers, one of them about to stop, on their network.
    left_at_kill = []

    def leftovers():
        found = journal_and_container_leftovers(base)
        left_at_kill.extend(found)
        return found

    kill_at_step_then_clean(["run", "consistency", "--host", "local", "--profile", "ci"],
                            local_lab_env(base), "stopping a node — node 3", leftovers)
    assert sum(line.startswith("network ") for line in left_at_kill) == 1, left_at_kill
    assert list_runs("consistency", base / "runs") == []
    shutil.rmtree(base, ignore_errors=True)
