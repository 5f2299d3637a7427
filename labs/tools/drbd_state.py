"""DRBD's own reports, read: which DRBD is loaded, `/proc/drbd` (8.4), `drbdadm status`.

The companion of labs/tools/drbd.py (resource files and drbdadm command lines). Parsers take
text and return dataclasses; bad input raises DrbdError with one line naming the source.
See labs/tools/drbd.py for the versions and the sources of the formats.
"""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass, field
from typing import Any

from labs.errors import UsageError
from labs.tools.drbd import DrbdError

# --- which DRBD ------------------------------------------------------------------------------

VERSION_LINE = re.compile(
    r"^version: (?P<version>\d+\.\d+\.\d+\S*)(?: \(api:(?P<api>\d+)/proto:(?P<pmin>\d+)"
    r"-(?P<pmax>\d+)\))?\s*$")


@dataclass(frozen=True)
class DrbdVersion:
    """The kernel module's version line, e.g. `version: 8.4.11 (api:1/proto:86-101)`."""

    version: str
    api: int | None = None
    protocol_min: int | None = None
    protocol_max: int | None = None
    srcversion: str | None = None

    @property
    def major(self) -> int:
        return int(self.version.split(".")[0])

    @property
    def minor(self) -> int:
        return int(self.version.split(".")[1])


def drbd_major_version(proc_text: str, source: str = "/proc/drbd") -> int:
    """8 or 9, from the text of /proc/drbd (lines before the version line are skipped)."""
    version, _at, _after = _version(proc_text.splitlines(), source)
    return version.major


def _version(lines: list[str], source: str) -> tuple[DrbdVersion, int, int]:
    """The version (and srcversion), the index of its line and of the first line after."""
    for index, line in enumerate(lines):
        match = VERSION_LINE.match(line.strip())
        if not match:
            continue
        srcversion = None
        following = index + 1
        if following < len(lines) and lines[following].startswith("srcversion:"):
            srcversion = lines[following].split(":", 1)[1].strip()
            following += 1
        # Older 8.x modules print a GIT-hash build tag line instead of srcversion.
        elif following < len(lines) and lines[following].startswith("GIT-hash:"):
            following += 1
        return DrbdVersion(match.group("version"),
                           *(int(match.group(g)) if match.group(g) else None
                             for g in ("api", "pmin", "pmax")),
                           srcversion=srcversion), index, following
    raise DrbdError(f"{source}: no 'version: X.Y.Z' line (is the drbd module loaded?)")


# --- /proc/drbd (8.4) ------------------------------------------------------------------------

MINOR_LINE = re.compile(
    r"^\s*(?P<minor>\d+): cs:(?P<cs>\S+) ro:(?P<role>\w+)/(?P<peer_role>\w+) "
    r"ds:(?P<disk>\w+)/(?P<peer_disk>\w+) (?P<protocol>[ABC ]) (?P<flags>\S{6})\s*$")
UNCONFIGURED_LINE = re.compile(r"^\s*(?P<minor>\d+): cs:Unconfigured\s*$")
COUNTER = re.compile(r"(?P<key>[a-z]+):(?P<value>\S+)")
COUNTER_KEYS = ("ns", "nr", "dw", "dr", "al", "bm", "lo", "pe", "ua", "ap", "ep", "wo", "oos")
PROGRESS = re.compile(
    r"^\s*\[[=>.]*\] (?P<kind>sync'ed|verified):\s*(?P<percent>[\d.]+)% "
    r"\((?P<left>\d+)/(?P<total>\d+)\)(?P<unit>[KM])\s*$")
FINISH = re.compile(
    r"^\s*finish: (?P<h>\d+):(?P<m>\d\d):(?P<s>\d\d) speed: (?P<speed>[\d,]+) "
    r"\((?:(?P<recent>[\d,]+) -- )?(?P<average>[\d,]+)\)(?: want: (?P<want>[\d,]+))? "
    r"K/sec(?P<stalled> \(stalled\))?\s*$")
