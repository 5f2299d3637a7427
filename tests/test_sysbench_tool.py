"""labs/tools/sysbench.py: command builders, and parsers on real sysbench 1.0.20 output."""

from pathlib import Path

import pytest

from labs.errors import UsageError
from labs.tools import sysbench

FIXTURES = Path(__file__).parent / "fixtures" / "sysbench"


def fixture(name: str) -> str:
    return (FIXTURES / name).read_text()


# ---- commands ---------------------------------------------------------------------------

def test_fileio_run_command_carries_every_option():
    options = sysbench.FileioOptions(total_size_mib=256, test_mode="rndrw", block_size_bytes=16384,
                                     direct=True, fsync_freq=100, threads=2, time_s=30,
                                     report_interval_s=1, rand_seed=42)
    assert sysbench.fileio_command("run", options) == [
        "sysbench", "fileio", "--file-total-size=256M", "--file-num=128",
        "--file-block-size=16384", "--file-test-mode=rndrw", "--file-fsync-freq=100",
        "--threads=2", "--time=30", "--events=0", "--report-interval=1",
        "--file-extra-flags=direct", "--rand-seed=42", "run"]


def test_fileio_prepare_and_cleanup_name_the_same_files():
    options = sysbench.FileioOptions(total_size_mib=8192, file_num=64)
    prepare = sysbench.fileio_command("prepare", options)
    cleanup = sysbench.fileio_command("cleanup", options)
    assert prepare[:5] == cleanup[:5] == ["sysbench", "fileio", "--file-total-size=8192M",
                                          "--file-num=64", "--file-block-size=16384"]
    assert prepare[-1] == "prepare" and cleanup[-1] == "cleanup"
    assert not any(arg.startswith("--file-extra-flags") for arg in prepare)


def test_fileio_buffered_run_has_no_direct_flag():
    argv = sysbench.fileio_command("run", sysbench.FileioOptions(direct=False, rand_seed=1))
    assert "--file-extra-flags=direct" not in argv


@pytest.mark.parametrize("bad", [
    dict(test_mode="randrw"), dict(block_size_bytes=1000), dict(threads=0),
    dict(time_s=0, events=0), dict(rand_seed=0), dict(fsync_freq=-1)])
def test_fileio_refuses_bad_options(bad):
    with pytest.raises(UsageError):
        sysbench.fileio_command("run", sysbench.FileioOptions(**bad))


def test_fileio_refuses_unknown_action():
    with pytest.raises(UsageError, match="unknown action"):
        sysbench.fileio_command("warmup", sysbench.FileioOptions())


def test_oltp_insert_over_the_socket_with_a_fixed_row_count():
    options = sysbench.OltpOptions(tables=2, table_size=10000, threads=4, time_s=0,
                                   events=50000, report_interval_s=5, rand_seed=7)
    assert sysbench.oltp_command("run", options) == [
        "sysbench", "oltp_insert", "--db-driver=mysql", "--mysql-user=root",
        "--mysql-db=sbtest", "--mysql-socket=/run/mysqld/mysqld.sock", "--tables=2",
        "--table-size=10000", "--threads=4", "--time=0", "--events=50000",
        "--report-interval=5", "--rand-seed=7", "run"]


def test_oltp_prepare_over_tcp_with_script_options():
    options = sysbench.OltpOptions(mysql_socket=None, mysql_host="127.0.0.1", mysql_port=13306,
                                   mysql_user="lab", extra=(("rand_type", "uniform"),))
    argv = sysbench.oltp_command("prepare", options)
    assert "--mysql-host=127.0.0.1" in argv and "--mysql-port=13306" in argv
    assert "--rand_type=uniform" in argv
    assert not any(arg.startswith("--mysql-socket") for arg in argv)
    assert not any(arg.startswith(("--threads", "--time", "--events")) for arg in argv)
    assert not any("password" in arg for arg in argv)


@pytest.mark.parametrize("bad", [
    dict(script="oltp_nothing"), dict(mysql_socket=None), dict(mysql_host="127.0.0.1"),
    dict(tables=0), dict(time_s=0, events=0), dict(extra=(("rand_type", "a b"),)),
    dict(extra=(("--evil", "1"),))])
def test_oltp_refuses_bad_options(bad):
    with pytest.raises(UsageError):
        sysbench.oltp_command("run", sysbench.OltpOptions(**bad))


# ---- fileio output ----------------------------------------------------------------------

def test_fileio_rndrw_direct_summary():
    result = sysbench.parse_fileio(fixture("fileio-rndrw-direct.stdout"))
    assert result.test == "random r/w"
    assert result.extra_flags == "directio"
    assert result.block_size == "16KiB"
    assert (result.reads_per_s, result.writes_per_s, result.fsyncs_per_s) == \
        (540.83, 360.55, 1165.52)
    assert (result.read_mib_per_s, result.written_mib_per_s) == (8.45, 5.63)
    general = result.general
    assert general.version == "1.0.20"
    assert general.threads == 1 and general.rand_seed == 42 and general.report_interval_s == 1
    assert general.total_time_s == 10.2052 and general.events == 20968
    assert general.latency == sysbench.Latency(min_ms=0.01, avg_ms=0.48, max_ms=177.85,
                                               percentile=95, percentile_ms=2.81, sum_ms=9982.89)
    assert (general.events_per_thread_avg, general.events_per_thread_stddev) == (20968.0, 0.0)


