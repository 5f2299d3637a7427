"""mdadm and Linux md: build the commands a lab needs, and read md's state back.

Commands (argv lists, nothing run here): create, assemble, fail, remove, add, stop,
zero-superblock, and the sysfs write that flips write-mostly. A lab runs them through
LabWorkspace.run_guarded (labs.infra.workspace), which first checks every device with the
guard, so a typo can never put the reader's own disk into an array.

Readers:
- `/proc/mdstat`: arrays, members with their role number and flags ((W) write-mostly,
  (F) faulty, (S) spare, (R) replacement, (J) journal), [n/m] [UU_] health, and the
  resync/recovery progress line with its speed and finish estimate;
- `/sys/block/mdX/md/dev-*/state`: each member's state flags (in_sync, write_mostly, ...);
- `/sys/block/*/stat`: each block device's read and write counters, which show where the
  I/O of an array really went;
- the kernel log (`dmesg`): md's own lines that begin and end a resync or recovery, with
  the kernel's timestamps, which time a copy to the millisecond however late a poll comes.

The kernel's formats are documented in Documentation/admin-guide/md.rst and
Documentation/block/stat.rst.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Iterable
from dataclasses import asdict, dataclass, field
from typing import Any

from labs.errors import LabError, UsageError

MD_NAME = re.compile(r"^md[0-9]+$")


class MdError(LabError):
    """md refused something, or its state cannot be read."""


class NotALabDevice(UsageError):
    """A command named a block device this lab did not create."""


def md_path(array: str) -> str:
    """`md0`, `/dev/md0` or `/dev/md/NAME` -> the /dev path (anything else is refused)."""
    if re.match(r"^/dev/md/[a-z0-9_-]{1,24}$", array):
        return array
    name = array.removeprefix("/dev/")
    if not MD_NAME.match(name):
        raise UsageError(f"md array {array!r} must look like md0, /dev/md0 or /dev/md/NAME")
    return f"/dev/{name}"


# --- command builders -----------------------------------------------------------------------

@dataclass(frozen=True)
class Member:
    """A member named at create time: a device path or "missing"."""

    device: str
    write_mostly: bool = False


def create_command(array: str, members: list[Member], *, level: int = 1,
                   bitmap: str = "none", write_behind: int | None = None,
                   assume_clean: bool = False, size_kib: int | None = None) -> list[str]:
    """`mdadm --create` for a RAID1 (or other level); members in role order.

    --write-behind applies to write-mostly members; they may also be marked after creation
    through sysfs (`set_write_mostly`), which is how a write-mostly member gets slot 0.
    """
    if write_behind is not None and bitmap == "none":
        raise UsageError("mdadm --write-behind needs a write-intent bitmap (bitmap='internal')")
    argv = ["mdadm", "--create", md_path(array), "--run", "--metadata=1.2",
            f"--level={level}", f"--raid-devices={len(members)}", f"--bitmap={bitmap}"]
    if write_behind is not None:
        argv.append(f"--write-behind={write_behind}")
    if assume_clean:
        argv.append("--assume-clean")
    if size_kib is not None:
        if size_kib < 64:
            raise UsageError(f"mdadm --size={size_kib}: use at least 64 KiB")
        argv.append(f"--size={size_kib}")  # per member, in KiB
    # --write-mostly is a switch for every device after it, and create mode has no switch
    # back (--readwrite is refused), so write-mostly members come last; "missing" may follow.
    marked = False
    for member in members:
        if member.write_mostly and not marked:
            argv.append("--write-mostly")
            marked = True
        elif marked and not member.write_mostly and member.device != "missing":
            raise UsageError(f"mdadm --create: list {member.device} before the write-mostly "
                             "members (mdadm cannot switch write-mostly off in create mode)")
        argv.append(member.device)
    return argv


def assemble_command(array: str, devices: list[str]) -> list[str]:
    return ["mdadm", "--assemble", "--run", md_path(array), *devices]


def manage_command(array: str, action: str, device: str, *, write_mostly: bool = False
                   ) -> list[str]:
    """`mdadm ARRAY --fail|--remove|--add DEVICE`."""
    if action not in ("fail", "remove", "add"):
        raise UsageError(f"mdadm: unknown manage action {action!r}")
    if write_mostly and action != "add":
        raise UsageError("mdadm: --write-mostly only goes with --add")
    # mdadm wants the mode (--add) before the --write-mostly switch that applies to the device.
    return ["mdadm", md_path(array), f"--{action}",
            *(["--write-mostly"] if write_mostly else []), device]


def stop_command(array: str) -> list[str]:
    return ["mdadm", "--stop", md_path(array)]


def zero_superblock_command(*devices: str) -> list[str]:
    return ["mdadm", "--zero-superblock", "--force", *devices]


def set_write_mostly_command(md_name: str, member_name: str, on: bool = True) -> str:
    """Flip a member's write-mostly flag at run time through sysfs (md.rst).

    Takes kernel names (`md127`, `dm-0`), as sysfs names them.
    """
    state = f"/sys/block/{md_name}/md/dev-{member_name}/state"
    return f"echo {'writemostly' if on else '-writemostly'} > {shlex.quote(state)}"


# --- the kernel log ---------------------------------------------------------------------------

KERNEL_LOG_COMMAND = ["dmesg"]  # with the kernel's timestamps ([seconds.micro]), as root
SYNC_BEGAN = re.compile(r"^\[\s*(?P<t>\d+\.\d+)\] md: (?P<action>[\w-]+) of RAID array "
                        r"(?P<md>md\d+)\s*$")
SYNC_ENDED = re.compile(r"^\[\s*(?P<t>\d+\.\d+)\] md: (?P<md>md\d+): (?P<action>[\w-]+) "
                        r"(?P<outcome>done|interrupted)\.\s*$")


@dataclass(frozen=True)
class SyncSpan:
    """One resync or recovery of an array as md logged it (seconds since boot)."""

    action: str
    began_s: float
    ended_s: float | None = None  # None: still running when the log was read
    outcome: str | None = None  # done | interrupted

    @property
    def seconds(self) -> float | None:
        return None if self.ended_s is None else round(self.ended_s - self.began_s, 3)


def parse_sync_log(text: str, md_name: str) -> list[SyncSpan]:
    """md's resyncs and recoveries of one array in a kernel log, oldest first.

    md writes "md: recovery of RAID array md127" when a copy starts and "md: md127: recovery
    done." (or "interrupted.") when it ends (drivers/md/md.c, md_do_sync)."""
    spans: list[SyncSpan] = []
    for line in text.splitlines():
        began, ended = SYNC_BEGAN.match(line.strip()), SYNC_ENDED.match(line.strip())
        if began and began["md"] == md_name:
            spans.append(SyncSpan(began["action"], float(began["t"])))
        elif ended and ended["md"] == md_name and spans and spans[-1].ended_s is None \
                and spans[-1].action == ended["action"]:
            spans[-1] = SyncSpan(spans[-1].action, spans[-1].began_s, float(ended["t"]),
                                 ended["outcome"])
    return spans