# With the module parameter proc_details >= 1 the kernel adds these; they carry nothing the
# labs use, so they are recognised and skipped.
DETAIL_LINE = re.compile(r"^\s*(\d+% sector pos: |resync: used:|act_log: used:|\s*\d+ \S+ \S+$)")
WRITE_ORDERING = {"f": "flush", "d": "drain", "n": "none"}


@dataclass(frozen=True)
class DrbdSync:
    """A resync or online-verify progress block.

    The kernel's percentage has coarse steps for small resyncs (it divides bitmap counts
    shifted right by 10 bits): a 4000 KiB resync reads 100.0% from its start. Use
    `done_fraction`, computed from the KiB counts.
    """

    kind: str  # "sync'ed" (resync) or "verified" (online verify)
    percent: float  # as the kernel printed it
    remaining_kib: int
    total_kib: int
    finish_s: int  # the kernel's estimate
    speed_kib_s: int  # over the last few seconds
    average_kib_s: int  # since the sync started
    want_kib_s: int | None = None  # the resync controller's target; SyncTarget side only
    stalled: bool = False

    @property
    def done_kib(self) -> int:
        return self.total_kib - self.remaining_kib

    @property
    def done_fraction(self) -> float:
        return self.done_kib / self.total_kib if self.total_kib else 1.0


@dataclass(frozen=True)
class DrbdMinor:
    """One minor's lines in /proc/drbd. KiB counters are since the module loaded."""

    minor: int
    connection: str  # cs: Connected, WFConnection, StandAlone, SyncSource, ...
    role: str | None = None  # ro: Primary, Secondary (None when Unconfigured)
    peer_role: str | None = None  # Unknown when not connected
    disk: str | None = None  # ds: UpToDate, Inconsistent, Diskless, Outdated, ...
    peer_disk: str | None = None  # DUnknown when not connected
    protocol: str | None = None  # A, B or C; None when no network config (StandAlone)
    io_flags: str = ""  # six characters, e.g. "r-----"
    sent_kib: int = 0  # ns: network send
    received_kib: int = 0  # nr: network receive
    disk_write_kib: int = 0  # dw
    disk_read_kib: int = 0  # dr
    activity_log_writes: int = 0  # al: metadata updates of the activity log
    bitmap_writes: int = 0  # bm
    local_pending: int = 0  # lo: requests open to the local disk
    peer_pending: int = 0  # pe: requests sent to the peer, not yet answered
    unacked: int = 0  # ua: requests received from the peer, not yet acknowledged
    application_pending: int = 0  # ap: block I/O from above not yet completed
    epochs: int = 0  # ep
    write_ordering: str | None = None  # wo: flush, drain or none
    out_of_sync_kib: int = 0  # oos
    sync: DrbdSync | None = None

    @property
    def suspended(self) -> bool:
        return self.io_flags[:1] == "s"

    @property
    def unconfigured(self) -> bool:
        return self.connection == "Unconfigured"

    @property
    def connected(self) -> bool:
        """Replicating: Connected or any resync/verify state (which also carry new writes)."""
        return self.connection in ("Connected", "SyncSource", "SyncTarget", "VerifyS",
                                   "VerifyT", "PausedSyncS", "PausedSyncT")

    @property
    def up_to_date(self) -> bool:
        return self.disk == "UpToDate" and self.peer_disk == "UpToDate"


@dataclass
class ProcDrbd:
    version: DrbdVersion
    minors: dict[int, DrbdMinor] = field(default_factory=dict)
    skipped_before: list[str] = field(default_factory=list)  # lines before `version:`

    def minor(self, number: int) -> DrbdMinor:
        if number not in self.minors:
            raise DrbdError(f"/proc/drbd: no minor {number} "
                            f"(minors: {', '.join(map(str, self.minors)) or 'none'})")
        return self.minors[number]


def _int(text: str) -> int:
    return int(text.replace(",", ""))


