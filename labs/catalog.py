"""`python -m labs list`: the labs this project can run, and their recorded runs."""

from __future__ import annotations

import argparse
import json

from labs import records
from labs.run_command import RUNNABLE_LABS


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--json", action="store_true", help="print JSON instead of a table")


def catalog() -> list[dict]:
    names = sorted(set(RUNNABLE_LABS) | set(records.labs_with_runs()))
    rows = []
    for name in names:
        runs = records.list_runs(name)
        rows.append({
            "lab": name,
            "runnable": name in RUNNABLE_LABS,
            "recorded_runs": [p.name for p in runs],
            "command": f"python -m labs run {name}" if name in RUNNABLE_LABS else None,
        })
    return rows


def main(args: argparse.Namespace) -> int:
    rows = catalog()
    if args.json:
        print(json.dumps(rows, indent=2))
        return 0
    print(f"{'lab':<22} {'runs':>4}  newest run")
    for row in rows:
        newest = row["recorded_runs"][-1] if row["recorded_runs"] else "-"
        print(f"{row['lab']:<22} {len(row['recorded_runs']):>4}  {newest}")
    return 0
