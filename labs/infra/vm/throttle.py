"""Change a running lab VM's data-disk throttling through QEMU's monitor (QMP).

    set_throttle("vm1", "fast", limits)   # limits: QEMU throttling.* names -> values
    set_throttle("vm1", "fast", {})       # no limits at all
    restore_throttle("vm1")               # both data disks back to how the VM was booted
    current_throttle("vm1", "slow")       # what QEMU applies now (query-block)

A VM booted by `labs vm up` listens for QMP on <vm folder>/qmp.sock (root only). The limits
take effect at once, below the guest kernel, exactly like the -drive throttling.* options.
"""

from __future__ import annotations

from pathlib import Path

from labs.errors import UsageError
from labs.infra.hosts import Host
from labs.infra.journal import JournalEntry, register_teardown
from labs.infra.vm import qmp
from labs.infra.vm.machine import DATA_DISKS, VMError, is_running, read_state

# QEMU -drive option name -> block_set_io_throttle argument (qapi/block-core.json)
OPTION_TO_QMP = {
    "throttling.iops-total": "iops", "throttling.bps-total": "bps",
    "throttling.iops-size": "iops_size",
    "throttling.iops-total-max": "iops_max", "throttling.iops-total-max-length":
    "iops_max_length", "throttling.bps-total-max": "bps_max",
    "throttling.bps-total-max-length": "bps_max_length",
}
REQUIRED = ("bps", "bps_rd", "bps_wr", "iops", "iops_rd", "iops_wr")
TIMEOUT_S = 10


def _socket_path(name: str) -> Path:
    state = read_state(name)
    if state is None:
        raise UsageError(f"{name} is not a lab VM of this install")
    path = Path(state.directory) / "qmp.sock"
    if not path.exists():
        raise VMError(f"{name} has no QEMU monitor socket (booted before this version): "
                      f"`python -m labs vm down` and `vm up` boot it with one")
    return path


def _qmp(name: str, command: str, arguments: dict | None = None) -> object:
    """One QMP command to the VM `name`; returns its "return" value."""
    try:
        return qmp.call(_socket_path(name), name, command, arguments, timeout_s=TIMEOUT_S)
    except qmp.QMPError as error:
        raise VMError(str(error)) from None


def _check_disk(disk: str) -> str:
    if disk not in DATA_DISKS:
        raise UsageError(f"lab VM data disks are {', '.join(DATA_DISKS)}, got {disk!r}")
    return disk


def qmp_arguments(disk: str, limits: dict[str, int]) -> dict:
    """block_set_io_throttle's arguments for `limits` (QEMU option names), pure."""
    unknown = set(limits) - set(OPTION_TO_QMP)
    if unknown:
        raise UsageError(f"not a throttling option: {', '.join(sorted(unknown))}")
    arguments = {"device": _check_disk(disk), **dict.fromkeys(REQUIRED, 0)}
    for option, value in limits.items():
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            raise UsageError(f"{option} must be a whole number >= 0, got {value!r}")
        arguments[OPTION_TO_QMP[option]] = value
    return arguments


def set_throttle(name: str, disk: str, limits: dict[str, int]) -> None:
    """Apply `limits` (QEMU throttling.* names; {} = none) to the VM's data disk now."""
    _qmp(name, "block_set_io_throttle", qmp_arguments(disk, limits))


def current_throttle(name: str, disk: str) -> dict[str, int]:
    """The throttling QEMU applies to the data disk now, as throttling.* option names."""
    _check_disk(disk)
    for block in _qmp(name, "query-block"):
        if block.get("device") == disk:
            inserted = block.get("inserted", {})
            return {option: inserted[key] for option, key in OPTION_TO_QMP.items()
                    if inserted.get(key)}
    raise VMError(f"{name}: QEMU has no disk {disk!r}")


def boot_throttle(name: str, disk: str) -> dict[str, int]:
    """The throttling the VM was booted with on this disk (see machine.qemu_command)."""
    state = read_state(name)
    if state is None:
        raise UsageError(f"{name} is not a lab VM of this install")
    if _check_disk(disk) != "slow":
        return {}
    limits = {"throttling.iops-total": state.slow_iops, "throttling.bps-total": state.slow_bps}
    return {option: value for option, value in limits.items() if value}


def restore_throttle(name: str) -> None:
    """Both data disks back to the throttling the VM was booted with."""
    for disk in DATA_DISKS:
        set_throttle(name, disk, boot_throttle(name, disk))


def throttle_in_workspace(ws, disk: str, limits: dict[str, int]) -> None:
    """`set_throttle` on the workspace's VM, journaled first: the workspace's end (or
    `python -m labs clean`) puts the disk back to how the VM was booted."""
    if ("vm-throttle", disk) not in ws.created:
        ws.track("vm-throttle", _check_disk(disk), vm=ws.host.name)
    set_throttle(ws.host.name, disk, limits)


@register_teardown("vm-throttle")
def _teardown_throttle(host: Host, entry: JournalEntry) -> None:
    name = entry.details.get("vm", host.name)
    if read_state(name) is None or not is_running(name):
        return  # the VM is gone or off: its next boot starts from its own command line
    set_throttle(name, entry.id, boot_throttle(name, entry.id))
