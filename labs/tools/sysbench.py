"""sysbench 1.0.20: build its command lines and parse what it prints.

Commands (lists of argv, nothing is run here):

- `fileio_command`: `sysbench fileio` prepare/run/cleanup with the file options the devices
  chapter varies (total size, test mode, block size, O_DIRECT, fsync frequency);
- `oltp_command`: the bundled OLTP Lua scripts (`oltp_insert` above all) against MariaDB,
  over the unix socket by default (root authenticates by unix_socket: no password).

Parsers take sysbench's stdout (it prints its results *and* its FATAL errors there) and
return dataclasses:

- `parse_fileio`: the "File operations" / "Throughput" summary (reads/s, writes/s, fsyncs/s,
  read and written MiB/s), plus the shared "General statistics" and "Latency (ms)" blocks;
- `parse_oltp`: the "SQL statistics" summary (queries by kind, transactions and queries per
  second, ignored errors, reconnects), plus the shared blocks;
- `parse_intervals`: the `--report-interval` lines, both forms
  (`[ 1s ] thds: 2 tps: ... qps: ... (r/w/o: ...) lat (ms,95%): ... err/s: ... reconn/s: ...`
  and fileio's `[ 1s ] reads: X MiB/s writes: Y MiB/s fsyncs: Z/s latency (ms,95%): L`).

The formats are those of sysbench 1.0.20 as Debian bookworm ships it (`sysbench 1.0.20+ds-5`);
tests/fixtures/sysbench/ holds real outputs.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from labs.errors import LabError, UsageError

FILEIO_MODES = ("seqwr", "seqrewr", "seqrd", "rndrd", "rndwr", "rndrw")
FILEIO_ACTIONS = ("prepare", "run", "cleanup")
OLTP_ACTIONS = ("prepare", "run", "cleanup")
# The Lua scripts Debian's sysbench package installs in /usr/share/sysbench.
OLTP_SCRIPTS = ("oltp_insert", "oltp_read_write", "oltp_write_only", "oltp_read_only",
                "oltp_update_index", "oltp_update_non_index", "oltp_delete", "oltp_point_select",
                "bulk_insert", "select_random_points", "select_random_ranges")
DEFAULT_SOCKET = "/run/mysqld/mysqld.sock"


class SysbenchParseError(LabError):
    """sysbench output that cannot be read, or that reports a FATAL error."""


# ---- commands ---------------------------------------------------------------------------

@dataclass(frozen=True)
class FileioOptions:
    """`sysbench fileio` options. Sizes in MiB; block size in bytes."""

    total_size_mib: int = 2048
    test_mode: str = "rndrw"
    block_size_bytes: int = 16384
    direct: bool = False  # --file-extra-flags=direct: O_DIRECT, the page cache is bypassed
    fsync_freq: int = 100  # fsync() after this many requests; 0: never (but at the end)
    file_num: int = 128
    threads: int = 1
    time_s: int = 10
    events: int = 0  # 0: no limit on events, the run ends at time_s
    report_interval_s: int = 0
    rand_seed: int | None = None  # sysbench's 0 means "seed from the clock": pass a seed

    def check(self) -> None:
        if self.test_mode not in FILEIO_MODES:
            raise UsageError(f"sysbench fileio: unknown test mode {self.test_mode!r}; "
                             f"known: {', '.join(FILEIO_MODES)}")
        if self.total_size_mib < 1 or self.file_num < 1:
            raise UsageError("sysbench fileio needs at least 1 MiB and 1 file")
        if self.block_size_bytes < 512 or self.block_size_bytes % 512:
            raise UsageError(f"sysbench fileio: block size {self.block_size_bytes} is not a "
                             f"multiple of 512 bytes (O_DIRECT needs aligned I/O)")
        if self.threads < 1 or self.fsync_freq < 0 or self.report_interval_s < 0:
            raise UsageError("sysbench fileio: threads >= 1, fsync_freq >= 0, "
                             "report_interval_s >= 0")
        if self.time_s < 0 or self.events < 0 or (self.time_s == 0 and self.events == 0):
            raise UsageError("sysbench fileio: give a time or an event limit (both 0 runs "
                             "forever)")
        if self.rand_seed is not None and self.rand_seed < 1:
            raise UsageError("sysbench --rand-seed must be positive (0 seeds from the clock)")


def fileio_command(action: str, options: FileioOptions) -> list[str]:
    """`sysbench fileio ... prepare|run|cleanup`. Run it in the directory to test:
    sysbench creates test_file.0 ... test_file.N-1 in its working directory."""
    if action not in FILEIO_ACTIONS:
        raise UsageError(f"sysbench fileio: unknown action {action!r}")
    options.check()
    argv = ["sysbench", "fileio", f"--file-total-size={options.total_size_mib}M",
            f"--file-num={options.file_num}", f"--file-block-size={options.block_size_bytes}"]
    if action == "run":
        argv += [f"--file-test-mode={options.test_mode}",
                 f"--file-fsync-freq={options.fsync_freq}", f"--threads={options.threads}",
                 f"--time={options.time_s}", f"--events={options.events}",
                 f"--report-interval={options.report_interval_s}"]
        if options.direct:
            argv.append("--file-extra-flags=direct")
        if options.rand_seed is not None:
            argv.append(f"--rand-seed={options.rand_seed}")
    return [*argv, action]


@dataclass(frozen=True)
class OltpOptions:
    """Options of the OLTP Lua scripts against MySQL/MariaDB.

    The default connection is the server's unix socket as root: inside the storage-labs
    MariaDB container root authenticates by unix_socket, so no password is ever passed.
    """

    script: str = "oltp_insert"
    mysql_db: str = "sbtest"
    mysql_user: str = "root"
    mysql_socket: str | None = DEFAULT_SOCKET
    mysql_host: str | None = None  # TCP instead of the socket (then set mysql_socket=None)
    mysql_port: int | None = None
    tables: int = 1
    table_size: int = 10000
    threads: int = 1
    time_s: int = 10
    events: int = 0  # 0: no limit; with events > 0 and time_s = 0 the run is a fixed count
    report_interval_s: int = 0
    rand_seed: int | None = None
    extra: tuple[tuple[str, str], ...] = ()  # script options, e.g. (("auto_inc", "on"),)

    def check(self) -> None:
        if self.script not in OLTP_SCRIPTS:
            raise UsageError(f"sysbench: unknown OLTP script {self.script!r}; "
                             f"known: {', '.join(OLTP_SCRIPTS)}")
        if (self.mysql_socket is None) == (self.mysql_host is None):
            raise UsageError("sysbench: connect by mysql_socket or by mysql_host, not both "
                             "and not neither")
        if self.tables < 1 or self.table_size < 0 or self.threads < 1:
            raise UsageError("sysbench: tables >= 1, table_size >= 0, threads >= 1")
        if self.time_s < 0 or self.events < 0 or (self.time_s == 0 and self.events == 0):
            raise UsageError("sysbench: give a time or an event limit (both 0 runs forever)")
        if self.report_interval_s < 0:
            raise UsageError("sysbench: report_interval_s >= 0")
        if self.rand_seed is not None and self.rand_seed < 1:
            raise UsageError("sysbench --rand-seed must be positive (0 seeds from the clock)")
        for name, value in self.extra:
            if not re.fullmatch(r"[a-z_]+", name) or not re.fullmatch(r"[A-Za-z0-9_.,-]+",
                                                                        str(value)):
                raise UsageError(f"sysbench: bad script option {name}={value!r}")


def oltp_command(action: str, options: OltpOptions) -> list[str]:
    """`sysbench <script> --db-driver=mysql ... prepare|run|cleanup`."""
    if action not in OLTP_ACTIONS:
        raise UsageError(f"sysbench {options.script}: unknown action {action!r}")
    options.check()
    argv = ["sysbench", options.script, "--db-driver=mysql",
            f"--mysql-user={options.mysql_user}", f"--mysql-db={options.mysql_db}"]
    if options.mysql_socket is not None:
        argv.append(f"--mysql-socket={options.mysql_socket}")
    else:
        argv.append(f"--mysql-host={options.mysql_host}")
        if options.mysql_port is not None:
            argv.append(f"--mysql-port={options.mysql_port}")
    argv += [f"--tables={options.tables}", f"--table-size={options.table_size}"]
    argv += [f"--{name}={value}" for name, value in options.extra]
    if action == "run":
        argv += [f"--threads={options.threads}", f"--time={options.time_s}",
                 f"--events={options.events}", f"--report-interval={options.report_interval_s}"]
        if options.rand_seed is not None:
            argv.append(f"--rand-seed={options.rand_seed}")
    return [*argv, action]


# ---- summaries --------------------------------------------------------------------------

@dataclass
class Latency:
    """The "Latency (ms)" block. percentile is the one --percentile chose (95 by default)."""

    min_ms: float
    avg_ms: float
    max_ms: float
    percentile: int | None
    percentile_ms: float | None
    sum_ms: float


@dataclass
class General:
    """What every sysbench test prints: version, threads, time, events, latency, fairness."""

    version: str
    threads: int
    total_time_s: float
    events: int
    latency: Latency
    events_per_thread_avg: float
    events_per_thread_stddev: float
    exec_time_per_thread_avg_s: float
    exec_time_per_thread_stddev_s: float
    rand_seed: int | None = None
    report_interval_s: int | None = None


@dataclass
class FileioInterval:
    time_s: float
    read_mib_per_s: float
    written_mib_per_s: float
    fsyncs_per_s: float
    latency_percentile: int
    latency_percentile_ms: float


@dataclass
class OltpInterval:
    time_s: float
    threads: int
    tps: float
    qps: float
    reads_per_s: float
    writes_per_s: float
    other_per_s: float
    latency_percentile: int
    latency_percentile_ms: float
    errors_per_s: float
    reconnects_per_s: float


@dataclass
class FileioResult:
    general: General
    test: str  # sysbench's words: "random r/w", "sequential write (creation)", ...
    block_size: str  # as printed: "16KiB"
    extra_flags: str  # "directio" or "(none)"
    reads_per_s: float
    writes_per_s: float
    fsyncs_per_s: float
    read_mib_per_s: float
    written_mib_per_s: float
    intervals: list[FileioInterval] = field(default_factory=list)


@dataclass
class OltpResult:
    general: General
    reads: int
    writes: int
    other: int
    queries: int
    transactions: int
    tps: float
    qps: float
    ignored_errors: int
    ignored_errors_per_s: float
    reconnects: int
    reconnects_per_s: float
    intervals: list[OltpInterval] = field(default_factory=list)


_NUM = r"([0-9]+(?:\.[0-9]+)?)"
_VERSION = re.compile(r"^sysbench (\S+)")
_FATAL = re.compile(r"^FATAL: (.*)$")


def raise_on_fatal(text: str, source: str = "sysbench output") -> None:
    """sysbench prints its FATAL errors on stdout (exit code 1): raise them as one line."""
    fatal = [m[1] for line in text.splitlines() if (m := _FATAL.match(line.strip()))]
    if fatal:
        raise SysbenchParseError(f"{source}: sysbench failed: {'; '.join(fatal)}")



def _block(text: str, source: str, heading: str) -> dict[str, str]:
    """The `name: value` lines under a heading such as 'General statistics:', until a blank."""
    lines = text.splitlines()
    for index, line in enumerate(lines):
        if line.strip() == heading:
            values: dict[str, str] = {}
            for entry in lines[index + 1:]:
                if not entry.strip():
                    break
                name, sep, value = entry.strip().partition(":")
                if sep:
                    values[name.strip()] = value.strip()
            return values
    raise SysbenchParseError(f"{source}: no '{heading}' block (did the run finish?)")


def _float(values: dict[str, str], name: str, source: str, suffix: str = "") -> float:
    if name not in values:
        raise SysbenchParseError(f"{source}: no '{name}' line")
    text = values[name].split()[0]
    if suffix:
        text = text.removesuffix(suffix)
    try:
        return float(text)
    except ValueError:
        raise SysbenchParseError(f"{source}: '{name}' is {values[name]!r}, not a number") \
            from None


def _pair(values: dict[str, str], name: str, source: str) -> tuple[float, float]:
    if name not in values:
        raise SysbenchParseError(f"{source}: no '{name}' line")
    match = re.fullmatch(rf"{_NUM}/{_NUM}", values[name])
    if not match:
        raise SysbenchParseError(f"{source}: '{name}' is {values[name]!r}, not avg/stddev")
    return float(match[1]), float(match[2])


def _general(text: str, source: str) -> General:
    version = next((m[1] for line in text.splitlines() if (m := _VERSION.match(line))), None)
    if version is None:
        raise SysbenchParseError(f"{source}: no 'sysbench <version>' line: not sysbench output")
    threads = re.search(r"^Number of threads: (\d+)$", text, re.M)
    if threads is None:
        raise SysbenchParseError(f"{source}: no 'Number of threads' line (not a run's output?)")
    seed = re.search(r"^Initializing random number generator from seed \((\d+)\)", text, re.M)
    interval = re.search(r"^Report intermediate results every (\d+) second", text, re.M)
    stats = _block(text, source, "General statistics:")
    latency = _block(text, source, "Latency (ms):")
    fairness = _block(text, source, "Threads fairness:")
    percentile = next(((int(m[1]), name) for name in latency
                       if (m := re.fullmatch(r"(\d+)th percentile", name))), None)
    events_avg, events_sd = _pair(fairness, "events (avg/stddev)", source)
    exec_avg, exec_sd = _pair(fairness, "execution time (avg/stddev)", source)
    return General(
        version=version, threads=int(threads[1]),
        total_time_s=_float(stats, "total time", source, "s"),
        events=int(_float(stats, "total number of events", source)),
        latency=Latency(
            min_ms=_float(latency, "min", source), avg_ms=_float(latency, "avg", source),
            max_ms=_float(latency, "max", source),
            percentile=percentile[0] if percentile else None,
            percentile_ms=_float(latency, percentile[1], source) if percentile else None,
            sum_ms=_float(latency, "sum", source)),
        events_per_thread_avg=events_avg, events_per_thread_stddev=events_sd,
        exec_time_per_thread_avg_s=exec_avg, exec_time_per_thread_stddev_s=exec_sd,
        rand_seed=int(seed[1]) if seed else None,
        report_interval_s=int(interval[1]) if interval else None)


def parse_fileio(text: str, source: str = "sysbench fileio output") -> FileioResult:
    """A `sysbench fileio ... run` stdout."""
    raise_on_fatal(text, source)
    general = _general(text, source)
    operations = _block(text, source, "File operations:")
    throughput = _block(text, source, "Throughput:")
    test = re.search(r"^Doing (.+) test$", text, re.M)
    block = re.search(r"^Block size (\S+)$", text, re.M)
    flags = re.search(r"^Extra file open flags: (.+)$", text, re.M)
    if not (test and block and flags):
        raise SysbenchParseError(f"{source}: the fileio header (test, block size, open flags) "
                                 f"is missing")
    return FileioResult(
        general=general, test=test[1], block_size=block[1], extra_flags=flags[1].strip(),
        reads_per_s=_float(operations, "reads/s", source),
        writes_per_s=_float(operations, "writes/s", source),
        fsyncs_per_s=_float(operations, "fsyncs/s", source),
        read_mib_per_s=_float(throughput, "read, MiB/s", source),
        written_mib_per_s=_float(throughput, "written, MiB/s", source),
        intervals=[row for row in parse_intervals(text, source)
                   if isinstance(row, FileioInterval)])


_COUNT_RATE = re.compile(rf"^(\d+)\s+\({_NUM} per sec\.\)$")


def _count_rate(values: dict[str, str], name: str, source: str) -> tuple[int, float]:
    if name not in values:
        raise SysbenchParseError(f"{source}: no '{name}' line in the SQL statistics")
    match = _COUNT_RATE.match(values[name])
    if not match:
        raise SysbenchParseError(f"{source}: '{name}' is {values[name]!r}, not "
                                 f"'N (R per sec.)'")
    return int(match[1]), float(match[2])


def parse_oltp(text: str, source: str = "sysbench OLTP output") -> OltpResult:
    """A `sysbench oltp_* ... run` stdout (any of the OLTP Lua scripts)."""
    raise_on_fatal(text, source)
    general = _general(text, source)
    # "queries performed:" nests read/write/other/total one level deeper than the rest of the
    # block; all of it sits under "SQL statistics:" until the first blank line.
    sql = _block(text, source, "SQL statistics:")
    transactions, tps = _count_rate(sql, "transactions", source)
    queries, qps = _count_rate(sql, "queries", source)
    errors, errors_per_s = _count_rate(sql, "ignored errors", source)
    reconnects, reconnects_per_s = _count_rate(sql, "reconnects", source)
    total = int(_float(sql, "total", source))
    if total != queries:
        raise SysbenchParseError(f"{source}: queries performed total {total} differs from "
                                 f"queries {queries}")
    return OltpResult(
        general=general, reads=int(_float(sql, "read", source)),
        writes=int(_float(sql, "write", source)), other=int(_float(sql, "other", source)),
        queries=queries, transactions=transactions, tps=tps, qps=qps,
        ignored_errors=errors, ignored_errors_per_s=errors_per_s, reconnects=reconnects,
        reconnects_per_s=reconnects_per_s,
        intervals=[row for row in parse_intervals(text, source)
                   if isinstance(row, OltpInterval)])


# ---- --report-interval lines ------------------------------------------------------------

_OLTP_LINE = re.compile(
    rf"^\[ {_NUM}s \] thds: (\d+) tps: {_NUM} qps: {_NUM} \(r/w/o: {_NUM}/{_NUM}/{_NUM}\) "
    rf"lat \(ms,(\d+)%\): {_NUM} err/s: {_NUM} reconn/s: {_NUM}$")
_FILEIO_LINE = re.compile(
    rf"^\[ {_NUM}s \] reads: {_NUM} MiB/s writes: {_NUM} MiB/s fsyncs: {_NUM}/s "
    rf"latency \(ms,(\d+)%\): {_NUM}$")

# With --rate, sysbench also prints the event queue: not a throughput report.
_RATE_LINE = re.compile(rf"^\[ {_NUM}s \] queue length: \d+, concurrency: \d+$")


def parse_intervals(text: str, source: str = "sysbench output"
                    ) -> list[FileioInterval | OltpInterval]:
    """Every `[ Ns ] ...` report line, in order. A line that starts like one but does not
    read as either form is an error (a format this parser does not know)."""
    rows: list[FileioInterval | OltpInterval] = []
    for number, line in enumerate(text.splitlines(), start=1):
        line = line.strip()
        if not line.startswith("[ ") or _RATE_LINE.match(line):
            continue
        if match := _OLTP_LINE.match(line):
            g = match.groups()
            rows.append(OltpInterval(
                time_s=float(g[0]), threads=int(g[1]), tps=float(g[2]), qps=float(g[3]),
                reads_per_s=float(g[4]), writes_per_s=float(g[5]), other_per_s=float(g[6]),
                latency_percentile=int(g[7]), latency_percentile_ms=float(g[8]),
                errors_per_s=float(g[9]), reconnects_per_s=float(g[10])))
        elif match := _FILEIO_LINE.match(line):
            g = match.groups()
            rows.append(FileioInterval(
                time_s=float(g[0]), read_mib_per_s=float(g[1]), written_mib_per_s=float(g[2]),
                fsyncs_per_s=float(g[3]), latency_percentile=int(g[4]),
                latency_percentile_ms=float(g[5])))
        else:
            raise SysbenchParseError(f"{source}: line {number} looks like a report line but "
                                     f"is not one sysbench 1.0.20 prints: {line[:80]!r}")
    return rows
