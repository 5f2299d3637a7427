"""Booting, finding and stopping lab VMs (QEMU processes the lab owns).

API (booting is in labs/infra/vm/boot.py):
    down()                                          # stop every VM of this state dir
    vm_host("vm1")                                  # -> labs.hosts.SSHHost (root, pinned key)
    running_vm_names(), is_running("vm1"), read_state("vm1")

Each VM lives in $LABS_STATE_DIR/vms/<name>/ (state dir: see labs.infra.paths.state_dir):
overlay.qcow2 (copy-on-write over the cached image, so every `up` starts clean), its data
disks, qemu.pid, serial.log (the console, kept for diagnosis), known_hosts (the pinned host
key) and state.json. `down` and `clean` stop the QEMU process whose command line names that
folder (never any other QEMU), then delete the disks and keep the logs under vms/ended/.

Data disks (virtio, in this order, after the root disk /dev/vda):
    /dev/vdb  "fast": plain qcow2
    /dev/vdc  "slow": throttled by QEMU itself (throttling.iops-total / bps-total), a stand-in
              for a network disk or an HDD, below the guest kernel.
A pair (`up(pair=True)`) also shares a private layer-2 segment (QEMU UDP socket netdev):
vm1 is 10.77.0.1/24 and vm2 10.77.0.2/24 on eth1.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import shutil
import signal
import socket
import subprocess
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from labs.errors import LabError, UsageError
from labs.infra.hosts import HostError, SSHHost, UnknownHost
from labs.infra.journal import Journal, JournalEntry, register_teardown, retire_journal
from labs.infra.paths import state_dir
from labs.infra.vm.image import DEFAULT_RELEASE, Image, ensure_keys

QEMU = "qemu-system-x86_64"
GUEST_WORK_DIR = "/var/lib/storage-labs/work"
DATA_DISKS = ("fast", "slow")
PRIVATE_NET = "10.77.0.0/24"


class VMError(LabError):
    """A lab VM did not start or stop as it should."""


@dataclass
class VMState:
    name: str
    directory: str
    pid: int
    ssh_port: int
    accel: str
    memory_mib: int
    cpus: int
    boot_s: float
    private_ip: str
    lab_devices: list[str]
    slow_iops: int
    slow_bps: int
    image_hash: str
    started_at: str
    release: str = DEFAULT_RELEASE  # Debian codename of the image (older state files: bookworm)
    resumed: bool = False  # started from a saved state, not booted (labs/infra/vm/boot.py)


def vms_dir() -> Path:
    return state_dir() / "vms"


def is_vm_name(name: str) -> bool:
    return name.startswith("vm") and name[2:].isdigit()


def read_state(name: str) -> VMState | None:
    path = vms_dir() / name / "state.json"
    if not path.exists():
        return None
    try:
        return VMState(**json.loads(path.read_text()))
    except (json.JSONDecodeError, TypeError) as error:
        raise VMError(f"{path}: not a VM state file ({error})") from None


def qemu_pids(directory: str | Path) -> list[int]:
    """QEMU processes whose command line names this VM folder (ours, and only ours)."""
    marker = str(directory).rstrip("/") + "/"
    pids = []
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            argv = (proc / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if argv and argv[0].endswith(QEMU.encode()) and any(
                marker.encode() in arg for arg in argv):
            pids.append(int(proc.name))
    return pids


def require_lab_vm(host: Any, lab: str, commands: tuple[str, ...], extra_check: str = "") -> None:
    """Refuse, in one line, a host that is not a lab VM of this install or whose image lacks
    one of `commands`; `extra_check` is shell that prints the name of anything else missing."""
    if host.is_local or read_state(host.name) is None:
        raise UsageError(f"host {host.name}: the {lab} lab needs a lab VM "
                         "(`python -m labs vm up`, then --host vm1)")
    missing = host.missing_commands(commands, extra_check)
    if missing:
        raise UsageError(f"host {host.name} lacks {', '.join(missing)}: rebuild the lab VM "
                         "image (`python -m labs vm build --force`)")


def data_disk(host: Any, chosen: str | None) -> str:
    """The disk a VM lab keeps its data on: the one the reader chose, else the VM's first
    lab disk."""
    disk = chosen or (host.lab_devices[0] if host.lab_devices else None)
    if not disk:
        raise UsageError(f"host {host.name} has no lab disk for the data")
    return disk


def is_running(name: str) -> bool:
    state = read_state(name)
    return bool(state and state.pid in qemu_pids(state.directory))


def running_vm_names() -> list[str]:
    if not vms_dir().exists():
        return []
    return sorted(p.name for p in vms_dir().iterdir() if is_vm_name(p.name) and is_running(p.name))


def vm_host(name: str) -> SSHHost:
    """The running VM `name` as a lab host (root over SSH on 127.0.0.1, pinned host key)."""
    state = read_state(name)
    if state is None or not is_running(name):
        raise UnknownHost(f"{name} is not running (start it with `python -m labs vm up`)")
    keys = ensure_keys()
    return SSHHost(name, "127.0.0.1", user="root", port=state.ssh_port, key=str(keys.client_key),
                   known_hosts=str(Path(state.directory) / "known_hosts"),
                   work_dir=GUEST_WORK_DIR, lab_devices=tuple(state.lab_devices),
                   connect_timeout_s=10)


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def free_udp_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


# --- acceleration -------------------------------------------------------------------------

def choose_accel(image: Image, log: Callable[[str], None] = print) -> str:
    """'kvm' if a probe boot under KVM reaches the kernel within a timeout, else 'tcg'.

    LABS_VM_ACCEL=kvm|tcg skips the probe. The answer is cached per host boot, because a
    nested KVM can abort or hang (see DESIGN.md) and probing costs up to the timeout.
    """
    forced = os.environ.get("LABS_VM_ACCEL")
    if forced in ("kvm", "tcg"):
        return forced
    if forced:
        raise UsageError(f"LABS_VM_ACCEL={forced!r}: use kvm or tcg")
    if not os.access("/dev/kvm", os.R_OK | os.W_OK):
        log("vm: /dev/kvm is not usable: using TCG (software emulation, slower)")
        return "tcg"
    boot_id = Path("/proc/sys/kernel/random/boot_id").read_text().strip()
    cache = state_dir() / "kvm-probe.json"
    if cache.exists():
        known = json.loads(cache.read_text())
        if known.get("boot_id") == boot_id:
            return known["accel"]
    accel, why = _probe_kvm(image)
    log(f"vm: KVM probe: {why}: using {accel.upper()}")
    cache.parent.mkdir(parents=True, exist_ok=True)
    cache.write_text(json.dumps({"boot_id": boot_id, "accel": accel, "why": why}) + "\n")
    return accel


def _probe_kvm(image: Image, timeout_s: float = 20) -> tuple[str, str]:
    probe_dir = vms_dir() / "kvm-probe"
    journal = Journal("local")
    # The probe is a QEMU process too: journaled, so a hang plus a crash of ours leaks nothing.
    journal.will_create("vm", "kvm-probe", dir=str(probe_dir))
    probe_dir.mkdir(parents=True, exist_ok=True)
    command = [QEMU, "-name", "kvm-probe", "-enable-kvm", "-cpu", "host", "-m", "256",
               "-nodefaults", "-display", "none", "-serial", "stdio", "-no-reboot",
               "-kernel", str(image.kernel), "-append", "console=ttyS0 panic=-1",
               "-pidfile", str(probe_dir / "qemu.pid")]
    try:
        result = subprocess.run(command, capture_output=True, text=True, timeout=timeout_s,
                                stdin=subprocess.DEVNULL)
        output = result.stdout + result.stderr
        if "Linux version" in output and ("Kernel panic" in output or "VFS" in output):
            accel, why = "kvm", "the kernel booted under KVM"
        else:
            last = (result.stderr.strip().splitlines() or ["no output"])[-1]
            accel, why = "tcg", f"QEMU with KVM failed ({last[:100]})"
    except subprocess.TimeoutExpired:
        accel, why = "tcg", f"a KVM boot showed no kernel within {timeout_s:g} s"
    finally:
        entry = JournalEntry("vm", "kvm-probe", {"dir": str(probe_dir)})
        stop_vm_process(entry)
        journal.released("vm", "kvm-probe")
    return accel, why


# --- boot ---------------------------------------------------------------------------------

def qemu_command(name: str, index: int, directory: Path, image: Image, *, accel: str,
                 memory_mib: int, cpus: int, ssh_port: int, slow_iops: int, slow_bps: int,
                 pair_ports: tuple[int, int] | None, machine_id: str) -> list[str]:
    """The QEMU command line for one lab VM (pure: tested without booting). `machine_id`
    (32 hex digits) is the guest's /etc/machine-id: under emulation two VMs booting the same
    image can draw the same "random" one, so each boot gets its own from here."""
    append = (f"root=/dev/vda rw console=ttyS0 systemd.hostname={name} net.ifnames=0 "
              f"systemd.machine_id={machine_id} "
              "loglevel=4 systemd.show_status=false apparmor=0")
    if accel == "kvm":
        machine = ["-accel", "kvm", "-cpu", "host"]
    else:
        # qemu64, not max: emulating max's extra CPU features made TCG boots no faster and
        # often slower here (24-37 s against 37-86 s to SSH), and the labs need none of them.
        machine = ["-accel", "tcg,thread=multi", "-cpu", "qemu64"]
        # No address-space randomization under emulation: QEMU reuses the code it translated
        # only where a program's code sits at the same address again, so with it every new
        # process (sshd's session, sudo, psql) is translated anew. One command over SSH on
        # an idle VM: 0.21 -> 0.11 s (benchmarks/vm_command_cost.py). The VMs hold only the
        # labs.
        append += " norandmaps"
    command = [QEMU, "-name", f"{name},process=storage-labs-{name}", "-machine", "pc",
               *machine, "-m", str(memory_mib), "-smp", str(cpus),
               "-nodefaults", "-display", "none", "-vga", "none",
               "-kernel", str(image.kernel), "-initrd", str(image.initrd), "-append", append,
               "-drive", f"file={directory}/overlay.qcow2,if=none,id=root,format=qcow2",
               "-device", "virtio-blk-pci,drive=root,serial=lab-root",
               # Entropy from this machine: a guest resumed from a saved state would
               # otherwise go on from the saved state of its random number generator.
               "-object", "rng-random,id=rng0,filename=/dev/urandom",
               "-device", "virtio-rng-pci,rng=rng0"]
    for disk in DATA_DISKS:
        throttle = ""
        if disk == "slow":
            if slow_iops:
                throttle += f",throttling.iops-total={slow_iops}"
            if slow_bps:
                throttle += f",throttling.bps-total={slow_bps}"
        command += ["-drive", f"file={directory}/data-{disk}.qcow2,if=none,id={disk},"
                              f"format=qcow2{throttle}",
                    "-device", f"virtio-blk-pci,drive={disk},serial=lab-{disk}"]
    command += ["-netdev", f"user,id=net0,hostfwd=tcp:127.0.0.1:{ssh_port}-:22",
                "-device", f"virtio-net-pci,netdev=net0,mac=52:54:00:10:00:0{index}"]
    if pair_ports:
        mine, peer = pair_ports
        command += ["-netdev", f"socket,id=net1,udp=127.0.0.1:{peer},localaddr=127.0.0.1:{mine}",
                    "-device", f"virtio-net-pci,netdev=net1,mac=52:54:00:77:00:0{index}"]
    # QEMU's monitor (QMP) on a socket only root can reach: the devices lab changes a data
    # disk's throttling on the running VM through it (labs/infra/vm/throttle.py).
    command += ["-qmp", f"unix:{directory}/qmp.sock,server=on,wait=off",
                "-serial", f"file:{directory}/serial.log", "-pidfile", f"{directory}/qemu.pid",
                "-daemonize"]
    return command


def retire_vm_dir(directory: Path) -> None:
    """Delete a stopped VM's disks; keep its logs under vms/ended/ for diagnosis."""
    if not directory.exists():
        return
    for disk in directory.glob("*.qcow2"):
        # Safe: overlays and data disks this VM folder's QEMU used, which has stopped.
        disk.unlink()
    if directory.name == "kvm-probe":
        shutil.rmtree(directory, ignore_errors=True)
        return
    stamp = dt.datetime.now(dt.UTC).strftime("%Y%m%dT%H%M%S%fZ")
    ended = vms_dir() / "ended"
    ended.mkdir(parents=True, exist_ok=True)
    directory.rename(ended / f"{directory.name}-{stamp}")


