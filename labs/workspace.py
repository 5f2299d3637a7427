"""A lab's workspace on one host: journaled loop devices, arrays, file systems and mounts.

API (stable; other labs build on it):

    from labs.hosts import get_host
    from labs.workspace import LabWorkspace

    with LabWorkspace(get_host("vm1"), lab="write-mostly", allow_devices=args.allow_device) as ws:
        fast = ws.make_loop_device("fast", size_mib=256)          # -> "/dev/loop3"
        slow = ws.host.lab_devices[1]                             # a VM data disk, if any
        md = ws.make_md_raid1("wm", [fast, slow], write_mostly=[slow])   # -> "/dev/md/wm"
        ws.make_filesystem(md, "ext4")
        mount_point = ws.mount(md, "data")                        # -> "<work_dir>/mnt/data"
        ws.check_device(path)          # the guard: raises DeviceRefused for foreign devices
        ws.run_container("pg1", "labs-postgres", ["postgres"], docker_args=["--network", "none"])
        delayed = ws.make_dm("slow", f"0 {sectors} delay {fast} 0 5", devices=[fast])
        ws.journaled("drbd", "r0", command_that_brings_it_up,      # any other kind of resource
                     config="/etc/drbd.d/r0.res", device="/dev/drbd0")
    # leaving the block tears down what this workspace created, newest first

Every resource is journaled before it is created (labs.journal), so after a crash or a
Ctrl-C `python -m labs clean --host H` removes it. Work files live under
`host.work_dir/<lab>/`.
"""

from __future__ import annotations

import shlex
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from labs.errors import LabError, UsageError
from labs.guard import check_device
from labs.hosts import Host, command_marker
from labs.journal import TEARDOWNS, Journal, JournalEntry

CONTAINER_LABEL = "storage-labs.journal"  # value: the state dir's tag (hosts.command_marker)
NAME_CHARS = set("abcdefghijklmnopqrstuvwxyz0123456789-_")


def _check_name(name: str) -> str:
    if not name or not set(name) <= NAME_CHARS or len(name) > 24:
        raise UsageError(f"resource name {name!r}: use 1-24 of a-z, 0-9, '-', '_'")
    return name


