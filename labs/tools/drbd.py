"""DRBD: write resource files and build drbdadm command lines (their output: drbd_state.py).

The lab VMs run Debian 12's kernel, whose in-tree DRBD module is 8.4 (`/proc/drbd` says
`version: 8.4.11 (api:1/proto:86-101)`), driven by drbd-utils 9, which hands every command
to its 8.4 tools (`drbdadm-84`, `drbdsetup-84`) when the loaded module is 8.4. So:

- the resource-file writer writes DRBD 8.4 syntax. DRBD 9 needs more (a `node-id` per host,
  `connection-mesh` or `connection` sections, options that moved between sections); the
  writer dispatches on the major version so a 9 writer can be added, and refuses 9 until then;
- the /proc/drbd reader reads 8.4's per-minor lines. DRBD 9's /proc/drbd holds only the
  version lines, which `drbd_major_version` reads;
- the `drbdadm status` reader reads the indented `name key:value` form that drbd-utils prints
  for 8.4 (captured on the lab VMs). DRBD 9 prints the same shape (peers named by host name,
  several peers and volumes), which the reader's structure allows for, but no DRBD 9 output
  was captured to test it: treat 9 as unverified.

Sources for the formats: the kernel's drivers/block/drbd/drbd_proc.c (8.4), the output of
`drbdsetup-84 help disk-options|net-options` and `drbdsetup-84 show --show-defaults` on the
lab VMs, and the LINBIT DRBD 8.4 user's guide.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field

from labs.errors import LabError, UsageError

DRBDADM = "drbdadm"
RESOURCE_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$")
HOST_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$")
IPV4 = re.compile(r"^(\d{1,3})\.(\d{1,3})\.(\d{1,3})\.(\d{1,3})$")
DEVICE = re.compile(r"^/dev/drbd(\d{1,5})$")
BLOCK_DEVICE = re.compile(r"^/dev/[A-Za-z0-9_./-]+$")
OPTION_VALUE = re.compile(r"^[A-Za-z0-9_.-]+$")
PROTOCOLS = ("A", "B", "C")


class DrbdError(LabError):
    """DRBD output that cannot be read, or a state DRBD should not be in."""


# --- resource files --------------------------------------------------------------------------

# DRBD 8.4's options, per section, as `drbdsetup-84 help disk-options` and `help net-options`
# list them on the lab VMs; value: the accepted integer range where the help gives one.
DISK_OPTIONS_84: dict[str, tuple[int, int] | None] = {
    "on-io-error": None, "fencing": None, "disk-barrier": None, "disk-flushes": None,
    "disk-drain": None, "md-flushes": None, "resync-rate": (1, 4194304),
    "resync-after": (-1, 1048575), "al-extents": (67, 65534), "al-updates": None,
    "discard-zeroes-if-aligned": None, "disable-write-same": None, "c-plan-ahead": (0, 300),
    "c-delay-target": (1, 100), "c-fill-target": (0, 1048576), "c-max-rate": (250, 4194304),
    "c-min-rate": (0, 4194304), "disk-timeout": (0, 6000), "read-balancing": None,
    "rs-discard-granularity": (0, 1048576),
}
NET_OPTIONS_84: dict[str, tuple[int, int] | None] = {
    "timeout": (1, 600), "max-epoch-size": (1, 20000), "max-buffers": (32, 131072),
    "unplug-watermark": (1, 131072), "connect-int": (1, 120), "ping-int": (1, 120),
    "sndbuf-size": (0, 10485760), "rcvbuf-size": (0, 10485760), "ko-count": (0, 200),
    "allow-two-primaries": None, "cram-hmac-alg": None, "shared-secret": None,
    "after-sb-0pri": None, "after-sb-1pri": None, "after-sb-2pri": None, "always-asbp": None,
    "rr-conflict": None, "ping-timeout": (1, 300), "data-integrity-alg": None,
    "tcp-cork": None, "on-congestion": None, "congestion-fill": (0, 20971520),
    "congestion-extents": (67, 65534), "csums-alg": None, "csums-after-crash-only": None,
    "verify-alg": None, "use-rle": None, "socket-check-timeout": (0, 300),
}
OptionValue = bool | int | str


@dataclass(frozen=True)
class DrbdHost:
    """One `on NAME { ... }` section. `name` must equal that host's `uname -n`."""

    name: str
    address: str  # IPv4 of the replication link
    disk: str  # the backing block device
    device: str = "/dev/drbd0"
    port: int = 7789
    meta_disk: str = "internal"
    node_id: int | None = None  # DRBD 9 only

    @property
    def minor(self) -> int:
        match = DEVICE.match(self.device)
        if not match:
            raise UsageError(f"DRBD device {self.device!r} must look like /dev/drbd0")
        return int(match.group(1))


