"""Where each lab's ci run spends its time, step by step, recorded per commit.

    .venv/bin/python benchmarks/lab_steps.py record --where "rehearsal, quiet" \
        [--times _build/test-times.json]
    .venv/bin/python benchmarks/lab_steps.py show [--lab drbd]

A lab's ci profile has a budget (BUDGET_S on this machine, quiet). A run keeps the steps it
took with their start times (run.json's "steps"), and `make test` lists every lab run its
tests checked, with each step's seconds, in _build/test-times.json (tests/session_report.py).
`record` appends them to benchmarks/lab-steps.csv: one row per run and step name (a step
that repeats, such as a power cut or a fio job per protocol, is summed and counted), and one
row for the run's wall time. `show` prints the newest commit's runs, slowest first; a run
over the budget gets its steps, slowest first, with their share of the run: that is where
its time goes, and what a shorter profile would have to leave out.
"""

from __future__ import annotations

import argparse
import csv
import datetime as dt
import json
import os
import sys
from pathlib import Path

import csv_record

from labs import PROJECT_ROOT

RECORD = PROJECT_ROOT / "benchmarks" / "lab-steps.csv"
FIELDS = ("commit", "measured_on", "where", "run", "step", "count", "seconds")
BUDGET_S = 150.0  # a lab's ci profile, on the project's 2-core machine, quiet
WALL = "(wall time)"  # the step column of a run's own row
BEFORE = "(before its first step)"  # its checks and facts; started_at has whole seconds


def rows_of(summary: dict, where: str) -> list[dict]:
    """One row per run and step name (summed over its repeats), then the run's wall time."""
    day = dt.date.today().isoformat()
    rows = []
    for run in summary.get("lab_runs", []):
        by_step: dict[str, list[float]] = {}
        for name, seconds in run["steps"]:
            by_step.setdefault(name, []).append(seconds)
        common = {"commit": summary["commit"], "measured_on": day, "where": where,
                  "run": run["how"]}
        rows += [{**common, "step": name, "count": len(times), "seconds": round(sum(times), 1)}
                 for name, times in by_step.items()]
        # The lab's checks and the host's facts come before its first step.
        before_s = run["wall_s"] - sum(seconds for _, seconds in run["steps"])
        if before_s >= 1.0:  # less is the rounding of started_at
            rows.append({**common, "step": BEFORE, "count": 1, "seconds": round(before_s, 1)})
        rows.append({**common, "step": WALL, "count": 1, "seconds": run["wall_s"]})
    return rows


def record(times: Path, where: str) -> int:
    try:
        summary = json.loads(times.read_text())
    except (OSError, ValueError) as error:
        print(f"lab_steps: cannot read {times}: {error}", file=sys.stderr)
        return 2
    rows = rows_of(summary, where)
    if not rows:
        print(f"lab_steps: {times} lists no lab run (a `make test` session writes them)",
              file=sys.stderr)
        return 2
    csv_record.append(RECORD, FIELDS, rows)
    runs = len({row["run"] for row in rows})
    print(f"lab_steps: recorded {runs} lab runs of {summary['commit']} ({where}) in {RECORD}")
    return 0


def show(lab: str | None) -> int:
    if not RECORD.exists():
        print("lab_steps: nothing recorded yet", file=sys.stderr)
        return 2
    with RECORD.open() as source:
        rows = list(csv.DictReader(source))
    newest = rows[-1]["commit"], rows[-1]["where"]
    rows = [row for row in rows if (row["commit"], row["where"]) == newest
            and (lab is None or row["run"].split()[0] == lab)]
    walls = sorted(((float(row["seconds"]), row["run"]) for row in rows if row["step"] == WALL),
                   reverse=True)
    print(f"{newest[0]} ({newest[1]}): {len(walls)} lab runs, budget {BUDGET_S:.0f} s each")
    for wall_s, run in walls:
        over = f"  ({wall_s - BUDGET_S:+.0f} s over)" if wall_s > BUDGET_S else ""
        print(f"{wall_s:8.1f} s  {run}{over}")
        if wall_s > BUDGET_S:
            print_steps([row for row in rows if row["run"] == run and row["step"] != WALL],
                        wall_s)
    return 0


def print_steps(steps: list[dict], wall_s: float) -> None:
    """A run's steps, slowest first, with their share of its wall time."""
    for row in sorted(steps, key=lambda row: -float(row["seconds"])):
        seconds, count = float(row["seconds"]), int(row["count"])
        times = f" ({count} times)" if count > 1 else ""
        print(f"          {seconds:7.1f} s {100 * seconds / wall_s:5.1f} %  {row['step']}{times}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    actions = parser.add_subparsers(dest="action", required=True)
    add = actions.add_parser("record", help="append a test session's lab runs and their steps")
    add.add_argument("--times", type=Path, default=PROJECT_ROOT / "_build" / "test-times.json")
    add.add_argument("--where", required=True, help="where it ran: what was cached, the load")
    view = actions.add_parser("show", help="the newest record's runs; steps of those over "
                                           "the budget")
    view.add_argument("--lab", help="one lab's runs only")
    args = parser.parse_args(argv)
    return record(args.times, args.where) if args.action == "record" else show(args.lab)


if __name__ == "__main__":
    try:
        sys.exit(main())
    except BrokenPipeError:  # `show | head`: the reader stopped reading, nothing went wrong
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        sys.exit(0)
