"""`python -m labs quorum`: the quorum model on the command line.

    python -m labs quorum --nodes 6 --write 4 --read 3 --azs 3 --p-node 0.01 --json
    python -m labs quorum --table --max-nodes 7
    python -m labs quorum --problem zones --seed 3 [-c]    # practice: a problem (and answer)
"""

from __future__ import annotations

import argparse
import json

from labs.commands import (
    add_practice_arguments,
    print_practice,
    refuse_lone_compute,
    refuse_options,
)
from labs.errors import UsageError
from labs.models import quorum as model
from labs.models import quorum_problems

HELP = "quorum sizing: validity, failure tolerance, availability"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--nodes", type=int, help="copies of the data (N)")
    parser.add_argument("--write", type=int,
                        help="write quorum W (default: the smallest valid one for N)")
    parser.add_argument("--read", type=int,
                        help="read quorum R (default: the smallest valid one for N and W)")
    parser.add_argument("--azs", type=int, help="availability zones Z (nodes round-robin)")
    parser.add_argument("--p-node", type=float, help="chance a node is down (0..1)")
    parser.add_argument("--p-az", type=float,
                        help="chance an AZ is out, with all its nodes (0..1; needs --azs)")
    parser.add_argument("--table", action="store_true",
                        help="print the smallest valid (N, R, W) for N = 1..--max-nodes")
    parser.add_argument("--max-nodes", type=int, default=None,
                        help="rows of --table (default 7)")
    parser.add_argument("--json", action="store_true", help="print one JSON value")
    add_practice_arguments(parser, quorum_problems.KINDS,
                           "which problem (default 0); the same seed gives the same problem")


def quorum_report(nodes: int, write: int | None, read: int | None, azs: int | None = None,
                  p_node: float | None = None, p_az: float | None = None) -> dict:
    """Everything the `quorum` command prints, as a dict (the JSON output)."""
    if isinstance(nodes, int) and not isinstance(nodes, bool) and nodes >= 1:
        default_read, default_write = model.smallest_valid_quorum(nodes)
        write = default_write if write is None else write
        if read is None:
            read = max(nodes - write + 1, 1) if isinstance(write, int) else default_read
    report = model.describe(nodes, write, read, azs).as_dict()
    if p_az is not None and p_node is None:
        raise UsageError("--p-az needs --p-node as well (the chance a single node is down)")
    if p_node is not None:
        model.check_probability("p-node", p_node)
        if p_az is not None:
            model.check_probability("p-az", p_az)
            if azs is None:
                raise UsageError("--p-az needs --azs (how many AZs the nodes are spread over)")
        report["p_node"] = p_node
        report["p_az"] = p_az or 0.0
        report.update(model.unavailability(nodes, write, read, p_node, azs or 1, p_az or 0.0))
    return report


def _yes(flag: bool) -> str:
    return "yes" if flag else "NO"


def format_report(report: dict) -> str:
    lines = [
        f"N = {report['nodes']} copies, W = {report['write']}, R = {report['read']}: "
        + ("valid" if report["valid"] else "NOT valid"),
        f"  R + W > N  (every read meets the latest write): "
        f"{_yes(report['rules']['read_write_overlap'])}",
        f"  W > N/2    (no two conflicting writes):        "
        f"{_yes(report['rules']['write_majority'])}",
        f"  writes survive {report['write_tolerates']} failed node(s), "
        f"reads survive {report['read_tolerates']}",
    ]
    if "azs" in report:
        lines.append(f"  {report['azs']} AZs holding {report['nodes_per_az']} nodes")
        for key, label in (("lose_az", "lose one AZ"), ("lose_az_plus_one", "lose an AZ + 1")):
            lines.append(f"  {label:<15} writes: {_yes(report[key]['write']):<3}  "
                         f"reads: {_yes(report[key]['read'])}")
    if "p_write_unavailable" in report:
        lines.append(f"  with p(node down) = {report['p_node']:g}, p(AZ out) = {report['p_az']:g}:")
        lines.append(f"    P(writes unavailable) = {report['p_write_unavailable']:.3e}")
        lines.append(f"    P(reads unavailable)  = {report['p_read_unavailable']:.3e}")
    return "\n".join(lines)


def main(args: argparse.Namespace) -> int:
    if args.problem:
        if args.nodes is not None or args.table:
            raise UsageError("--problem prints its own layout: drop --nodes and --table")
        refuse_options(args, ("write", "read", "azs", "p_node", "p_az", "max_nodes", "json"),
                       "is not read with --problem (it prints its own layout)")
        return print_practice(args, quorum_problems.make_problem)
    refuse_lone_compute(args)
    if args.table:
        if args.nodes is not None or args.write is not None or args.read is not None:
            raise UsageError("--table prints every N: drop --nodes, --write and --read")
        refuse_options(args, ("azs", "p_node", "p_az"),
                       "is not read with --table (it lists the smallest valid quorums)")
        args.max_nodes = 7 if args.max_nodes is None else args.max_nodes
        if args.max_nodes < 1:
            raise UsageError(f"--max-nodes must be at least 1, got {args.max_nodes}")
        if args.max_nodes > 99:
            raise UsageError(f"--max-nodes must be at most 99, got {args.max_nodes}")
        rows = model.quorum_table(args.max_nodes)
        if args.json:
            print(json.dumps(rows))
        else:
            print(f"{'N':>3} {'R':>3} {'W':>3}")
            for row in rows:
                print(f"{row['nodes']:>3} {row['read']:>3} {row['write']:>3}")
        return 0
    if args.nodes is None:
        raise UsageError("--nodes is required (or use --table)")
    refuse_options(args, ("max_nodes",), "is read only with --table")
    report = quorum_report(args.nodes, args.write, args.read, args.azs, args.p_node, args.p_az)
    print(json.dumps(report) if args.json else format_report(report))
    return 0


