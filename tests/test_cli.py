"""The command line: help on every level, one-line errors with exit code 2."""

import json
import os
import subprocess
import sys

import pytest
from conftest import PROJECT_ROOT, assert_one_line_usage_error, run_labs

from labs.__main__ import COMMANDS, build_parser


def test_help_on_the_top_level_names_every_command():
    result = run_labs("--help")
    assert result.returncode == 0
    for name in COMMANDS:
        assert name in result.stdout


def _all_help_paths():
    parser = build_parser()
    paths = [[]]

    def walk(p, prefix):
        for action in p._actions:
            if action.__class__.__name__ == "_SubParsersAction":
                for name, sub in action.choices.items():
                    paths.append(prefix + [name])
                    walk(sub, prefix + [name])

    walk(parser, [])
    return paths


@pytest.mark.parametrize("path", _all_help_paths(), ids=lambda p: " ".join(p) or "top")
def test_help_works_on_every_level(path, capsys):
    # The parser `python -m labs` builds, here in the test's own process: 40 interpreters
    # (pandas and fabric imported in each) took minutes on a loaded CI machine. The first
    # test of this file runs the real command.
    with pytest.raises(SystemExit) as ended:
        build_parser().parse_args([*path, "--help"])
    printed = capsys.readouterr()
    assert ended.value.code == 0, printed.err
    assert printed.out.startswith("usage: python -m labs")


