"""A lab's workspace on one host: everything a lab creates, journaled first, removed after.

API (stable; every lab builds on it):

    from labs.infra.inventory import get_host
    from labs.infra.workspace import LabWorkspace

    with LabWorkspace(get_host("vm1"), lab="write-mostly", run_id=run_id,
                      allow_devices=params.allow_devices) as ws:
        fast = ws.make_loop_device("fast", size_mib=256)          # -> "/dev/loop3"
        slow = ws.host.lab_devices[1]                             # a VM data disk, if any
        delayed = ws.make_dm_delay("slow-delay", slow, delay_ms=1)  # -> /dev/mapper/slow-delay
        md = ws.make_md_raid1("wm", [Member(fast), Member(delayed, write_mostly=True)],
                              bitmap="internal", assume_clean=True)   # -> "/dev/md/wm"
        fs = ws.make_loop_filesystem("data", size_mib=1024)       # loop + ext4 + mount
        ws.run_guarded(["mdadm", md, "--fail", delayed], devices=[md, delayed])
        container = ws.run_container(ContainerSpec(name=..., image=...))   # docker SDK
        ws.check_device(path)          # the guard: raises DeviceRefused for foreign devices
        ws.journaled("drbd", "r0", command_that_brings_it_up, config=..., device=...)
    # leaving the block tears down what this workspace created, newest first

Every resource is journaled before it is created (labs.infra.journal), every command
carries the command marker, so after a crash or a Ctrl-C `python -m labs clean --host H`
removes exactly what the lab made. Work files live in `host.work_dir/<lab>/<run id>/`,
which is itself journaled and removed last.

The teardowns of the kinds it creates (loop, mount, md, dm, drbd, netem, file and work-dir)
live in labs.infra.teardowns; labs.infra.containers owns "container" and "network",
labs.infra.netns "netns" and labs.infra.processes "server".
"""

from __future__ import annotations

import shlex
import time
import uuid
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from docker.models.containers import Container

from labs.errors import LabError, UsageError
from labs.infra import containers, netns, processes, teardowns  # noqa: F401 - teardowns
from labs.infra.guard import check_device
from labs.infra.hosts import CommandResult, Host
from labs.infra.journal import (
    TEARDOWNS,
    Journal,
    JournalEntry,
    is_inside,
)
from labs.infra.paths import command_marker
from labs.tools import drbd, mdadm, netem

NAME_CHARS = set("abcdefghijklmnopqrstuvwxyz0123456789-_")


def _check_name(name: str) -> str:
    if not name or not set(name) <= NAME_CHARS or len(name) > 40:
        raise UsageError(f"resource name {name!r}: use 1-40 of a-z, 0-9, '-', '_'")
    return name


@dataclass(frozen=True)
class LoopFilesystem:
    """A file system the lab built: a loop device over a file, formatted and mounted."""

    image: str  # the backing file in the work dir
    device: str  # /dev/loopN
    mount_point: str
    fs_type: str
    size_mib: int