def parse_proc_drbd(text: str, source: str = "/proc/drbd") -> ProcDrbd:
    """Parse /proc/drbd of a DRBD 8.4 module. Lines before the version line (e.g. what
    `drbdadm -v` printed in the same capture) are kept in `skipped_before`."""
    lines = text.splitlines()
    version, at, start = _version(lines, source)
    parsed = ProcDrbd(version=version, skipped_before=[line for line in lines[:at] if line.strip()])
    reader = _MinorReader(parsed, source)
    for number, line in enumerate(lines[start:], start=start + 1):
        if line.strip():
            reader.read(number, line)
    reader.finish_minor()
    return parsed


@dataclass
class _MinorReader:
    """Reads /proc/drbd's lines after the version, one minor at a time, into `parsed`."""

    parsed: ProcDrbd
    source: str
    pending: dict[str, Any] | None = None  # the minor being read
    sync: dict[str, Any] | None = None

    def finish_minor(self) -> None:
        if self.pending is None:
            return
        if self.sync is not None:
            if "finish_s" not in self.sync:
                raise DrbdError(f"{self.source}: minor {self.pending['minor']}: progress line "
                                "without its 'finish: ... speed: ...' line")
            self.pending["sync"] = DrbdSync(**self.sync)
        self.parsed.minors[self.pending["minor"]] = DrbdMinor(**self.pending)
        self.pending, self.sync = None, None

    def read(self, number: int, line: str) -> None:
        header = MINOR_LINE.match(line)
        if header:
            self.finish_minor()
            if self.parsed.version.major != 8:
                raise DrbdError(f"{self.source}: per-minor lines under DRBD "
                                f"{self.parsed.version.version}")
            self.pending = _minor_fields(header)
            return
        unconfigured = UNCONFIGURED_LINE.match(line)
        if unconfigured:
            self.finish_minor()
            self.pending = {"minor": int(unconfigured.group("minor")),
                            "connection": "Unconfigured"}
            return
        if self.pending is None:
            raise DrbdError(f"{self.source}: line {number} is not part of a minor: "
                            f"{line.strip()!r}")
        self._read_minor_line(number, line)

    def _read_minor_line(self, number: int, line: str) -> None:
        """A line inside a minor: its counters, a sync's progress and finish, or details."""
        stripped = line.strip()
        if stripped.startswith("ns:"):
            _read_counters(self.pending, stripped, self.source, number)
            return
        progress = PROGRESS.match(line)
        if progress:
            self.sync = _sync_progress_fields(progress)
            return
        finish = FINISH.match(line)
        if finish:
            if self.sync is None:
                raise DrbdError(f"{self.source}: line {number}: 'finish:' without a progress line")
            self.sync.update(_sync_finish_fields(finish))
            return
        if DETAIL_LINE.match(line):
            return
        raise DrbdError(f"{self.source}: line {number}: cannot read {stripped!r}")


def _minor_fields(header: re.Match[str]) -> dict[str, Any]:
    return {"minor": int(header.group("minor")), "connection": header.group("cs"),
            "role": header.group("role"), "peer_role": header.group("peer_role"),
            "disk": header.group("disk"), "peer_disk": header.group("peer_disk"),
            "protocol": header.group("protocol").strip() or None, "io_flags": header.group("flags")}


def _sync_progress_fields(progress: re.Match[str]) -> dict[str, Any]:
    scale = 1024 if progress.group("unit") == "M" else 1
    return {"kind": progress.group("kind"), "percent": float(progress.group("percent")),
            "remaining_kib": int(progress.group("left")) * scale,
            "total_kib": int(progress.group("total")) * scale}


def _sync_finish_fields(finish: re.Match[str]) -> dict[str, Any]:
    return {"finish_s": int(finish.group("h")) * 3600 + int(finish.group("m")) * 60
            + int(finish.group("s")),
            "speed_kib_s": _int(finish.group("speed")),
            "average_kib_s": _int(finish.group("average")),
            "want_kib_s": _int(finish.group("want")) if finish.group("want") else None,
            "stalled": finish.group("stalled") is not None}


