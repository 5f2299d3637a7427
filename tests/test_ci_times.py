"""benchmarks/ci_times.py: CI's time per area, recorded per commit, and shown against the
record before it."""

from __future__ import annotations

import json
import sys

from conftest import PROJECT_ROOT

sys.path.insert(0, str(PROJECT_ROOT / "benchmarks"))
import ci_times  # noqa: E402

SUMMARY = {"commit": "abc1234", "wall_s": 2400.0, "workers_s": {"gw0": 1500.0, "gw1": 2390.5},
           "areas_s": {"drbd lab (live)": 600.0, "book and browser": 300.0}, "files_s": {}}


def test_a_session_is_recorded_per_area_and_shown_beside_the_one_before(tmp_path, monkeypatch,
                                                                         capsys):
    monkeypatch.setattr(ci_times, "RECORD", tmp_path / "ci-times.csv")
    times = tmp_path / "test-times.json"
    times.write_text(json.dumps(SUMMARY))
    assert ci_times.main(["record", "--times", str(times), "--where", "cached"]) == 0
    times.write_text(json.dumps({**SUMMARY, "commit": "def5678",
                                 "areas_s": {"drbd lab (live)": 450.0,
                                             "book and browser": 310.0}}))
    assert ci_times.main(["record", "--times", str(times), "--where", "cached",
                          "--setup-s", "95"]) == 0
    lines = (tmp_path / "ci-times.csv").read_text().splitlines()
    assert lines[0] == "commit,measured_on,where,area,seconds"
    assert len(lines) == 1 + 5 + 6  # areas, the session, two workers (and the set-up once)
    capsys.readouterr()
    assert ci_times.main(["show"]) == 0
    shown = capsys.readouterr().out
    assert shown.startswith("def5678 (cached) beside abc1234")
    assert "450.0 s  area: drbd lab (live)  (-150 s)" in shown
    assert "95.0 s  set-up (system packages, venv)" in shown


def test_an_unreadable_times_file_is_one_line_and_records_nothing(tmp_path, monkeypatch,
                                                                  capsys):
    monkeypatch.setattr(ci_times, "RECORD", tmp_path / "ci-times.csv")
    assert ci_times.main(["record", "--times", str(tmp_path / "missing.json"),
                          "--where", "x"]) == 2
    assert capsys.readouterr().err.count("\n") == 1
    assert not (tmp_path / "ci-times.csv").exists()
