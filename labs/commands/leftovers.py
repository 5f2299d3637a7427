"""`python -m labs leftovers [--host H]`: what the labs left on a host, as the host sees it.

After `python -m labs clean` every count should be 0. Exit code 1 when something is left,
so a script (or a workshop instructor) can check a machine in one line.
"""

from __future__ import annotations

import argparse

from labs import records
from labs.infra.inventory import get_host
from labs.infra.leftovers import leftovers

HELP = "count lab resources left on a host (loop devices, mounts, containers, md, ...)"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--host", default="local", help="lab host (default: local)")


def main(args: argparse.Namespace) -> int:
    host = get_host(args.host)
    try:
        counts = leftovers(host)
    finally:
        host.close()
    if args.host == "local":
        counts["unfinished_runs"] = sum(1 for _ in records.runs_root().glob("*/.staging-*"))
    print(" ".join(f"{name}={count}" for name, count in counts.items()))
    left = sum(counts.values())
    print(f"leftovers on {args.host}: {'none' if not left else left}")
    return 1 if left else 0
