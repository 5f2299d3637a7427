"""`python -m labs clean [--host H]`: tear down exactly what the safety journal lists.

Newest first, idempotent: running it twice is harmless, and it works after a crash, a
Ctrl-C or a killed lab process. Without --host it cleans every host that has a journal,
lab VMs' insides first and the local machine (which runs the VMs) last. It also deletes
the staging folders of recorded runs whose lab process is gone (a run interrupted before
it was complete never becomes a run), also those an interrupted import left in a class.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable

# Every module that owns a kind of resource registers its teardown when imported.
import labs.infra.containers  # noqa: F401  (container, network)
import labs.infra.netns  # noqa: F401  (netns)
import labs.infra.processes  # noqa: F401  (server)
import labs.infra.scratch  # noqa: F401  (scratch-dir)
import labs.infra.teardowns  # noqa: F401  (loop, mount, md, dm, drbd, netem, file, work-dir)
import labs.infra.vm.throttle  # noqa: F401  (vm-throttle)
from labs import classes, records
from labs.errors import UsageError
from labs.infra.inventory import get_host, is_known_name
from labs.infra.journal import Journal, JournalEntry, retire_journal
from labs.infra.paths import state_dir
from labs.infra.vm import machine  # vm

HELP = "tear down what the safety journal lists (after a crash too)"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--host", help="clean only this host (default: every journaled host)")
    parser.add_argument("--keep-vms", action="store_true",
                        help="leave running lab VMs up (their insides are still cleaned)")


def journaled_hosts() -> list[str]:
    names = [path.name.removeprefix("journal-").removesuffix(".jsonl")
             for path in state_dir().glob("journal-*.jsonl")]

    def order(name: str) -> tuple[int, str]:
        return (2 if name == "local" else 0 if name.startswith("vm") else 1, name)

    return sorted(names, key=order)


def running_vm(entry: JournalEntry) -> bool:
    return entry.kind == "vm" and machine.is_vm_name(entry.id) and machine.is_running(entry.id)


def clean_host(name: str, log: Callable[[str], None] = print, keep_vms: bool = False) -> int:
    """Tear down one host's journal; returns how many resources were removed."""
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
        return len(journal.clean(host, log=log, keep=running_vm if keep_vms else None))
    finally:
        host.close()


def main(args: argparse.Namespace) -> int:
    if args.host and args.host not in journaled_hosts() and not is_known_name(args.host):
        raise UsageError(f"clean: no host named {args.host!r} (not local, not vm1/vm2, not in "
                         f"the inventory, and never used): nothing was cleaned")
    names = [args.host] if args.host else journaled_hosts()
    removed = sum(clean_host(name, keep_vms=args.keep_vms) for name in names)
    staged = []
    if not args.host or args.host == "local":
        staged = records.remove_stale_staging()
        # An import interrupted while copying leaves a hidden staging folder in a class too.
        for participant in sorted(classes.classes_root().glob("*/*")):
            if participant.is_dir() and not participant.name.startswith("."):
                staged += records.remove_stale_staging(participant)
    for folder in staged:
        print(f"clean: deleted the unfinished run folder {records.display_path(folder)}")
    print(f"clean: removed {removed} resource(s) on {', '.join(names) or 'no host'}")
    return 0
