"""The safety journal: every resource a lab creates is written down before it is created.

Promise 3 of the book is that nothing a lab does can harm the reader's machine. The
journal is how that promise is kept after a crash, a Ctrl-C or a killed process:
`python -m labs clean [--host H]` tears down exactly what the journal lists, newest first,
and nothing else.

The journal is an append-only JSON-lines file, one per lab host, kept on the machine that
runs `python -m labs` (under $XDG_STATE_HOME/storage-labs/, or $LABS_STATE_DIR). Each line
is an event:

    {"event": "create", "kind": "loop", "id": "/work/x/fast.img", "details": {...}, ...}
    {"event": "release", "kind": "loop", "id": "/work/x/fast.img", ...}

An entry is live from its "create" line until its "release" line. "create" is appended
(and fsynced) *before* the resource exists, so a crash between the two leaves an entry
whose resource may or may not exist: every teardown must therefore be idempotent
("already gone" is success).

Each kind of resource has one teardown, registered by the module that creates that kind
(`@register_teardown("kind")`): labs.infra.teardowns (what labs.infra.workspace makes:
loop, mount, md, dm, drbd, netem, file, work-dir), labs.infra.containers (container,
network), labs.infra.netns (netns), labs.infra.processes (server), labs.infra.vm.machine
(vm), labs.infra.vm.throttle (vm-throttle), labs.infra.scratch (scratch-dir).
`python -m labs clean` imports them all. Every teardown is idempotent
("already gone" is success) and touches only what its entry names.

API (stable; other labs build on it):

    journal = Journal(host.name)                     # one journal per lab host
    journal.will_create("loop", backing_file, work_dir=..., remove_file=True)  # BEFORE creating
    journal.note("loop", backing_file, device="/dev/loop3")    # facts learned after creating
    journal.released("loop", backing_file)           # AFTER destroying it yourself
    journal.live_entries(); journal.owns(kind, id); journal.clean(host)

Labs do not journal by hand: labs.infra.workspace.LabWorkspace journals for them.
"""

from __future__ import annotations

import datetime as dt
import fcntl
import json
import os
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from labs.errors import LabError
from labs.infra.hosts import Host
from labs.infra.paths import command_marker, state_dir


class JournalError(LabError):
    """The journal cannot be read or a teardown failed."""


@dataclass(frozen=True)
class JournalEntry:
    kind: str
    id: str
    details: dict[str, Any] = field(default_factory=dict)
    created_at: str = ""


Teardown = Callable[[Host, JournalEntry], None]  # (host, entry) -> None; idempotent
TEARDOWNS: dict[str, Teardown] = {}


def register_teardown(kind: str) -> Callable[[Teardown], Teardown]:
    """Declare how to destroy resources of `kind` (must succeed if already gone)."""

    def decorate(function: Teardown) -> Teardown:
        TEARDOWNS[kind] = function
        return function

    return decorate