# --- /proc/mdstat ---------------------------------------------------------------------------

MEMBER = re.compile(r"^(?P<device>[^\s\[]+)\[(?P<role>\d+)\](?P<flags>(\([A-Z]\))*)$")
BLOCKS = re.compile(
    r"^\s*(?P<blocks>\d+) blocks(?: super (?P<metadata>\S+))?.*?"
    r"(?:\[(?P<raid_disks>\d+)/(?P<working_disks>\d+)\] \[(?P<health>[U_]+)\])?\s*$")
SYNC = re.compile(
    r"(?P<action>resync|recovery|reshape|check|repair)\s*=\s*(?P<percent>[\d.]+)%\s*"
    r"\((?P<done>\d+)/(?P<total>\d+)\)\s*finish=(?P<finish>[\d.]+)min\s*"
    r"speed=(?P<speed>\d+)K/sec")
SYNC_WAITING = re.compile(r"(?P<action>resync|recovery|reshape|check|repair)\s*=\s*"
                          r"(?P<state>DELAYED|PENDING)")
BITMAP = re.compile(r"bitmap: (?P<dirty>\d+)/(?P<pages>\d+) pages \[(?P<kb>\d+)KB\], "
                    r"(?P<chunk_kib>\d+)KB chunk")
FLAG_NAMES = {"W": "write_mostly", "F": "faulty", "S": "spare", "R": "replacement",
              "J": "journal"}


@dataclass(frozen=True)
class MdMember:
    """A member as /proc/mdstat shows it.

    `role` is the number in brackets: md's descriptor number for the member. It is the
    mirror slot for members added at create time, but a member added later gets the next
    free number (nvme1n1[2] in a two-disk mirror); /sys/block/mdX/md/dev-*/slot has the slot.
    """

    device: str
    role: int
    write_mostly: bool = False
    faulty: bool = False
    spare: bool = False
    replacement: bool = False
    journal: bool = False


