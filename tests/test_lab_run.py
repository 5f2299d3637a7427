"""LabRun, what every lab's run opens and closes alike, on the local host: the command line
first in run.json, the workspace's commands after it, the steps planned and taken, nothing
published (and nothing left) when the run fails, and the workspace's resources gone before
the run is published."""

import io
import time
from pathlib import Path

import pytest

from labs.infra.inventory import get_host
from labs.infra.journal import Journal
from labs.infra.lab_run import LabRun
from labs.progress import Progress
from labs.records import list_runs
from labs.template.params import Parameters


@pytest.fixture
def local_state(tmp_path, monkeypatch, runs_dir):
    monkeypatch.setenv("LABS_STATE_DIR", str(tmp_path / "state"))
    monkeypatch.setenv("LABS_WORK_DIR", str(tmp_path / "work"))
    return tmp_path


def params() -> Parameters:
    return Parameters.for_profile("quick", blocks=(1,))


def quiet_progress() -> Progress:
    return Progress("template", 1, stream=io.StringIO(), interactive=False)


def test_a_run_records_its_command_line_first_then_what_its_workspace_ran(local_state,
                                                                          runs_dir):
    host = get_host("local")
    with LabRun(params(), host, quiet_progress()) as lab_run:
        lab_run.ws.prepare()  # a journaled mkdir, through the workspace
        work_dir = Path(lab_run.ws.work_dir)
        assert work_dir.is_dir()
        lab_run.rec.add_result(config="c", workload="w", metric="m", value=1.0, unit="s")
    run = lab_run.recorded()
    commands = run.meta["commands"]
    assert commands[0] == params().command_line()
    assert any(command.startswith("[local] mkdir -p") and str(work_dir) in command
               for command in commands[1:])
    assert not work_dir.exists()  # the workspace closed before the run was published
    assert Journal("local").live_entries() == []
    assert list_runs("template", runs_dir) == [run.path]


def test_a_failed_run_publishes_nothing_and_leaves_nothing(local_state, runs_dir):
    host = get_host("local")
    with pytest.raises(RuntimeError, match="the lab failed"):
        with LabRun(params(), host, quiet_progress()) as lab_run:
            lab_run.ws.prepare()
            work_dir = Path(lab_run.ws.work_dir)
            lab_run.rec.add_result(config="c", workload="w", metric="m", value=1.0, unit="s")
            raise RuntimeError("the lab failed")
    assert not work_dir.exists()
    assert Journal("local").live_entries() == []
    assert list_runs("template", runs_dir) == []
    assert list((runs_dir / "template").iterdir()) == []  # no staging folder either


def test_a_run_records_the_steps_it_planned_and_took_with_their_start_times(local_state):
    progress = quiet_progress()
    progress.plan(["one", "two"])
    before = time.time()
    with LabRun(params(), get_host("local"), progress) as lab_run:
        progress.step("one", "the first")
        time.sleep(0.2)
        progress.step("two")
        lab_run.rec.add_result(config="c", workload="w", metric="m", value=1.0, unit="s")
    run = lab_run.recorded()
    assert run.meta["steps"]["planned"] == ["one", "two"]
    taken = run.meta["steps"]["taken"]
    assert [(step["name"], step["detail"]) for step in taken] == [("one", "the first"),
                                                                  ("two", "")]
    assert before <= taken[0]["started_at"] <= taken[1]["started_at"] <= time.time()
    (first, _, first_s), (second, _, second_s) = run.step_seconds()
    assert (first, second) == ("one", "two")
    assert first_s >= 0.2 and second_s >= 0  # a step lasts until the next one starts
