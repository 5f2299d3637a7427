"""Recorded runs: save, load, list, validate.

A recorded run is a folder `data/runs/<lab>/<run-id>/` holding

- `run.json`     provenance: lab, run id, parameters, seed, git commit, host facts,
                 tool versions, exact command lines, start and end times;
- `results.csv`  tidy results, one measurement per row
                 (`lab, run_id, config, workload, metric, value, unit`, plus the lab's own
                 dimension columns);
- `raw/`         the tools' own output, so a parser fix can re-derive the results.

Runs are written into a hidden staging folder and renamed into place only when complete,
so a crash never leaves something that looks like a run. The loader refuses anything
malformed with one line naming the file and the field.
"""

from __future__ import annotations

import datetime as dt
import json
import math
import numbers
import os
import re
import shutil
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from labs import PROJECT_ROOT
from labs.errors import LabError
from labs.local_facts import load_averages, local_host_facts, project_git_commit

FORMAT_VERSION = 1
RESULT_COLUMNS = ["lab", "run_id", "config", "workload", "metric", "value", "unit"]
KNOWN_UNITS = {
    "us", "ms", "s", "ns", "iops", "MiB/s", "KiB/s", "tps", "bytes", "count", "ratio",
    "percent", "probability", "trials/s", "bytes/tx", "bytes/row", "pages/row", "B/s", "MiB",
    "rows/s",
}
# name -> (type(s) the value must have, description used in error messages)
RUN_FIELDS: dict[str, tuple[tuple[type, ...], str]] = {
    "format_version": ((int,), "an integer"),
    "lab": ((str,), "a string"),
    "run_id": ((str,), "a string"),
    "parameters": ((dict,), "an object"),
    "seed": ((int, type(None)), "an integer or null"),
    "git_commit": ((str,), "a string"),
    "host": ((dict,), "an object"),
    "tool_versions": ((dict,), "an object"),
    "commands": ((list,), "a list"),
    "started_at": ((str,), "an ISO 8601 time"),
    "finished_at": ((str,), "an ISO 8601 time"),
}
RUN_ID_PATTERN = re.compile(r"^[0-9]{8}T[0-9]{6}Z(-[a-z0-9][a-z0-9._-]*)?$")
STAGING_PREFIX = ".staging-"


class RecordError(LabError):
    """A recorded run is missing, half-written or malformed."""


def runs_root() -> Path:
    """Where recorded runs live: `data/runs/`, or $LABS_RUNS_DIR (used by tests)."""
    return Path(os.environ.get("LABS_RUNS_DIR", PROJECT_ROOT / "data" / "runs"))


def display_path(path: Path) -> str:
    """A path as the reader knows it: relative to the project when it is inside it."""
    try:
        return str(Path(path).resolve().relative_to(PROJECT_ROOT))
    except ValueError:
        return str(path)


def utc_now() -> dt.datetime:
    return dt.datetime.now(dt.UTC).replace(microsecond=0)


def new_run_id(host_name: str = "local", when: dt.datetime | None = None) -> str:
    """A sortable id: UTC start time plus the host name, e.g. `20261120T221500Z-vm1`."""
    when = when or utc_now()
    host = re.sub(r"[^a-z0-9._-]+", "-", host_name.lower()).strip("-") or "host"
    return f"{when:%Y%m%dT%H%M%SZ}-{host}"


@dataclass
class RecordedRun:
    """A run loaded from disk (validated)."""

    path: Path
    meta: dict[str, Any]
    results: pd.DataFrame

    @property
    def run_id(self) -> str:
        return self.meta["run_id"]

    @property
    def lab(self) -> str:
        return self.meta["lab"]

    @property
    def raw_dir(self) -> Path:
        return self.path / "raw"

    @property
    def wall_s(self) -> float:
        """Seconds from the run's start to its end, as its record says."""
        return (dt.datetime.fromisoformat(self.meta["finished_at"])
                - dt.datetime.fromisoformat(self.meta["started_at"])).total_seconds()

    def step_seconds(self) -> list[tuple[str, str, float]]:
        """(name, detail, seconds) of each step the run took, in order, from the times its
        record keeps (a step lasts until the next starts, the last until the lab's work
        ended); empty for a run recorded without them."""
        steps = self.meta.get("steps", {})
        taken = steps.get("taken", [])
        ends = [step["started_at"] for step in taken[1:]] + [steps.get("ended_at")]
        return [(step["name"], step["detail"], end - step["started_at"])
                for step, end in zip(taken, ends, strict=True)]

    def command_line(self) -> str:
        """The command that made this run (first recorded command line)."""
        return self.meta["parameters"].get("command_line", "")

    @property
    def profile(self) -> str | None:
        """The profile the run was made with (ci, quick, full), None if its record lacks it."""
        return self.meta["parameters"].get("profile")


