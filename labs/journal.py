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

Kinds of resources register a teardown function with `@register_teardown("kind")`.
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


class JournalError(LabError):
    """The journal cannot be read or a teardown failed."""


@dataclass(frozen=True)
class JournalEntry:
    kind: str
    id: str
    details: dict[str, Any] = field(default_factory=dict)
    created_at: str = ""


Teardown = Callable[[Any, JournalEntry], None]  # (host, entry) -> None; idempotent
TEARDOWNS: dict[str, Teardown] = {}


def register_teardown(kind: str) -> Callable[[Teardown], Teardown]:
    """Declare how to destroy resources of `kind` (must succeed if already gone)."""

    def decorate(function: Teardown) -> Teardown:
        TEARDOWNS[kind] = function
        return function

    return decorate


def state_dir() -> Path:
    base = os.environ.get("LABS_STATE_DIR")
    if base:
        return Path(base)
    xdg = os.environ.get("XDG_STATE_HOME") or str(Path.home() / ".local" / "state")
    return Path(xdg) / "storage-labs"


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
        return list(live.values())

    def owns(self, kind: str, resource_id: str) -> bool:
        return any(e.kind == kind and e.id == resource_id for e in self.live_entries())

    def clean(self, host: Any, log: Callable[[str], None] = print) -> list[JournalEntry]:
        """Tear down every live entry, newest first. Returns what was torn down."""
        torn_down = []
        for entry in reversed(self.live_entries()):
            teardown = TEARDOWNS.get(entry.kind)
            if teardown is None:
                raise JournalError(
                    f"{self.path}: no teardown known for kind '{entry.kind}' ({entry.id})")
            log(f"clean {self.host_name}: removing {entry.kind} {entry.id}")
            teardown(host, entry)
            self.released(entry.kind, entry.id)
            torn_down.append(entry)
        return torn_down


def _line_count(path: Path) -> int:
    with open(path) as handle:
        return sum(1 for _ in handle)