def _read_counters(pending: dict[str, Any], line: str, source: str, number: int) -> None:
    values = {m.group("key"): m.group("value") for m in COUNTER.finditer(line)}
    missing = [key for key in COUNTER_KEYS if key not in values]
    if missing:
        raise DrbdError(f"{source}: line {number}: counters {', '.join(missing)} missing")
    try:
        pending.update(
            sent_kib=int(values["ns"]), received_kib=int(values["nr"]),
            disk_write_kib=int(values["dw"]), disk_read_kib=int(values["dr"]),
            activity_log_writes=int(values["al"]), bitmap_writes=int(values["bm"]),
            local_pending=int(values["lo"]), peer_pending=int(values["pe"]),
            unacked=int(values["ua"]), application_pending=int(values["ap"]),
            epochs=int(values["ep"]),
            write_ordering=WRITE_ORDERING.get(values["wo"], values["wo"]),
            out_of_sync_kib=int(values["oos"]))
    except ValueError:
        raise DrbdError(f"{source}: line {number}: a counter is not a number: {line!r}") from None


# --- drbdadm status --------------------------------------------------------------------------

@dataclass
class StatusDevice:
    """A volume's own state: `disk:UpToDate` (and with --verbose, volume, minor, counters)."""

    fields: dict[str, str] = field(default_factory=dict)

    @property
    def disk(self) -> str | None:
        return self.fields.get("disk")

    @property
    def volume(self) -> int:
        return int(self.fields.get("volume", 0))


@dataclass
class StatusPeerDevice:
    """A volume as seen over one connection: `replication:... peer-disk:... [done:N]`."""

    fields: dict[str, str] = field(default_factory=dict)

    @property
    def replication(self) -> str | None:
        return self.fields.get("replication")

    @property
    def peer_disk(self) -> str | None:
        return self.fields.get("peer-disk")

    @property
    def done_percent(self) -> float | None:
        done = self.fields.get("done")
        return None if done is None else float(done.rstrip("%"))

    @property
    def out_of_sync_kib(self) -> int | None:
        value = self.fields.get("out-of-sync")
        return None if value is None else int(value)


@dataclass
class StatusConnection:
    """A peer: 8.4's drbd-utils calls it `peer`; DRBD 9 names it by host name."""

    name: str
    fields: dict[str, str] = field(default_factory=dict)
    peer_devices: list[StatusPeerDevice] = field(default_factory=list)

    @property
    def role(self) -> str | None:
        return self.fields.get("role")

    @property
    def connection(self) -> str:
        # drbd-utils leaves out `connection:` when the connection is up.
        return self.fields.get("connection", "Connected")


@dataclass
class StatusResource:
    name: str
    fields: dict[str, str] = field(default_factory=dict)
    devices: list[StatusDevice] = field(default_factory=list)
    connections: list[StatusConnection] = field(default_factory=list)

    @property
    def role(self) -> str | None:
        return self.fields.get("role")

    @property
    def disk(self) -> str | None:
        return self.devices[0].disk if self.devices else None

    def peer(self, name: str | None = None) -> StatusConnection:
        for connection in self.connections:
            if name is None or connection.name == name:
                return connection
        raise DrbdError(f"drbdadm status: resource {self.name} has no "
                        f"{'peer' if name is None else f'peer {name!r}'}")


@dataclass
class DrbdStatus:
    resources: dict[str, StatusResource] = field(default_factory=dict)
    skipped_before: list[str] = field(default_factory=list)  # echoed commands (drbdadm -v)

    def resource(self, name: str) -> StatusResource:
        if name not in self.resources:
            raise DrbdError(f"drbdadm status: no resource {name} "
                            f"(resources: {', '.join(self.resources) or 'none'})")
        return self.resources[name]


PEER_DEVICE_START = ("replication", "peer-disk", "volume")
# `drbdadm -v status` first echoes the command it runs (`drbdsetup-84 status r0`).
ECHOED_COMMAND = re.compile(r"^(drbdsetup|drbdadm|drbdmeta)(-\d+)?\s")
DEVICE_START = ("disk", "volume")