@dataclass
class RunRecorder:
    """Collects one run and writes it atomically.

    Use as a context manager; the run appears under `data/runs/<lab>/<run-id>/` only if
    the block finishes without an exception::

        with RunRecorder("quorum-montecarlo", parameters, seed=7) as run:
            run.add_command("python -m labs run ...")
            run.add_raw("estimate.json", text)
            run.add_result(config="n6-w4-r3", workload="independent", metric="p", value=..,
                           unit="probability")
        print(run.final_path)
    """

    lab: str
    parameters: dict[str, Any]
    seed: int | None = None
    lab_host: str = "local"  # the inventory name of the host the lab ran on (in the run id)
    host: dict[str, Any] = field(default_factory=local_host_facts)
    run_id: str | None = None
    root: Path | None = None
    tool_versions: dict[str, str] = field(default_factory=dict)
    commands: list[str] = field(default_factory=list)
    rows: list[dict[str, Any]] = field(default_factory=list)
    final_path: Path | None = None
    steps: dict[str, Any] | None = None  # planned and taken (labs.progress), if the lab said

    def __post_init__(self) -> None:
        self.started_at = utc_now()
        self.load_at_start = load_averages()
        self.git_commit = project_git_commit()  # the code that runs; a later edit is not it
        self.run_id = self.run_id or new_run_id(self.lab_host, self.started_at)
        self.root = Path(self.root or runs_root())
        # The pid lets `clean` tell a staging folder whose lab died from one still in use.
        self.staging = (self.root / self.lab / f"{STAGING_PREFIX}{self.run_id}-{os.getpid()}-"
                        f"{uuid.uuid4().hex[:8]}")

    def __enter__(self) -> RunRecorder:
        (self.staging / "raw").mkdir(parents=True)
        return self

    def __exit__(self, exc_type, exc, tb) -> None:
        if exc_type is None:
            self._publish()
        else:
            # Nothing half-written may look like a run: drop the staging folder.
            shutil.rmtree(self.staging, ignore_errors=True)

    def add_command(self, command: str) -> None:
        self.commands.append(command)

    def add_tool_version(self, tool: str, version: str) -> None:
        self.tool_versions[tool] = version

    def add_raw(self, name: str, content: str | bytes) -> Path:
        """Keep a tool's own output under raw/ (name may contain sub-folders)."""
        target = self.staging / "raw" / name
        if not target.resolve().is_relative_to((self.staging / "raw").resolve()):
            raise RecordError(f"raw file name {name!r} leaves the run's raw/ folder")
        target.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, bytes):
            target.write_bytes(content)
        else:
            target.write_text(content)
        return target

    def add_result(self, *, config: str, workload: str, metric: str, value: float,
                   unit: str, **dimensions: Any) -> None:
        # Refused now, not when the run is written: a long run stops where it went wrong.
        if isinstance(value, bool) or not isinstance(value, numbers.Real) \
                or not math.isfinite(value):
            raise LabError(f"{self.lab}: {config} {workload} {metric} = {value!r}, not a "
                           "finite number")
        self.rows.append({"lab": self.lab, "run_id": self.run_id, "config": config,
                          "workload": workload, "metric": metric, "value": value,
                          "unit": unit, **dimensions})

    def _free_run_id(self) -> str:
        """This run's id, or, if a run of the same lab and host already has it (two short
        runs started within one second), the next second that is free."""
        run_id = self.run_id
        if not (self.root / self.lab / run_id).exists():
            return run_id
        stamp, _, host = run_id.partition("-")
        when = dt.datetime.strptime(stamp, "%Y%m%dT%H%M%SZ").replace(tzinfo=dt.UTC)
        while (self.root / self.lab / run_id).exists():
            when += dt.timedelta(seconds=1)
            run_id = new_run_id(host, when) if host else f"{when:%Y%m%dT%H%M%SZ}"
        return run_id

    def _publish(self) -> None:
        self.run_id = self._free_run_id()
        for row in self.rows:
            row["run_id"] = self.run_id
        results = pd.DataFrame(self.rows)
        if results.empty:
            raise RecordError(f"run {self.run_id} of lab {self.lab} produced no results")
        extra = [c for c in results.columns if c not in RESULT_COLUMNS]
        results = results[RESULT_COLUMNS + extra]
        meta = {
            "format_version": FORMAT_VERSION,
            "lab": self.lab,
            "run_id": self.run_id,
            "parameters": self.parameters,
            "seed": self.seed,
            "git_commit": self.git_commit,
            "host": self.host,
            "tool_versions": self.tool_versions,
            "commands": self.commands,
            "started_at": self.started_at.isoformat(),
            "finished_at": utc_now().isoformat(),
            # How busy the machine running the lab was (it also emulates any lab VM): a run
            # recorded on a busy machine says so.
            "controller_load": {"at_start": self.load_at_start, "at_end": load_averages()},
        }
        if self.steps is not None:
            meta["steps"] = self.steps
        validate_results(results, meta, self.staging / "results.csv")
        results.to_csv(self.staging / "results.csv", index=False)
        (self.staging / "run.json").write_text(json.dumps(meta, indent=2, sort_keys=True) + "\n")
        final = self.root / self.lab / self.run_id
        if final.exists():
            raise RecordError(f"{display_path(final)} already exists; refusing to overwrite a run")
        os.rename(self.staging, final)  # atomic on one file system
        self.final_path = final


