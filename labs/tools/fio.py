"""fio: build job command lines and turn fio's JSON (or JSON+) output into tidy rows.

fio is the flexible I/O tester (https://fio.readthedocs.io). The labs run it with
`--output-format=json+`, which is the JSON output plus latency histogram bins; the parser
reads both. fio may print notes before the JSON ("note: both iodepth >= 1 and synchronous
I/O engine are selected ...") and warnings after it, so parsing starts at the first `{`
and stops where the JSON object ends.

One row per job and direction that did I/O: a job that never started, or the write side
of a read-only job, has no row.
"""

from __future__ import annotations

import json
import shlex
from dataclasses import dataclass, field
from typing import Any

from labs.errors import LabError, UsageError

DIRECTIONS = ("read", "write")
# fio's percentile keys, as printed with its default percentile_list.
PERCENTILE_KEYS = {"clat_p50_us": "50.000000", "clat_p99_us": "99.000000",
                   "clat_p999_us": "99.900000"}


class FioError(LabError):
    """fio's output cannot be read, or a fio job reported an error."""


@dataclass(frozen=True)
class FioJob:
    """One fio job; `options` holds any further fio option (name -> value)."""

    name: str
    filename: str
    rw: str
    bs: str = "4k"
    iodepth: int = 1
    direct: bool = True
    ioengine: str = "libaio"
    size: str | None = None
    runtime_s: float | None = None
    seed: int | None = None
    options: dict[str, str | int] = field(default_factory=dict)

    def arguments(self) -> list[str]:
        arguments = [f"--name={self.name}", f"--filename={self.filename}", f"--rw={self.rw}",
                     f"--bs={self.bs}", f"--iodepth={self.iodepth}",
                     f"--direct={1 if self.direct else 0}", f"--ioengine={self.ioengine}"]
        if self.size is not None:
            arguments.append(f"--size={self.size}")
        if self.runtime_s is not None:
            # time_based: run for the whole runtime even if `size` is covered earlier.
            arguments += [f"--runtime={self.runtime_s:g}", "--time_based"]
        if self.seed is not None:
            # Same seed, same offsets: every configuration sees the same random pattern.
            arguments += [f"--randseed={self.seed}", "--randrepeat=0"]
        arguments += [f"--{key}={value}" for key, value in self.options.items()]
        return arguments


def fio_command(jobs: list[FioJob], output_format: str = "json+",
                global_options: dict[str, str | int] | None = None,
                sequential: bool = True) -> list[str]:
    """The argv of one fio run; jobs run one after another (stonewall) unless not sequential."""
    if not jobs:
        raise UsageError("fio_command: no jobs")
    argv = ["fio", f"--output-format={output_format}"]
    argv += [f"--{key}={value}" for key, value in (global_options or {}).items()]
    for index, job in enumerate(jobs):
        argv += job.arguments()
        if index > 0 and sequential:
            # Jobs must not overlap: each one measures a configuration on its own.
            argv.append("--stonewall")
    return argv


def fio_command_line(jobs: list[FioJob], **kwargs: Any) -> str:
    return shlex.join(fio_command(jobs, **kwargs))


def load_fio_json(text: str, source: str = "fio output") -> dict[str, Any]:
    """The JSON object in fio's output, skipping notes printed before or after it."""
    start = text.find("\n{")
    start = 0 if text.startswith("{") else (start + 1 if start >= 0 else text.find("{"))
    if start < 0:
        raise FioError(f"{source}: no JSON object in fio's output")
    try:
        document, _end = json.JSONDecoder().raw_decode(text, start)
    except json.JSONDecodeError as error:
        raise FioError(
            f"{source}: fio's JSON is malformed ({error.msg} at char {error.pos})") from None
    if not isinstance(document, dict) or not isinstance(document.get("jobs"), list):
        raise FioError(f"{source}: fio's JSON has no 'jobs' list")
    return document


def _number(value: Any, source: str, what: str) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise FioError(f"{source}: {what} is {value!r}, not a number")
    return float(value)


