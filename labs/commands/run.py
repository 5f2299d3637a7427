"""`python -m labs run <lab> [options]`: run a lab and record the run under data/runs/<lab>/.

The labs and their options come from the registry (labs/registry.py) and from each lab's
parameters dataclass (labs/lab.py), so `--help`, the options and the command line a run
echoes are the same thing. Every run prints that command line first, so any output says
how to reproduce it.

`--hosts a,b,c` runs the lab on several hosts at once (labs.infra.group: Fabric's
ThreadingGroup), one recorded run per host, each with its own progress line; a host that
fails is reported and the others carry on.
"""

from __future__ import annotations

import argparse
import dataclasses
import time

from labs import registry, timings
from labs.errors import Interrupted, LabError, UsageError
from labs.infra.group import HostRun, run_on_hosts
from labs.infra.inventory import get_host
from labs.lab import HOST_NAME
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
        lab_parser.add_argument(
            "--hosts", metavar="A,B,...",
            help="run on several lab hosts at once (inventory names, vm1, local), one "
                 "recorded run per host; instead of --host")
        lab_parser.set_defaults(lab_entry=lab)


def main(args: argparse.Namespace) -> int:
    lab: registry.Lab = args.lab_entry
    if getattr(args, "hosts", None) is not None:
        return run_many(lab, args)
    params = lab.parameters.from_args(args)
    print(params.command_line(), flush=True)  # every run says how to reproduce it
    # The measured time holds for the profile as it is (another part, more cuts: not it).
    expected = None if params.changed_from_profile() else timings.expected_duration_line(
        lab.name, params.host, params.profile)
    if expected:  # for planning, beside the command (stderr is for progress and errors)
        print(expected, flush=True)
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


def host_list(text: str) -> list[str]:
    """The names given to --hosts: at least one, each a host name, none twice."""
    names = [name.strip() for name in text.split(",") if name.strip()]
    if not names:
        raise UsageError("--hosts: name at least one host, e.g. --hosts seat1,seat2")
    for name in names:
        if not HOST_NAME.match(name):
            raise UsageError(f"--hosts: {name!r} is not a host name")
    twice = sorted({name for name in names if names.count(name) > 1})
    if twice:
        raise UsageError(f"--hosts: {twice[0]} is named twice")
    return names


def run_many(lab: registry.Lab, args: argparse.Namespace) -> int:
    if args.host is not None:
        raise UsageError("give --host or --hosts, not both")
    names = host_list(args.hosts)
    base = lab.parameters.from_args(args)
    plans = []
    for name in names:
        params = dataclasses.replace(base, host=name)
        params.validate()
        plans.append(params)
    hosts = []
    try:
        for params in plans:  # every name resolves before anything runs anywhere
            hosts.append(get_host(params.host))
        _refuse_same_machine_twice(hosts)
    except LabError:
        for host in hosts:
            host.close()
        raise
    for params in plans:
        print(params.command_line(), flush=True)
    run = lab.run_function()
    members = [HostRun(host, params, run, Progress(f"{lab.name}@{host.name}", total_steps=1,
                                                     position=index))
               for index, (host, params) in enumerate(zip(hosts, plans, strict=True))]
    started = time.monotonic()
    outcomes = run_on_hosts(members)
    seconds = time.monotonic() - started
    failed = []
    for name, outcome in outcomes.items():
        if isinstance(outcome, Interrupted):
            raise KeyboardInterrupt  # the whole run was interrupted
        if isinstance(outcome, BaseException):
            failed.append(name)
            print(f"failed ({name}): {_one_line(outcome)}", flush=True)
        else:
            print(f"recorded run ({name}): {display_path(outcome.path)}", flush=True)
    print(f"{len(names) - len(failed)} of {len(names)} hosts recorded a run in "
          f"{seconds:.0f} s", flush=True)
    if failed:
        raise LabError(f"run {lab.name}: failed on {', '.join(failed)} (reasons above)")
    return 0


def _refuse_same_machine_twice(hosts: list) -> None:
    """Two names for one SSH address and port would run two labs on one machine at once."""
    seen: dict[tuple, str] = {}
    for host in hosts:
        key = ("local",) if host.is_local else (getattr(host, "address", host.name),
                                                getattr(host, "port", 22))
        if key in seen:
            raise UsageError(f"--hosts: {seen[key]} and {host.name} are the same machine")
        seen[key] = host.name


def _one_line(error: BaseException) -> str:
    text = str(error).splitlines()[0] if str(error) else type(error).__name__
    if not isinstance(error, LabError):
        text = f"{type(error).__name__}: {text}"  # an unexpected failure: name its kind
    return text