def stop_vm_process(entry: JournalEntry) -> None:
    """Teardown of a journaled VM: stop its QEMU (found by its folder), retire the folder."""
    directory = Path(entry.details.get("dir", ""))
    if not str(directory).startswith(str(vms_dir()) + "/"):
        raise VMError(f"vm {entry.id}: {directory} is not under {vms_dir()}: not touching it")
    for sig, wait_s in ((signal.SIGTERM, 10), (signal.SIGKILL, 10)):
        pids = qemu_pids(directory)
        for pid in pids:
            # Safe: this QEMU's command line names the VM folder the lab created.
            os.kill(pid, sig)
        deadline = time.monotonic() + wait_s
        while pids and time.monotonic() < deadline:
            pids = qemu_pids(directory)
            time.sleep(0.1)
        if not pids:
            break
    if qemu_pids(directory):
        raise VMError(f"vm {entry.id}: QEMU would not stop")
    retire_vm_dir(directory)
    if entry.id != "kvm-probe":
        retire_journal(Journal(entry.id))


@register_teardown("vm")
def _teardown_vm(host: object, entry: JournalEntry) -> None:
    # VMs run on the machine that runs the labs; `host` is always local here.
    stop_vm_process(entry)


def _serial_tail(directory: Path, lines: int = 3) -> str:
    try:
        text = (directory / "serial.log").read_text(errors="replace")
    except OSError:
        return "no console output"
    return " | ".join(line.strip() for line in text.strip().splitlines()[-lines:])


