"""`python -m labs list`: the labs this project can run, and their recorded runs."""

from __future__ import annotations

import argparse
import json

from labs import records, registry

HELP = "list the labs and their recorded runs"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--json", action="store_true", help="print JSON instead of a table")


def catalog() -> list[dict]:
    runnable = {lab.name: lab for lab in registry.labs()}
    rows = []
    for name in [*runnable, *sorted(set(records.labs_with_runs()) - set(runnable))]:
        valid, refused = records.scan_runs(name)
        lab = runnable.get(name)
        rows.append({
            "lab": name,
            "runnable": lab is not None,
            "description": lab.description if lab else "(no such lab in this version)",
            "needs": lab.needs if lab else None,
            "recorded_runs": [p.name for p in valid],
            "refused_runs": [{"run": p.name, "why": why} for p, why in refused],
            "command": f"python -m labs run {name}" if lab else None,
        })
    return rows


def main(args: argparse.Namespace) -> int:
    rows = catalog()
    if args.json:
        print(json.dumps(rows, indent=2))
        return 0
    print(f"{'lab':<16} {'runs':>4}  newest valid run")
    for row in rows:
        newest = row["recorded_runs"][-1] if row["recorded_runs"] else "-"
        print(f"{row['lab']:<16} {len(row['recorded_runs']):>4}  {newest}")
        for refused in row["refused_runs"]:
            print(f"{'':<16} {'':>4}  refused: {refused['why']}")
    return 0
