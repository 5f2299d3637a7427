"""pgbench: build its command lines and parse what it prints and logs.

Three outputs are parsed:

- the summary on stdout, in both forms: PostgreSQL 14 and newer print
  `tps = N (without initial connection time)`; older versions print two lines,
  `tps = N (including connections establishing)` and `tps = N (excluding ...)`;
- the progress lines `-P` prints on stderr (`progress: 5.0 s, 1010.6 tps, lat 9.886 ms
  stddev 4.324[, 0 failed]`);
- the per-transaction logs `-l` writes, one file per thread (`prefix.PID`, `prefix.PID.1`,
  ...), lines `client_id transaction_no time_us script_no time_epoch time_us
  [schedule_lag] [retries]`, where the latency field may read `skipped` or `failed`
  (or `serialization` / `deadlock` with --failures-detailed): those lines are counted,
  never dropped. Log files may be gzip-compressed (`.gz`), as recorded runs keep them.

Source of the formats: the pgbench pages of the PostgreSQL documentation (13, 14, 15).
"""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass, field

import numpy as np

from labs.errors import LabError, UsageError


class PgbenchParseError(LabError):
    """pgbench output that cannot be read."""


# ---- commands ---------------------------------------------------------------------------

def init_command(scale: int, clients: int, database: str = "postgres",
                 extra: list[str] | None = None, *, shared_branches: bool = False) -> list[str]:
    """`pgbench -i`: scale must be at least the client count, or the run measures row locks
    on the few pgbench_branches rows instead of the storage. `shared_branches`: the caller
    wants those locks (clients that queue on one row commit one after another, so each
    commit's wait adds up in full, as in a run at pgbench's default scale 1)."""
    if scale < 1:
        raise UsageError(f"pgbench scale must be at least 1 (got {scale})")
    if scale < clients and not shared_branches:
        raise UsageError(f"pgbench scale {scale} is below the client count {clients}: "
                         f"the run would measure row contention; use a scale >= {clients}")
    return ["pgbench", "-i", "-s", str(scale), "--quiet", *(extra or []), database]


def run_command(clients: int, threads: int, duration_s: int, progress_s: int = 1,
                log_prefix: str | None = None, database: str = "postgres",
                extra: list[str] | None = None, program: str = "pgbench") -> list[str]:
    """A timed pgbench run with progress lines and, if log_prefix is given, -l logs.
    `program`: how to call pgbench (a path, where the one on PATH is a wrapper)."""
    if clients < 1 or threads < 1 or duration_s < 1:
        raise UsageError("pgbench needs at least 1 client, 1 thread and 1 second")
    if threads > clients:
        raise UsageError(f"pgbench threads ({threads}) cannot exceed clients ({clients})")
    command = [program, "-c", str(clients), "-j", str(threads), "-T", str(duration_s),
               "-P", str(progress_s), "--no-vacuum"]
    if log_prefix:
        command += ["-l", f"--log-prefix={log_prefix}"]
    return [*command, *(extra or []), database]


# ---- summary ----------------------------------------------------------------------------

@dataclass
class PgbenchSummary:
    tps: float
    transactions: int
    failed: int
    latency_avg_ms: float | None
    latency_stddev_ms: float | None
    initial_connection_ms: float | None
    tps_including_connections: float | None
    summary_form: str  # "without-initial-connection" (14+) or "connections-establishing"
    version: str | None = None
    scale: int | None = None
    clients: int | None = None
    threads: int | None = None
    duration_s: int | None = None


_VERSION = re.compile(r"^pgbench \((?P<version>[^ )]+)")
_FIELDS = {
    "scale": re.compile(r"^scaling factor: (\d+)"),
    "clients": re.compile(r"^number of clients: (\d+)"),
    "threads": re.compile(r"^number of threads: (\d+)"),
    "duration_s": re.compile(r"^duration: (\d+) s"),
    "transactions": re.compile(r"^number of transactions actually processed: (\d+)"),
    "failed": re.compile(r"^number of failed transactions: (\d+)"),
}
_LATENCY = re.compile(r"^latency (average|stddev) = ([\d.]+|NaN) ms")
_CONNECTION = re.compile(r"^initial connection time = ([\d.]+) ms")
_TPS = re.compile(
    r"^tps = ([\d.]+) \((without initial connection time|including connections "
    r"establishing|excluding connections establishing)\)")


def parse_summary(text: str, source: str = "pgbench output") -> PgbenchSummary:
    """Parse pgbench's stdout (lines it does not know, e.g. progress lines, are ignored)."""
    values: dict[str, int] = {}
    latency: dict[str, float | None] = {}
    tps: dict[str, float] = {}
    connection_ms = None
    version = None
    for line in text.splitlines():
        line = line.strip()
        if match := _VERSION.match(line):
            version = match["version"]
        for name, pattern in _FIELDS.items():
            if match := pattern.match(line):
                values[name] = int(match[1])
        if match := _LATENCY.match(line):
            latency[match[1]] = None if match[2] == "NaN" else float(match[2])
        if match := _CONNECTION.match(line):
            connection_ms = float(match[1])
        if match := _TPS.match(line):
            tps[match[2].split()[0]] = float(match[1])
    if "transactions" not in values:
        raise PgbenchParseError(
            f"{source}: no pgbench summary (no 'number of transactions actually processed' "
            f"line)")
    if "without" in tps:
        form, value, including = "without-initial-connection", tps["without"], None
    elif "excluding" in tps:
        form, value, including = "connections-establishing", tps["excluding"], \
            tps.get("including")
    else:
        raise PgbenchParseError(f"{source}: no 'tps = ...' line in the pgbench summary")
    return PgbenchSummary(
        tps=value, transactions=values["transactions"], failed=values.get("failed", 0),
        latency_avg_ms=latency.get("average"), latency_stddev_ms=latency.get("stddev"),
        initial_connection_ms=connection_ms, tps_including_connections=including,
        summary_form=form, version=version, scale=values.get("scale"),
        clients=values.get("clients"), threads=values.get("threads"),
        duration_s=values.get("duration_s"))


