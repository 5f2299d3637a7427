"""What the caches lab does on the lab host itself: its device, its files, its probe.

Everything here acts on what the lab made: the loop device of its file system (readahead,
counters) and files below its mount point (page-cache eviction, residency). Eviction is
posix_fadvise(DONTNEED) on those files only (probe.py), never the machine's whole cache.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from labs.errors import LabError
from labs.infra.hosts import printed_json
from labs.infra.journal import is_inside
from labs.infra.workspace import LabWorkspace, LoopFilesystem
from labs.records import RunRecorder
from labs.tools import fincore
from labs.tools.mdadm import DiskStat, disk_stats_command, parse_disk_stats

PROBE_SOURCE = Path(__file__).with_name("probe.py")


@dataclass
class LabDisk:
    """The lab's loop device and file system, and the probe copied next to them."""

    ws: LabWorkspace
    fs: LoopFilesystem
    rec: RunRecorder
    probe: str = ""
    token: str = field(default_factory=lambda: uuid.uuid4().hex[:6])  # container names
    default_readahead_sectors: int = 0  # the device's own, read when the lab starts

    @property
    def device_name(self) -> str:
        return self.fs.device.removeprefix("/dev/")

    readahead_now: int = -1

    def install_probe(self) -> None:
        self.probe = f"{self.ws.work_dir}/probe.py"
        self.ws.host.put_as_root(PROBE_SOURCE, self.probe)

    def counters(self) -> DiskStat:
        text = self.ws.host.run(disk_stats_command([self.fs.device]), timeout_s=60).stdout
        return parse_disk_stats(text)[self.device_name]

    def readahead_sectors(self) -> int:
        return int(self.ws.host.sudo(["blockdev", "--getra", self.fs.device],
                                     timeout_s=60).stdout.strip())

    def set_readahead_sectors(self, sectors: int) -> None:
        if self.readahead_now == sectors:
            return
        self.readahead_now = sectors
        command = ["blockdev", "--setra", str(int(sectors)), self.fs.device]
        # Safe: run_guarded refuses any device but the lab's own loop device (and the
        # workspace records the command in run.json).
        self.ws.run_guarded(command, [self.fs.device], timeout_s=60)

    def logical_block_bytes(self) -> int:
        path = f"/sys/block/{self.device_name}/queue/logical_block_size"
        return int(self.ws.host.run(["cat", path], timeout_s=60).stdout.strip())

    def _own(self, paths: list[str]) -> list[str]:
        for path in paths:
            if not is_inside(path, self.fs.mount_point):
                raise LabError(f"refusing to touch {path}: not on the lab's own file system")
        return paths

    def probe_json(self, *args: str, timeout_s: float = 1800) -> dict[str, Any]:
        command = ["python3", self.probe, *args]
        return printed_json(self.ws.host.sudo(command, timeout_s=timeout_s).stdout)

    def set_read_limits(self, container, read_iops: int, read_bps: int) -> None:
        """Throttle (0, 0: free) a container's reads from the lab's own device."""
        from labs.infra.containers import set_device_read_limits

        self.ws.check_device(self.fs.device)
        path = set_device_read_limits(self.ws.host, container, self.fs.device, read_iops,
                                      read_bps)
        self.rec.add_command(f"[{self.ws.host.name}] limit {container.name}'s reads of "
                             f"{self.fs.device}: {read_iops}/s, {read_bps} B/s ({path})")

    def evict(self, *paths: str) -> None:
        """Drop the page cache of these files (folders: every file below) and nothing else."""
        self.probe_json("evict", *self._own(list(paths)))

    def resident(self, folder: str) -> dict[str, fincore.FileResidency]:
        """Page-cache residency of every file below `folder` (fincore)."""
        self._own([folder])
        names = self.ws.host.sudo(["find", folder, "-type", "f"], timeout_s=120).stdout.split()
        if not names:
            return {}
        text = self.ws.host.sudo(fincore.command(names), timeout_s=120).stdout
        return fincore.parse(text)

    def file_sizes(self, folder: str) -> dict[str, int]:
        self._own([folder])
        out = self.ws.host.sudo(["find", folder, "-type", "f", "-printf", "%s %p\\n"],
                                timeout_s=120).stdout
        sizes = {}
        for line in out.splitlines():
            size, _, name = line.partition(" ")
            sizes[name] = int(size)
        return sizes

    def make_folder(self, path: str, mode: str = "777") -> str:
        self._own([path])
        self.ws.host.sudo(["mkdir", "-p", path], timeout_s=60)
        self.ws.host.sudo(["chmod", mode, path], timeout_s=60)
        return path