def wait_for_ssh(state: VMState, directory: Path, deadline: float) -> None:
    keys = ensure_keys()
    host = SSHHost(state.name, "127.0.0.1", user="root", port=state.ssh_port,
                   key=str(keys.client_key), known_hosts=str(directory / "known_hosts"),
                   connect_timeout_s=10)
    last = ""
    try:
        while time.monotonic() < deadline:
            if state.pid not in qemu_pids(directory):
                raise VMError(f"{state.name}: QEMU exited during boot; console: "
                              f"{_serial_tail(directory)} (log: {directory}/serial.log)")
            try:
                # Unmarked: the boot's own check that SSH answers, not a lab's command.
                host.run("true", timeout_s=20, marked=False)
                return
            except HostError as error:
                last = str(error)
                host.close()
                time.sleep(1)
    finally:
        host.close()
    raise VMError(f"{state.name}: no SSH within the boot timeout ({last}); console: "
                  f"{_serial_tail(directory)} (log: {directory}/serial.log)")


def write_state(state: VMState) -> None:
    """The VM's state.json, written whole (a reader never sees half of it)."""
    directory = Path(state.directory)
    tmp = directory / "state.json.tmp"
    tmp.write_text(json.dumps(asdict(state), indent=2) + "\n")
    tmp.rename(directory / "state.json")


def down(names: list[str] | None = None, log: Callable[[str], None] = print) -> list[str]:
    """Stop the named VMs (default: every VM this state dir journaled)."""
    journal = Journal("local")
    stopped = []
    for entry in reversed(journal.live_entries()):
        if entry.kind != "vm" or (names and entry.id not in names):
            continue
        stop_vm_process(entry)
        journal.released("vm", entry.id)
        stopped.append(entry.id)
        log(f"vm: {entry.id} stopped (console log kept under {vms_dir() / 'ended'})")
    return stopped


def status() -> list[dict[str, Any]]:
    rows = []
    for entry in Journal("local").live_entries():
        if entry.kind != "vm" or entry.id == "kvm-probe":
            continue
        state = read_state(entry.id)
        running = bool(state and state.pid in qemu_pids(state.directory))
        rows.append({"name": entry.id, "running": running,
                     **({k: v for k, v in asdict(state).items()} if state else {})})
    return rows

