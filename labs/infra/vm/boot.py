"""Starting lab VMs: cold the first time, then resumed from a saved state in seconds.

    vms = up(pair=False, memory_mib=1536, cpus=2)   # -> list[VMState]; journaled first
    up(release="trixie")                            # Debian 13's image and kernel
    up(cold=True)                                   # boot, even where a saved state exists

A cold boot of the kernel and systemd takes about 40 s to SSH under TCG. After it, the
booted VM is saved (labs/infra/vm/saved.py says what is kept and what is made new), and the
next `up` of the same VM on the same machine resumes it instead. A saved state that does
not load is forgotten, and that VM boots cold, with a one-line note.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import os
import shutil
import subprocess
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from labs.errors import LabError, UsageError
from labs.infra.hosts import HostError, SSHHost
from labs.infra.journal import Journal, JournalEntry
from labs.infra.vm import saved
from labs.infra.vm.image import (
    DEFAULT_RELEASE,
    Image,
    build_image,
    check_release,
    ensure_keys,
)
from labs.infra.vm.machine import (
    DATA_DISKS,
    QEMU,
    VMError,
    VMState,
    choose_accel,
    free_port,
    free_udp_port,
    is_running,
    qemu_command,
    qemu_pids,
    retire_vm_dir,
    stop_vm_process,
    vm_host,
    vms_dir,
    wait_for_ssh,
    write_state,
)

VM_NAMES = ("vm1", "vm2")  # `vm up` boots the first, `vm up --pair` both
MAX_SLOW_IOPS = 1_000_000
MAX_SLOW_BPS = 10**12  # QEMU refuses throttles above 10^15; no disk here is near 10^12
MAX_CLOCK_ERROR_S = 1.0  # a resumed guest's clock, once set, is this close to this machine's


def check_up(*, memory_mib: int, cpus: int, data_disk_mib: int, slow_iops: int, slow_bps: int,
             release: str) -> None:
    """What `up` refuses, before anything starts (one line each)."""
    if not 256 <= memory_mib <= 65536:
        raise UsageError(f"--memory {memory_mib}: use 256..65536 MiB")
    if not 1 <= cpus <= 64:
        raise UsageError(f"--cpus {cpus}: use 1..64")
    if not 16 <= data_disk_mib <= 1024 * 1024:
        raise UsageError(f"--disk-mib {data_disk_mib}: use 16..1048576")
    if not 0 <= slow_iops <= MAX_SLOW_IOPS:
        raise UsageError(f"--slow-iops {slow_iops}: use 0 (no throttle) to {MAX_SLOW_IOPS}")
    if not 0 <= slow_bps <= MAX_SLOW_BPS:
        raise UsageError(f"--slow-bps {slow_bps}: use 0 (no throttle) to {MAX_SLOW_BPS}")
    check_release(release)


@dataclass
class Machine:
    """What every VM of one `up` shares: the image, the accelerator and the sizes."""

    image: Image
    accel: str
    keys: Any
    qemu: str  # QEMU's version line
    memory_mib: int
    cpus: int
    data_disk_mib: int
    slow_iops: int
    slow_bps: int
    pair: bool
    cold: bool  # boot even where a saved state exists

    def command(self, name: str, index: int, directory: Path, ssh_port: int,
                pair_ports: tuple[int, int] | None, machine_id: str) -> list[str]:
        return qemu_command(name, index, directory, self.image, accel=self.accel,
                            memory_mib=self.memory_mib, cpus=self.cpus, ssh_port=ssh_port,
                            slow_iops=self.slow_iops, slow_bps=self.slow_bps,
                            pair_ports=pair_ports, machine_id=machine_id)

    def saved_key(self, name: str) -> saved.SavedKey:
        # The devices a resumed guest finds must be the ones it was saved with: the key holds
        # the command line with what changes on every start (folder, ports, id) held fixed.
        shape = self.command(name, VM_NAMES.index(name) + 1, Path("/VM"), 0,
                             (0, 0) if self.pair else None, machine_id="0" * 32)
        return saved.SavedKey(name=name, image_hash=self.image.recipe_hash, qemu=self.qemu,
                              accel=self.accel, memory_mib=self.memory_mib, cpus=self.cpus,
                              data_disk_mib=self.data_disk_mib, pair=self.pair,
                              devices=hashlib.sha256(" ".join(shape).encode()).hexdigest()[:16])


@dataclass
class Started:
    """One VM whose QEMU runs, before SSH answers (its state says whether it resumes)."""

    state: VMState
    index: int
    pair_ports: tuple[int, int] | None  # its peer keeps them if it has to start again


def up(*, pair: bool = False, memory_mib: int = 1536, cpus: int = 2, data_disk_mib: int = 1024,
       slow_iops: int = 200, slow_bps: int = 0, boot_timeout_s: float | None = None,
       release: str = DEFAULT_RELEASE, cold: bool = False,
       log: Callable[[str], None] = print) -> list[VMState]:
    """Start vm1 (and vm2 with pair=True) with fresh data disks; wait until SSH answers."""
    check_up(memory_mib=memory_mib, cpus=cpus, data_disk_mib=data_disk_mib,
             slow_iops=slow_iops, slow_bps=slow_bps, release=release)
    if shutil.which(QEMU) is None:
        raise VMError(f"{QEMU} is missing (Debian package qemu-system-x86)")
    names = list(VM_NAMES) if pair else [VM_NAMES[0]]
    for name in names:
        if is_running(name):
            raise UsageError(f"{name} is already running (`python -m labs vm down` first)")
    image, built, build_s = build_image(release=release)
    if built:
        log(f"vm: image built in {build_s:.0f} s")
    machine = Machine(image=image, accel=choose_accel(image, log=log), keys=ensure_keys(),
                      qemu=saved.qemu_version(QEMU), memory_mib=memory_mib, cpus=cpus,
                      data_disk_mib=data_disk_mib, slow_iops=slow_iops, slow_bps=slow_bps,
                      pair=pair, cold=cold)
    timeout_s = boot_timeout_s or float(os.environ.get("LABS_VM_BOOT_TIMEOUT_S", "600"))
    journal = Journal("local")
    journaled: list[str] = []
    try:
        return _boot(names, journaled, machine, journal, timeout_s=timeout_s, log=log)
    except BaseException:
        # A failed or interrupted start stops what it started (clean would do it too).
        for entry in reversed(journal.live_entries()):
            if entry.kind == "vm" and entry.id in journaled:
                stop_vm_process(entry)
                journal.released("vm", entry.id)
        raise


def _boot(names: list[str], journaled: list[str], machine: Machine, journal: Journal, *,
          timeout_s: float, log: Callable[[str], None]) -> list[VMState]:
    udp_ports = (free_udp_port(), free_udp_port()) if machine.pair else None
    started = time.monotonic()
    runs: list[Started] = []
    for index, name in enumerate(names, start=1):
        # Journaled before anything exists: `clean` stops whatever QEMU names this folder.
        if qemu_pids(vms_dir() / name):
            raise VMError(f"{name}: a QEMU from an earlier start is still running "
                          "(`python -m labs clean` stops it)")
        journal.will_create("vm", name, dir=str(vms_dir() / name))
        journaled.append(name)
        pair_ports = None
        if udp_ports:
            pair_ports = udp_ports if index == 1 else (udp_ports[1], udp_ports[0])
        runs.append(_start(name, index, machine, pair_ports, log))
    deadline = started + timeout_s
    ready: list[Started] = []
    for run in runs:
        # A VM whose saved state did not come up is started again: its new run replaces it.
        run = _until_ssh_answers(run, machine, deadline, log)
        ready.append(run)
        run.state.boot_s = round(time.monotonic() - started, 1)
        write_state(run.state)
        if run.state.resumed:
            _set_clock(run.state, log)
        how = "resumed from its saved state" if run.state.resumed else "booted"
        log(f"vm: {run.state.name} is up ({how}): SSH ready {run.state.boot_s:.1f} s after "
            f"start ({run.state.accel.upper()})")
    for run in ready:
        if not run.state.resumed:
            _save(run.state, machine, log)
    return [run.state for run in ready]


def _start(name: str, index: int, machine: Machine, pair_ports: tuple[int, int] | None,
           log: Callable[[str], None]) -> Started:
    """A fresh folder, disks and ports for `name`, and its QEMU started (resuming the saved
    state for this machine, if there is one and `cold` was not asked for)."""
    directory = vms_dir() / name
    retire_vm_dir(directory)
    directory.mkdir(parents=True)
    Journal(name).path.unlink(missing_ok=True)  # a fresh overlay has nothing in it yet
    folder = None if machine.cold else saved.find(machine.saved_key(name))
    _create_disks(directory, machine.image, machine.data_disk_mib, saved_from=folder)
    ssh_port = free_port()
    host_pub = " ".join(machine.keys.host_pub.split()[:2])
    (directory / "known_hosts").write_text(f"[127.0.0.1]:{ssh_port} {host_pub}\n")
    command = machine.command(name, index, directory, ssh_port, pair_ports,
                              machine_id=uuid.uuid4().hex)
    # The command a power cut boots again with (labs/infra/vm/power.py): a cold boot on the
    # same disks, never the saved memory.
    (directory / "qemu-command.json").write_text(json.dumps(command) + "\n")
    result = subprocess.run(command + (saved.incoming_args(folder) if folder else []),
                            capture_output=True, text=True, timeout=120,
                            stdin=subprocess.DEVNULL)
    if result.returncode != 0:
        raise VMError(f"{name}: QEMU did not start: "
                      f"{(result.stderr.strip().splitlines() or ['?'])[-1]}")
    pid = int((directory / "qemu.pid").read_text().strip())
    state = VMState(name=name, directory=str(directory), pid=pid, ssh_port=ssh_port,
                    accel=machine.accel, memory_mib=machine.memory_mib, cpus=machine.cpus,
                    boot_s=0.0, private_ip=f"10.77.0.{index}" if machine.pair else "",
                    lab_devices=["/dev/vdb", "/dev/vdc"], slow_iops=machine.slow_iops,
                    slow_bps=machine.slow_bps, image_hash=machine.image.recipe_hash,
                    started_at=dt.datetime.now(dt.UTC).isoformat(),
                    release=machine.image.build.get("release", DEFAULT_RELEASE),
                    resumed=folder is not None)
    log(f"vm: {name} started (QEMU pid {pid}, {machine.accel.upper()}, ssh "
        f"127.0.0.1:{ssh_port}, console {directory}/serial.log"
        + (", resuming its saved state)" if folder else ")"))
    return Started(state, index, pair_ports)


def _until_ssh_answers(run: Started, machine: Machine, deadline: float,
                       log: Callable[[str], None]) -> Started:
    """Wait for SSH. A saved state that does not come up is forgotten and the VM boots cold
    instead."""
    log(f"vm: waiting for {run.state.name} to answer SSH ...")
    try:
        wait_for_ssh(run.state, Path(run.state.directory), deadline)
        return run
    except (VMError, HostError) as error:
        if not run.state.resumed:
            raise
        log(f"vm: {run.state.name}'s saved state did not come up ({error}); booting it cold")
    saved.forget(machine.saved_key(run.state.name))
    stop_vm_process(JournalEntry("vm", run.state.name, {"dir": run.state.directory}))
    again = _start(run.state.name, run.index, machine, run.pair_ports, log)
    wait_for_ssh(again.state, Path(again.state.directory), deadline)
    return again


def _set_clock(state: VMState, log: Callable[[str], None]) -> None:
    error_s = set_guest_clock(vm_host(state.name))
    if error_s > MAX_CLOCK_ERROR_S:
        log(f"vm: {state.name}'s clock is {error_s:.1f} s off this machine's after being "
            "set (a slow SSH round trip)")


def set_guest_clock(guest: SSHHost) -> float:
    """Set a resumed guest's clock from this machine's (it resumes believing no time has
    passed since it was saved); returns how far off it is afterwards, in seconds: how far
    the guest's time lies outside the span of the SSH call that read it."""
    try:
        sent = time.time()
        guest.run("true", timeout_s=30)
        one_way_s = (time.time() - sent) / 2  # the command lands about this late
        guest.run(f"date -u -s @{time.time() + one_way_s:.3f} >/dev/null", timeout_s=30)
        before = time.time()
        guest_s = float(guest.run("date +%s.%N", timeout_s=30).stdout)
        after = time.time()
    finally:
        guest.close()
    return max(0.0, before - guest_s, guest_s - after)


def _save(state: VMState, machine: Machine, log: Callable[[str], None]) -> None:
    """Save a cold-booted VM for the next `up`; a failure costs only the next boot's speed."""
    try:
        seconds = saved.save(machine.saved_key(state.name), Path(state.directory))
    except (LabError, OSError) as error:
        log(f"vm: {state.name} was not saved for the next `vm up` ({error}); it runs on")
        return
    log(f"vm: {state.name} saved in {seconds:.1f} s: the next `vm up` resumes it")


def _create_disks(directory: Path, image: Image, data_disk_mib: int,
                  saved_from: Path | None = None) -> None:
    """The root disk (a new overlay over the cached image, or a copy of the saved one), then
    the empty data disks."""
    if saved_from is not None:
        saved.copy_root_disk(saved_from, directory)
    else:
        subprocess.run(["qemu-img", "create", "-q", "-f", "qcow2", "-F", "raw", "-b",
                        str(image.disk), str(directory / "overlay.qcow2")], check=True,
                       capture_output=True)
    for disk in DATA_DISKS:
        subprocess.run(["qemu-img", "create", "-q", "-f", "qcow2",
                        str(directory / f"data-{disk}.qcow2"), f"{data_disk_mib}M"],
                       check=True, capture_output=True)
