"""fio's JSON and JSON+ output, as fio 3.33 printed it on a loop device, parsed into rows."""

import json
import subprocess
import sys
from pathlib import Path

import pytest

from labs import rawfiles
from labs.tools import fio

FIXTURES = Path(__file__).parent / "fixtures" / "fio"
PROJECT = Path(__file__).resolve().parents[1]
COLUMNS = {"job", "op", "total_ios", "iops", "bw_kib_s", "bw_bytes_s", "clat_p50_us", "clat_p99_us",
           "clat_p999_us"}


def cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "labs", *args], cwd=PROJECT,
                          capture_output=True, text=True, timeout=60)


@pytest.mark.parametrize("name", sorted(p.name for p in FIXTURES.glob("*.json")))
def test_every_fixture_parses_into_consistent_rows(name):
    rows = rawfiles.parse_fio_file(FIXTURES / name)
    assert rows, name
    for row in rows:
        assert COLUMNS <= set(row)
        assert row["op"] in ("read", "write")
        assert row["total_ios"] > 0
        # Percentiles are ordered and the rates agree with the counts and runtime.
        assert 0 < row["clat_p50_us"] <= row["clat_p99_us"] <= row["clat_p999_us"]
        assert row["iops"] == pytest.approx(row["total_ios"] / (row["runtime_ms"] / 1000),
                                            rel=0.02)
        assert row["bw_kib_s"] == pytest.approx(row["iops"] * 4, rel=0.02)  # 4 KiB blocks
        # the exact rate, of which fio's `bw` is the whole KiB/s below
        assert row["bw_kib_s"] == row["bw_bytes_s"] // 1024


def test_json_plus_with_three_sequential_jobs():
    rows = rawfiles.parse_fio_file(FIXTURES / "loop-rand-qd1-qd16.jsonplus.json")
    assert [(r["job"], r["op"]) for r in rows] == [
        ("randread-qd16", "read"), ("randwrite-qd1", "write"), ("randwrite-qd16", "write")]


def test_note_printed_before_the_json_is_skipped():
    text = (FIXTURES / "loop-note-before-json.json").read_text()
    assert not text.startswith("{")  # the fixture really has fio's note first
    assert [r["job"] for r in rawfiles.parse_fio_file(FIXTURES / "loop-note-before-json.json")] == [
        "psync-qd16"]


def test_job_that_did_no_io_has_no_row():
    document = fio.load_fio_json((FIXTURES / "loop-job-without-io.json").read_text())
    assert [j["jobname"] for j in document["jobs"]] == ["short", "never-started"]
    assert [(r["job"], r["op"]) for r in fio.fio_rows(document)] == [("short", "read")]


def test_verify_job_reports_both_directions_and_no_error():
    document = fio.load_fio_json((FIXTURES / "loop-verify-crc32c.jsonplus.json").read_text())
    rows = fio.fio_rows(document)
    assert {r["op"] for r in rows} == {"read", "write"}
    assert fio.job_errors(document) == {}


def test_trailing_text_after_the_json_is_ignored():
    text = (FIXTURES / "loop-randread-qd1.json").read_text() + "\nfio: some warning\n"
    assert fio.fio_rows(fio.load_fio_json(text))[0]["job"] == "randread-qd1"


@pytest.mark.parametrize("text, message", [
    ("fio: engine libaio not loadable\n", "no JSON object"),
    ('{"jobs": [', "malformed"),
    ('{"fio version": "x"}', "no 'jobs' list"),
    ('{"jobs": [{"jobname": "a", "read": {"total_ios": "x"}}]}', "not a number"),
])
def test_bad_output_is_one_clear_error(text, message):
    with pytest.raises(fio.FioError, match=message):
        fio.fio_rows(fio.load_fio_json(text, "x.json"), "x.json")


def test_command_line_builds_sequential_seeded_jobs():
    argv = fio.fio_command([fio.FioJob("a", "/dev/md0", "randread", seed=3, runtime_s=5),
                            fio.FioJob("b", "/dev/md0", "randwrite", iodepth=16)])
    assert argv[:2] == ["fio", "--output-format=json+"]
    assert "--randseed=3" in argv and "--time_based" in argv and "--runtime=5" in argv
    assert argv.index("--stonewall") > argv.index("--name=b")
    assert "--iodepth=16" in argv and argv.count("--direct=1") == 2


def test_cli_prints_json_list():
    result = cli("parse", "fio", str(FIXTURES / "loop-rand-qd1-qd16.jsonplus.json"), "--json")
    assert result.returncode == 0, result.stderr
    rows = json.loads(result.stdout)
    assert len(rows) == 3 and COLUMNS <= set(rows[0])


def test_cli_bad_input_is_one_line_and_nonzero(tmp_path):
    missing = cli("parse", "fio", str(tmp_path / "nope.json"), "--json")
    assert missing.returncode == 2 and missing.stderr.count("\n") == 1
    garbage = tmp_path / "garbage.json"
    garbage.write_text("not fio at all\n")
    bad = cli("parse", "fio", str(garbage), "--json")
    assert bad.returncode == 1 and bad.stderr.count("\n") == 1 and "Traceback" not in bad.stderr
    assert bad.stdout == ""