@pytest.mark.parametrize(("args", "fragment"), [
    (["nonsense"], "invalid choice: 'nonsense'"),
    ([], "required"),
    (["quorum", "--nodes", "3", "--write", "4"], "--write 4 is larger than --nodes 3"),
    (["quorum", "--nodes", "0"], "--nodes must be at least 1, got 0"),
    (["quorum", "--nodes", "-3"], "--nodes must be at least 1, got -3"),
    (["quorum", "--nodes", "3", "--read", "0"], "--read must be at least 1, got 0"),
    (["quorum", "--nodes", "3", "--azs", "4"], "--azs 4 is larger than --nodes 3"),
    (["quorum", "--nodes", "3", "--p-node", "1.5"], "--p-node must be between 0 and 1, got 1.5"),
    (["quorum", "--nodes", "3", "--p-node", "-0.1"], "--p-node must be between 0 and 1"),
    (["quorum", "--nodes", "3", "--azs", "3", "--p-node", "0.1", "--p-az", "2"],
     "--p-az must be between 0 and 1, got 2"),
    (["quorum", "--nodes", "3", "--p-node", "nan"], "--p-node must be a probability"),
    (["quorum", "--nodes", "six"], "invalid int value: 'six'"),
    (["quorum", "--nodes", "3", "--p-node", "lots"], "invalid float value: 'lots'"),
    (["quorum", "--nodes", "3", "--p-node", "0.1", "--p-az", "0.1"], "--p-az needs --azs"),
    (["quorum"], "--nodes is required"),
    (["quorum", "--table", "--max-nodes", "0"], "--max-nodes must be at least 1"),
    (["quorum", "--table", "--nodes", "3"], "--table prints every N"),
    (["run", "quorum", "--trials", "0"], "--trials must be at least 1"),
    (["run", "quorum", "--write", "9"], "--write 9 is larger than --nodes 6"),
    (["run", "quorum", "--profile", "huge"], "unknown profile 'huge'"),
    (["run", "quorum", "--quick", "--profile", "full"], "--quick and --profile disagree"),
    (["run", "no-such-lab"], "invalid choice: 'no-such-lab'"),
    (["disk", "--drive", "floppy"], "invalid choice: 'floppy'"),
    (["disk", "--block-kib", "-1"], "--block-kib must be between 0.5 and 65536, got -1"),
    (["disk", "--drive", "cheetah", "--block-kib", "70000"], "must be between 0.5 and 65536"),
    (["disk", "--drive", "cheetah", "--queue", "20", "--block-kib", "1.3"],
     "whole number of 512-byte sectors"),
    (["disk", "--drive", "cheetah", "--queue", "0"], "--queue takes 1 to 5000 requests, got 0"),
    (["disk", "--queue", "10"], "--queue needs --drive"),
    (["disk", "--drive", "cheetah", "--volume", "gp3"], "choose one of --drive, --ssd"),
    (["disk", "--volume", "sc1", "--size-gib", "10"], "sc1 volumes are 125 to 16,384 GiB"),
    (["disk", "--volume", "gp3", "--size-gib", "nan"], "size_gib must be a finite number"),
    (["disk", "--ssd", "--channels", "0"], "channels must be a whole number of at least 1"),
    (["disk", "--ssd", "--read-latency-us", "0"], "read_latency_us"),
    # An option another view reads is refused, not ignored; 0 is a value, not "not given".
    (["disk", "--read-latency-us", "50"], "--read-latency-us is read only with --ssd"),
    (["disk", "--drive", "cheetah", "--size-gib", "10"], "--size-gib is read only with --volume"),
    (["disk", "--ssd", "--pattern", "sequential"], "--pattern is read only with --volume"),
    (["disk", "--volume", "gp3", "--channels", "4"], "--channels is read only with --ssd"),
    (["disk", "--drive", "toy", "--queue", "10", "--sequential-mb", "5"],
     "--sequential-mb is read only with --drive (without --queue)"),
    (["disk", "--block-kib", "0"], "--block-kib must be between 0.5 and 65536, got 0"),
    (["disk", "--ssd", "--block-kib", "0"], "--block-kib must be between 0.5 and 65536, got 0"),
    (["disk", "--sequential-mb", "inf"], "--sequential-mb must be a number of MB above 0"),
    (["disk", "-c"], "-c solves a practice problem"),
    (["disk", "--problem", "schedule", "--drive", "toy"], "--problem prints its own layout"),
    (["disk", "--problem", "schedule", "--seed", "-1"],
     "--seed must be a whole number >= 0, got -1"),
    (["disk", "--problem", "raid"], "invalid choice: 'raid'"),
    # An option the chosen view does not read is refused, not ignored.
    (["disk", "--problem", "schedule", "--block-kib", "8"],
     "--block-kib is not read with --problem"),
    (["disk", "--problem", "ssd-qd", "--channels", "4"], "--channels is not read with --problem"),
    (["disk", "--drive", "cheetah", "--seed", "3"],
     "--seed picks a practice problem (--problem KIND) or the requests of --drive D --queue N"),
    (["quorum", "--nodes", "3", "--seed", "3"], "--seed picks a practice problem"),
    (["quorum", "--nodes", "3", "--max-nodes", "4"], "--max-nodes is read only with --table"),
    (["quorum", "--table", "--p-node", "0.1"], "--p-node is not read with --table"),
    (["quorum", "--table", "--azs", "3"], "--azs is not read with --table"),
    (["quorum", "--problem", "zones", "--azs", "3"], "--azs is not read with --problem"),
    (["quorum", "--problem", "sizing", "--json"], "--json is not read with --problem"),
    (["quorum", "--nodes", "3", "--max-nodes", "0"], "--max-nodes is read only with --table"),
    (["quorum", "--table", "--p-node", "0"], "--p-node is not read with --table"),
    (["disk", "--problem", "schedule", "--channels", "0"], "--channels is not read with"),
])
def test_bad_input_is_one_line_and_exit_2(args, fragment):
    assert_one_line_usage_error(run_labs(*args), fragment)


def test_quorum_json_has_the_documented_fields():
    result = run_labs("quorum", "--nodes", "6", "--write", "4", "--read", "3", "--azs", "3",
                      "--p-node", "0.01", "--p-az", "0.001", "--json")
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    assert report["valid"] is True
    assert report["rules"] == {"read_write_overlap": True, "write_majority": True}
    assert (report["write_tolerates"], report["read_tolerates"]) == (2, 3)
    assert report["lose_az"] == {"write": True, "read": True}
    assert report["lose_az_plus_one"] == {"write": False, "read": True}
    assert 0 < report["p_read_unavailable"] < report["p_write_unavailable"] < 1


def test_quorum_json_without_azs_has_no_az_answers():
    report = json.loads(run_labs("quorum", "--nodes", "4", "--write", "2", "--read", "2",
                                 "--json").stdout)
    assert report["valid"] is False
    assert report["rules"] == {"read_write_overlap": False, "write_majority": False}
    assert "lose_az" not in report and "p_write_unavailable" not in report


