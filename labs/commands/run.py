"""`python -m labs run <lab> [options]`: run a lab and record the run under data/runs/<lab>/.

The labs and their options come from the registry (labs/registry.py) and from each lab's
parameters dataclass (labs/lab.py), so `--help`, the options and the command line a run
echoes are the same thing. Every run prints that command line first, so any output says
how to reproduce it.
"""

from __future__ import annotations

import argparse

from labs import registry
from labs.infra.inventory import get_host
from labs.progress import Progress
from labs.records import display_path

HELP = "run a lab and record the run in data/runs/"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    labs_parsers = parser.add_subparsers(dest="lab", metavar="LAB", parser_class=type(parser))
    labs_parsers.required = True
    for lab in registry.labs():
        lab_parser = labs_parsers.add_parser(
            lab.name, help=lab.description,
            description=f"{lab.description}. Needs: {lab.needs}.")
        lab.parameters.add_arguments(lab_parser)
        lab_parser.set_defaults(lab_entry=lab)


def main(args: argparse.Namespace) -> int:
    lab: registry.Lab = args.lab_entry
    params = lab.parameters.from_args(args)
    print(params.command_line(), flush=True)  # every run says how to reproduce it
    run = lab.run_function()
    host = get_host(params.host)
    progress = Progress(lab.name, total_steps=1)
    try:
        recorded = run(params, host, progress)
    finally:
        progress.close()
        host.close()
    print(f"recorded run: {display_path(recorded.path)}")
    return 0
