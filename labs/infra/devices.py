"""What a lab host's kernel says about its block devices: loop devices, mounts, md members.

Read-only queries, shared by the guard (labs.infra.guard) and the teardowns
(labs.infra.workspace): both must look at the host itself, not trust a name.
"""

from __future__ import annotations

from labs.infra.hosts import Host


def loop_devices_by_backing_file(host: Host) -> dict[str, list[str]]:
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


def mounted_at(host: Host, mount_point: str) -> bool:
    mounts = host.run("cat /proc/mounts", timeout_s=60).stdout
    return any(line.split()[1:2] == [mount_point] for line in mounts.splitlines())


MD_SLAVES_SCRIPT = r"""for md in /sys/block/md*; do
  [ -d "$md/slaves" ] || continue
  for s in "$md"/slaves/*; do
    [ -e "$s" ] || continue
    echo "${md##*/} ${s##*/} $(cat "$s/loop/backing_file" 2>/dev/null)"
  done
done"""


def md_members(host: Host) -> dict[str, list[tuple[str, str]]]:
    """{md device name: [(member device name, loop backing file or '')]} from sysfs."""
    arrays: dict[str, list[tuple[str, str]]] = {}
    for line in host.run(MD_SLAVES_SCRIPT, timeout_s=60).stdout.splitlines():
        md, member, backing = (line.split(" ", 2) + ["", ""])[:3]
        arrays.setdefault(md, []).append((member, backing.removesuffix(" (deleted)")))
    return arrays

