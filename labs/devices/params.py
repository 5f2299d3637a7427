"""The devices lab's parameters: which volumes to emulate, and how long to measure each."""

from __future__ import annotations

from dataclasses import dataclass

from labs.errors import UsageError
from labs.lab import LabParameters, option

# fio's block sizes and queue depths this lab accepts (KiB; requests in flight).
BLOCK_KIB_RANGE = (4, 1024)
DEPTH_RANGE = (1, 64)
SESSIONS_RANGE = (1, 16)  # MariaDB sessions at once: the VM has 2 CPUs and 1.5 GiB
# A row of the MyISAM temporary table with its three index entries, rounded up: measured in a
# lab VM, 16 bytes in the data file and about 50 in the index (1,475 key blocks of 1 KiB for
# 30,000 rows).
TABLE_BYTES_PER_ROW = 80
TABLES_MIB_MAX = 768  # of the 1 GiB data disk the tables' folder is on


def _whole_list(name: str, values: tuple[int, ...], low: int, high: int) -> None:
    if not values:
        raise UsageError(f"--{name.replace('_', '-')}: give at least one value")
    for value in values:
        if not low <= value <= high:
            raise UsageError(f"--{name.replace('_', '-')}: {value} is outside {low}..{high}")
    if len(set(values)) != len(values):
        raise UsageError(f"--{name.replace('_', '-')}: each value once")


@dataclass
class Parameters(LabParameters):
    LAB = "devices"
    PROFILES = {
        "ci": {"depths": (1, 8), "blocks_kib": (16, 1024), "fio_s": 3, "burst_s": 8,
               "sysbench_s": 5, "sysbench_mib": 128, "sessions": (1, 4), "rows": 1000},
        # Within 5 minutes on a 2-core machine without KVM (the fio sweep is most of it).
        "quick": {"depths": (1, 4, 16), "blocks_kib": (4, 16, 1024), "fio_s": 3,
                  "burst_s": 10, "sysbench_s": 6, "sysbench_mib": 256, "rows": 3000},
        "full": {},
    }

    host: str = option("vm1", "a lab VM (the lab throttles its data disks into gp3 and sc1): "
                              "vm1 or vm2; or local: this machine's own disk, through a loop "
                              "device over a file of the lab's (nothing emulated)")
    size_gib: int = option(300, "size of both emulated volumes, GiB (the article's: 300)",
                           minimum=125, maximum=16384)
    depths: tuple[int, ...] = option((1, 2, 4, 8, 16, 32, 64),
                                     "queue depths of the 16 KiB random-read sweep",
                                     minimum=DEPTH_RANGE[0], maximum=DEPTH_RANGE[1])
    blocks_kib: tuple[int, ...] = option((4, 16, 64, 256, 1024),
                                         "block sizes of the random-read sweep, KiB",
                                         minimum=BLOCK_KIB_RANGE[0], maximum=BLOCK_KIB_RANGE[1])
    fio_s: int = option(8, "seconds of each fio measurement", minimum=2, maximum=120)
    burst_s: int = option(30, "seconds an emulated sc1 bursts before its baseline (the "
                              "bucket of a 1 TiB sc1, time scaled to fit)",
                          minimum=5, maximum=600)
    sysbench_s: int = option(30, "seconds of each sysbench fileio run (the article's: 30)",
                             minimum=2, maximum=600)
    sysbench_mib: int = option(512, "sysbench fileio's file set, MiB (the article's 8 GiB, "
                                    "scaled to the VM's 1 GiB disks)", minimum=16, maximum=768)
    sessions: tuple[int, ...] = option((1, 2, 5, 10), "MariaDB sessions inserting at once "
                                       "(the article's: 10)", minimum=SESSIONS_RANGE[0],
                                       maximum=SESSIONS_RANGE[1])
    rows: int = option(30000, "rows each session inserts, one by one (the article's 10 "
                              "million, scaled to the emulated CPU)", minimum=100,
                       maximum=1_000_000)
    seed: int = option(11, "seed of fio's and sysbench's random offsets", minimum=1,
                       maximum=2**31 - 1)

    def check(self) -> None:
        if self.host != "local" and not (self.host.startswith("vm") and self.host[2:].isdigit()):
            raise UsageError(f"--host {self.host}: the devices lab throttles a lab VM's disks "
                             "through QEMU (vm1, started with `python -m labs vm up`), or "
                             "measures this machine's own disk (local)")
        _whole_list("depths", tuple(self.depths), *DEPTH_RANGE)
        _whole_list("blocks_kib", tuple(self.blocks_kib), *BLOCK_KIB_RANGE)
        _whole_list("sessions", tuple(self.sessions), *SESSIONS_RANGE)
        table_mib = max(self.sessions) * self.rows * TABLE_BYTES_PER_ROW / 2**20
        if table_mib > TABLES_MIB_MAX:
            raise UsageError(f"--rows {self.rows} in {max(self.sessions)} sessions: the "
                             f"temporary tables would take about {table_mib:,.0f} MiB, more "
                             f"than the {TABLES_MIB_MAX} MiB the VM's 1 GiB data disk can hold")
        for block in self.blocks_kib:
            if block & (block - 1):
                raise UsageError(f"--blocks-kib: {block} is not a power of two")