@dataclass(frozen=True)
class DrbdResource:
    """A two-host resource: what the lab writes to /etc/drbd.d/NAME.res on both hosts."""

    name: str
    hosts: tuple[DrbdHost, ...]
    protocol: str = "C"
    disk_options: Mapping[str, OptionValue] = field(default_factory=dict)
    net_options: Mapping[str, OptionValue] = field(default_factory=dict)

    def host(self, name: str) -> DrbdHost:
        for host in self.hosts:
            if host.name == name:
                return host
        raise UsageError(f"resource {self.name}: no host {name!r} "
                         f"(hosts: {', '.join(h.name for h in self.hosts)})")


def resource_file(resource: DrbdResource, drbd_major: int = 8) -> str:
    """The text of the resource file for the DRBD major version the hosts run."""
    if drbd_major == 8:
        return _resource_file_84(resource)
    if drbd_major == 9:
        raise UsageError("DRBD 9 resource files are not written by this module yet "
                         "(the lab VMs run 8.4; 9 needs node-id and connection sections)")
    raise UsageError(f"unknown DRBD major version {drbd_major} (expected 8 or 9)")


def _check_resource_84(resource: DrbdResource) -> None:
    _check_resource_shape_84(resource)
    for host in resource.hosts:
        _check_host_84(host)
    for section, options, known in (("disk", resource.disk_options, DISK_OPTIONS_84),
                                    ("net", resource.net_options, NET_OPTIONS_84)):
        for name, value in options.items():
            _option_text(section, name, value, known)


def _check_resource_shape_84(resource: DrbdResource) -> None:
    """The resource's name and protocol, and two hosts with their own names and endpoints."""
    if not RESOURCE_NAME.match(resource.name):
        raise UsageError(f"DRBD resource name {resource.name!r}: use letters, digits, _ . -")
    if resource.protocol not in PROTOCOLS:
        raise UsageError(f"DRBD protocol {resource.protocol!r}: must be A, B or C")
    if len(resource.hosts) != 2:
        raise UsageError(f"resource {resource.name}: DRBD 8.4 mirrors between exactly two "
                         f"hosts (got {len(resource.hosts)})")
    names = [h.name for h in resource.hosts]
    if len(set(names)) != len(names):
        raise UsageError(f"resource {resource.name}: host names repeat ({', '.join(names)})")
    endpoints = [(h.address, h.port) for h in resource.hosts]
    if len(set(endpoints)) != len(endpoints):
        raise UsageError(f"resource {resource.name}: two hosts share address and port")


def _check_host_84(host: DrbdHost) -> None:
    if not HOST_NAME.match(host.name):
        raise UsageError(f"DRBD host name {host.name!r}: use letters, digits, _ . -")
    octets = IPV4.match(host.address)
    if not octets or any(int(o) > 255 for o in octets.groups()):
        raise UsageError(f"host {host.name}: address {host.address!r} is not an IPv4 "
                         "address")
    if not 1 <= host.port <= 65535:
        raise UsageError(f"host {host.name}: port {host.port} is outside 1-65535")
    _ = host.minor  # validates the device name
    if not BLOCK_DEVICE.match(host.disk):
        raise UsageError(f"host {host.name}: disk {host.disk!r} is not a /dev path")
    if host.meta_disk != "internal" and not BLOCK_DEVICE.match(host.meta_disk):
        raise UsageError(f"host {host.name}: meta-disk {host.meta_disk!r} must be "
                         "'internal' or a /dev path")
    if host.node_id is not None:
        raise UsageError(f"host {host.name}: node-id is DRBD 9 syntax; 8.4 refuses it")


def _option_text(section: str, name: str, value: OptionValue,
                 known: dict[str, tuple[int, int] | None]) -> str:
    if name == "protocol" and section == "net":
        raise UsageError("set the protocol with DrbdResource(protocol=...), not net_options")
    if name not in known:
        other = "net" if section == "disk" else "disk"
        where = (f" (it is a {other} option)" if name in
                 (NET_OPTIONS_84 if section == "disk" else DISK_OPTIONS_84) else "")
        raise UsageError(f"{name!r} is not a DRBD 8.4 {section} option{where}")
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, int):
        bounds = known[name]
        if bounds and not bounds[0] <= value <= bounds[1]:
            raise UsageError(f"DRBD {section} option {name}={value} is outside "
                             f"{bounds[0]}..{bounds[1]}")
        return str(value)
    if not isinstance(value, str) or not OPTION_VALUE.match(value):
        # No spaces, quotes, braces or semicolons: the value goes into the file as one word.
        raise UsageError(f"DRBD {section} option {name}: value {value!r} must be one word "
                         "(a number with an optional unit, yes/no, or a keyword)")
    return value


def _resource_file_84(resource: DrbdResource) -> str:
    _check_resource_84(resource)
    lines = [f"resource {resource.name} {{"]
    lines += ["  net {", f"    protocol {resource.protocol};"]
    lines += [f"    {name} {_option_text('net', name, value, NET_OPTIONS_84)};"
              for name, value in resource.net_options.items()]
    lines.append("  }")
    if resource.disk_options:
        lines.append("  disk {")
        lines += [f"    {name} {_option_text('disk', name, value, DISK_OPTIONS_84)};"
                  for name, value in resource.disk_options.items()]
        lines.append("  }")
    for host in resource.hosts:
        lines += [f"  on {host.name} {{", f"    device {host.device};", f"    disk {host.disk};",
                  f"    address {host.address}:{host.port};", f"    meta-disk {host.meta_disk};",
                  "  }"]
    lines.append("}")
    return "\n".join(lines) + "\n"


