"""How `clean` (and a workspace at its end) undoes what labs.infra.workspace creates: loop
devices, mounts, md arrays, device-mapper devices, DRBD resources, netem and files, and the
run's work folder. Each teardown succeeds if its resource is already gone, and touches only
what its journal entry names.

(labs.infra.containers owns the teardowns of "container" and "network", labs.infra.netns
"netns" and labs.infra.processes "server".)
"""

from __future__ import annotations

import time

from labs.infra.devices import loop_devices_by_backing_file, md_members, mounted_at
from labs.infra.hosts import Host
from labs.infra.journal import JournalEntry, JournalError, is_inside, register_teardown
from labs.tools import netem


@register_teardown("work-dir")
def _teardown_work_dir(host: Host, entry: JournalEntry) -> None:
    root = entry.details.get("work_root", "")
    if not is_inside(entry.id, root):
        raise JournalError(f"work dir {entry.id} is not inside {root!r}: refusing to delete it")
    # Safe: a run folder below the host's lab work dir; --one-file-system never crosses into
    # a file system still mounted below it (mounts are torn down before this).
    host.sudo(["rm", "-rf", "--one-file-system", "--", entry.id], timeout_s=600)


@register_teardown("loop")
def _teardown_loop(host: Host, entry: JournalEntry) -> None:
    work_dir = entry.details.get("work_dir", "")
    if not is_inside(entry.id, work_dir):
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


@register_teardown("mount")
def _teardown_mount(host: Host, entry: JournalEntry) -> None:
    why = ""
    for _ in range(10):  # a point can be mounted more than once
        if not mounted_at(host, entry.id):
            return
        # Safe: this mount point is one the lab made (journaled before mounting).
        unmounted = host.sudo(["umount", "--", entry.id], timeout_s=120, check=False)
        if not unmounted.ok:
            # Busy for a moment: a container the teardown just removed may still hold it.
            why = (unmounted.stderr.strip().splitlines() or [""])[-1]
            time.sleep(0.5)
    raise JournalError(f"{entry.id} is still mounted after 10 unmounts{': ' + why if why else ''}")


@register_teardown("md")
def _teardown_md(host: Host, entry: JournalEntry) -> None:
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
def _teardown_dm(host: Host, entry: JournalEntry) -> None:
    if host.sudo(["dmsetup", "info", entry.id], timeout_s=60, check=False).ok:
        # udev may still be probing it, just released by a device stacked on it.
        host.sudo("udevadm settle --timeout=30 || true", timeout_s=60)
        # Safe: a device-mapper name the lab chose and journaled before creating it.
        host.sudo(["dmsetup", "remove", "--retry", entry.id], timeout_s=120)


@register_teardown("drbd")
def _teardown_drbd(host: Host, entry: JournalEntry) -> None:
    if host.sudo(["drbdsetup", "status", entry.id], timeout_s=60, check=False).ok:
        # Safe: a DRBD resource the lab defined over its own devices.
        host.sudo(["drbdsetup", "down", entry.id], timeout_s=120)
    config = entry.details.get("config")
    if config:
        host.sudo(["rm", "-f", "--", config], timeout_s=60)


@register_teardown("netem")
def _teardown_netem(host: Host, entry: JournalEntry) -> None:
    # Safe: the root queueing discipline the lab put on this interface (default comes back).
    removed = host.sudo(netem.delete_command(entry.id), timeout_s=60, check=False)
    if not removed.ok and not netem.nothing_to_delete(removed.stderr):
        raise JournalError(f"netem on {entry.id} would not go: {removed.stderr.strip()}")


@register_teardown("file")
def _teardown_file(host: Host, entry: JournalEntry) -> None:
    # Safe: a file the lab journaled before creating it.
    host.sudo(["rm", "-f", "--", entry.id], timeout_s=60)