def parse_drbdadm_status(text: str, source: str = "drbdadm status") -> DrbdStatus:
    """Parse `drbdadm status` (or `drbdsetup status --verbose --statistics`) text.

    The shape: a resource line at column 0 (`r0 role:Primary`), indented device lines
    (`disk:UpToDate`), then per peer a line that starts with the peer's name and, indented
    below it, its peer-device lines (`replication:Established peer-disk:UpToDate`). Deeper
    lines continue the entry above them (the --verbose and --statistics counters).
    """
    status = DrbdStatus()
    resource: StatusResource | None = None
    device: StatusDevice | None = None
    connection: StatusConnection | None = None
    peer_device: StatusPeerDevice | None = None
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        words = line.split()
        indent = len(line) - len(line.lstrip(" "))
        first = words[0]
        if indent == 0:
            if resource is None and ECHOED_COMMAND.match(line):
                status.skipped_before.append(line)
                continue
            if ":" in first or not all(":" in word for word in words[1:]) or not any(
                    word.startswith("role:") for word in words[1:]):
                raise DrbdError(f"{source}: line {number} is not a resource line "
                                f"('NAME role:...'): {line.strip()[:60]!r}")
            resource = StatusResource(first, _fields(words[1:], source, number))
            status.resources[first] = resource
            device, connection, peer_device = None, None, None
            continue
        if resource is None:
            raise DrbdError(f"{source}: line {number} is indented before any resource line")
        if ":" not in first:
            connection = StatusConnection(first, _fields(words[1:], source, number))
            resource.connections.append(connection)
            peer_device = None
            continue
        fields = _fields(words, source, number)
        key = first.split(":", 1)[0]
        if connection is not None:
            if peer_device is None or (key in PEER_DEVICE_START and key in peer_device.fields):
                peer_device = StatusPeerDevice(fields)
                connection.peer_devices.append(peer_device)
            else:
                peer_device.fields.update(fields)
        elif key in DEVICE_START and (device is None or key in device.fields):
            device = StatusDevice(fields)
            resource.devices.append(device)
        elif device is not None:
            device.fields.update(fields)
        else:
            resource.fields.update(fields)  # e.g. `write-ordering:flush` under --verbose
    return status


def _fields(words: list[str], source: str, number: int) -> dict[str, str]:
    fields = {}
    for word in words:
        key, colon, value = word.partition(":")
        if not colon or not key:
            raise DrbdError(f"{source}: line {number}: {word!r} is not key:value")
        fields[key] = value
    return fields


# --- either, as JSON -------------------------------------------------------------------------

def parse_drbd(text: str, source: str = "drbd output") -> ProcDrbd | DrbdStatus:
    """/proc/drbd if the text has a `version:` line, else `drbdadm status` output."""
    if any(VERSION_LINE.match(line.strip()) for line in text.splitlines()):
        return parse_proc_drbd(text, source)
    if not text.strip():
        raise DrbdError(f"{source}: empty (neither /proc/drbd nor `drbdadm status` output)")
    return parse_drbdadm_status(text, source)


def as_json(parsed: ProcDrbd | DrbdStatus) -> dict[str, Any]:
    """A JSON-able dict (derived values such as done_kib included) for `labs parse drbd`."""
    if isinstance(parsed, ProcDrbd):
        minors = {}
        for number, minor in parsed.minors.items():
            entry = asdict(minor)
            entry.update(suspended=minor.suspended, connected=minor.connected,
                         up_to_date=minor.up_to_date)
            if minor.sync is not None:
                entry["sync"].update(done_kib=minor.sync.done_kib,
                                     done_fraction=round(minor.sync.done_fraction, 6))
            minors[str(number)] = entry
        return {"kind": "proc_drbd", "version": asdict(parsed.version),
                "major": parsed.version.major, "minors": minors}
    if isinstance(parsed, DrbdStatus):
        return {"kind": "drbdadm_status", "resources": {
            name: {"fields": resource.fields,
                   "devices": [d.fields for d in resource.devices],
                   "connections": [{"name": c.name, "fields": c.fields,
                                    "peer_devices": [p.fields for p in c.peer_devices]}
                                   for c in resource.connections]}
            for name, resource in parsed.resources.items()}}
    raise UsageError(f"as_json: cannot convert {type(parsed).__name__}")
