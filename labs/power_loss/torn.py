"""The torn-page legs of the power-loss lab: a disk that writes each page in two pieces.

A PostgreSQL page is 8 KiB and an InnoDB page 16 KiB; the disks below them promise whole
4 KiB blocks at most. A power cut in the middle of a page's write leaves pieces of the new
page beside pieces of the old one, a torn page. On a real disk that takes a cut in a window
of microseconds. This lab widens the window to a second, so that a short run shows what a
long life would:

    pl-plain  the first two thirds of the first lab disk: the commit legs' folders, the torn
              legs' logs (PostgreSQL's WAL; InnoDB's redo log and its system tablespace,
              which holds the doublewrite area), so that commits never wait for the delay
    pl-fast   the last third of the first lab disk
    pl-slow   as much of the second lab disk, every write held `delay_ms` in the guest's memory
              (dm-delay; a flush is not held)
    pl-torn   a stripe over pl-fast and pl-slow in 4 KiB chunks: an 8 KiB page's first
              half on the one, its second half on the other; a 16 KiB page's four pieces
              on the two in turn

A page written in the last second before the cut has its pieces on pl-fast on the disk and
those on pl-slow in memory that the cut wipes. The slow leg holds writes back only while
the clients write (hold_writes): the set-up, and after the reboot the recovery, run at the
disk's own pace.
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass

from labs.infra.workspace import LabWorkspace

CHUNK_SECTORS = 8  # 4 KiB: the stripe's chunk, half a PostgreSQL page
PAGE_LEGS_OPTIONS = {
    "postgres": (
        "shared_buffers=128kB",  # 16 pages: nearly every update evicts a dirty page
        "backend_flush_after=1",  # and sends it to the disk at once, not after 30 s
        "bgwriter_lru_maxpages=0",  # no background writer, which would batch 64 pages first
        "autovacuum=off",  # no writes to the catalog or the visibility map during the run
        "recovery_init_sync_method=syncfs",  # one syncfs before recovery, not an fsync per file
    ),
    "mariadb": (
        # 384 pages, InnoDB's least, for a table of 1,000: most updates evict a dirty page.
        "innodb_buffer_pool_size=6M",
        "innodb_flush_neighbors=0",  # write the pages it must, not their neighbours too
        # The doublewrite buffer is skipped on devices that promise atomic writes; these do
        # not, but the lab does not leave that to the device.
        "innodb_use_atomic_writes=OFF",
        "innodb_stats_auto_recalc=OFF",  # no writes to the statistics tables during the run
        # The page cleaner writes each dirty page within about a second, as a busy server's
        # must: by default the table's pages would wait in the buffer pool the whole run.
        "innodb_max_dirty_pages_pct=0",
    ),
}
NAMES = ("pl-plain", "pl-fast", "pl-slow", "pl-torn")


@dataclass(frozen=True)
class TearLayout:
    plain: str  # the device of the commit legs and of the torn legs' WAL
    torn: str  # the stripe the torn legs keep their data on
    second: str  # the lab disk below the slow leg
    half_sectors: int  # the size of each of the stripe's two legs


def build(ws: LabWorkspace, first: str, second: str) -> TearLayout:
    """The four devices over the two lab disks, the slow leg not holding writes yet."""
    host = ws.host
    sizes = [int(host.sudo(["blockdev", "--getsz", disk], timeout_s=60).stdout)
             for disk in (first, second)]
    # The plain device gets the larger share: it holds eight servers' logs, the stripe
    # only the torn legs' tables (tens of MiB).
    half = min(sizes[0] // 3, sizes[1]) // CHUNK_SECTORS * CHUNK_SECTORS
    rest = sizes[0] - half
    # Safe (each of the four): a new device-mapper device over the lab's own disks, or over
    # devices this run made (make_dm's guard checks every one).
    plain = ws.make_dm("pl-plain", f"0 {rest} linear {first} 0", [first])
    fast = ws.make_dm("pl-fast", f"0 {half} linear {first} {rest}", [first])
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
