"""The two hosts of the DRBD lab's pair, checked before anything is made: a lab VM pair
started together, or two SSH hosts of the inventory with the tools, the kernel modules,
DRBD 8.4 and room for the loop file. Each problem is one line (a UsageError)."""

from __future__ import annotations

from dataclasses import dataclass

from labs.drbd.pair import RESOURCE, VM_INTERFACE
from labs.drbd.params import Parameters, is_vm_name
from labs.drbd.ssh_link import link_interface
from labs.errors import UsageError
from labs.infra import inventory
from labs.infra.facts import available_disk_mib
from labs.infra.hosts import Host
from labs.infra.vm import machine
from labs.tools import iproute
from labs.tools.drbd_state import drbd_major_version

NEEDED = ("drbdadm", "fio", "ping", "tc", "psql", "pgbench", "runuser", "md5sum")
SSH_NEEDED = ("ip", "losetup", "modprobe", "python3", "pgrep")
POSTGRES_CHECK = "ls -d /usr/lib/postgresql/*/bin >/dev/null 2>&1 || echo initdb"
MODULES_CHECK = ("; for m in drbd sch_netem; do modprobe -n $m >/dev/null 2>&1 || "
                 "echo kernel-module-$m; done")
SSH_DISK_MIB = 1024  # the loop file on each SSH host: as large as a lab VM's data disk


@dataclass(frozen=True)
class Side:
    """One host of the pair, as the run needs it."""

    host: Host
    address: str  # where the other host reaches this one
    interface: str  # the link's interface here (netem goes on it)
    disk: str | None  # a lab VM's data disk; None: the run makes a loop device over a file


def check_pair(params: Parameters, host: Host) -> tuple[Side, Side]:
    """Both hosts and their link; one-line errors for anything missing, before anything is
    made."""
    if is_vm_name(params.host):
        return check_vm_pair(params, host)
    return check_ssh_pair(params, host)


def check_vm_pair(params: Parameters, host: Host) -> tuple[Side, Side]:
    peer = machine.vm_host(params.peer) if machine.is_running(params.peer) else None
    if peer is None:
        raise UsageError(f"--peer {params.peer} is not running: start the pair with "
                         "`python -m labs vm up --pair`")
    sides = []
    for vm in (host, peer):
        machine.require_lab_vm(vm, params.LAB, NEEDED, POSTGRES_CHECK)
        state = machine.read_state(vm.name)
        if state is None or not state.private_ip or not vm.lab_devices:
            raise UsageError(f"{vm.name} has no private link: the DRBD lab needs two VMs "
                             "started together (`python -m labs vm up --pair`)")
        sides.append(Side(vm, state.private_ip, VM_INTERFACE, vm.lab_devices[0]))
    return sides[0], sides[1]


def check_ssh_pair(params: Parameters, host: Host) -> tuple[Side, Side]:
    """Two SSH hosts of the inventory: the tools and kernel modules, DRBD 8.4 with no resource
    of ours there yet, room for the loop file, each one's link address its own, and the
    interface each one reaches the other by."""
    peer = inventory.get_host(params.peer)
    addresses = (inventory.link_address(host.name), inventory.link_address(peer.name))
    for side, address in ((host, addresses[0]), (peer, addresses[1])):
        try:
            iproute.route_get_command(address)
        except UsageError:
            raise UsageError(f"inventory: hosts.{side.name}.link_address is {address!r}, not "
                             "an IPv4 address (where the other host reaches it)") from None
    for side in (host, peer):
        _check_ssh_host(side, flush_delay=params.flush_delay_ms > 0)
    interfaces = []
    for side, own, other in ((host, addresses[0], addresses[1]),
                             (peer, addresses[1], addresses[0])):
        interfaces.append(link_interface(side, own, other))
    return (Side(host, addresses[0], interfaces[0], None),
            Side(peer, addresses[1], interfaces[1], None))


def _check_ssh_host(side: Host, *, flush_delay: bool) -> None:
    """The tools and kernel modules (dm-delay too for a flush delay), DRBD 8.4 with no
    resource of ours yet, room for the loop file."""
    needed, modules = NEEDED + SSH_NEEDED, MODULES_CHECK
    if flush_delay:
        needed += ("dmsetup",)
        modules += "; modprobe -n dm_delay >/dev/null 2>&1 || echo kernel-module-dm_delay"
    missing = side.missing_commands(needed, POSTGRES_CHECK + modules)
    if missing:
        raise UsageError(f"host {side.name} lacks {', '.join(missing)}: install drbd-utils, "
                         "fio, postgresql, iproute2, iputils-ping and python3 there "
                         "(and dmsetup for --flush-delay-ms; README, \"The DRBD lab on two "
                         "machines\")")
    proc = side.sudo("modprobe drbd && cat /proc/drbd", timeout_s=120).stdout
    if drbd_major_version(proc, source=f"{side.name}: /proc/drbd") != 8:
        raise UsageError(f"host {side.name} runs DRBD {proc.split()[1]}: the lab writes "
                         "DRBD 8.4 resource files only")
    taken = side.run(f"test -e /etc/drbd.d/{RESOURCE}.res && echo file; "
                     "grep -q -E '^ *0: cs:' /proc/drbd && echo minor; true",
                     timeout_s=60).stdout
    if taken.split():
        raise UsageError(f"host {side.name} already has DRBD's minor 0 or a resource "
                         f"/etc/drbd.d/{RESOURCE}.res: the lab uses neither while it is "
                         f"someone's (`python -m labs clean --host {side.name}` removes "
                         "a run's leftovers)")
    free_mib = available_disk_mib(side, side.work_dir)
    if free_mib < SSH_DISK_MIB + 256:
        raise UsageError(f"host {side.name} has {free_mib} MiB free under {side.work_dir}; "
                         f"the lab's disk there is a {SSH_DISK_MIB} MiB file")