class LabWorkspace:
    def __init__(self, host: Host, *, lab: str, run_id: str | None = None,
                 allow_devices: Iterable[str] = (), journal: Journal | None = None,
                 log: Callable[[str], None] | None = None,
                 on_command: Callable[[str], None] | None = None):
        self.host = host
        self.journal = journal or Journal(host.name)
        self.lab = _check_name(lab)
        self.run_id = run_id or f"{time.strftime('%Y%m%dT%H%M%SZ', time.gmtime())}-" \
                                f"{uuid.uuid4().hex[:6]}"
        self.work_dir = f"{host.work_dir.rstrip('/')}/{self.lab}/{self.run_id}"
        self.allow_devices = tuple(allow_devices or ())
        self.log = log or (lambda message: None)
        # Every command the host runs from now on, as it ran it (run.json): the lab's own,
        # and those the workspace runs to make, check and remove what it needs.
        if on_command is not None:
            host.listen(on_command)
        self.created: list[tuple[str, str]] = []
        # Guard answers, kept until the workspace creates or removes something: a check
        # costs several round trips, and a device cannot change identity in between.
        self._allowed: set[str] = set()
        self._prepared = False
        self._engine: Any = None

    def __enter__(self) -> LabWorkspace:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    # --- plumbing -----------------------------------------------------------------------------

    def prepare(self) -> None:
        """Create this run's work folder (journaled, so `clean` deletes it after a crash)."""
        if self._prepared:
            return
        root = self.host.work_dir.rstrip("/")
        # Safe: a new folder below the host's lab work dir, named after this run.
        self.journaled("work-dir", self.work_dir, ["mkdir", "-p", self.work_dir],
                       work_root=root)
        self._prepared = True

    def check_device(self, path: str) -> str:
        """The guard: `path` if this lab may touch it, else DeviceRefused."""
        if path not in self._allowed:
            check_device(self.host, self.journal, path, self.allow_devices)
            self._allowed.add(path)
        return path

    def _sudo(self, command: str | Sequence[str], timeout_s: float, check: bool = True
              ) -> CommandResult:
        return self.host.sudo(command, timeout_s=timeout_s, check=check)

    def journaled(self, kind: str, resource_id: str, command: str | Sequence[str],
                  timeout_s: float = 300, **details: Any) -> str:
        """Journal a resource, then run the command that creates it. Returns its stdout."""
        self._journal(kind, resource_id, **details)
        return self._sudo(command, timeout_s=timeout_s).stdout

    def track(self, kind: str, resource_id: str, **details: Any) -> None:
        """Journal a resource made by a caller (not by a command run here), before making it;
        its kind's teardown (register_teardown) undoes it at the end or in `clean`."""
        self._journal(kind, resource_id, **details)

    def _journal(self, kind: str, resource_id: str, **details: Any) -> None:
        if self.journal.owns(kind, resource_id):
            # Re-creating it would reuse (and truncate) what an earlier run may still use.
            raise LabError(f"host {self.host.name}: {kind} {resource_id} is left from an "
                           f"earlier run: run `python -m labs clean --host {self.host.name}`")
        self.journal.will_create(kind, resource_id, **details)
        self.created.append((kind, resource_id))
        self._allowed.clear()

    def run_guarded(self, command: str | Sequence[str], devices: Sequence[str],
                    timeout_s: float = 300, check: bool = True) -> CommandResult:
        """Run a command that changes block devices, after the guard allowed every one."""
        for device in devices:
            if device != "missing":
                self.check_device(device)
        # Safe: every device the command touches passed the guard just above.
        return self._sudo(command, timeout_s=timeout_s, check=check)

    # --- block devices and file systems -----------------------------------------------------

    def make_loop_device(self, name: str, size_mib: int, *, direct_io: bool = True,
                         folder: str = "") -> str:
        """A loop device over a new sparse file <folder or work dir>/<name>.img of size_mib."""
        _check_name(name)
        if not (1 <= int(size_mib) <= 1024 * 1024):
            raise UsageError(f"loop device {name}: size_mib must be 1..1048576, not {size_mib}")
        if folder and not is_inside(folder, self.work_dir):
            raise UsageError(f"loop device {name}: {folder} is not inside {self.work_dir}")
        self.prepare()
        backing = f"{folder or self.work_dir}/{name}.img"
        quoted = shlex.quote(backing)
        if self.host.run(["test", "-e", backing], check=False, timeout_s=60).ok:
            # Checked before journaling: the loop teardown deletes its file, and this one
            # is not the lab's.
            raise LabError(f"host {self.host.name}: {backing} already exists; not using it")
        direct = "--direct-io=on " if direct_io else ""
        self.log(f"{self.host.name}: loop device over {backing} ({size_mib} MiB)")
        # Safe: the file is new and inside the lab's work dir; --find picks an unused loop.
        device = self.journaled(
            "loop", backing,
            f"truncate -s {int(size_mib)}M {quoted} && losetup --find --show {direct}{quoted}",
            work_dir=self.work_dir, remove_file=True).strip()
        self.journal.note("loop", backing, device=device)
        return device

    def make_filesystem(self, device: str, fs: str = "ext4", label: str = "") -> None:
        if fs not in ("ext4", "xfs"):
            raise UsageError(f"file system {fs!r}: use ext4 or xfs")
        force = "-F" if fs == "ext4" else "-f"
        argv = [f"mkfs.{fs}", "-q", force, *(["-L", label[:12]] if label else []), device]
        if fs == "ext4":
            argv[3:3] = ["-b", "4096"]
        self.run_guarded(argv, [device], timeout_s=600)

    def mount(self, device: str, name: str, options: str = "") -> str:
        """Mount a lab device at <work_dir>/mnt/<name>; returns the mount point."""
        _check_name(name)
        self.check_device(device)
        self.prepare()
        mount_point = f"{self.work_dir}/mnt/{name}"
        self.host.sudo(["mkdir", "-p", mount_point], timeout_s=60)
        opts = ["-o", options] if options else []
        self.journaled("mount", mount_point, ["mount", *opts, device, mount_point], device=device)
        return mount_point

    def make_loop_filesystem(self, name: str, size_mib: int, fs: str = "ext4",
                             options: str = "", direct_io: bool = False) -> LoopFilesystem:
        """A loop device over a new file, a file system on it, mounted in the work dir.

        direct_io: the loop device reads its backing file past the host's page cache, so
        what the lab's file system reads really comes from the disk below (and is not
        cached a second time, in memory that a container's cgroup could be charged for).
        """
        device = self.make_loop_device(name, size_mib, direct_io=direct_io)
        self.make_filesystem(device, fs, label=name)
        mount_point = self.mount(device, name, options)
        return LoopFilesystem(f"{self.work_dir}/{name}.img", device, mount_point, fs, size_mib)

    def make_md_raid1(self, name: str, members: Sequence[mdadm.Member], *,
                      bitmap: str = "none", write_behind: int | None = None,
                      assume_clean: bool = False, size_mib: int | None = None) -> str:
        """An md RAID1 array /dev/md/<name> over devices the lab owns (or "missing")."""
        _check_name(name)
        device = f"/dev/md/{name}"
        argv = mdadm.create_command(device, list(members), bitmap=bitmap,
                                    write_behind=write_behind, assume_clean=assume_clean,
                                    size_kib=None if size_mib is None else size_mib * 1024)
        paths = [m.device for m in members if m.device != "missing"]
        for path in paths:
            self.check_device(path)
        self.log(f"{self.host.name}: md RAID1 {device} over {' '.join(paths)}")
        # Safe: every member passed the guard (the lab's own loop devices or VM lab disks).
        self.journaled("md", name, shlex.join(argv) + " && udevadm settle",
                       device=device, members=self._member_ids(paths))
        return device

    def _member_ids(self, members: Sequence[str]) -> list[str]:
        """How `clean` recognises md members: loop backing files, device paths, dm names."""
        ids: list[str] = []
        entries = self.journal.live_entries()
        loops = {e.details.get("device"): e.id for e in entries if e.kind == "loop"}
        dms = {e.details.get("device"): e.details for e in entries if e.kind == "dm"}
        for member in members:
            ids.append(loops.get(member, member))
            # A dm device's kernel name, and the devices below it: after a reboot the dm
            # device is gone and md assembles the array from the disk below.
            details = dms.get(member, {})
            ids += [d for d in (details.get("kernel"), *details.get("lower", ())) if d]
        return ids

    def make_dm(self, name: str, table: str, devices: Sequence[str],
                modules: Sequence[str] = ()) -> str:
        """A device-mapper device /dev/mapper/<name> from `table`, whose `devices` (every
        device the table names) must be the lab's own."""
        _check_name(name)
        for device in devices:
            self.check_device(device)
        load = "".join(f"modprobe {shlex.quote(m)} && " for m in modules)
        path = f"/dev/mapper/{name}"
        # Safe: every device in the table passed the guard.
        self.journaled("dm", name, f"{load}dmsetup create {shlex.quote(name)} --table "
                       f"{shlex.quote(table)} && udevadm settle", device=path,
                       lower=list(devices), table=table, modules=list(modules))
        kernel = self.host.run(["readlink", "-f", path], timeout_s=60).stdout.strip()
        self.journal.note("dm", name, kernel=kernel)
        return path

    def restore_dm(self, name: str) -> str:
        """Make the lab's device-mapper device `name` again from its journaled table, if a
        reboot (a lab VM's power cut) took it away; nothing if it is there."""
        entry = next((e for e in self.journal.live_entries()
                      if e.kind == "dm" and e.id == name), None)
        # The table and the devices it names, checked by the guard again below.
        if entry is None or not {"table", "lower"} <= entry.details.keys():
            raise LabError(f"{self.host.name}: no device-mapper device {name} of this run's "
                           "to make again")
        path = f"/dev/mapper/{name}"
        if self._sudo(["dmsetup", "info", name], timeout_s=60, check=False).ok:
            return path
        self._allowed.clear()  # the guard asks again: after a reboot, not from memory
        for device in entry.details["lower"]:
            self.check_device(device)
        load = "".join(f"modprobe {shlex.quote(m)} && "
                       for m in entry.details.get("modules", ()))
        # Safe: the same table over the same devices, which passed the guard again above.
        self._sudo(f"{load}dmsetup create {shlex.quote(name)} --table "
                   f"{shlex.quote(entry.details['table'])} && udevadm settle", timeout_s=300)
        kernel = self.host.run(["readlink", "-f", path], timeout_s=60).stdout.strip()
        self.journal.note("dm", name, kernel=kernel)
        self._allowed.clear()
        return path

    def make_dm_delay(self, name: str, device: str, delay_ms: int) -> str:
        """A dm-delay device over `device`: every read and write waits delay_ms first."""
        if not 0 <= delay_ms <= 10_000:
            raise UsageError(f"dm-delay of {delay_ms} ms: use 0..10000")
        self.check_device(device)
        # As root: opening a block device needs it (a user with sudo gets EACCES).
        sectors = int(self.host.sudo(["blockdev", "--getsz", device], timeout_s=60).stdout)
        return self.make_dm(name, f"0 {sectors} delay {device} 0 {delay_ms}", [device],
                            modules=["dm_delay"])

    def make_dm_flush_delay(self, name: str, device: str, flush_ms: int) -> str:
        """A dm-delay device over `device` whose reads and writes pass at once and whose
        flushes (what an fsync asks of the disk: write out your cache) wait flush_ms first."""
        if not 0 <= flush_ms <= 10_000:
            raise UsageError(f"a flush delay of {flush_ms} ms: use 0..10000")
        self.check_device(device)
        sectors = int(self.host.sudo(["blockdev", "--getsz", device], timeout_s=60).stdout)
        # dm-delay's three classes, each "device offset delay": reads, writes, flushes.
        table = (f"0 {sectors} delay {device} 0 0 {device} 0 0 {device} 0 {flush_ms}")
        return self.make_dm(name, table, [device], modules=["dm_delay"])

    # --- DRBD and the network -------------------------------------------------------------

    def make_drbd(self, resource: drbd.DrbdResource, config_text: str,
                  section: str | None = None) -> str:
        """Write the resource file, create DRBD's metadata on this host's backing disk and
        bring the resource up (unconnected until the peer is up too); returns the device.
        `section`: this host's `on` section (its `uname -n`), if not the host's lab name."""
        me = resource.host(section or self.host.name)
        self.check_device(me.disk)
        config = f"/etc/drbd.d/{resource.name}.res"
        script = (f"modprobe drbd && printf '%s' {shlex.quote(config_text)} > {config} && "
                  f"{shlex.join(drbd.create_md_command(resource.name))} && "
                  f"{shlex.join(drbd.up_command(resource.name))}")
        # Safe: create-md overwrites only the metadata area of a disk the guard allowed.
        self.journaled("drbd", resource.name, script, config=config, device=me.device,
                       disk=me.disk)
        return me.device

    def set_netem(self, interface: str, delay_ms: float, jitter_ms: float | None = None,
                  loss_percent: float | None = None, only_to: str | None = None) -> None:
        """Delay every packet leaving `interface` by delay_ms, give or take jitter_ms, and drop
        loss_percent of them (netem; journaled once, so `clean` gives the interface its
        default queueing discipline back). `only_to`: only the packets for that IPv4
        address, for an interface that carries the host's other traffic too."""
        first = not self.journal.owns("netem", interface)
        if only_to is None:
            commands = [netem.netem_command(interface, delay_ms, jitter_ms, loss_percent)]
        else:
            commands = netem.netem_to_commands(interface, only_to, delay_ms, jitter_ms,
                                               loss_percent, first=first)
        if first:
            self._journal("netem", interface)
        # Safe: a queueing discipline on the lab's link (or on the packets to the lab's
        # peer only); the journal removes it at the end.
        self._sudo(" && ".join(shlex.join(command) for command in commands), timeout_s=60)

    # --- server processes -------------------------------------------------------------------

    def start_server(self, data_dir: str, start: str, *, stop: str, pid_file: str,
                     timeout_s: float = 900) -> None:
        """Start a server process on the host, its data in `data_dir` (journaled first, so
        `clean` stops it: `stop`, then a kill of the process its pid file names)."""
        self.journaled("server", data_dir, start, timeout_s=timeout_s, stop=stop,
                       pid_file=pid_file)

    def restart_server(self, data_dir: str, start: str, timeout_s: float = 900) -> None:
        """Start a journaled server again (after a reboot), with its journal entry as it was."""
        if not self.journal.owns("server", data_dir):
            raise LabError(f"{data_dir}: no server of this run to start again")
        self._sudo(start, timeout_s=timeout_s)

    # --- containers ---------------------------------------------------------------------------

    def reconnect(self) -> None:
        """After the host came back (a reboot, a power cut): forget connections and answers."""
        self.host.close()
        self._engine = None
        self._allowed.clear()

    def engine(self) -> Any:
        """The docker engine of this workspace's host (docker SDK client)."""
        if self._engine is None:
            self._engine = containers.engine_for(self.host)
        return self._engine

    def _journal_engine_object(self, kind: str, name: str, **details: Any) -> dict[str, str]:
        """Journal a container or network about to be made; the labels that mark it ours."""
        _check_name(name)
        owner = command_marker()
        self._journal(kind, name, label_key=containers.OWNER_LABEL, label_value=owner,
                      **details)
        return {containers.OWNER_LABEL: owner, containers.LAB_LABEL: self.lab}

    def create_network(self, name: str) -> str:
        """A bridge network of the engine for this run's containers alone: no other
        container can take an address one of them had before it was stopped."""
        containers.create_network(self.engine(), name,
                                  self._journal_engine_object("network", name))
        return name

    def run_container(self, spec: containers.ContainerSpec, *, health_timeout_s: float = 120.0,
                      wait: bool = True) -> Container:
        """Start a container carrying the owner label; wait for its health check if any
        (`wait=False`: the caller starts several at once, then waits for each)."""
        labels = self._journal_engine_object("container", spec.name, image=spec.image)
        try:
            container = containers.create_container(self.engine(), spec, labels)
        except containers.ContainerError:
            self.remove("container", spec.name)  # a half-made container is removed at once
            raise
        if spec.health_command and wait:
            containers.wait_healthy(container, health_timeout_s)
        return container

    # --- teardown -------------------------------------------------------------------------------

    def remove(self, kind: str, resource_id: str) -> None:
        """Tear one resource down now and journal that it is gone."""
        if (kind, resource_id) in self.created:
            self.created.remove((kind, resource_id))
        self._allowed.clear()
        entry = next((e for e in self.journal.live_entries()
                      if e.kind == kind and e.id == resource_id), None)
        if entry is None:
            return
        TEARDOWNS[kind](self.host, entry)
        self.journal.released(kind, resource_id)

    def close(self) -> None:
        """Tear down everything this workspace created, newest first.

        A teardown that fails does not stop the others; the first failure is raised at the
        end, and what could not be removed stays in the journal for `python -m labs clean`.
        """
        first_error: LabError | None = None
        while self.created:
            kind, resource_id = self.created[-1]
            try:
                self.remove(kind, resource_id)
            except LabError as error:  # remove() already took it off the list
                first_error = first_error or error
        if first_error is not None:
            raise first_error

    def entries(self) -> list[JournalEntry]:
        return [e for e in self.journal.live_entries() if (e.kind, e.id) in self.created]