def test_quorum_table_json():
    result = run_labs("quorum", "--table", "--max-nodes", "7", "--json")
    rows = json.loads(result.stdout)
    assert [(r["nodes"], r["read"], r["write"]) for r in rows][5] == (6, 3, 4)
    assert len(rows) == 7


def test_quorum_readable_output():
    result = run_labs("quorum", "--nodes", "6", "--write", "4", "--read", "3", "--azs", "3")
    assert result.returncode == 0
    assert "valid" in result.stdout and "lose one AZ" in result.stdout
    table = run_labs("quorum", "--table", "--max-nodes", "3").stdout.splitlines()
    assert table[0].split() == ["N", "R", "W"] and table[-1].split() == ["3", "2", "2"]


def test_run_quorum_records_a_valid_run(runs_dir):
    result = run_labs("run", "quorum", "--quick", "--seed", "5",
                      env={"LABS_RUNS_DIR": str(runs_dir)})
    assert result.returncode == 0, result.stderr
    # It echoes its full parameters first.
    first_line = result.stdout.splitlines()[0]
    assert first_line.startswith("python -m labs run quorum --host local --profile quick "
                                 "--seed 5 --nodes 6")
    assert "inside the interval" in result.stdout
    listing = json.loads(run_labs("list", "--json", env={"LABS_RUNS_DIR": str(runs_dir)}).stdout)
    entry = next(row for row in listing if row["lab"] == "quorum")
    assert len(entry["recorded_runs"]) == 1


def test_disk_default_is_ostep_cheetah():
    result = run_labs("disk")
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("Cheetah 15K.5: 15,000 RPM")
    assert "= 6.03 ms" in result.stdout  # OSTEP: 4 + 2 + 0.03 ms


def test_disk_queue_sweep_json_gives_every_policy_at_every_depth():
    report = json.loads(run_labs("disk", "--drive", "cheetah", "--queue", "100", "--seed", "2",
                                 "--json").stdout)
    depths = sorted({row["queue_depth"] for row in report["rows"]})
    assert depths == [1, 2, 4, 8, 16, 32, 64]
    by = {(row["queue_depth"], row["policy"]): row["iops"] for row in report["rows"]}
    assert by[(1, "fifo")] == pytest.approx(by[(1, "sptf")])  # one request: nothing to choose
    assert by[(64, "sptf")] > by[(64, "sstf")] > by[(64, "fifo")]


def test_disk_ssd_and_volume_json():
    ssd_report = json.loads(run_labs("disk", "--ssd", "--channels", "4", "--json").stdout)
    assert ssd_report["saturation_queue_depth"] == pytest.approx(4)
    sc1 = json.loads(run_labs("disk", "--volume", "sc1", "--size-gib", "1024", "--json").stdout)
    assert [p["iops"] for p in sc1["predictions"]] == pytest.approx([80, 12])  # 1 MiB charged
    assert "qemu" in sc1


def test_disk_problem_is_seeded_and_answered_only_with_c():
    first = run_labs("disk", "--problem", "littles-law", "--seed", "5")
    again = run_labs("disk", "--problem", "littles-law", "--seed", "5")
    solved = run_labs("disk", "--problem", "littles-law", "--seed", "5", "-c")
    assert first.returncode == solved.returncode == 0
    assert first.stdout == again.stdout and "Answer:" not in first.stdout
    assert solved.stdout.startswith(first.stdout) and "Answer:" in solved.stdout


def test_a_reader_that_stops_reading_ends_the_command_quietly(tmp_path):
    # `python -m labs list | head -1`: the pipe closes under the command, and it stops at
    # once with SIGPIPE's exit code, no traceback on the terminal.
    shell = subprocess.run(
        f"{sys.executable} -m labs list | head -c 0; echo \"status=${{PIPESTATUS[0]}}\"",
        shell=True, executable="/bin/bash", capture_output=True, text=True, cwd=PROJECT_ROOT,
        env={**os.environ, "LABS_STATE_DIR": str(tmp_path)}, timeout=120)
    assert shell.stderr == "", shell.stderr
    assert shell.stdout.strip() == "status=141", shell.stdout
