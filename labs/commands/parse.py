"""`python -m labs parse <tool> FILE ...`: turn a tool's saved output into a table or JSON.

The parsing itself lives in labs/tools/ (text in, data out); this command reads the files.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from labs import rawfiles
from labs.tools import drbd_state, mdadm, pgbench

HELP = "parse a tool's output file into a table or JSON"


def _fio(args: argparse.Namespace) -> str:
    rows = rawfiles.parse_fio_file(args.file)
    return json.dumps(rows, indent=2) if args.json else rawfiles.fio.format_rows(rows)


def _mdstat(args: argparse.Namespace) -> str:
    text = rawfiles.read_text(args.file, "saved /proc/mdstat")
    parsed = mdadm.parse_mdstat(text, str(args.file))
    return (json.dumps(mdadm.mdstat_as_dict(parsed), indent=2) if args.json
            else mdadm.format_mdstat(parsed))


def _pgbench(args: argparse.Namespace) -> str:
    summary = pgbench.parse_summary(rawfiles.read_text(args.file, "pgbench output"),
                                    str(args.file))
    log = rawfiles.parse_pgbench_logs(args.log) if args.log else None
    record = pgbench.summarize(summary, log)
    if args.json:
        return json.dumps(record, indent=2)
    return "\n".join(f"{key:<28} {value}" for key, value in record.items())


def _drbd(args: argparse.Namespace) -> str:
    parsed = drbd_state.parse_drbd(rawfiles.read_text(args.file, "DRBD status"), str(args.file))
    return json.dumps(drbd_state.as_json(parsed), indent=None if not args.json else 2)


# tool -> (help, what FILE is, formatter)
TOOLS = {
    "fio": ("fio JSON or JSON+ output -> one row per job and direction that did I/O",
            "fio output (--output-format=json or json+)", _fio),
    "mdstat": ("/proc/mdstat text -> arrays, members (roles, write-mostly, faulty) and sync "
               "progress", "a saved copy of /proc/mdstat", _mdstat),
    "pgbench": ("a pgbench summary (stdout), with its -l logs -> TPS, latency percentiles",
                "pgbench's stdout, saved to a file", _pgbench),
    "drbd": ("/proc/drbd (8.4) or `drbdadm status` text -> roles, disk states, counters, "
             "sync progress", "a saved copy of /proc/drbd or of drbdadm status", _drbd),
}


def add_arguments(parser: argparse.ArgumentParser) -> None:
    tools = parser.add_subparsers(dest="tool", metavar="TOOL", parser_class=type(parser))
    tools.required = True
    for name, (help_text, file_help, formatter) in TOOLS.items():
        tool = tools.add_parser(name, help=help_text, description=help_text)
        tool.add_argument("file", metavar="FILE", type=Path, help=file_help)
        if name == "pgbench":
            tool.add_argument("--log", type=Path, action="append", default=[], metavar="FILE",
                              help="a per-transaction log written by -l, plain or .gz "
                              "(repeat for each thread)")
        tool.add_argument("--json", action="store_true", help="print JSON instead of a table")
        tool.set_defaults(formatter=formatter)


def main(args: argparse.Namespace) -> int:
    print(args.formatter(args))
    return 0


