"""A record of CI's time per area, per commit: where a slower CI came from.

    .venv/bin/python benchmarks/ci_times.py record --where "fresh clone, nothing cached" \
        --setup-s 95 [--times _build/test-times.json]
    .venv/bin/python benchmarks/ci_times.py show

`make test` writes _build/test-times.json at its end (tests/session_report.py): the wall time
of the session and of each worker, and the seconds per area and per test file. `record`
appends its areas to benchmarks/ci-times.csv, one row per area, with the commit it measured,
the day, where it ran and the set-up's seconds that `.ci/run` printed before the tests
("ci: set-up ... s"). `show` prints the newest record beside the one before it.
"""

from __future__ import annotations

import argparse
import csv
import datetime as dt
import json
import sys
from pathlib import Path

import csv_record

from labs import PROJECT_ROOT

RECORD = PROJECT_ROOT / "benchmarks" / "ci-times.csv"
FIELDS = ("commit", "measured_on", "where", "area", "seconds")


def rows_of(summary: dict, where: str, setup_s: float | None) -> list[dict]:
    """One row per area, then the walls (session, workers) and the set-up, for one run."""
    parts = {**{f"area: {area}": s for area, s in summary["areas_s"].items()},
             "wall: session": summary["wall_s"],
             **{f"wall: worker {worker}": s for worker, s in summary["workers_s"].items()}}
    if setup_s is not None:
        parts["set-up (system packages, venv)"] = setup_s
    day = dt.date.today().isoformat()
    return [{"commit": summary["commit"], "measured_on": day, "where": where, "area": area,
             "seconds": round(seconds, 1)} for area, seconds in parts.items()]


def record(times: Path, where: str, setup_s: float | None) -> int:
    try:
        summary = json.loads(times.read_text())
    except (OSError, ValueError) as error:
        print(f"ci_times: cannot read {times}: {error}", file=sys.stderr)
        return 2
    csv_record.append(RECORD, FIELDS, rows_of(summary, where, setup_s))
    print(f"ci_times: recorded {summary['commit']} ({where}) in {RECORD}")
    return 0


def show() -> int:
    if not RECORD.exists():
        print("ci_times: nothing recorded yet", file=sys.stderr)
        return 2
    with RECORD.open() as source:
        rows = list(csv.DictReader(source))
    runs = list(dict.fromkeys((row["commit"], row["where"]) for row in rows))
    newest = runs[-1]
    before = {row["area"]: float(row["seconds"]) for row in rows
              if len(runs) > 1 and (row["commit"], row["where"]) == runs[-2]}
    print(f"{newest[0]} ({newest[1]})" + (f" beside {runs[-2][0]}" if before else ""))
    for row in rows:
        if (row["commit"], row["where"]) == newest:
            old = before.get(row["area"])
            change = f"  ({float(row['seconds']) - old:+.0f} s)" if old is not None else ""
            print(f"{float(row['seconds']):8.1f} s  {row['area']}{change}")
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    actions = parser.add_subparsers(dest="action", required=True)
    add = actions.add_parser("record", help="append a test session's times")
    add.add_argument("--times", type=Path, default=PROJECT_ROOT / "_build" / "test-times.json")
    add.add_argument("--where", required=True, help="where it ran: what was cached, the load")
    add.add_argument("--setup-s", type=float, help="the set-up's seconds (.ci/run prints it)")
    actions.add_parser("show", help="the newest record beside the one before")
    args = parser.parse_args(argv)
    return record(args.times, args.where, args.setup_s) if args.action == "record" else show()


if __name__ == "__main__":
    sys.exit(main())
