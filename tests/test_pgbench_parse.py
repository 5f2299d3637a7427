"""The pgbench parser against real pgbench output (tests/fixtures/pgbench/, see its README)."""

import json
import subprocess
import sys
from pathlib import Path

import pytest

from labs import PROJECT_ROOT, rawfiles
from labs.errors import UsageError
from labs.tools import pgbench

FIXTURES = Path(__file__).parent / "fixtures" / "pgbench"


def run_cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "labs", *args], cwd=PROJECT_ROOT,
                          capture_output=True, text=True, timeout=60)


def test_summary_postgresql_14_and_newer_form():
    summary = pgbench.parse_summary((FIXTURES / "pg15" / "summary.txt").read_text())
    assert summary.summary_form == "without-initial-connection"
    assert summary.version.startswith("15.")
    assert summary.tps > 0 and summary.transactions > 0
    assert summary.failed == 0
    assert summary.latency_avg_ms > 0
    assert summary.clients == 4 and summary.threads == 2
    # tps is transactions over the measured time: the two must agree to within a few percent
    assert summary.tps * summary.duration_s == pytest.approx(summary.transactions, rel=0.05)


def test_summary_older_connections_establishing_form():
    summary = pgbench.parse_summary((FIXTURES / "pg13" / "summary.txt").read_text())
    assert summary.summary_form == "connections-establishing"
    assert summary.version is None  # pgbench 13 prints no version line in its summary
    assert summary.tps > 0 and summary.tps_including_connections > 0
    # "including connections establishing" can only be slower than "excluding"
    assert summary.tps_including_connections <= summary.tps
    assert summary.failed == 0  # pgbench 13 has no failed-transactions line


def test_progress_lines():
    rows = pgbench.parse_progress((FIXTURES / "pg15" / "progress.txt").read_text())
    assert len(rows) >= 5
    assert [r["time_s"] for r in rows] == sorted(r["time_s"] for r in rows)
    assert all(r["tps"] > 0 and r["latency_avg_ms"] > 0 for r in rows)
    older = pgbench.parse_progress((FIXTURES / "pg13" / "progress.txt").read_text())
    assert len(older) >= 3 and all(r["failed"] == 0 for r in older)


def test_older_logs_from_two_threads():
    files = rawfiles.pgbench_log_files(FIXTURES / "pg13", "pgbench_log")
    assert len(files) == 2
    assert rawfiles.parse_pgbench_logs(files).transactions == 600  # 300 lines kept of each file


def test_logs_from_two_threads():
    files = rawfiles.pgbench_log_files(FIXTURES / "pg15", "pgbench_log")
    assert len(files) == 2  # one file per thread: prefix.PID and prefix.PID.1
    log = rawfiles.parse_pgbench_logs(files)
    lines = sum(len(f.read_text().splitlines()) for f in files)
    assert log.transactions == lines
    assert log.percentile_ms(50) <= log.percentile_ms(99) <= log.percentile_ms(100)


def test_skipped_and_failed_lines_are_counted_not_dropped(tmp_path):
    # Constructed input in the documented -l format (latency field 'skipped' / 'failed').
    log = tmp_path / "pgbench_log.42"
    log.write_text("0 1 1500 0 1700000000 100\n"
                   "0 2 skipped 0 1700000000 200\n"
                   "1 1 failed 0 1700000001 300 0 2\n"
                   "1 2 2500 0 1700000001 400\n")
    parsed = rawfiles.parse_pgbench_logs([log])
    assert (parsed.transactions, parsed.skipped, parsed.failed) == (4, 1, 1)
    assert len(parsed.latencies_us) == 2


def test_cli_json_with_logs():
    logs = rawfiles.pgbench_log_files(FIXTURES / "pg15", "pgbench_log")
    result = run_cli("parse", "pgbench", str(FIXTURES / "pg15" / "summary.txt"),
                     *[arg for f in logs for arg in ("--log", str(f))], "--json")
    assert result.returncode == 0, result.stderr
    record = json.loads(result.stdout)
    for key in ("tps", "transactions", "failed", "latency_avg_ms", "log_transactions",
                "latency_p50_ms", "latency_p99_ms"):
        assert record[key] is not None, key
    assert record["log_files"] == 2


def test_cli_bad_input_is_one_line(tmp_path):
    missing = run_cli("parse", "pgbench", str(tmp_path / "nope.txt"), "--json")
    assert missing.returncode == 2 and len(missing.stderr.strip().splitlines()) == 1
    not_pgbench = tmp_path / "other.txt"
    not_pgbench.write_text("hello\n")
    wrong = run_cli("parse", "pgbench", str(not_pgbench), "--json")
    assert wrong.returncode == 1 and len(wrong.stderr.strip().splitlines()) == 1
    assert "no pgbench summary" in wrong.stderr


def test_commands_refuse_scale_below_clients_unless_shared_branches_are_asked_for():
    with pytest.raises(UsageError):
        pgbench.init_command(scale=2, clients=4)
    # The article's shape: every client updates the one branch row of scale 1.
    shared = pgbench.init_command(scale=1, clients=10, shared_branches=True)
    assert shared[:4] == ["pgbench", "-i", "-s", "1"]
    with pytest.raises(UsageError):
        pgbench.init_command(scale=0, clients=1, shared_branches=True)
    command = pgbench.run_command(4, 2, 30, 1, log_prefix="pgbench_log")
    assert command[:2] == ["pgbench", "-c"] and "-l" in command and "-P" in command


def test_gzip_logs_as_recorded_runs_keep_them(tmp_path):
    import gzip

    plain = rawfiles.pgbench_log_files(FIXTURES / "pg15", "pgbench_log")
    for path in plain:
        (tmp_path / (path.name + ".gz")).write_bytes(gzip.compress(path.read_bytes()))
    packed = rawfiles.pgbench_log_files(tmp_path, "pgbench_log")
    assert [p.name for p in packed] == [p.name + ".gz" for p in plain]
    packed_log = rawfiles.parse_pgbench_logs(packed)
    assert packed_log.transactions == rawfiles.parse_pgbench_logs(plain).transactions
    broken = tmp_path / "pgbench_log.1.gz"
    broken.write_bytes(b"not gzip")
    with pytest.raises(UsageError):
        rawfiles.parse_pgbench_logs([broken])
