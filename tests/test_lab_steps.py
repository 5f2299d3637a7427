"""benchmarks/lab_steps.py: each lab run's steps, recorded per commit, and where a run over
its budget spends its time."""

from __future__ import annotations

import json
import sys

from conftest import PROJECT_ROOT

sys.path.insert(0, str(PROJECT_ROOT / "benchmarks"))
import lab_steps  # noqa: E402

SUMMARY = {"commit": "abc1234", "lab_runs": [
    {"how": "drbd --profile ci on vm1", "wall_s": 400.0,
     "steps": [["baseline", 20.0], ["a drill", 90.0], ["baseline", 18.0], ["a drill", 110.0]]},
    {"how": "quorum --profile ci on local", "wall_s": 4.0, "steps": [["simulating", 3.5]]}]}


def test_runs_are_recorded_per_step_and_a_run_over_budget_shows_its_slowest_steps(
        tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(lab_steps, "RECORD", tmp_path / "lab-steps.csv")
    times = tmp_path / "test-times.json"
    times.write_text(json.dumps(SUMMARY))
    assert lab_steps.main(["record", "--times", str(times), "--where", "quiet"]) == 0
    lines = (tmp_path / "lab-steps.csv").read_text().splitlines()
    assert lines[0] == "commit,measured_on,where,run,step,count,seconds"
    # two step names, the time before them and a wall row; one step and a wall row
    assert len(lines) == 1 + 4 + 2
    assert any(line.endswith("drbd --profile ci on vm1,(before its first step),1,162.0")
               for line in lines)
    assert any(line.endswith("drbd --profile ci on vm1,a drill,2,200.0") for line in lines)
    capsys.readouterr()
    assert lab_steps.main(["show"]) == 0
    shown = capsys.readouterr().out.splitlines()
    assert shown[1].endswith("drbd --profile ci on vm1  (+250 s over)")
    assert "200.0 s  50.0 %  a drill (2 times)" in shown[2]  # the slowest step first
    assert "38.0 s   9.5 %  baseline (2 times)" in shown[4]
    assert "162.0 s  40.5 %  (before its first step)" in shown[3]
    assert shown[5].endswith("quorum --profile ci on local")  # within budget: no steps


def test_a_times_file_without_lab_runs_is_one_line_and_records_nothing(tmp_path, monkeypatch,
                                                                       capsys):
    monkeypatch.setattr(lab_steps, "RECORD", tmp_path / "lab-steps.csv")
    times = tmp_path / "test-times.json"
    times.write_text(json.dumps({"commit": "abc1234"}))
    assert lab_steps.main(["record", "--times", str(times), "--where", "x"]) == 2
    assert lab_steps.main(["record", "--times", str(tmp_path / "missing.json"),
                           "--where", "x"]) == 2
    assert capsys.readouterr().err.count("\n") == 2
    assert not (tmp_path / "lab-steps.csv").exists()
