"""The torn-page legs of the power-loss lab: a disk that writes each page in two pieces.

A PostgreSQL page is 8 KiB; the disks below it promise whole 4 KiB blocks at most. A power
cut between a page's two halves leaves half of the new page beside half of the old one, a
torn page. On a real disk that takes a cut in a window of microseconds. This lab widens the
window to a second, so that a short run shows what a long life would:

    pl-plain  the first half of the first lab disk: the commit legs' folders, the torn
              legs' WAL (so commits never wait for the delay below)
    pl-fast   the second half of the first lab disk
    pl-slow   the second lab disk, every write held `delay_ms` in the guest's memory
              (dm-delay; a flush is not held)
    pl-torn   a stripe over pl-fast and pl-slow in 4 KiB chunks: each page's first half on
              the one, its second half on the other

A page written in the last second before the cut has its first half on the disk and its
second half in memory that the cut wipes. The slow leg holds writes back only while the
clients write (hold_writes): the set-up, and after the reboot the recovery, run at the
disk's own pace.
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass

from labs.infra.workspace import LabWorkspace

CHUNK_SECTORS = 8  # 4 KiB: the stripe's chunk, half a PostgreSQL page
PAGE_LEGS_OPTIONS = (
    "shared_buffers=128kB",  # 16 pages: nearly every update evicts a dirty page
    "backend_flush_after=1",  # and sends it to the disk at once, not after 30 s
    "bgwriter_lru_maxpages=0",  # no background writer, which would batch 64 pages first
    "autovacuum=off",  # no writes to the catalog or the visibility map during the run
    "recovery_init_sync_method=syncfs",  # one syncfs before recovery, not an fsync per file
)
NAMES = ("pl-plain", "pl-fast", "pl-slow", "pl-torn")


@dataclass(frozen=True)
class TearLayout:
    plain: str  # the device of the commit legs and of the torn legs' WAL
    torn: str  # the stripe the torn legs keep their data on
    second: str  # the lab disk below the slow leg
    half_sectors: int  # the size of each leg


def build(ws: LabWorkspace, first: str, second: str) -> TearLayout:
    """The four devices over the two lab disks, the slow leg not holding writes yet."""
    host = ws.host
    sizes = [int(host.run(["blockdev", "--getsz", disk], timeout_s=60).stdout)
             for disk in (first, second)]
    half = min(sizes[0] // 2, sizes[1]) // CHUNK_SECTORS * CHUNK_SECTORS
    # Safe (each of the four): a new device-mapper device over the lab's own disks, or over
    # devices this run made (make_dm's guard checks every one).
    plain = ws.make_dm("pl-plain", f"0 {half} linear {first} 0", [first])
    fast = ws.make_dm("pl-fast", f"0 {half} linear {first} {half}", [first])
    slow = ws.make_dm("pl-slow", f"0 {half} linear {second} 0", [second])
    torn = ws.make_dm("pl-torn", f"0 {2 * half} striped 2 {CHUNK_SECTORS} {fast} 0 {slow} 0",
                      [fast, slow])
    return TearLayout(plain=plain, torn=torn, second=second, half_sectors=half)


def hold_writes(ws: LabWorkspace, layout: TearLayout, delay_ms: int) -> None:
    """From now on the slow leg holds each write `delay_ms` in memory (dm-delay; its three
    classes of I/O: reads 0 ms, writes delay_ms, flushes 0 ms)."""
    second, half = layout.second, layout.half_sectors
    table = f"0 {half} delay {second} 0 0 {second} 0 {delay_ms} {second} 0 0"
    # Safe: a new table for the lab's own device-mapper device, over the lab's own disk, on
    # the same sectors.
    ws.run_guarded(f"modprobe dm_delay && dmsetup suspend pl-slow && dmsetup reload pl-slow "
                   f"--table {shlex.quote(table)} && dmsetup resume pl-slow",
                   [second, "/dev/mapper/pl-slow"], timeout_s=300)


def rebuild_after_boot(ws: LabWorkspace, first: str, second: str) -> TearLayout:
    """After the power cut the device-mapper tables are gone (they live in memory): the same
    four devices again, on the same sectors, the slow leg not holding writes."""
    for name in reversed(NAMES):
        ws.remove("dm", name)
    return build(ws, first, second)


DAMAGED = re.compile(r"invalid page in block (\d+) of relation (\S+?)[;\s]")


def damaged_pages(*texts: str) -> set[tuple[str, int]]:
    """Every (relation file, block) PostgreSQL called an invalid page in these logs or
    answers (its words: "invalid page in block 0 of relation base/5/16384")."""
    return {(relation, int(block)) for text in texts
            for block, relation in DAMAGED.findall(text + "\n")}


def expected_values(acks: list[tuple[int, float]], rows: int) -> dict[int, int]:
    """Row -> the value of its newest acknowledged update (update N sets row N × 7919 mod
    rows to N; rows never updated are left out)."""
    return {(n * 7919) % rows: n for n, _ in acks}


def lost_updates(expected: dict[int, int], found: dict[int, int]) -> int:
    """Rows whose newest acknowledged update is not there (an older value, or no row)."""
    return sum(1 for row, value in expected.items() if found.get(row, -1) < value)
