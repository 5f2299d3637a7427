"""`python -m labs check-device PATH [--host H] [--allow-device PATH]`: ask the guard."""

from __future__ import annotations

import argparse

from labs.infra.guard import check_device
from labs.infra.inventory import get_host
from labs.infra.journal import Journal

HELP = "say whether a lab may touch a block device (the guard)"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("path", help="a block device path, e.g. /dev/loop3")
    parser.add_argument("--host", default="local", help="lab host (default: local)")
    parser.add_argument("--allow-device", action="append", default=[], metavar="PATH",
                        help="let labs use this exact device path although they did not create it")


def main(args: argparse.Namespace) -> int:
    host = get_host(args.host)
    try:
        check_device(host, Journal(host.name), args.path, args.allow_device)
    finally:
        host.close()
    print(f"host {host.name}: a lab may use {args.path}")
    return 0