def fio_rows(document: dict[str, Any], source: str = "fio output") -> list[dict[str, Any]]:
    """One dict per job and direction that did I/O (latencies in microseconds)."""
    rows = []
    for index, job in enumerate(document["jobs"]):
        if not isinstance(job, dict) or "jobname" not in job:
            raise FioError(f"{source}: job {index} has no 'jobname'")
        name = job["jobname"]
        for op in DIRECTIONS:
            stats = job.get(op)
            if not isinstance(stats, dict):
                raise FioError(f"{source}: job {name!r} has no '{op}' section")
            total_ios = int(_number(stats.get("total_ios"), source, f"{name}.{op}.total_ios"))
            if total_ios == 0:
                continue
            clat = stats.get("clat_ns") or {}
            percentiles = clat.get("percentile") or {}
            row = {
                "job": name,
                "op": op,
                "total_ios": total_ios,
                "iops": _number(stats.get("iops"), source, f"{name}.{op}.iops"),
                "bw_kib_s": _number(stats.get("bw"), source, f"{name}.{op}.bw"),
                # fio rounds `bw` down to whole KiB/s; rates are computed from this one.
                "bw_bytes_s": _number(stats.get("bw_bytes"), source, f"{name}.{op}.bw_bytes"),
                "io_bytes": int(_number(stats.get("io_bytes"), source, f"{name}.{op}.io_bytes")),
                "runtime_ms": _number(stats.get("runtime"), source, f"{name}.{op}.runtime"),
                "clat_mean_us": _number(clat.get("mean"), source, f"{name}.{op}.clat mean")
                / 1000.0,
                # Submission plus completion: with libaio an I/O can complete inside
                # io_submit, and then its clat alone understates what the caller waited.
                "lat_mean_us": _number((stats.get("lat_ns") or {}).get("mean"), source,
                                       f"{name}.{op}.lat mean") / 1000.0,
                "error": int(job.get("error", 0)),
            }
            for column, key in PERCENTILE_KEYS.items():
                value = percentiles.get(key)
                row[column] = None if value is None else _number(
                    value, source, f"{name}.{op}.clat p{key}") / 1000.0
            rows.append(row)
    return rows


def sync_latencies(document: dict[str, Any], source: str = "fio output") -> dict[str, float]:
    """The first job's fdatasync latencies (p50, p99, mean; microseconds) when it ran with
    `fdatasync=N`: fio times those calls apart from the writes (its `sync` section), so a
    write's whole cost is its completion latency plus its share of the syncs."""
    job = document["jobs"][0]
    stats = (job.get("sync") or {}).get("lat_ns") or {}
    percentiles = stats.get("percentile") or {}
    if not percentiles:
        raise FioError(f"{source}: job {job.get('jobname')!r} has no fdatasync latencies "
                       "(was it run with fdatasync=1?)")
    return {"sync_p50_us": _number(percentiles.get("50.000000"), source, "sync p50") / 1000.0,
            "sync_p99_us": _number(percentiles.get("99.000000"), source, "sync p99") / 1000.0,
            "sync_mean_us": _number(stats.get("mean"), source, "sync mean") / 1000.0}


def job_errors(document: dict[str, Any]) -> dict[str, int]:
    """Jobs whose `error` is not zero (a verify failure shows up here), name -> errno."""
    return {job["jobname"]: int(job.get("error", 0)) for job in document["jobs"]
            if int(job.get("error", 0)) != 0}


def format_rows(rows: list[dict[str, Any]]) -> str:
    """fio rows as a small table (what `python -m labs parse fio FILE` prints)."""
    lines = [f"{'job':<24} {'op':<5} {'ios':>9} {'iops':>10} {'KiB/s':>10} "
             f"{'p50 us':>9} {'p99 us':>9} {'p99.9 us':>9}"]
    for row in rows:
        cells = [row[c] if row[c] is not None else float("nan")
                 for c in ("clat_p50_us", "clat_p99_us", "clat_p999_us")]
        lines.append(f"{row['job']:<24} {row['op']:<5} {row['total_ios']:>9} "
                     f"{row['iops']:>10.0f} {row['bw_kib_s']:>10.0f} {cells[0]:>9.1f} "
                     f"{cells[1]:>9.1f} {cells[2]:>9.1f}")
    return "\n".join(lines)


def parse_log(text: str, source: str = "fio log") -> list[dict[str, Any]]:
    """A fio bandwidth or IOPS log (`--write_bw_log=P --log_avg_msec=N`, file P_bw.1.log).

    Each line is `time (ms), value, direction (0 read, 1 write, 2 trim), block size,
    offset[, priority]`; with log_avg_msec the value is the average over that window
    (KiB/s for a bandwidth log, I/Os per second for an IOPS log)."""
    rows = []
    for number, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        fields = [part.strip() for part in line.split(",")]
        try:
            time_ms, value, direction = int(fields[0]), int(fields[1]), int(fields[2])
        except (IndexError, ValueError):
            raise FioError(f"{source}, line {number}: not a fio log line: {line[:80]!r}") from None
        if direction not in (0, 1, 2):
            raise FioError(f"{source}, line {number}: unknown direction {direction}")
        rows.append({"time_ms": time_ms, "value": value,
                     "op": ("read", "write", "trim")[direction]})
    if not rows:
        raise FioError(f"{source}: empty log")
    return rows
