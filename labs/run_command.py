"""`python -m labs run <lab> ...`: run a lab and record the run under data/runs/<lab>/.

Each lab module provides `add_run_arguments(parser)` and `run_from_args(args) -> int`, and
prints its full parameters first so that any output says how to reproduce it.
"""

from __future__ import annotations

import argparse
import importlib

# lab name (as in data/runs/<lab>/) -> module
RUNNABLE_LABS: dict[str, str] = {
    "quorum-montecarlo": "labs.quorum",
    "torn-pages": "labs.torn_pages",
    "write-mostly": "labs.write_mostly",
}


def add_arguments(parser: argparse.ArgumentParser) -> None:
    labs_parsers = parser.add_subparsers(dest="lab", metavar="LAB", parser_class=type(parser))
    labs_parsers.required = True
    for lab_name, module_name in RUNNABLE_LABS.items():
        module = importlib.import_module(module_name)
        lab_parser = labs_parsers.add_parser(
            lab_name, help=module.RUN_HELP, description=module.RUN_HELP)
        module.add_run_arguments(lab_parser)
        lab_parser.set_defaults(run_lab=module.run_from_args)


def main(args: argparse.Namespace) -> int:
    return args.run_lab(args)
