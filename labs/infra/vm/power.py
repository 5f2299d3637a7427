"""Power cuts for lab VMs: kill QEMU at once, boot again on the same disks.

    power_cut("vm1")   # the guest stops mid-instruction; its disks stay
    power_on("vm1")    # the same disks, a fresh boot; returns when SSH answers
    cut_at, boot_s = cut_then_boot("vm1", waiting=[reader], before_boot=announce)
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path

from labs.errors import UsageError
from labs.infra.vm.machine import (
    VMError,
    VMState,
    is_running,
    qemu_pids,
    read_state,
    wait_for_ssh,
    write_state,
)


def power_cut(name: str) -> float:
    """Kill the VM's QEMU at once, as a power cut would stop the machine; returns the
    moment of the kill (time.monotonic()).

    The VM's folder, overlay and data disks stay (unlike `down`): what the guest had written
    to its virtual disks is there when `power_on` boots it again; what was only in the
    guest's memory (its page cache, a database's buffers) is gone. A write the guest has
    flushed is in the disk file on this machine. A write completed but not yet flushed may
    be lost: QEMU keeps part of a qcow2 disk's bookkeeping (which clusters hold what) in
    its memory until the next flush, so such a write is lost only by luck. The disk files
    are written through this machine's page cache, which the kill does not touch: this is
    a kernel crash of the guest (book/power-loss/explain.md), not a power cut that empties a
    device's volatile write cache.
    """
    state = read_state(name)
    if state is None:
        raise UsageError(f"{name} is not a lab VM of this install")
    killed_at = time.monotonic()
    for pid in qemu_pids(state.directory):
        # Safe: this QEMU's command line names the VM folder the lab created.
        os.kill(pid, signal.SIGKILL)
        killed_at = time.monotonic()
    deadline = time.monotonic() + 30
    while qemu_pids(state.directory) and time.monotonic() < deadline:
        time.sleep(0.1)
    if qemu_pids(state.directory):
        raise VMError(f"{name}: QEMU would not die")
    return killed_at


def cut_then_boot(name: str, *, waiting: Sequence[threading.Thread] = (),
                  before_boot: Callable[[], None] = lambda: None,
                  log: Callable[[str], None] = print) -> tuple[float, float]:
    """A lab's power cut: cut the VM's power, give the threads that read from it up to 60 s
    each to see their connection break, and boot it again on the same disks, whatever
    happened in between (a lab's teardown runs inside the VM). Returns the moment of the
    cut (time.monotonic()) and the seconds the boot took. `before_boot`: the lab's
    progress step."""
    try:
        cut_at = power_cut(name)
        for thread in waiting:
            thread.join(timeout=60)
    finally:
        before_boot()
        booting = time.monotonic()
        if not is_running(name):
            power_on(name, log=log)
        boot_s = time.monotonic() - booting
    return cut_at, boot_s


def power_on(name: str, timeout_s: float = 600, log: Callable[[str], None] = print) -> VMState:
    """Boot a VM again after `power_cut`, on the same disks; wait until SSH answers."""
    state = read_state(name)
    if state is None:
        raise UsageError(f"{name} is not a lab VM of this install")
    if is_running(name):
        raise UsageError(f"{name} is running: power_on follows a power_cut")
    directory = Path(state.directory)
    command = json.loads((directory / "qemu-command.json").read_text())
    started = time.monotonic()
    for _ in range(40):
        result = subprocess.run(command, capture_output=True, text=True, timeout=120,
                                stdin=subprocess.DEVNULL)
        # Right after a cut the killed QEMU may still be exiting, its pid file still locked:
        # the new one cannot start until it is gone (a fraction of a second).
        if result.returncode == 0 or "lock pid file" not in result.stderr:
            break
        time.sleep(0.5)
    if result.returncode != 0:
        raise VMError(f"{name}: QEMU did not start again: "
                      f"{(result.stderr.strip().splitlines() or ['?'])[-1]}")
    state.pid = int((directory / "qemu.pid").read_text().strip())
    wait_for_ssh(state, directory, started + timeout_s)
    state.boot_s = round(time.monotonic() - started, 1)
    state.resumed = False  # a power cut's VM boots its kernel, even if it had been resumed
    write_state(state)
    log(f"vm: {name} is up again after a power cut: SSH ready {state.boot_s:.1f} s after start")
    return state
