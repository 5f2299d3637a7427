"""Journaled scratch folders on the machine that runs the labs (image builds use them).

    with scratch_folder(cache_dir() / "vm", ".build-") as folder:
        tree_in_memory(folder / "root")   # a tmpfs there, when memory allows
        ...   # debootstrap into folder/root, etc.

The folder is journaled (kind "scratch-dir") before it exists, so a build killed half way
(debootstrap still running, /proc mounted inside the tree) is cleaned by `python -m labs
clean`: it stops the processes working inside the folder, unmounts what is mounted below it
and deletes it, never crossing into anything else.
"""

from __future__ import annotations

import os
import signal
import subprocess
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from labs.infra.hosts import Host, LocalHost
from labs.infra.journal import Journal, JournalEntry, JournalError, is_inside, register_teardown


@contextmanager
def scratch_folder(parent: Path, prefix: str) -> Iterator[Path]:
    """A new folder under `parent`, journaled first and deleted (with its mounts) after."""
    folder = Path(parent) / f"{prefix}{os.getpid()}-{uuid.uuid4().hex[:8]}"
    journal = Journal("local")
    journal.will_create("scratch-dir", str(folder))
    try:
        folder.mkdir(parents=True)
        yield folder
    finally:
        _teardown_scratch_dir(LocalHost(), JournalEntry("scratch-dir", str(folder)))
        journal.released("scratch-dir", str(folder))


# A debootstrap tree is read once (by mkfs.ext4 -d or tar) and then deleted: it can live in
# memory, where dpkg's sync of every file it unpacks costs nothing (the lab VM image took
# 186 s with its tree in memory, 253 to 317 s on the same machine's disk). The VM image's
# tree is about 1 GiB.
TREE_TMPFS_SIZE_MIB = 4096
TREE_IN_MEMORY_MIN_AVAILABLE_MIB = 3072


def _available_memory_mib() -> int:
    for line in Path("/proc/meminfo").read_text().splitlines():
        if line.startswith("MemAvailable:"):
            return int(line.split()[1]) // 1024
    return 0


def tree_in_memory(root: Path) -> bool:
    """Make `root`, a new folder inside a scratch folder, a tmpfs of its own when this
    machine has the memory to spare; else it is a plain folder. Returns whether it is."""
    root.mkdir()
    if _available_memory_mib() < TREE_IN_MEMORY_MIN_AVAILABLE_MIB:
        return False
    # Safe: a new, empty tmpfs on an empty folder of a scratch folder of ours; the scratch
    # folder's teardown unmounts it (and what debootstrap mounted inside it).
    mounted = subprocess.run(["mount", "-t", "tmpfs", "-o",
                              f"size={TREE_TMPFS_SIZE_MIB}m,mode=0755", "tmpfs", str(root)],
                             capture_output=True, text=True)
    return mounted.returncode == 0


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
        if folder in argv or any(is_inside(place, folder) for place in places):
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
def _teardown_scratch_dir(host: Host, entry: JournalEntry) -> None:
    if "/storage-labs" not in entry.id or not os.path.isabs(entry.id):
        raise JournalError(f"refusing to delete {entry.id}: not a storage-labs folder")
    if host.is_local:
        stop_processes_inside(entry.id)
    mounts = host.run("cat /proc/mounts", timeout_s=60).stdout.splitlines()
    points = [line.split()[1] for line in mounts if len(line.split()) > 1]
    for point in sorted((p for p in points if is_inside(p, entry.id)), reverse=True):
        # Safe: only mounts below the lab's own scratch folder (debootstrap's /proc etc.).
        host.sudo(["umount", "--lazy", "--", point], timeout_s=120, check=False)
    # Safe: --one-file-system never crosses into something still mounted below it.
    host.sudo(["rm", "-rf", "--one-file-system", "--", entry.id], timeout_s=600)