@dataclass(frozen=True)
class MdSync:
    """A resync/recovery line: progress in 1 KiB blocks, md's own speed and estimate."""

    action: str
    percent: float | None = None
    done_kib: int | None = None
    total_kib: int | None = None
    finish_min: float | None = None
    speed_kib_s: int | None = None
    waiting: str | None = None  # DELAYED or PENDING when the sync has not started


@dataclass
class MdArray:
    name: str
    active: bool
    level: str | None
    members: list[MdMember]
    read_only: str | None = None  # "auto-read-only" or "read-only"
    size_kib: int | None = None
    metadata: str | None = None
    raid_disks: int | None = None
    working_disks: int | None = None
    health: str | None = None  # e.g. "UU", "U_"
    sync: MdSync | None = None
    bitmap_pages: tuple[int, int] | None = None  # (dirty, total)
    bitmap_chunk_kib: int | None = None

    def member(self, device: str) -> MdMember:
        for member in self.members:
            if member.device == device:
                return member
        raise MdError(f"{self.name}: {device} is not a member "
                      f"(members: {', '.join(m.device for m in self.members) or 'none'})")

    @property
    def degraded(self) -> bool:
        return self.health is not None and "_" in self.health


@dataclass
class MdStat:
    personalities: list[str]
    arrays: dict[str, MdArray] = field(default_factory=dict)

    def array(self, name: str) -> MdArray:
        name = name.removeprefix("/dev/")
        if name not in self.arrays:
            raise MdError(f"/proc/mdstat: no array {name} "
                          f"(arrays: {', '.join(self.arrays) or 'none'})")
        return self.arrays[name]


def parse_mdstat(text: str, source: str = "/proc/mdstat") -> MdStat:
    """Parse the text of /proc/mdstat."""
    lines = text.splitlines()
    if not lines or not lines[0].startswith("Personalities :"):
        raise MdError(f"{source}: does not start with 'Personalities :' (is md loaded?)")
    personalities = re.findall(r"\[([^\]]+)\]", lines[0])
    mdstat = MdStat(personalities)
    current: MdArray | None = None
    for number, line in enumerate(lines[1:], start=2):
        if not line.strip() or line.startswith("unused devices:"):
            current = None if not line.strip() else current
            continue
        header = re.match(r"^(md\S*) : (.*)$", line)
        if header:
            current = _parse_array_header(header.group(1), header.group(2).split(), source,
                                          number)
            mdstat.arrays[current.name] = current
            continue
        if current is None or not line[:1].isspace():
            raise MdError(f"{source}: line {number} is not part of an array: {line.strip()!r}")
        _parse_array_detail(current, line)
    return mdstat


def _parse_array_header(name: str, words: list[str], source: str, number: int) -> MdArray:
    if not words or words[0] not in ("active", "inactive"):
        raise MdError(f"{source}: line {number}: array {name} has no active/inactive state")
    active = words[0] == "active"
    rest = words[1:]
    read_only = None
    if rest and rest[0].startswith("(") and rest[0].endswith(")"):
        read_only = rest[0].strip("()")
        rest = rest[1:]
    level = None
    if active and rest and not MEMBER.match(rest[0]):
        level, rest = rest[0], rest[1:]
    members = []
    for word in rest:
        match = MEMBER.match(word)
        if not match:
            raise MdError(f"{source}: line {number}: cannot read member {word!r} of {name}")
        flags = set(re.findall(r"\(([A-Z])\)", match.group("flags")))
        members.append(MdMember(
            device=match.group("device"), role=int(match.group("role")),
            **{FLAG_NAMES[f]: True for f in flags if f in FLAG_NAMES}))
    members.sort(key=lambda m: m.role)
    return MdArray(name=name, active=active, level=level, members=members, read_only=read_only)


def _parse_array_detail(array: MdArray, line: str) -> None:
    blocks = BLOCKS.match(line)
    if blocks and array.size_kib is None:
        array.size_kib = int(blocks.group("blocks"))
        array.metadata = blocks.group("metadata")
        if blocks.group("raid_disks"):
            array.raid_disks = int(blocks.group("raid_disks"))
            array.working_disks = int(blocks.group("working_disks"))
            array.health = blocks.group("health")
        return
    sync = SYNC.search(line)
    if sync:
        array.sync = MdSync(
            action=sync.group("action"), percent=float(sync.group("percent")),
            done_kib=int(sync.group("done")), total_kib=int(sync.group("total")),
            finish_min=float(sync.group("finish")), speed_kib_s=int(sync.group("speed")))
        return
    waiting = SYNC_WAITING.search(line)
    if waiting:
        array.sync = MdSync(action=waiting.group("action"), waiting=waiting.group("state"))
        return
    bitmap = BITMAP.search(line)
    if bitmap:
        array.bitmap_pages = (int(bitmap.group("dirty")), int(bitmap.group("pages")))
        array.bitmap_chunk_kib = int(bitmap.group("chunk_kib"))
    # Other detail lines (e.g. "      \n") carry nothing the labs use.