# ---- progress lines ---------------------------------------------------------------------

_PROGRESS = re.compile(
    r"^progress: (?P<time_s>[\d.]+) s, (?P<tps>[\d.]+) tps, lat (?P<lat>[\d.]+|NaN) ms "
    r"stddev (?P<sd>[\d.]+|NaN)(?P<rest>.*)$")
_PROGRESS_EXTRA = re.compile(r"(?:, )?(?:(\d+) (failed|retried|retries|skipped)|"
                             r"lag ([\d.]+) ms)")


def parse_progress(text: str) -> list[dict]:
    """One row per progress line: time_s, tps, latency_avg_ms, latency_stddev_ms, failed."""
    rows = []
    for line in text.splitlines():
        match = _PROGRESS.match(line.strip())
        if not match:
            continue
        row = {"time_s": float(match["time_s"]), "tps": float(match["tps"]),
               "latency_avg_ms": float(match["lat"]) if match["lat"] != "NaN" else None,
               "latency_stddev_ms": float(match["sd"]) if match["sd"] != "NaN" else None,
               "failed": 0}
        for extra in _PROGRESS_EXTRA.finditer(match["rest"]):
            if extra[2] == "failed":
                row["failed"] = int(extra[1])
            elif extra[3]:
                row["lag_ms"] = float(extra[3])
        rows.append(row)
    return rows


# ---- per-transaction logs ---------------------------------------------------------------

FAILED_MARKERS = {"failed", "serialization", "deadlock"}


@dataclass
class TransactionLog:
    """Every line of one run's -l files (all threads)."""

    files: list[str]
    transactions: int = 0  # every line, whatever its outcome
    skipped: int = 0
    failed: int = 0
    latencies_us: np.ndarray = field(default_factory=lambda: np.array([], dtype=np.int64))
    epoch_s: np.ndarray = field(default_factory=lambda: np.array([], dtype=np.float64))

    def percentile_ms(self, percent: float) -> float | None:
        if len(self.latencies_us) == 0:
            return None
        return float(np.percentile(self.latencies_us, percent)) / 1000.0

    def per_second(self) -> list[dict]:
        """Completed (successful) transactions per wall-clock second, from the log."""
        if len(self.epoch_s) == 0:
            return []
        start = np.floor(self.epoch_s.min())
        seconds = np.floor(self.epoch_s - start).astype(int)
        counts = np.bincount(seconds)
        return [{"second": int(s), "transactions": int(c)} for s, c in enumerate(counts)]


def parse_log_texts(logs: list[tuple[str, str]]) -> TransactionLog:
    """The -l logs of one run (one per thread), as (name, text) pairs."""
    if not logs:
        raise UsageError("no pgbench log files given")
    result = TransactionLog(files=[name for name, _ in logs])
    latencies: list[int] = []
    epochs: list[float] = []
    for path, text in logs:
        lines = text.splitlines()
        for number, line in enumerate(lines, start=1):
            parts = line.split()
            if not parts:
                continue
            if len(parts) < 6:
                raise PgbenchParseError(
                    f"{path}: line {number} has {len(parts)} fields, a pgbench -l line has "
                    f"at least 6 (is this an aggregated --aggregate-interval log?)")
            result.transactions += 1
            outcome = parts[2]
            if outcome == "skipped":
                result.skipped += 1
                continue
            if outcome in FAILED_MARKERS:
                result.failed += 1
                continue
            try:
                latencies.append(int(outcome))
                epochs.append(int(parts[4]) + int(parts[5]) / 1e6)
            except ValueError:
                raise PgbenchParseError(
                    f"{path}: line {number}: latency field {outcome!r} is not a number, "
                    f"'skipped' or 'failed'") from None
    result.latencies_us = np.array(latencies, dtype=np.int64)
    result.epoch_s = np.array(epochs, dtype=np.float64)
    return result


def log_file_names(names: list[str], prefix: str) -> list[str]:
    """The -l files of one run among `names`: `prefix.PID` and `prefix.PID.N` (thread N),
    maybe `.gz`, in thread order."""
    pattern = re.compile(rf"^{re.escape(prefix)}\.\d+(\.\d+)?(\.gz)?$")
    return sorted((n for n in names if pattern.match(n)),
                  key=lambda n: [int(x) for x in n[len(prefix) + 1:]
                                 .removesuffix(".gz").split(".")])


def summarize(summary: PgbenchSummary, log: TransactionLog | None = None) -> dict:
    """The flat record `python -m labs parse pgbench --json` prints."""
    record = asdict(summary)
    if log is not None:
        record.update({
            "log_files": len(log.files), "log_transactions": log.transactions,
            "log_skipped": log.skipped, "log_failed": log.failed,
            "latency_p50_ms": log.percentile_ms(50), "latency_p95_ms": log.percentile_ms(95),
            "latency_p99_ms": log.percentile_ms(99),
            "latency_max_ms": log.percentile_ms(100),
        })
    return record
