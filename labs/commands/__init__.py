"""One module per command of `python -m labs` that is not a lab (labs/__main__.py wires them).

The model commands (quorum, disk) share their practice-problem options, defined here once.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable

from labs.errors import UsageError
from labs.models.problems import Problem


def add_practice_arguments(parser: argparse.ArgumentParser, kinds: tuple[str, ...],
                           seed_help: str) -> None:
    """--problem KIND, --seed S and -c, as every model command takes them."""
    parser.add_argument("--problem", choices=kinds, metavar="KIND",
                        help="print a practice problem of this kind (" + ", ".join(kinds) + ")")
    parser.add_argument("--seed", type=int, default=None, help=seed_help)
    parser.add_argument("-c", "--compute", action="store_true",
                        help="with --problem: print the worked answer too")


def print_practice(args: argparse.Namespace, make_problem: Callable[[str, int], Problem]) -> int:
    """Print the problem --problem and --seed name, and its worked answer with -c."""
    problem = make_problem(args.problem, 0 if args.seed is None else args.seed)
    print(problem.text)
    if args.compute:
        print("\nAnswer:\n" + problem.solve().text)
    return 0


def refuse_lone_compute(args: argparse.Namespace, seed_read: bool = False,
                        seed_picks: str = "a practice problem: give --problem KIND too") -> None:
    """Without --problem, -c (and --seed, unless this view reads it) would be ignored."""
    if args.compute:
        raise UsageError("-c solves a practice problem: give --problem KIND too")
    if args.seed is not None and not seed_read:
        raise UsageError(f"--seed picks {seed_picks}")


def refuse_options(args: argparse.Namespace, names: tuple[str, ...], why: str) -> None:
    """A given option this view does not read is an error, not silently ignored."""
    for name in names:
        value = getattr(args, name)
        if value is not None and value is not False:  # 0 is given too (and 0 == False)
            raise UsageError(f"--{name.replace('_', '-')} {why}")
