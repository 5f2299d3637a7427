"""`python -m labs clean [--host H]`: tear down exactly what the safety journal lists.

Newest first, idempotent: running it twice is harmless, and it works after a crash, a
Ctrl-C or a killed lab process. Without --host it cleans every host that has a journal,
lab VMs' insides first and the local machine (which runs the VMs) last.
"""

from __future__ import annotations

import argparse
import datetime as dt
from collections.abc import Callable

from labs.hosts import get_host
from labs.journal import Journal, state_dir


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--host", help="clean only this host (default: every journaled host)")


def journaled_hosts() -> list[str]:
    names = [path.name.removeprefix("journal-").removesuffix(".jsonl")
             for path in state_dir().glob("journal-*.jsonl")]

    def order(name: str) -> tuple[int, str]:
        return (2 if name == "local" else 0 if name.startswith("vm") else 1, name)

    return sorted(names, key=order)


def clean_host(name: str, log: Callable[[str], None] = print) -> int:
    """Tear down one host's journal; returns how many resources were removed."""
    from labs.vm import machine

    journal = Journal(name)
    if not journal.live_entries():
        return 0
    if machine.is_vm_name(name) and not machine.is_running(name):
        # Everything inside a VM lived on its throw-away overlay and ended with it.
        retire_journal(journal)
        log(f"clean {name}: the VM is not running; its resources ended with it")
        return 0
    host = get_host(name)
    try:
        return len(journal.clean(host, log=log))
    finally:
        host.close()


def retire_journal(journal: Journal) -> None:
    """Keep an ended VM's journal for diagnosis, under a name `clean` no longer reads."""
    if journal.path.exists():
        stamp = dt.datetime.now(dt.UTC).strftime("%Y%m%dT%H%M%S%fZ")
        journal.path.rename(journal.path.with_name(f"{journal.path.name}.ended-{stamp}"))


def main(args: argparse.Namespace) -> int:
    names = [args.host] if args.host else journaled_hosts()
    removed = sum(clean_host(name) for name in names)
    print(f"clean: removed {removed} resource(s) on {', '.join(names) or 'no host'}")
    return 0