class Journal:
    """The journal of one lab host."""

    def __init__(self, host_name: str, path: Path | None = None):
        self.host_name = host_name
        self.path = Path(path or state_dir() / f"journal-{host_name}.jsonl")

    def _append(self, record: dict[str, Any]) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        line = json.dumps(record, sort_keys=True) + "\n"
        with open(self.path, "a") as journal_file:
            fcntl.flock(journal_file, fcntl.LOCK_EX)
            journal_file.write(line)
            journal_file.flush()
            # The entry must be on disk before the resource exists, or a crash could
            # leave a resource nobody knows to remove.
            os.fsync(journal_file.fileno())

    def will_create(self, kind: str, resource_id: str, **details: Any) -> JournalEntry:
        """Write down a resource *before* creating it."""
        now = dt.datetime.now(dt.UTC).isoformat()
        self._append({"event": "create", "kind": kind, "id": resource_id,
                      "details": details, "at": now})
        return JournalEntry(kind, resource_id, details, now)

    def released(self, kind: str, resource_id: str) -> None:
        """Write down that a resource is gone (after destroying it)."""
        self._append({"event": "release", "kind": kind, "id": resource_id,
                      "at": dt.datetime.now(dt.UTC).isoformat()})

    def note(self, kind: str, resource_id: str, **details: Any) -> None:
        """Add facts to a live entry that are only known after creation (e.g. /dev/loop3)."""
        self._append({"event": "note", "kind": kind, "id": resource_id, "details": details,
                      "at": dt.datetime.now(dt.UTC).isoformat()})

    def live_entries(self) -> list[JournalEntry]:
        """Entries created and not yet released, oldest first."""
        if not self.path.exists():
            return []
        live: dict[tuple[str, str], JournalEntry] = {}
        with open(self.path) as journal_file:
            for number, line in enumerate(journal_file, start=1):
                if not line.strip():
                    continue
                try:
                    record = json.loads(line)
                    key = (record["kind"], record["id"])
                    event = record["event"]
                except (json.JSONDecodeError, KeyError, TypeError):
                    # A crash can cut the last line short; anything else is damage.
                    if number == _line_count(self.path):
                        continue
                    raise JournalError(
                        f"{self.path}: line {number} is not a journal event") from None
                if event == "create":
                    live.pop(key, None)  # re-created: keep its newest position
                    live[key] = JournalEntry(record["kind"], record["id"],
                                             record.get("details", {}), record.get("at", ""))
                elif event == "release":
                    live.pop(key, None)
                elif event == "note" and key in live:
                    old = live[key]
                    live[key] = JournalEntry(old.kind, old.id,
                                             {**old.details, **record.get("details", {})},
                                             old.created_at)
        return list(live.values())

    def owns(self, kind: str, resource_id: str) -> bool:
        return any(e.kind == kind and e.id == resource_id for e in self.live_entries())

    def clean(self, host: Host, log: Callable[[str], None] = print,
              keep: Callable[[JournalEntry], bool] | None = None) -> list[JournalEntry]:
        """Tear down every live entry (but those `keep` names), newest first. Returns what
        was torn down.

        A teardown that fails does not stop the others; failed ones get a second try at the
        end (an older entry may have been what kept them busy), then the first error is
        raised and the entries stay in the journal for the next `clean`.
        """
        torn_down: list[JournalEntry] = []
        entries = [e for e in self.live_entries() if not (keep and keep(e))]
        if entries:
            wait_for_orphaned_commands(host)
        for entry in entries:
            if entry.kind not in TEARDOWNS:
                raise JournalError(
                    f"{self.path}: no teardown known for kind '{entry.kind}' ({entry.id})")
        pending = list(reversed(entries))
        for attempt in (1, 2):
            failed: list[tuple[JournalEntry, LabError]] = []
            for entry in pending:
                log(f"clean {self.host_name}: removing {entry.kind} {entry.id}"
                    + (" (second try)" if attempt == 2 else ""))
                try:
                    TEARDOWNS[entry.kind](host, entry)
                except LabError as error:
                    failed.append((entry, error))
                    continue
                self.released(entry.kind, entry.id)
                torn_down.append(entry)
            if not failed:
                return torn_down
            pending = [entry for entry, _ in failed]
        entry, error = failed[0]
        raise JournalError(f"clean {self.host_name}: {len(failed)} resource(s) could not be "
                           f"removed; first: {entry.kind} {entry.id}: {error}")


def _line_count(path: Path) -> int:
    with open(path) as handle:
        return sum(1 for _ in handle)


def wait_for_orphaned_commands(host: Host, timeout_s: float = 120) -> None:
    """Wait until no command started by a dead lab process is still running on the host.

    A killed lab leaves its last command running (an `mdadm --create` keeps going); tearing
    down before it ends could leave what it creates behind. Every command carries a marker
    (labs.infra.paths.command_marker), so we wait for those. We never kill them: waiting is
    safe.
    """
    marker = command_marker()
    # The [s] keeps pgrep from matching the shell that runs this very check.
    pattern = "[s]" + marker[1:]
    script = (f"for i in $(seq {int(timeout_s * 2)}); do "
              f"pgrep -f -- {pattern} >/dev/null || exit 0; sleep 0.5; done; exit 1")
    # Unmarked: pgrep -f sees this shell's command line, which holds "[s]torage-labs-..."
    # and not the marker itself, so the check never waits for itself.
    result = host.run(script, check=False, timeout_s=timeout_s + 30, marked=False)
    if not result.ok:
        raise JournalError(f"clean {host.name}: commands of an earlier lab run are still "
                           f"running after {timeout_s:g} s (pgrep -f {marker})")


def is_inside(path: str, directory: str) -> bool:
    """Whether `path` lies strictly below `directory` (never true for "/" or "")."""
    path, directory = os.path.normpath(path), os.path.normpath(directory)
    return bool(directory) and directory != "/" and path.startswith(directory + "/")



def retire_journal(journal: Journal) -> None:
    """Keep an ended VM's journal for diagnosis, under a name `clean` no longer reads."""
    if journal.path.exists():
        stamp = dt.datetime.now(dt.UTC).strftime("%Y%m%dT%H%M%S%fZ")
        journal.path.rename(journal.path.with_name(f"{journal.path.name}.ended-{stamp}"))