# --- sysfs ----------------------------------------------------------------------------------

def member_states_command(array: str) -> str:
    name = md_path(array).removeprefix("/dev/")
    # grep -H prints "path:content" for every member's state file in one round trip.
    return f"grep -H . /sys/block/{name}/md/dev-*/state"


def parse_member_states(text: str) -> dict[str, frozenset[str]]:
    """`grep -H . /sys/block/mdX/md/dev-*/state` -> {member device: its state flags}."""
    states = {}
    for line in text.splitlines():
        if not line.strip():
            continue
        match = re.match(r"^/sys/block/md\d+/md/dev-(?P<device>[^/]+)/state:(?P<flags>.*)$",
                         line)
        if not match:
            raise MdError(f"member state: cannot read line {line.strip()!r}")
        states[match.group("device")] = frozenset(
            f for f in match.group("flags").strip().split(",") if f)
    return states


@dataclass(frozen=True)
class DiskStat:
    """Counters from /sys/block/<dev>/stat (sectors are 512 bytes)."""

    reads: int
    read_sectors: int
    writes: int
    write_sectors: int
    flushes: int = 0  # cache flushes the device completed (kernels from 5.5; else 0)

    def __sub__(self, earlier: DiskStat) -> DiskStat:
        return DiskStat(self.reads - earlier.reads, self.read_sectors - earlier.read_sectors,
                        self.writes - earlier.writes, self.write_sectors - earlier.write_sectors,
                        self.flushes - earlier.flushes)


def disk_stats_command(devices: Iterable[str]) -> str:
    names = [d.removeprefix("/dev/") for d in devices]
    if not names:
        raise UsageError("disk_stats_command: no devices")
    for name in names:
        if not re.match(r"^[A-Za-z0-9_.-]+$", name):
            raise UsageError(f"not a block device name: {name!r}")
    return "grep -H . " + " ".join(f"/sys/block/{name}/stat" for name in names)


def parse_disk_stats(text: str) -> dict[str, DiskStat]:
    """`grep -H . /sys/block/*/stat` -> {device: counters}."""
    stats = {}
    for line in text.splitlines():
        if not line.strip():
            continue
        match = re.match(r"^/sys/block/(?P<device>[^/]+)/stat:(?P<fields>[\d\s]+)$", line)
        if not match:
            raise MdError(f"block stat: cannot read line {line.strip()!r}")
        fields = [int(v) for v in match.group("fields").split()]
        if len(fields) < 11:
            raise MdError(f"block stat: {match.group('device')} has {len(fields)} fields, "
                          "expected at least 11")
        # Fields 1, 3, 5, 7 (1-based): read I/Os, read sectors, write I/Os, write sectors;
        # field 16, where the kernel has it: flush requests completed.
        stats[match.group("device")] = DiskStat(fields[0], fields[2], fields[4], fields[6],
                                                fields[15] if len(fields) >= 17 else 0)
    return stats


# --- `python -m labs parse mdstat FILE` -----------------------------------------------------

def mdstat_as_dict(mdstat: MdStat) -> dict[str, Any]:
    return {"personalities": mdstat.personalities,
            "arrays": {name: asdict(array) for name, array in mdstat.arrays.items()}}


def format_mdstat(mdstat: MdStat) -> str:
    """A short summary of /proc/mdstat (what `python -m labs parse mdstat FILE` prints)."""
    out = []
    for name, array in mdstat.arrays.items():
        members = " ".join(
            f"{m.device}[{m.role}]" + "".join(f"({flag})" for flag, attr in FLAG_NAMES.items()
                                              if getattr(m, attr)) for m in array.members)
        sync = ""
        if array.sync:
            sync = (f" {array.sync.action} {array.sync.percent}% at {array.sync.speed_kib_s} KiB/s"
                    if array.sync.waiting is None else f" {array.sync.action} {array.sync.waiting}")
        out.append(f"{name}: {'active' if array.active else 'inactive'} {array.level or '-'} "
                   f"[{array.health or '-'}] {members}{sync}")
    return "\n".join(out)