def test_fileio_rndrw_direct_interval_lines():
    result = sysbench.parse_fileio(fixture("fileio-rndrw-direct.stdout"))
    assert [row.time_s for row in result.intervals] == [float(s) for s in range(1, 11)]
    first = result.intervals[0]
    assert first == sysbench.FileioInterval(time_s=1.0, read_mib_per_s=10.27,
                                            written_mib_per_s=6.85, fsyncs_per_s=1340.99,
                                            latency_percentile=95, latency_percentile_ms=2.106)
    # The report lines average to about the summary (the summary also counts the final fsync).
    mean = sum(row.read_mib_per_s for row in result.intervals) / len(result.intervals)
    assert mean == pytest.approx(result.read_mib_per_s, rel=0.05)


def test_fileio_buffered_run_without_report_lines():
    result = sysbench.parse_fileio(fixture("fileio-rndrw-buffered.stdout"))
    assert result.extra_flags == "(none)"
    assert result.intervals == []
    assert result.general.report_interval_s is None
    # With the page cache in the path the same test runs far faster than with O_DIRECT.
    direct = sysbench.parse_fileio(fixture("fileio-rndrw-direct.stdout"))
    assert result.reads_per_s > 10 * direct.reads_per_s


def test_fileio_four_threads_and_a_two_second_interval():
    result = sysbench.parse_fileio(fixture("fileio-rndrd-4threads.stdout"))
    assert result.general.threads == 4 and result.block_size == "4KiB"
    assert result.writes_per_s == 0.0 and result.written_mib_per_s == 0.0
    assert [row.time_s for row in result.intervals] == [2.0, 4.0]
    assert (result.general.events_per_thread_avg, result.general.events_per_thread_stddev) == \
        (69267.5, 5447.68)


def test_fileio_sequential_write():
    result = sysbench.parse_fileio(fixture("fileio-seqwr-direct.stdout"))
    assert result.test == "sequential write (creation)"
    assert result.reads_per_s == 0.0 and result.written_mib_per_s > 0
    assert all(row.read_mib_per_s == 0.0 for row in result.intervals)


def test_fileio_fatal_error_is_raised_with_its_message():
    with pytest.raises(sysbench.SysbenchParseError,
                       match=r"sysbench failed: Size of file 'test_file.15' is 1.25MiB"):
        sysbench.parse_fileio(fixture("fileio-rndrd-after-seqwr.stdout"), "after-seqwr")


@pytest.mark.parametrize("name", ["fileio-prepare.stdout", "fileio-cleanup.stdout"])
def test_prepare_and_cleanup_are_not_run_results(name):
    text = fixture(name)
    sysbench.raise_on_fatal(text)  # they succeeded
    with pytest.raises(sysbench.SysbenchParseError, match="Number of threads"):
        sysbench.parse_fileio(text, name)


# ---- OLTP output ------------------------------------------------------------------------

def test_oltp_insert_timed_run_summary():
    result = sysbench.parse_oltp(fixture("oltp-insert-run-time.stdout"))
    assert (result.reads, result.writes, result.other, result.queries) == (0, 6358, 0, 6358)
    assert (result.transactions, result.tps, result.qps) == (6358, 634.19, 634.19)
    assert (result.ignored_errors, result.ignored_errors_per_s) == (0, 0.0)
    assert (result.reconnects, result.reconnects_per_s) == (0, 0.0)
    assert result.general.threads == 2 and result.general.total_time_s == 10.0239
    assert result.general.latency.percentile_ms == 11.45
    assert result.general.latency.sum_ms == 20001.45


def test_oltp_insert_interval_lines():
    result = sysbench.parse_oltp(fixture("oltp-insert-run-time.stdout"))
    assert len(result.intervals) == 10
    assert result.intervals[0] == sysbench.OltpInterval(
        time_s=1.0, threads=2, tps=1405.34, qps=1405.34, reads_per_s=0.0, writes_per_s=1405.34,
        other_per_s=0.0, latency_percentile=95, latency_percentile_ms=4.03, errors_per_s=0.0,
        reconnects_per_s=0.0)
    assert result.intervals[-1].tps == 279.03
    # Every insert is its own autocommit transaction: the per-second lines add up to the total.
    assert sum(row.tps for row in result.intervals) == pytest.approx(result.transactions, rel=0.02)


def test_oltp_insert_fixed_event_count():
    result = sysbench.parse_oltp(fixture("oltp-insert-run-events.stdout"))
    assert result.transactions == result.general.events == 3000
    assert result.intervals == []
    assert result.tps == pytest.approx(3000 / result.general.total_time_s, rel=0.001)


def test_oltp_connection_failure_names_the_database():
    with pytest.raises(sysbench.SysbenchParseError, match="Unknown database 'nosuchdb'"):
        sysbench.parse_oltp(fixture("oltp-insert-missing-db.stdout"), "missing-db")


def test_oltp_parser_refuses_fileio_output():
    with pytest.raises(sysbench.SysbenchParseError, match="SQL statistics"):
        sysbench.parse_oltp(fixture("fileio-rndrw-direct.stdout"), "fileio")


def test_not_sysbench_output():
    with pytest.raises(sysbench.SysbenchParseError, match="not sysbench output"):
        sysbench.parse_oltp("hello\n", "greeting")


def test_a_report_line_of_an_unknown_form_is_an_error():
    text = fixture("oltp-insert-run-time.stdout").replace("reconn/s: 0.00", "reconn/s: n/a", 1)
    with pytest.raises(sysbench.SysbenchParseError, match="line 13"):
        sysbench.parse_oltp(text, "edited")


def test_truncated_output_is_an_error():
    text = fixture("oltp-insert-run-time.stdout")
    with pytest.raises(sysbench.SysbenchParseError, match="Latency"):
        sysbench.parse_oltp(text[:text.index("Latency (ms):")], "truncated")


def test_fixture_stderr_files_are_empty():
    # sysbench 1.0.20 prints even its FATAL errors on stdout: a lab must parse stdout.
    for path in FIXTURES.glob("*.stderr"):
        assert path.read_text() == "", path.name
