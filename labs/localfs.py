"""A lab-built file system on the local host: a loop device over a file, ext4, mounted.

Kept separate from labs/hosts.py so that the local and SSH host code can take it over
later; it uses the same safety journal, with kinds "loop" (id: the backing file) and
"mount" (id: the mount point). Both teardowns only touch what the id names:

- a loop device is detached only if `losetup -j <file>` says it is backed by the lab's file;
- a mount is unmounted only if the mount point is that exact path.

Needs root (losetup, mount).
"""

from __future__ import annotations

import os
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from labs.errors import LabError
from labs.journal import TEARDOWNS, Journal, JournalEntry, register_teardown


class FilesystemError(LabError):
    """Building or removing the lab's file system failed."""


@dataclass(frozen=True)
class LoopFilesystem:
    image_path: Path
    device: str
    mount_point: Path
    fs_type: str
    size_mib: int


def _run(command: list[str]) -> str:
    result = subprocess.run(command, capture_output=True, text=True)
    if result.returncode != 0:
        tail = (result.stderr or result.stdout).strip().splitlines()[-1:] or ["no output"]
        raise FilesystemError(f"`{' '.join(command)}` failed with exit {result.returncode}: "
                              f"{tail[0]}")
    return result.stdout


def loop_devices_backed_by(image_path: Path) -> list[str]:
    """Loop devices whose backing file is exactly image_path."""
    out = _run(["losetup", "--noheadings", "--output", "NAME,BACK-FILE", "--list"])
    target = str(Path(image_path).resolve())
    devices = []
    for line in out.splitlines():
        parts = line.split(None, 1)
        if len(parts) == 2 and parts[1].strip().removesuffix(" (deleted)") == target:
            devices.append(parts[0])
    return devices


def is_mount_point(path: Path) -> bool:
    result = subprocess.run(["findmnt", "--noheadings", "--mountpoint", str(path)],
                            capture_output=True, text=True)
    return result.returncode == 0 and bool(result.stdout.strip())


def make_loop_filesystem(journal: Journal, work_dir: Path, size_mib: int,
                         name: str = "labfs", fs_type: str = "ext4") -> LoopFilesystem:
    """Create <work_dir>/<name>.img (sparse), attach it, make a file system, mount it."""
    if os.geteuid() != 0:
        raise FilesystemError("building a loop file system needs root (losetup, mount): "
                              "run the lab as root")
    work_dir = Path(work_dir).resolve()
    work_dir.mkdir(parents=True, exist_ok=True)
    image_path = work_dir / f"{name}.img"
    mount_point = work_dir / name
    if image_path.exists():
        raise FilesystemError(f"{image_path} already exists: use a fresh work dir")
    with open(image_path, "wb") as image:
        image.truncate(size_mib * 1024 * 1024)  # sparse: takes disk space only as written
    journal.will_create("loop", str(image_path), size_mib=size_mib, work_dir=str(work_dir),
                        remove_file=True)
    device = _run(["losetup", "--find", "--show", str(image_path)]).strip()
    # Safe: `device` is the loop device losetup just attached to the lab's own new file.
    _run([f"mkfs.{fs_type}", "-q", "-F", "-b", "4096", "-L", name[:16], device])
    mount_point.mkdir()
    journal.will_create("mount", str(mount_point), device=device, image=str(image_path))
    _run(["mount", "-t", fs_type, device, str(mount_point)])
    return LoopFilesystem(image_path, device, mount_point, fs_type, size_mib)


def remove_loop_filesystem(journal: Journal, fs: LoopFilesystem) -> None:
    _teardown_mount(None, JournalEntry("mount", str(fs.mount_point)))
    journal.released("mount", str(fs.mount_point))
    _teardown_loop(None, JournalEntry("loop", str(fs.image_path)))
    journal.released("loop", str(fs.image_path))


def _teardown_mount(host: Any, entry: JournalEntry) -> None:
    mount_point = Path(entry.id)
    if is_mount_point(mount_point):
        # Safe: unmounts only the exact mount point the journal recorded for this lab.
        _run(["umount", str(mount_point)])


def _teardown_loop(host: Any, entry: JournalEntry) -> None:
    for device in loop_devices_backed_by(Path(entry.id)):
        # Safe: losetup reports this device is backed by the lab's own image file.
        _run(["losetup", "--detach", device])


# Where labs/journal.py already registers host-aware teardowns for these kinds (our entries
# carry the `work_dir` detail they check), keep those; register ours only where none exists.
for _kind, _teardown in (("mount", _teardown_mount), ("loop", _teardown_loop)):
    if _kind not in TEARDOWNS:
        register_teardown(_kind)(_teardown)