class LabWorkspace:
    def __init__(self, host: Host, journal: Journal | None = None, *, lab: str = "lab",
                 allow_devices: Iterable[str] = (), log: Callable[[str], None] | None = None):
        self.host = host
        self.journal = journal or Journal(host.name)
        self.lab = _check_name(lab)
        self.work_dir = f"{host.work_dir.rstrip('/')}/{self.lab}"
        self.allow_devices = tuple(allow_devices or ())
        self.log = log or (lambda message: None)
        self.created: list[tuple[str, str]] = []
        self._prepared = False

    def __enter__(self) -> LabWorkspace:
        return self

    def __exit__(self, *exc_info: Any) -> None:
        self.close()

    def prepare(self) -> None:
        if not self._prepared:
            self.host.sudo(["mkdir", "-p", self.work_dir], timeout_s=60)
            self._prepared = True

    def check_device(self, path: str) -> str:
        """The guard: `path` if this lab may touch it, else DeviceRefused."""
        return check_device(self.host, self.journal, path, self.allow_devices)

    def journaled(self, kind: str, resource_id: str, command: str | Sequence[str],
                  timeout_s: float = 300, **details: Any) -> str:
        """Journal a resource, then run the command that creates it. Returns its stdout."""
        if self.journal.owns(kind, resource_id):
            # Re-creating it would reuse (and truncate) what an earlier run may still use.
            raise LabError(f"host {self.host.name}: {kind} {resource_id} is left from an "
                           f"earlier run: run `python -m labs clean --host {self.host.name}`")
        self.journal.will_create(kind, resource_id, **details)
        self.created.append((kind, resource_id))
        return self.host.sudo(command, timeout_s=timeout_s).stdout

    def make_loop_device(self, name: str, size_mib: int, *, direct_io: bool = True) -> str:
        """A loop device over a new sparse file <work_dir>/<name>.img of size_mib."""
        _check_name(name)
        if not (1 <= int(size_mib) <= 1024 * 1024):
            raise UsageError(f"loop device {name}: size_mib must be 1..1048576, not {size_mib}")
        self.prepare()
        backing = f"{self.work_dir}/{name}.img"
        quoted = shlex.quote(backing)
        direct = "--direct-io=on " if direct_io else ""
        self.log(f"{self.host.name}: loop device over {backing} ({size_mib} MiB)")
        # Safe: the file is new and inside the lab's work dir; --find picks an unused loop.
        device = self.journaled(
            "loop", backing,
            f"truncate -s {int(size_mib)}M {quoted} && losetup --find --show {direct}{quoted}",
            work_dir=self.work_dir, remove_file=True).strip()
        self.journal.note("loop", backing, device=device)
        return device

    def make_md_raid1(self, name: str, members: Sequence[str], *,
                      write_mostly: Sequence[str] = (), extra_args: Sequence[str] = ()) -> str:
        """An md RAID1 array /dev/md/<name> over devices the lab owns."""
        _check_name(name)
        for member in members:
            self.check_device(member)
        backing = self._member_ids(members)
        device = f"/dev/md/{name}"
        args = ["mdadm", "--create", device, "--run", "--metadata=1.2", "--level=1",
                f"--raid-devices={len(members)}", *extra_args]
        for member in members:
            args += ["--write-mostly", member] if member in write_mostly else [member]
        self.log(f"{self.host.name}: md RAID1 {device} over {' '.join(members)}")
        # Safe: every member passed the guard (the lab's own loop devices or VM lab disks).
        self.journaled("md", name, shlex.join(args) + " && udevadm settle",
                       device=device, members=backing)
        return device

    def _member_ids(self, members: Sequence[str]) -> list[str]:
        """Journal ids for md members: loop backing files, or the device path itself."""
        ids = []
        loops = {e.details.get("device"): e.id for e in self.journal.live_entries()
                 if e.kind == "loop"}
        for member in members:
            ids.append(loops.get(member, member))
        return ids

    def make_dm(self, name: str, table: str, devices: Sequence[str]) -> str:
        """A device-mapper device /dev/mapper/<name> from `table`, whose `devices` (every
        device the table names) must be the lab's own."""
        _check_name(name)
        for device in devices:
            self.check_device(device)
        # Safe: every device in the table passed the guard.
        self.journaled("dm", name, ["dmsetup", "create", name, "--table", table],
                       device=f"/dev/mapper/{name}")
        self.host.sudo("udevadm settle", timeout_s=120)
        return f"/dev/mapper/{name}"

    def make_filesystem(self, device: str, fs: str = "ext4") -> None:
        if fs not in ("ext4", "xfs"):
            raise UsageError(f"file system {fs!r}: use ext4 or xfs")
        self.check_device(device)
        force = "-F" if fs == "ext4" else "-f"
        # Safe: the device passed the guard just above.
        self.host.sudo([f"mkfs.{fs}", "-q", force, device], timeout_s=600)

    def mount(self, device: str, name: str, options: str = "") -> str:
        """Mount a lab device at <work_dir>/mnt/<name>; returns the mount point."""
        _check_name(name)
        self.check_device(device)
        self.prepare()
        point = f"{self.work_dir}/mnt/{name}"
        self.host.sudo(["mkdir", "-p", point], timeout_s=60)
        opts = ["-o", options] if options else []
        self.journaled("mount", point, ["mount", *opts, device, point], device=device)
        return point

    def run_container(self, name: str, image: str, command: Sequence[str] = (),
                      docker_args: Sequence[str] = ()) -> str:
        """`docker run -d` a container carrying this journal's label; returns its name."""
        _check_name(name)
        label_value = command_marker()
        args = ["docker", "run", "--detach", "--name", name,
                "--label", f"{CONTAINER_LABEL}={label_value}", *docker_args, image, *command]
        self.journaled("container", name, args, label_key=CONTAINER_LABEL,
                       label_value=label_value)
        return name

    def remove(self, kind: str, resource_id: str) -> None:
        """Tear one resource down now and journal that it is gone."""
        entry = next((e for e in self.journal.live_entries()
                      if e.kind == kind and e.id == resource_id), None)
        if entry is None:
            return
        TEARDOWNS[kind](self.host, entry)
        self.journal.released(kind, resource_id)

    def close(self) -> None:
        """Tear down everything this workspace created, newest first."""
        while self.created:
            kind, resource_id = self.created.pop()
            self.remove(kind, resource_id)

    def entries(self) -> list[JournalEntry]:
        return [e for e in self.journal.live_entries() if (e.kind, e.id) in self.created]