# --- drbdadm command lines -------------------------------------------------------------------

def _resource_arg(resource: str) -> str:
    if resource != "all" and not RESOURCE_NAME.match(resource):
        raise UsageError(f"DRBD resource name {resource!r}: use letters, digits, _ . -")
    return resource


def _drbdadm(command: str, resource: str, *options: str) -> list[str]:
    return [DRBDADM, command, *options, _resource_arg(resource)]


def create_md_command(resource: str) -> list[str]:
    # --force is passed on to drbdmeta: it answers its "[need to type 'yes' to confirm]"
    # question, so the command never waits on a terminal. It overwrites the metadata area of
    # the backing disk; the lab only names disks its guard allowed.
    return _drbdadm("create-md", resource, "--force")


def up_command(resource: str) -> list[str]:
    return _drbdadm("up", resource)


def down_command(resource: str) -> list[str]:
    return _drbdadm("down", resource)


def primary_command(resource: str, *, force: bool = False) -> list[str]:
    """`--force` promotes although no disk is known UpToDate: the first promotion (it starts
    the full sync towards the peer), or a survivor whose peer died while it was not sure."""
    return _drbdadm("primary", resource, *(["--force"] if force else []))


def secondary_command(resource: str) -> list[str]:
    return _drbdadm("secondary", resource)


def adjust_command(resource: str) -> list[str]:
    """Make the running resource match the file (this also undoes runtime option changes)."""
    return _drbdadm("adjust", resource)


def _option_flags(options: Mapping[str, OptionValue], known: dict[str, tuple[int, int] | None],
                  section: str) -> list[str]:
    return [f"--{name}={_option_text(section, name, value, known)}"
            for name, value in options.items()]


def net_options_command(resource: str, *, protocol: str | None = None,
                        **options: OptionValue) -> list[str]:
    """Change net options of a live resource, e.g. the protocol of a connected one."""
    flags = []
    if protocol is not None:
        if protocol not in PROTOCOLS:
            raise UsageError(f"DRBD protocol {protocol!r}: must be A, B or C")
        flags.append(f"--protocol={protocol}")
    flags += _option_flags({k.replace("_", "-"): v for k, v in options.items()},
                           NET_OPTIONS_84, "net")
    if not flags:
        raise UsageError("net-options: nothing to change")
    return _drbdadm("net-options", resource, *flags)


def disk_options_command(resource: str, **options: OptionValue) -> list[str]:
    """Change disk options of a live resource (al-extents, disk-flushes, resync-rate, ...)."""
    flags = _option_flags({k.replace("_", "-"): v for k, v in options.items()},
                          DISK_OPTIONS_84, "disk")
    if not flags:
        raise UsageError("disk-options: nothing to change")
    return _drbdadm("disk-options", resource, *flags)


def new_current_uuid_command(resource: str, *, clear_bitmap: bool = True) -> list[str]:
    """With --clear-bitmap on fresh metadata (both sides Inconsistent, connected, Secondary):
    both disks become UpToDate without the initial full sync. Right only when the backing
    disks really hold the same bytes (e.g. both all zeros)."""
    return _drbdadm("new-current-uuid", resource, *(["--clear-bitmap"] if clear_bitmap else []))


def disconnect_command(resource: str) -> list[str]:
    return _drbdadm("disconnect", resource)


def connect_command(resource: str, *, discard_my_data: bool = False) -> list[str]:
    """`discard_my_data`: this side lost a split brain; what it alone wrote is thrown away
    and it resyncs from the peer."""
    return _drbdadm("connect", resource, *(["--discard-my-data"] if discard_my_data else []))


def detach_command(resource: str) -> list[str]:
    return _drbdadm("detach", resource)


def attach_command(resource: str) -> list[str]:
    return _drbdadm("attach", resource)


def invalidate_command(resource: str) -> list[str]:
    # Marks THIS host's copy out of date: it is overwritten from the peer by a full sync.
    return _drbdadm("invalidate", resource)


def status_command(resource: str = "all") -> list[str]:
    return _drbdadm("status", resource)


def dump_command(resource: str) -> list[str]:
    """`drbdadm dump`: parses the configuration and prints it back; it fails on a bad file."""
    return _drbdadm("dump", resource)


def dry_run(argv: list[str]) -> list[str]:
    """The same drbdadm command with -d: prints the drbdsetup/drbdmeta calls, changes nothing."""
    if argv[:1] != [DRBDADM]:
        raise UsageError(f"dry_run wants a drbdadm command, got {argv[:1]}")
    return [DRBDADM, "-d", *argv[1:]]

