"""`python -m labs export LAB [--run ID] -o FILE`: one recorded run as one file to move.

The file holds the run (run.json, results.csv, raw/) and a checksum manifest
(labs.exchange). A participant label, chosen here, is the only personal thing in it: the
host's name, user names, home folders and network addresses are removed from the host
facts and from every text file (labs.privacy), unless `--keep-host-identity` asks to keep
them. `python -m labs import FILE` reads it on another machine.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

from labs import records, registry
from labs.errors import UsageError
from labs.exchange import check_label, export_run
from labs.infra.inventory import load_inventory
from labs.privacy import local_personal

HELP = "write one recorded run to a file (with a checksum manifest) to move or hand in"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("lab", help="the lab whose run to export, e.g. write-mostly")
    parser.add_argument("--run", metavar="ID",
                        help="the run id (default: your newest run of the lab)")
    parser.add_argument("-o", "--output", metavar="FILE", required=True,
                        help="the file to write, e.g. alice-write-mostly.tar.gz")
    parser.add_argument("--label", default="anonymous",
                        help="your participant label, the only personal thing in the file "
                             "(default: anonymous)")
    parser.add_argument("--force", action="store_true",
                        help="replace FILE if it exists (kept, and the export refused, "
                             "without it)")
    parser.add_argument("--keep-host-identity", action="store_true",
                        help="keep host names, user names and addresses in the file "
                             "(removed by default)")


def chosen_run(lab: str, run_id: str | None) -> records.RecordedRun:
    if run_id:
        if not records.RUN_ID_PATTERN.match(run_id):
            raise UsageError(f"--run {run_id!r}: not a run id (e.g. 20261120T225031Z-vm1)")
        folder = records.runs_root() / lab / run_id
        if not folder.is_dir():
            raise UsageError(f"--run {run_id}: no such run of {lab} in "
                             f"{records.display_path(records.runs_root() / lab)}")
        return records.load_run(folder)
    run = records.readers_newest_run(lab)
    if run is None:
        raise UsageError(f"no run of your own of {lab} yet (run `python -m labs run {lab}` "
                         f"first, or name a run with --run ID)")
    return run


def main(args: argparse.Namespace) -> int:
    lab = registry.lab(args.lab).name
    check_label(args.label)
    run = chosen_run(lab, args.run)
    output = Path(args.output)
    if output.is_symlink() or (output.exists() and not output.is_file()
                               and not output.is_dir()):
        # The archive replaces whatever is at that path: never a link, a device or a pipe.
        raise UsageError(f"-o {output}: not a plain file; name a new file")
    if output.is_file() and not args.force:
        # A mistyped -o must not overwrite a file the reader keeps.
        raise UsageError(f"-o {output}: already exists (pass --force to replace it)")
    personal = None
    if not args.keep_host_identity:
        inventory = load_inventory()
        personal = local_personal(
            extra_hosts=[entry["address"] for entry in inventory.values()],
            extra_users=[entry["user"] for entry in inventory.values() if "user" in entry])
    started = time.monotonic()
    report = export_run(run, output, participant=args.label, personal=personal)
    seconds = time.monotonic() - started
    removed = len(report.removed_facts) + sum(report.replacements.values())
    what = ("host names and addresses kept, as asked" if personal is None else
            f"{removed} names or addresses removed" if removed else
            "no names or addresses found")
    print(f"exported {lab}/{run.run_id} as participant {report.participant}: {report.path} "
          f"({report.size_bytes / 1e6:.2f} MB, {report.files} files, {what}, "
          f"{seconds:.1f} s)")
    return 0