def _load_meta(run_path: Path) -> dict[str, Any]:
    meta_path = run_path / "run.json"
    where = display_path(meta_path)
    if not meta_path.is_file():
        raise RecordError(f"{where}: missing (half-written run?)")
    try:
        meta = json.loads(meta_path.read_text())
    except (json.JSONDecodeError, UnicodeDecodeError) as error:
        raise RecordError(f"{where}: not valid JSON ({error})") from None
    if not isinstance(meta, dict):
        raise RecordError(f"{where}: must hold a JSON object")
    _check_field_types(meta, where)
    if meta["format_version"] != FORMAT_VERSION:
        raise RecordError(
            f"{where}: field 'format_version' is {meta['format_version']}, "
            f"this project reads {FORMAT_VERSION}")
    if not RUN_ID_PATTERN.match(meta["run_id"]):
        raise RecordError(f"{where}: field 'run_id' {meta['run_id']!r} is not a run id")
    if meta["run_id"] != run_path.name:
        raise RecordError(
            f"{where}: field 'run_id' is {meta['run_id']!r} but the folder is {run_path.name!r}")
    if meta["lab"] != run_path.parent.name:
        raise RecordError(
            f"{where}: field 'lab' is {meta['lab']!r} but the run is filed under "
            f"{run_path.parent.name!r}")
    for name in ("started_at", "finished_at"):
        try:
            dt.datetime.fromisoformat(meta[name])
        except ValueError:
            raise RecordError(f"{where}: field '{name}' is not an ISO 8601 time") from None
    if not all(isinstance(c, str) for c in meta["commands"]):
        raise RecordError(f"{where}: field 'commands' must be a list of strings")
    return meta


def _check_field_types(meta: dict[str, Any], where: str) -> None:
    """Every field of RUN_FIELDS is there, with its type (a bool is no integer here)."""
    for name, (types, description) in RUN_FIELDS.items():
        if name not in meta:
            raise RecordError(f"{where}: field '{name}' missing")
        value = meta[name]
        if isinstance(value, bool) or not isinstance(value, types):
            raise RecordError(f"{where}: field '{name}' must be {description}")


def validate_results(results: pd.DataFrame, meta: dict[str, Any], csv_path: Path) -> None:
    """Refuse results that are not tidy, not numeric, or not from this run."""
    where = display_path(csv_path)
    for column in RESULT_COLUMNS:
        if column not in results.columns:
            raise RecordError(f"{where}: column '{column}' missing")
    if results.empty:
        raise RecordError(f"{where}: no rows")
    for column in ("lab", "run_id"):
        wrong = results[results[column].astype(str) != str(meta[column])]
        if not wrong.empty:
            raise RecordError(
                f"{where}: column '{column}' is {wrong[column].iloc[0]!r} on row "
                f"{wrong.index[0] + 2}, run.json says {meta[column]!r}")
    values = pd.to_numeric(results["value"], errors="coerce")
    finite = values.map(lambda v: not pd.isna(v) and math.isfinite(v))
    if not finite.all():
        first_bad = int((~finite).to_numpy().nonzero()[0][0])
        raise RecordError(
            f"{where}: column 'value' is {str(results['value'].iloc[first_bad])!r} on row "
            f"{first_bad + 2}, not a finite number")
    unknown = sorted(set(results["unit"].astype(str)) - KNOWN_UNITS)
    if unknown:
        raise RecordError(f"{where}: column 'unit' has unknown unit {unknown[0]!r}")
    for column in ("config", "workload", "metric"):
        if results[column].isna().any() or (results[column].astype(str).str.strip() == "").any():
            raise RecordError(f"{where}: column '{column}' has an empty cell")


