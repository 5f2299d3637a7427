"""`python -m labs hosts`: the lab hosts a lab can name with --host."""

from __future__ import annotations

import argparse

from labs.infra.inventory import host_names, inventory_path

HELP = "list the lab hosts (local, inventory, running VMs)"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    pass


def main(args: argparse.Namespace) -> int:
    print(f"inventory: {inventory_path()}")
    for name in host_names():
        print(name)
    return 0
