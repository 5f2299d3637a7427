"""The device guard: a lab may only touch block devices it created.

API (stable):

    from labs.infra.guard import check_device, DeviceRefused
    device = check_device(host, journal, "/dev/loop3", allow_devices=args.allow_device)

`check_device` returns the path when the device is the lab's own and raises DeviceRefused
(a UsageError: one line, exit code 2) otherwise. A device is the lab's own when, looked up
on the host itself (not just by its name):

- a loop device whose backing file is a journaled loop file inside the host's work dir;
- an md array whose every member is such a loop device or one of the host's lab devices;
- a device-mapper device whose name is journaled as ours;
- a DRBD device journaled as ours;
- one of the host's lab devices (the data disks of a lab VM, which the project created).

The path must be plain: absolute, under /dev, without `..`, `.` or doubled slashes. A symlink
is accepted only when the journal names that very symlink (e.g. /dev/md/NAME for an array the
lab created) and its target is ours. Anything else (the reader's /dev/sda, /dev/nvme0n1, the
VM's own /dev/vda, an md array the lab did not assemble, /dev/loop7 over a file elsewhere) is
refused unless the user names that exact path with `--allow-device PATH`.
"""

from __future__ import annotations

import os
import shlex
from collections.abc import Iterable

from labs.errors import UsageError
from labs.infra.devices import md_members
from labs.infra.hosts import Host
from labs.infra.journal import Journal, JournalEntry


class DeviceRefused(UsageError):
    """The lab was asked to touch a block device it does not own."""


def _refuse(host: Host, path: str, why: str) -> DeviceRefused:
    return DeviceRefused(f"host {host.name}: refusing to use {path}: {why} "
                         f"(pass --allow-device {path} if you really mean it)")


def is_plain_device_path(path: str) -> bool:
    return (isinstance(path, str) and path.startswith("/dev/") and "//" not in path
            and os.path.normpath(path) == path
            and not any(part in (".", "..") for part in path.split("/")))


def _resolve(host: Host, path: str) -> str:
    """The canonical path of a block device on the host, or '' if it is not one."""
    quoted = shlex.quote(path)
    result = host.run(f"c=$(readlink -e -- {quoted}) && test -b \"$c\" && echo \"$c\"",
                      check=False, timeout_s=60)
    return result.stdout.strip() if result.ok else ""


def _read(host: Host, sys_path: str) -> str:
    result = host.run(["cat", sys_path], check=False, timeout_s=60)
    return result.stdout.strip().removesuffix(" (deleted)") if result.ok else ""


def _work_dir_files(host: Host, journal: Journal) -> set[str]:
    work_dir = os.path.normpath(host.work_dir) + "/"
    return {entry.id for entry in journal.live_entries()
            if entry.kind == "loop" and os.path.normpath(entry.id).startswith(work_dir)}


def owned_reason(host: Host, journal: Journal, canonical: str) -> str:
    """Why the canonical device is ours ('' if it is not)."""
    name = canonical.removeprefix("/dev/")
    lab_devices = {_resolve(host, device) or device for device in host.lab_devices}
    if canonical in lab_devices:
        return "a lab disk of this host"
    entries = journal.live_entries()
    if name.startswith("loop"):
        return _loop_reason(host, journal, name)
    if name.startswith("md"):
        return _md_reason(host, journal, name, entries, lab_devices)
    if name.startswith("dm-"):
        return _dm_reason(host, name, entries)
    if name.startswith("drbd"):
        return _drbd_reason(host, canonical, entries)
    return ""


def _loop_reason(host: Host, journal: Journal, name: str) -> str:
    backing = _read(host, f"/sys/block/{name}/loop/backing_file")
    if backing and backing in _work_dir_files(host, journal):
        return f"a loop device over the lab's file {backing}"
    return ""


def _md_reason(host: Host, journal: Journal, name: str, entries: list[JournalEntry],
               lab_devices: set[str]) -> str:
    arrays = md_members(host)
    members = arrays.get(name, [])
    if not members or not any(entry.kind == "md" for entry in entries):
        return ""
    files = _work_dir_files(host, journal)
    for member, backing in members:
        # A member may also be one of the lab's device-mapper devices (dm-delay legs).
        if not (backing in files or f"/dev/{member}" in lab_devices
                or (member.startswith("dm-") and owned_reason(host, journal,
                                                               f"/dev/{member}"))):
            return ""
    return "an md array over the lab's own devices"


def _dm_reason(host: Host, name: str, entries: list[JournalEntry]) -> str:
    dm_name = _read(host, f"/sys/block/{name}/dm/name")
    if dm_name and any(e.kind == "dm" and e.id == dm_name for e in entries):
        return f"the lab's device-mapper device {dm_name}"
    return ""


def _drbd_reason(host: Host, canonical: str, entries: list[JournalEntry]) -> str:
    for entry in entries:
        device = entry.details.get("device")
        if entry.kind == "drbd" and device and _resolve(host, device) == canonical:
            return f"the lab's DRBD resource {entry.id}"
    return ""


def check_device(host: Host, journal: Journal, path: str,
                 allow_devices: Iterable[str] = ()) -> str:
    """Return `path` if the lab may use it on `host`; raise DeviceRefused otherwise."""
    if path in set(allow_devices or ()):
        return path  # the user named this exact path
    if not is_plain_device_path(path):
        raise _refuse(host, path, "not a plain /dev path")
    canonical = _resolve(host, path)
    if not canonical:
        raise _refuse(host, path, "no such block device")
    if canonical != path:
        journaled = {entry.details.get("device") for entry in journal.live_entries()}
        if path not in journaled:
            raise _refuse(host, path, f"a symlink (to {canonical}) the lab did not create")
    if not owned_reason(host, journal, canonical):
        raise _refuse(host, path, "the lab did not create this device")
    return path
