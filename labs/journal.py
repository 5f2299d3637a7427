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

API (stable; other labs build on it):

    journal = Journal(host.name)                     # one journal per lab host
    journal.will_create("loop", backing_file, work_dir=..., remove_file=True)  # BEFORE creating
    journal.note("loop", backing_file, device="/dev/loop3")    # facts learned after creating
    journal.released("loop", backing_file)           # AFTER destroying it yourself
    journal.live_entries(); journal.owns(kind, id); journal.clean(host)

Kinds with a teardown here (id -> what the teardown does, each only if it still exists):

    loop        backing file in the lab's work dir -> detach every loop device over that
                file, then delete the file (details: work_dir, remove_file)
    mount       mount point -> umount it
    md          array name -> stop every md array whose members are this journal's loop
                devices or the host's lab devices (details: device, members)
    dm          device-mapper name -> dmsetup remove
    drbd        resource name -> drbdsetup down (details: config, a file to delete)
    container   container name -> docker rm -f, only if it carries our label
                (details: label_key, label_value)
    vm          VM name -> stop the QEMU process whose command line names its directory
    scratch-dir a directory under a storage-labs folder -> unmount what is under it, delete it
    file        a file -> delete it

Most labs use `labs.workspace.LabWorkspace`, which journals for them.
"""

from __future__ import annotations

import datetime as dt
import fcntl
import json
import os
import signal
import time
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

    def clean(self, host: Any, log: Callable[[str], None] = print) -> list[JournalEntry]:
        """Tear down every live entry, newest first. Returns what was torn down.

        A teardown that fails does not stop the others; failed ones get a second try at the
        end (an older entry may have been what kept them busy), then the first error is
        raised and the entries stay in the journal for the next `clean`.
        """
        torn_down: list[JournalEntry] = []
        entries = self.live_entries()
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


def wait_for_orphaned_commands(host: Any, timeout_s: float = 120) -> None:
    """Wait until no command started by a dead lab process is still running on the host.

    A killed lab leaves its last command running (an `mdadm --create` keeps going); tearing
    down before it ends could leave what it creates behind. Every command carries a marker
    (labs.hosts.command_marker), so we wait for those. We never kill them: waiting is safe.
    """
    from labs.hosts import command_marker

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


def _in_dir(path: str, directory: str) -> bool:
    path, directory = os.path.normpath(path), os.path.normpath(directory)
    return bool(directory) and directory != "/" and path.startswith(directory + "/")


def loop_devices_by_backing_file(host: Any) -> dict[str, list[str]]:
    """{backing file: [loop devices]} from `losetup --list` on the host."""
    out = host.sudo(["losetup", "--list", "--noheadings", "--raw", "--output",
                     "NAME,BACK-FILE"], timeout_s=60).stdout
    found: dict[str, list[str]] = {}
    for line in out.splitlines():
        name, _, backing = line.partition(" ")
        backing = backing.strip().replace("\\x20", " ")
        if backing.endswith(" (deleted)"):
            backing = backing[: -len(" (deleted)")]
        if name:
            found.setdefault(backing, []).append(name)
    return found


@register_teardown("loop")
def _teardown_loop(host: Any, entry: JournalEntry) -> None:
    work_dir = entry.details.get("work_dir", "")
    if not _in_dir(entry.id, work_dir):
        raise JournalError(f"loop {entry.id} is not inside its work dir {work_dir!r}: "
                           "refusing to touch it")
    for _ in range(10):
        devices = loop_devices_by_backing_file(host).get(entry.id, [])
        if not devices:
            break
        for device in devices:
            # Safe: this loop device is backed by the lab's own file inside its work dir.
            host.sudo(["losetup", "--detach", device], timeout_s=60, check=False)
        time.sleep(0.5)
    else:
        raise JournalError(f"loop device over {entry.id} would not detach (still in use?)")
    if entry.details.get("remove_file", True):
        # Safe: a file the lab created inside its own work dir (checked above).
        host.sudo(["rm", "-f", "--", entry.id], timeout_s=60)


def mounted_at(host: Any, mount_point: str) -> bool:
    mounts = host.run("cat /proc/mounts", timeout_s=60).stdout
    return any(line.split()[1:2] == [mount_point] for line in mounts.splitlines())


@register_teardown("mount")
def _teardown_mount(host: Any, entry: JournalEntry) -> None:
    for _ in range(10):  # a point can be mounted more than once
        if not mounted_at(host, entry.id):
            return
        # Safe: this mount point is one the lab made (journaled before mounting).
        host.sudo(["umount", "--", entry.id], timeout_s=120)
    raise JournalError(f"{entry.id} is still mounted after 10 unmounts")


MD_SLAVES_SCRIPT = r"""for md in /sys/block/md*; do
  [ -d "$md/slaves" ] || continue
  for s in "$md"/slaves/*; do
    [ -e "$s" ] || continue
    echo "${md##*/} ${s##*/} $(cat "$s/loop/backing_file" 2>/dev/null)"
  done
done"""


def md_members(host: Any) -> dict[str, list[tuple[str, str]]]:
    """{md device name: [(member device name, loop backing file or '')]} from sysfs."""
    arrays: dict[str, list[tuple[str, str]]] = {}
    for line in host.run(MD_SLAVES_SCRIPT, timeout_s=60).stdout.splitlines():
        md, member, backing = (line.split(" ", 2) + ["", ""])[:3]
        arrays.setdefault(md, []).append((member, backing.removesuffix(" (deleted)")))
    return arrays


@register_teardown("md")
def _teardown_md(host: Any, entry: JournalEntry) -> None:
    ours = set(entry.details.get("members", []))  # loop backing files or lab devices

    def our_arrays() -> list[str]:
        return [md for md, members in md_members(host).items()
                if any(backing in ours or f"/dev/{member}" in ours
                       for member, backing in members)]

    why = ""
    for _ in range(10):
        arrays = our_arrays()
        if not arrays:
            return
        # udev may still be probing a device that was just created (blkid after mkfs):
        # let it finish, or the stop fails with "cannot get exclusive access".
        host.sudo("udevadm settle --timeout=30 || true", timeout_s=60)
        for md in arrays:
            # Safe: this array is built over the lab's own loop files or lab VM disks.
            stop = host.sudo(["mdadm", "--stop", f"/dev/{md}"], timeout_s=120, check=False)
            why = stop.stderr.strip().splitlines()[-1] if stop.stderr.strip() else why
        time.sleep(1)
    raise JournalError(f"md array ({entry.id}) would not stop: {why}")


@register_teardown("dm")
def _teardown_dm(host: Any, entry: JournalEntry) -> None:
    if host.sudo(["dmsetup", "info", entry.id], timeout_s=60, check=False).ok:
        # Safe: a device-mapper name the lab chose and journaled before creating it.
        host.sudo(["dmsetup", "remove", "--retry", entry.id], timeout_s=120)


@register_teardown("drbd")
def _teardown_drbd(host: Any, entry: JournalEntry) -> None:
    if host.sudo(["drbdsetup", "status", entry.id], timeout_s=60, check=False).ok:
        # Safe: a DRBD resource the lab defined over its own devices.
        host.sudo(["drbdsetup", "down", entry.id], timeout_s=120)
    config = entry.details.get("config")
    if config:
        host.sudo(["rm", "-f", "--", config], timeout_s=60)


@register_teardown("container")
def _teardown_container(host: Any, entry: JournalEntry) -> None:
    key = entry.details.get("label_key", "storage-labs.journal")
    value = entry.details.get("label_value", "")
    template = "{{index .Config.Labels " + json.dumps(key) + "}}"
    found = host.sudo(["docker", "inspect", "--format", template, entry.id], timeout_s=120,
                      check=False)
    if found.ok and found.stdout.strip() == value:
        # Safe: the container carries the label this journal gave it.
        host.sudo(["docker", "rm", "--force", entry.id], timeout_s=120)


@register_teardown("vm")
def _teardown_vm(host: Any, entry: JournalEntry) -> None:
    from labs.vm import machine

    machine.stop_vm_process(entry)


def processes_inside(folder: str) -> list[int]:
    """Processes working in `folder`: named in their command line, or chrooted or cd'ed there.

    A killed image build leaves debootstrap (and the dpkg it runs chrooted in the new tree)
    behind; they would re-mount /proc in the tree while we delete it.
    """
    found = []
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit() or int(proc.name) == os.getpid():
            continue
        try:
            argv = (proc / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
            places = [os.readlink(proc / "root"), os.readlink(proc / "cwd")]
        except OSError:
            continue
        if folder in argv or any(_in_dir(place, folder) for place in places):
            found.append(int(proc.name))
    return found


def stop_processes_inside(folder: str, timeout_s: float = 30) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        pids = processes_inside(folder)
        if not pids:
            return
        for pid in pids:
            try:
                # Safe: the process works inside the lab's own scratch folder (checked above).
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        time.sleep(0.2)
    raise JournalError(f"processes inside {folder} would not stop")


@register_teardown("scratch-dir")
def _teardown_scratch_dir(host: Any, entry: JournalEntry) -> None:
    if "/storage-labs" not in entry.id or not os.path.isabs(entry.id):
        raise JournalError(f"refusing to delete {entry.id}: not a storage-labs folder")
    if host.is_local:
        stop_processes_inside(entry.id)
    mounts = host.run("cat /proc/mounts", timeout_s=60).stdout.splitlines()
    points = [line.split()[1] for line in mounts if len(line.split()) > 1]
    for point in sorted((p for p in points if _in_dir(p, entry.id)), reverse=True):
        # Safe: only mounts below the lab's own scratch folder (debootstrap's /proc etc.).
        host.sudo(["umount", "--lazy", "--", point], timeout_s=120, check=False)
    # Safe: --one-file-system never crosses into something still mounted below it.
    host.sudo(["rm", "-rf", "--one-file-system", "--", entry.id], timeout_s=600)


@register_teardown("file")
def _teardown_file(host: Any, entry: JournalEntry) -> None:
    # Safe: a file the lab journaled before creating it.
    host.sudo(["rm", "-f", "--", entry.id], timeout_s=60)
