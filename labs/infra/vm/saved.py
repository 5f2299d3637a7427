"""Lab VMs ready in seconds: a booted VM's state, saved once, and later VMs resumed from it.

    key = SavedKey(name="vm1", image_hash=…, qemu=qemu_version(), accel="tcg",
                   memory_mib=1536, cpus=2, data_disk_mib=1024, pair=True, devices=…)
    folder = find(key)                     # a saved state for exactly this machine, or None
    copy_root_disk(folder, vm_dir)         # its root overlay, as it was when saved
    command += incoming_args(folder)       # QEMU resumes the saved memory and devices
    save(key, vm_dir)                      # after a cold boot: pause, save, copy, resume

The first `vm up` of an image boots cold (about 40 s to SSH under TCG) and then saves the
booted machine: its memory and devices through QEMU's migration into a file, and a copy of
its root overlay taken while the guest is paused, so the two agree. A later `vm up` of the
same VM on the same machine (image, QEMU, accelerator, memory, CPUs, data-disk size, and
whether it has the pair's private link) starts QEMU with `-incoming`: the guest goes on
where the saved one was, with sshd already listening.

What must be new is made new. The data disks are fresh and empty, as they were when the
state was saved (the guest had not touched them). The SSH port and the private link's
ports are this machine's side of QEMU's network and are chosen anew. The guest's clock is
set from this machine's as soon as SSH answers (a resumed guest believes no time has
passed). vm1 and vm2 are saved apart, each from its own boot, so they never share a
hostname, an address or a machine id.

A saved state lives beside the image in the cache (about 0.3 GB per VM); `vm up --cold`
ignores it and saves a new one, and a state that does not load falls back to a cold boot.
"""

from __future__ import annotations

import hashlib
import json
import os
import shlex
import shutil
import subprocess
import time
from dataclasses import asdict, dataclass
from pathlib import Path

from labs.errors import LabError
from labs.infra.paths import cache_dir
from labs.infra.vm import qmp

STATE_FILE, ROOT_DISK, META_FILE = "memory.bin", "overlay.qcow2", "saved.json"
SAVE_TIMEOUT_S = 300


@dataclass(frozen=True)
class SavedKey:
    """Everything a resumed guest must find as it left it."""

    name: str
    image_hash: str
    qemu: str  # QEMU's version line: a state saved by one QEMU need not load in another
    accel: str
    memory_mib: int
    cpus: int
    data_disk_mib: int
    pair: bool  # the pair's second network card is part of the machine
    devices: str  # a digest of QEMU's command line without what changes on every start

    def folder(self) -> Path:
        digest = hashlib.sha256(json.dumps(asdict(self), sort_keys=True).encode()).hexdigest()
        return cache_dir() / "vm" / "saved" / f"{self.name}-{digest[:16]}"


def qemu_version(qemu: str) -> str:
    result = subprocess.run([qemu, "--version"], capture_output=True, text=True, timeout=30)
    return (result.stdout.strip().splitlines() or ["unknown"])[0]


def find(key: SavedKey) -> Path | None:
    """The saved state for exactly this machine, or None."""
    folder = key.folder()
    try:
        saved = json.loads((folder / META_FILE).read_text())
    except (OSError, ValueError):
        return None
    whole = all((folder / name).is_file() for name in (STATE_FILE, ROOT_DISK))
    return folder if whole and saved == asdict(key) else None


def forget(key: SavedKey) -> None:
    # Safe: a folder of saved VM states under this install's own cache, rebuilt on demand.
    shutil.rmtree(key.folder(), ignore_errors=True)


def copy_root_disk(folder: Path, vm_dir: Path) -> None:
    """The saved root overlay, as the VM's own (a copy: the saved one stays as it was)."""
    subprocess.run(["cp", "--sparse=always", "--reflink=auto", str(folder / ROOT_DISK),
                    str(vm_dir / ROOT_DISK)], check=True, capture_output=True)


def incoming_args(folder: Path) -> list[str]:
    """QEMU options that load the saved memory and devices instead of booting."""
    return ["-incoming", f"exec:cat {shlex.quote(str(folder / STATE_FILE))}"]


def save(key: SavedKey, vm_dir: Path) -> float:
    """Save the running VM in `vm_dir` under `key`, then let it run on; returns seconds.

    QEMU's migration into a file pauses the guest once the memory is written; the root
    overlay is copied while it is paused, and only then does the guest go on."""
    started = time.monotonic()
    folder = key.folder()
    remove_partial_saves(folder)
    partial = folder.with_name(f"{folder.name}.partial-{os.getpid()}")
    partial.mkdir(parents=True)
    socket = vm_dir / "qmp.sock"
    try:
        _migrate_to_file(socket, key.name, partial / STATE_FILE)
        try:
            shutil.copyfile(vm_dir / ROOT_DISK, partial / ROOT_DISK)
        finally:
            qmp.call(socket, key.name, "cont")
        (partial / META_FILE).write_text(json.dumps(asdict(key), indent=1) + "\n")
        forget(key)
        partial.rename(folder)
    finally:
        shutil.rmtree(partial, ignore_errors=True)
    return time.monotonic() - started


def remove_partial_saves(folder: Path) -> None:
    """Half-written saves of this state that a killed `vm up` left (each about 0.3 GB)."""
    for partial in folder.parent.glob(f"{folder.name}.partial-*"):
        # Safe: a half-written state in this install's own cache, never loaded.
        shutil.rmtree(partial, ignore_errors=True)


def _migrate_to_file(socket: Path, name: str, path: Path) -> None:
    # No bandwidth cap: the "network" is a local file (QEMU's default cap is for real ones).
    qmp.call(socket, name, "migrate-set-parameters", {"max-bandwidth": 8 * 1024**3})
    qmp.call(socket, name, "migrate", {"uri": f"exec:cat > {shlex.quote(str(path))}"})
    deadline = time.monotonic() + SAVE_TIMEOUT_S
    while time.monotonic() < deadline:
        status = qmp.call(socket, name, "query-migrate").get("status")
        if status == "completed":
            return
        if status in ("failed", "cancelled"):
            raise LabError(f"{name}: saving the booted VM failed (migration {status})")
        time.sleep(0.2)
    qmp.call(socket, name, "migrate_cancel")
    raise LabError(f"{name}: saving the booted VM took over {SAVE_TIMEOUT_S} s")
