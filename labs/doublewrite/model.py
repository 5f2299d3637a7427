"""What the doublewrite chapter predicts, as functions (pure: no host, no run).

Per inserted row, InnoDB makes the device write:

- `pages_per_row` pages of `page_bytes` to their home in the data files (page flushes:
  the page cleaner, LRU evictions, the final shutdown), whether doublewrite is on or not;
- with doublewrite on, a copy of a share of those pages (`doublewrite_share`) into the
  doublewrite area first. Pages initialised from scratch since they were last written (a new
  page, for instance) skip it: recovery can rebuild them from the redo log alone;
- `redo_bytes_per_row` of redo log (and, on a real device, some bytes nobody asked for:
  the file system's journal, log blocks padded to the sector size: `other_bytes_per_row`).

When the device's write bandwidth is what limits the inserts, rows per second are that
bandwidth divided by the bytes per row, so the ratio of throughputs OFF/ON is the ratio
of bytes per row ON/OFF. It stays below 2 however many pages are flushed: a page is written
at most twice, and the redo log is written once either way.
"""

from __future__ import annotations

from dataclasses import dataclass

from labs.errors import UsageError

PAGE_BYTES = 16384  # innodb_page_size's default
MIB = 2**20


@dataclass(frozen=True)
class RowWrites:
    """What one inserted row costs the device, in its parts."""

    pages_per_row: float
    doublewrite_share: float  # of page writes, the share copied to the doublewrite area
    redo_bytes_per_row: float
    other_bytes_per_row: float = 0.0
    page_bytes: int = PAGE_BYTES

    def __post_init__(self) -> None:
        if self.pages_per_row < 0 or self.redo_bytes_per_row < 0 or \
                self.other_bytes_per_row < 0:
            raise UsageError("pages and bytes per row cannot be negative")
        if not 0 <= self.doublewrite_share <= 1:
            raise UsageError(f"doublewrite share {self.doublewrite_share}: use 0..1")
        if self.page_bytes <= 0:
            raise UsageError("page size must be positive")

    def home_bytes(self) -> float:
        return self.pages_per_row * self.page_bytes

    def doublewrite_bytes(self, doublewrite: bool) -> float:
        return self.home_bytes() * self.doublewrite_share if doublewrite else 0.0

    def bytes_per_row(self, doublewrite: bool) -> float:
        """Device bytes per inserted row with the doublewrite buffer on or off."""
        return (self.home_bytes() + self.doublewrite_bytes(doublewrite)
                + self.redo_bytes_per_row + self.other_bytes_per_row)

    def bytes_ratio(self) -> float:
        """Bytes per row ON / OFF: the throughput ratio OFF/ON on a bandwidth-bound device."""
        off = self.bytes_per_row(False)
        if off <= 0:
            raise UsageError("nothing is written per row: the ratio is undefined")
        return self.bytes_per_row(True) / off

    def rows_per_second(self, limit_mib_s: float, doublewrite: bool) -> float:
        """Inserts per second when the device writes at most limit_mib_s."""
        if limit_mib_s <= 0:
            raise UsageError(f"write limit {limit_mib_s} MiB/s: must be positive")
        return limit_mib_s * MIB / self.bytes_per_row(doublewrite)


def ratio_bound() -> float:
    """The most doublewrite can cost in bytes: every page twice, and no redo at all."""
    return 2.0


def pages_for_ratio(ratio: float, doublewrite_share: float, redo_bytes_per_row: float,
                    page_bytes: int = PAGE_BYTES) -> float:
    """Page writes per row at which the bytes ratio ON/OFF reaches `ratio` (inverse model)."""
    if not 1 < ratio < 1 + doublewrite_share:
        raise UsageError(f"a ratio of {ratio} needs 1 < ratio < 1 + share "
                         f"({1 + doublewrite_share:.2f})")
    # (p P (1 + s) + r) / (p P + r) = R  =>  p P (1 + s - R) = r (R - 1)
    return redo_bytes_per_row * (ratio - 1) / (page_bytes * (1 + doublewrite_share - ratio))


def elapsed_ratio(on_s: float, off_s: float) -> float:
    """Time to insert the same rows with doublewrite ON over OFF (the article's measure)."""
    if on_s <= 0 or off_s <= 0:
        raise UsageError("elapsed times must be positive")
    return on_s / off_s


# --- PostgreSQL's full-page images, for the side-by-side comparison ------------------------

def full_page_image_bytes(extra_wal_bytes_per_tx: float, images_per_tx: float) -> float:
    """Average WAL bytes one full-page image added (PostgreSQL drops a page's free hole)."""
    if images_per_tx <= 0:
        raise UsageError("no full-page images per transaction: nothing to divide by")
    return extra_wal_bytes_per_tx / images_per_tx