def load_run(run_path: str | Path) -> RecordedRun:
    """Load and validate one run folder; raises RecordError with one line on any defect."""
    run_path = Path(run_path)
    if not run_path.is_dir():
        raise RecordError(f"{display_path(run_path)}: no such run folder")
    meta = _load_meta(run_path)
    csv_path = run_path / "results.csv"
    if not csv_path.is_file():
        raise RecordError(f"{display_path(csv_path)}: missing (half-written run?)")
    try:
        results = pd.read_csv(csv_path)
    except (pd.errors.ParserError, pd.errors.EmptyDataError, UnicodeDecodeError) as error:
        reason = str(error).splitlines()[0] if str(error) else "unreadable"
        raise RecordError(f"{display_path(csv_path)}: not a readable CSV ({reason})") from None
    validate_results(results, meta, csv_path)
    results["value"] = pd.to_numeric(results["value"])
    if not (run_path / "raw").is_dir():
        raise RecordError(f"{display_path(run_path / 'raw')}: missing (the tools' own output)")
    return RecordedRun(path=run_path, meta=meta, results=results)


def list_runs(lab: str, root: Path | None = None) -> list[Path]:
    """Run folders of a lab, oldest first (staging folders are never listed)."""
    lab_dir = Path(root or runs_root()) / lab
    if not lab_dir.is_dir():
        return []
    return sorted(p for p in lab_dir.iterdir()
                  if p.is_dir() and not p.name.startswith("."))


def scan_runs(lab: str, root: Path | None = None) -> tuple[list[Path], list[tuple[Path, str]]]:
    """(valid run folders, [(refused folder, one-line reason)]), oldest first."""
    valid, refused = [], []
    for path in list_runs(lab, root):
        try:
            load_run(path)
        except RecordError as error:
            refused.append((path, str(error)))
        else:
            valid.append(path)
    return valid, refused


def newest_run(lab: str, root: Path | None = None) -> RecordedRun:
    """The newest valid run of a lab; malformed runs are never chosen."""
    runs = list_runs(lab, root)
    for path in reversed(runs):
        try:
            return load_run(path)
        except RecordError:
            continue
    where = display_path(Path(root or runs_root()) / lab)
    if runs:
        raise RecordError(f"{where}: no valid recorded run of lab '{lab}' "
                          f"({len(runs)} refused; `python -m labs list` says why)")
    raise RecordError(f"{where}: no recorded runs of lab '{lab}'")


SHIPPED_FILE = "SHIPPED"  # data/runs/<lab>/SHIPPED: the run id the book's text was written from


def shipped_run(lab: str, root: Path | None = None) -> RecordedRun:
    """The run the book ships with for `lab`: the one its text was written from.

    Named explicitly in data/runs/<lab>/SHIPPED (one line, a run id), never "the newest":
    a reader's own runs land in the same folder and must not change what the text describes.
    """
    marker = (lab_dir := Path(root or runs_root()) / lab) / SHIPPED_FILE
    if not marker.is_file():
        raise RecordError(f"{display_path(marker)}: missing (it names the run the book shows)")
    run_id = marker.read_text().strip()
    if not RUN_ID_PATTERN.match(run_id):
        raise RecordError(f"{display_path(marker)}: {run_id!r} is not a run id")
    return load_run(lab_dir / run_id)


def book_run_ids(lab: str, root: Path | None = None) -> set[str]:
    """The runs the book shows for `lab`: SHIPPED's and its companions' (SHIPPED-loop, ...)."""
    markers = (Path(root or runs_root()) / lab).glob(f"{SHIPPED_FILE}*")
    return {marker.read_text().strip() for marker in markers if marker.is_file()}


def readers_newest_run(lab: str, root: Path | None = None) -> RecordedRun | None:
    """The newest valid run of `lab` that the book does not show (a reader's own), if any."""
    shown = book_run_ids(lab, root)
    for path in reversed([p for p in list_runs(lab, root) if p.name not in shown]):
        try:
            return load_run(path)
        except RecordError:
            continue
    return None


def remove_stale_staging(root: Path | None = None) -> list[Path]:
    """Delete staging folders whose lab process is gone; returns what was deleted."""
    root = Path(root or runs_root())
    removed = []
    for folder in sorted(root.glob(f"*/{STAGING_PREFIX}*")):
        pid = _staging_pid(folder.name)
        if pid is not None and _process_alive(pid):
            continue  # a lab is writing this run right now
        # Safe: a hidden staging folder under data/runs/<lab>/, never a recorded run.
        shutil.rmtree(folder, ignore_errors=True)
        removed.append(folder)
    return removed


def _staging_pid(name: str) -> int | None:
    parts = name.removeprefix(STAGING_PREFIX).rsplit("-", 2)
    return int(parts[1]) if len(parts) == 3 and parts[1].isdigit() else None


def _process_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def labs_with_runs(root: Path | None = None) -> list[str]:
    root = Path(root or runs_root())
    if not root.is_dir():
        return []
    return sorted(p.name for p in root.iterdir() if p.is_dir() and not p.name.startswith("."))
