"""The disk both fault-counting labs cut (write-path, commit-settings): in a lab VM, two
slices of the first lab disk (dm-linear), a dm-log-writes device over the first that logs
every write on the second lab disk, and the second slice, where the disk is rebuilt from
the log as a fault would leave it. The probe (probe.py) runs beside it in the VM.

    disk = LoggedDisk(ws, prefix="wp", slice_sectors=131072)
    disk.set_up()                                   # the probe and the two slices
    mounted = disk.new_file_system("written")      # a fresh ext4 through the log, mounted
    ... the trial; the probe marks the log ("cut", then "crash") ...
    disk.close_log(mounted)                         # unmounted; the log written out
    rebuilt, tally = disk.rebuilt("cut")           # the disk up to the mark, mounted
    ws.remove("mount", rebuilt)
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from labs.infra.hosts import CommandResult, printed_json
from labs.infra.workspace import LabWorkspace

PROBE_SOURCE = Path(__file__).with_name("probe.py")
LAB_DISKS = ("/dev/vdb", "/dev/vdc")  # a lab VM's two lab disks: the slices, the log
# No discards (the log would need them replayed as zeroes) and no lazy initialisation (a
# kernel thread would go on writing the inode tables during the trial).
MKFS = ["mkfs.ext4", "-q", "-F", "-b", "4096", "-E",
        "nodiscard,lazy_itable_init=0,lazy_journal_init=0"]


class LoggedDisk:
    """The slices, the logging device and the probe of one lab run (names `<prefix>-data`,
    `<prefix>-replay`, `<prefix>-logged`), each journaled in the workspace."""

    def __init__(self, ws: LabWorkspace, prefix: str, slice_sectors: int) -> None:
        self.ws = ws
        self.slice_sectors = slice_sectors
        self.data_name, self.replay_name = f"{prefix}-data", f"{prefix}-replay"
        self.logged_name = f"{prefix}-logged"
        self.probe = f"{ws.work_dir}/probe.py"
        self.data = self.replay = ""

    @property
    def logged(self) -> str:
        return f"/dev/mapper/{self.logged_name}"

    def sudo(self, command: str | list[str], devices: list[str] | None = None,
             timeout_s: float = 600, check: bool = True) -> CommandResult:
        """Run as root in the VM (the workspace's host records it), guarded when it changes
        `devices`."""
        if devices is not None:
            return self.ws.run_guarded(command, devices, timeout_s=timeout_s, check=check)
        return self.ws.host.sudo(command, timeout_s=timeout_s, check=check)

    def probe_json(self, *args: str, devices: list[str] | None = None) -> dict[str, Any]:
        return printed_json(self.sudo(["python3", self.probe, *args], devices).stdout)

    def set_up(self) -> None:
        self.ws.prepare()
        self.ws.host.put_as_root(PROBE_SOURCE, self.probe)
        first, size = LAB_DISKS[0], self.slice_sectors
        self.data = self.ws.make_dm(self.data_name, f"0 {size} linear {first} 0", [first])
        self.replay = self.ws.make_dm(self.replay_name, f"0 {size} linear {first} {size}",
                                      [first])

    def new_file_system(self, mount_name: str, options: str = "") -> str:
        """A logging device over the data slice, a fresh ext4 made through it (so the log
        holds every write a rebuilt disk needs), mounted; returns the mount point."""
        log_disk = LAB_DISKS[1]
        self.ws.make_dm(self.logged_name,
                        f"0 {self.slice_sectors} log-writes {self.data} {log_disk}",
                        [self.data, log_disk], modules=["dm_log_writes"])
        # Safe: the device is the lab's own logging device, made just above.
        self.sudo([*MKFS, self.logged], [self.logged])
        return self.ws.mount(self.logged, mount_name, options)

    def close_log(self, mounted: str) -> None:
        self.ws.remove("mount", mounted)
        # Removing the logging device writes the rest of its log and the final entry count.
        self.ws.remove("dm", self.logged_name)

    def rebuilt(self, mark: str, mount_name: str = "replayed") -> tuple[str, dict[str, Any]]:
        """The disk rebuilt from the log up to `mark` on the replay slice and mounted (ext4
        replays its journal): (the mount point, the replay's tally)."""
        # Safe: the replay slice is the lab's own dm device; zeroed so nothing of an earlier
        # replay can be read back as this one's.
        self.sudo(["dd", "if=/dev/zero", f"of={self.replay}", "bs=1M",
                   f"count={self.slice_sectors // 2048}", "oflag=direct", "status=none"],
                  [self.replay])
        tally = self.probe_json("replay", LAB_DISKS[1], self.replay, "--mark", mark,
                                devices=[self.replay])
        return self.ws.mount(self.replay, mount_name), tally
