"""The two legs of the mirror: a lab VM's disks, or loop devices over files in the work dir.

disks  the host's two lab disks (a lab VM's /dev/vdb and /dev/vdc; QEMU caps the second's
       operations per second below the guest kernel).
loop   two loop devices over new sparse files in the lab's work dir, made and journaled by
       the LabWorkspace; the slow one is capped by a cgroup io limit (io.max, through a
       systemd scope around every fio the lab starts). Any Linux host with md, dm-delay and
       systemd can run it, no VM needed.

Either way a dm-delay device goes over the slow leg, so every operation also pays a
network-like latency. The cap and the delay can be measured apart: the slow device without
the delay (the cap alone), and a dm-delay over the fast device (the delay alone).
"""

from __future__ import annotations

import shlex
from dataclasses import dataclass, field

from labs.errors import UsageError
from labs.infra.hosts import Host
from labs.infra.workspace import LabWorkspace
from labs.write_mostly.params import Parameters, Scale

# One shell line that reports what the host's kernel and tools offer, one word per line.
SUPPORT_PROBE = (
    "modprobe raid1 >/dev/null 2>&1; modprobe dm_delay >/dev/null 2>&1; "
    "test -e /proc/mdstat && grep -q raid1 /proc/mdstat && echo md; "
    "test -e /dev/mapper/control && echo dm; "
    "dmsetup targets 2>/dev/null | grep -q '^delay' && echo dm-delay; "
    "grep -qw io /sys/fs/cgroup/cgroup.controllers 2>/dev/null && echo cgroup-io; "
    "for t in fio mdadm losetup systemd-run; do command -v $t >/dev/null && echo $t; done")


@dataclass
class Legs:
    """The devices md uses (`fast`, `slow`) and the devices under them, whose counters we read.

    `slow` becomes the dm-delay device once the lab adds it; `slow_disk` stays the capped
    device below it. `throttle` is the command prefix that puts a process under the loop
    mode's cgroup io limit ("" with disks, whose cap is outside the guest).
    """

    mode: str
    fast: str
    slow: str
    fast_disk: str = ""
    slow_disk: str = ""
    cap_iops: float | None = None
    cap_by: str = ""
    throttle: list[str] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.fast_disk = self.fast_disk or self.fast
        self.slow_disk = self.slow_disk or self.slow

    def names(self) -> dict[str, str]:
        return {"fast": self.fast_disk.removeprefix("/dev/"),
                "slow": self.slow_disk.removeprefix("/dev/")}

    def wrap(self, script: str) -> str:
        """`script` as a shell command line, under the slow leg's cgroup limit if any."""
        if not self.throttle:
            return script
        return shlex.join([*self.throttle, "bash", "-c", script])


def leg_mode(host: Host, params: Parameters) -> str:
    """`disks` or `loop`: what --legs asks for, `auto` resolved from the host's lab disks."""
    if params.legs != "auto":
        return params.legs
    has_disks = len(host.lab_devices) >= 2 or (params.fast_device and params.slow_device)
    return "disks" if has_disks else "loop"


def check_support(host: Host, mode: str) -> None:
    """Refuse, in one line, a host whose kernel or tools cannot run this lab."""
    found = set(host.sudo(SUPPORT_PROBE, timeout_s=120, check=False).stdout.split())
    where = ("; run it on a lab VM instead: `python -m labs vm up`, then --host vm1"
             if not host.name.startswith("vm") else "")
    if "md" not in found:
        raise UsageError(f"host {host.name}: its kernel has no md RAID1 (no raid1 in "
                         f"/proc/mdstat after modprobe raid1), which this lab needs{where}")
    if "dm" not in found or "dm-delay" not in found:
        raise UsageError(f"host {host.name}: its kernel has no device-mapper delay target "
                         f"(dm_delay), which this lab needs{where}")
    needed = ["fio", "mdadm"] + (["losetup", "systemd-run", "cgroup-io"] if mode == "loop"
                                 else [])
    missing = [name for name in needed if name not in found]
    if missing:
        what = ", ".join("the cgroup v2 io controller" if m == "cgroup-io" else m
                         for m in missing)
        raise UsageError(f"host {host.name}: {what} missing for --legs {mode}{where}")


def disk_legs(host: Host, params: Parameters, vm_cap_iops: float | None) -> Legs:
    devices = list(host.lab_devices)
    fast = params.fast_device or (devices[0] if len(devices) > 0 else None)
    slow = params.slow_device or (devices[1] if len(devices) > 1 else None)
    if not fast or not slow:
        raise UsageError(f"host {host.name} has no two lab disks: name the legs with "
                         "--fast-device and --slow-device, use --legs loop, or use a lab VM "
                         "(vm1)")
    if fast == slow:
        raise UsageError(f"the fast and slow legs must differ (both are {fast})")
    cap_by = "QEMU (throttling.iops-total, below the guest)" if vm_cap_iops else ""
    return Legs("disks", fast, slow, cap_iops=vm_cap_iops or None, cap_by=cap_by)


def loop_legs(ws: LabWorkspace, scale: Scale, cap_iops: int) -> Legs:
    """Two loop devices over new files in the work dir; the slow one under a cgroup io limit."""
    # Safe: new sparse files inside the lab's own work dir, journaled before losetup.
    fast = ws.make_loop_device("wm-fast", scale.leg_mib)
    slow = ws.make_loop_device("wm-slow", scale.leg_mib)
    # A transient systemd scope per command: the limit lives and dies with the process, so
    # nothing is left to clean up. io.max limits reads and writes separately (riops, wiops).
    throttle = ["systemd-run", "--scope", "--quiet", "--collect",
                "-p", f"IOReadIOPSMax={slow} {cap_iops}",
                "-p", f"IOWriteIOPSMax={slow} {cap_iops}", "--"]
    return Legs("loop", fast, slow, cap_iops=cap_iops,
                cap_by="a cgroup io limit (io.max riops and wiops, through a systemd scope)",
                throttle=throttle)
