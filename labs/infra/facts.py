"""One way to describe a lab host for run.json: what it is, as the host itself reports.

    facts = host_facts(host)    # {"name", "kernel", "machine", "cpu_count", "memory_bytes",
                                #  "virtualization", "lab_vm", "vm" (lab VMs), "controller"}

Read on the lab host with one command, so a run on vm1 records vm1's kernel and CPUs, not
the machine that drove it. The controller (the machine running `python -m labs`) is
recorded too, under "controller", because it is where the Python side of the lab ran.
"""

from __future__ import annotations

import platform
import shlex
from typing import Any

from labs.errors import UsageError
from labs.infra.hosts import Host
from labs.infra.vm import machine
from labs.records import local_host_facts

FACTS_SCRIPT = ("uname -r; uname -m; nproc; awk '/^MemTotal:/ {print $2 * 1024}' /proc/meminfo; "
                "hostname; systemd-detect-virt 2>/dev/null || echo unknown")


def host_facts(host: Host) -> dict[str, Any]:
    kernel, arch, cpus, memory, name, virt = (
        host.run(FACTS_SCRIPT, timeout_s=60, check=False).stdout.splitlines() + [""] * 6)[:6]
    facts: dict[str, Any] = {
        "name": host.name if not host.is_local else name.strip() or platform.node(),
        "lab_host": host.name,
        "kernel": kernel.strip(),
        "machine": arch.strip(),
        "cpu_count": int(cpus) if cpus.strip().isdigit() else None,
        "memory_bytes": int(float(memory)) if memory.strip() else None,
        "virtualization": virt.strip() or "unknown",
        "python": platform.python_version(),
        "lab_vm": machine.is_vm_name(host.name) and not host.is_local,
    }
    if facts["lab_vm"]:
        state = machine.read_state(host.name)
        if state is not None:
            facts["vm"] = {key: getattr(state, key) for key in (
                "accel", "cpus", "memory_mib", "slow_iops", "slow_bps", "image_hash", "release")}
    facts["controller"] = local_host_facts()
    return facts


def available_memory_mib(host: Host) -> int:
    """The lab host's MemAvailable in MiB (0 when /proc/meminfo does not say)."""
    text = host.run(["awk", "/^MemAvailable:/ {print $2}", "/proc/meminfo"],
                    timeout_s=60).stdout.strip()
    return int(text) // 1024 if text.isdigit() else 0


def require_memory_mib(host: Host, needed_mib: int, lab: str, for_what: str) -> None:
    """Refuse (one line, before anything starts) when the host has less memory available
    than the lab needs: a lab that runs the machine out of memory harms the reader's work."""
    available_mib = available_memory_mib(host)
    if available_mib < needed_mib:
        raise UsageError(f"the {lab} lab needs about {needed_mib} MiB of free memory for "
                         f"{for_what}; this machine has {available_mib} MiB available")


def available_disk_mib(host: Host, path: str) -> int:
    """Free space, MiB, on the file system that holds `path` (or its nearest existing parent:
    a work dir may not exist yet)."""
    probe = (f"d={shlex.quote(path)}; while [ ! -e \"$d\" ]; do d=$(dirname \"$d\"); done; "
             "df -Pk \"$d\" | awk 'NR == 2 {print $4}'")
    text = host.run(probe, timeout_s=60).stdout.strip()
    return int(text) // 1024 if text.isdigit() else 0
