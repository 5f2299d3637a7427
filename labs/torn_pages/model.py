"""The first-touch model of full-page writes (pure, no I/O).

After a checkpoint, the first change to each page writes the whole page into the WAL (a
full-page image). If a workload changes pages at random, uniformly over N pages, and each
transaction changes k of them, a page is still untouched after n transactions with
probability (1 - 1/N)^(k n), about exp(-k n / N). So the n-th transaction carries, on
average, k exp(-k n / N) images: about k right after the checkpoint, falling towards 0 with
a time constant of N / (k * TPS) seconds. A workload can change several such pools of pages
(a table's heap and its index, each with its own N and k); the images add up.

From that: WAL bytes per transaction (the bytes without images, plus the images), the ratio
of WAL with full-page writes on and off over a leg that starts at a checkpoint, the WAL
bytes per second, and the throughput a write-limited disk allows when every byte written
(WAL, its partly filled pages flushed at commit, and the checkpointer's write-back of the
changed pages) has to pass through the same limit.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass

import numpy as np

PAGE_BYTES = 8192
# checkpoint_completion_target's default: a timed checkpoint spreads its writes over this
# share of the interval.
COMPLETION_TARGET = 0.9


@dataclass(frozen=True)
class PagePool:
    """Pages a workload changes at random: how many there are, and how many per transaction."""

    pages: float
    changes_per_tx: float

    def __post_init__(self) -> None:
        if self.pages <= 0 or self.changes_per_tx < 0:
            raise ValueError(f"a page pool needs pages > 0 and changes >= 0, got {self}")


def _pools(pools: PagePool | Iterable[PagePool]) -> list[PagePool]:
    return [pools] if isinstance(pools, PagePool) else list(pools)


def images_per_tx_at(pools: PagePool | Iterable[PagePool], tx_since_checkpoint):
    """Expected images carried by the transaction that many transactions after a checkpoint."""
    n = np.asarray(tx_since_checkpoint, dtype=float)
    return sum(p.changes_per_tx * np.exp(-p.changes_per_tx * n / p.pages) for p in _pools(pools))


def images_between(pools: PagePool | Iterable[PagePool], tx_from, tx_to):
    """Expected images in total for the transactions from tx_from to tx_to after a checkpoint
    (the number of distinct pages first changed in that stretch)."""
    start = np.asarray(tx_from, dtype=float)
    end = np.asarray(tx_to, dtype=float)
    return sum(p.pages * (np.exp(-p.changes_per_tx * start / p.pages)
                          - np.exp(-p.changes_per_tx * end / p.pages)) for p in _pools(pools))


def images_per_tx_between(pools: PagePool | Iterable[PagePool], tx_from, tx_to):
    """Average images per transaction over the transactions tx_from..tx_to after a checkpoint."""
    start = np.asarray(tx_from, dtype=float)
    end = np.asarray(tx_to, dtype=float)
    span = end - start
    safe = np.where(span > 0, span, 1.0)
    return np.where(span > 0, images_between(pools, start, end) / safe,
                    images_per_tx_at(pools, start))


def touched_pages(pools: PagePool | Iterable[PagePool], transactions: float) -> float:
    """Distinct pages changed by that many transactions (each gets one image)."""
    return float(images_between(pools, 0.0, transactions))


def leg_images_per_tx(pools: PagePool | Iterable[PagePool], tps: float,
                      checkpoint_interval_s: float, duration_s: float) -> float:
    """Average images per transaction over a leg that starts at a checkpoint, with a new
    checkpoint every checkpoint_interval_s (each starts the count again)."""
    if tps <= 0 or duration_s <= 0:
        return 0.0
    full_cycles = math.floor(duration_s / checkpoint_interval_s)
    rest_s = duration_s - full_cycles * checkpoint_interval_s
    images = (full_cycles * touched_pages(pools, tps * checkpoint_interval_s)
              + touched_pages(pools, tps * rest_s))
    return images / (tps * duration_s)


def wal_bytes_per_tx(bytes_without_images: float, image_bytes: float,
                     images_per_tx: float) -> float:
    """WAL per transaction: the change records, plus the images it carries."""
    return bytes_without_images + image_bytes * images_per_tx


def wal_on_over_off(pools: PagePool | Iterable[PagePool], tps: float,
                    checkpoint_interval_s: float, duration_s: float,
                    bytes_without_images: float, image_bytes: float) -> float:
    """WAL per transaction with full_page_writes on, over the same leg with it off."""
    images = leg_images_per_tx(pools, tps, checkpoint_interval_s, duration_s)
    return wal_bytes_per_tx(bytes_without_images, image_bytes, images) / bytes_without_images


def wal_bytes_per_second(pools: PagePool | Iterable[PagePool], tps: float,
                         seconds_since_checkpoint, bytes_without_images: float,
                         image_bytes: float):
    """WAL written per second at a time after a checkpoint, at a steady TPS."""
    images = images_per_tx_at(pools, tps * np.asarray(seconds_since_checkpoint, dtype=float))
    return tps * (bytes_without_images + image_bytes * images)


def writeback_pages_in_leg(pools: PagePool | Iterable[PagePool], tps: float,
                           checkpoint_interval_s: float, duration_s: float) -> float:
    """Pages the checkpointer writes back during a leg that starts at a checkpoint.

    The checkpoint that starts at the end of each interval writes the pages first changed
    in that interval, spread over COMPLETION_TARGET of the next interval; what falls after
    the leg's end is not counted.
    """
    pages = 0.0
    start_s = checkpoint_interval_s
    while start_s < duration_s:
        changed = touched_pages(pools, tps * checkpoint_interval_s)
        spread_s = COMPLETION_TARGET * checkpoint_interval_s
        pages += changed * min(1.0, (duration_s - start_s) / spread_s)
        start_s += checkpoint_interval_s
    return pages


def device_bytes_per_tx(pools: PagePool | Iterable[PagePool], tps: float, *, fpw_on: bool,
                        checkpoint_interval_s: float, duration_s: float,
                        bytes_without_images: float, image_bytes: float,
                        wal_flushes_per_tx: float, wal_copies: float = 1.0) -> float:
    """Bytes the disk takes per transaction: WAL records and images (wal_copies times: 2 when
    every WAL segment is new and first filled with zeros), the partly filled WAL page written
    again at every flush, and the checkpointer's write-back of changed pages."""
    images = leg_images_per_tx(pools, tps, checkpoint_interval_s, duration_s) if fpw_on else 0
    wal = wal_bytes_per_tx(bytes_without_images, image_bytes, images)
    writeback = writeback_pages_in_leg(pools, tps, checkpoint_interval_s, duration_s)
    return (wal_copies * wal + PAGE_BYTES * wal_flushes_per_tx
            + PAGE_BYTES * writeback / (tps * duration_s))


def write_limited_tps(limit_bytes_per_s: float, pools: PagePool | Iterable[PagePool], *,
                      fpw_on: bool, checkpoint_interval_s: float, duration_s: float,
                      bytes_without_images: float, image_bytes: float,
                      wal_flushes_per_tx: float, wal_copies: float = 1.0) -> float:
    """The TPS at which the bytes written per second equal the disk's write limit.

    The bytes per transaction depend on the TPS (a faster workload reaches its pages
    sooner, so fewer of its transactions carry images), so solve TPS * bytes(TPS) = limit;
    the left side grows with TPS, so bisection finds the one answer.
    """
    def written_per_s(tps: float) -> float:
        return tps * device_bytes_per_tx(
            pools, tps, fpw_on=fpw_on, checkpoint_interval_s=checkpoint_interval_s,
            duration_s=duration_s, bytes_without_images=bytes_without_images,
            image_bytes=image_bytes, wal_flushes_per_tx=wal_flushes_per_tx,
            wal_copies=wal_copies)

    low, high = 0.0, limit_bytes_per_s / max(bytes_without_images, 1.0)
    for _ in range(80):
        middle = (low + high) / 2
        if written_per_s(middle) > limit_bytes_per_s:
            high = middle
        else:
            low = middle
    return (low + high) / 2


def burst_seconds(pools: PagePool | Iterable[PagePool], tps: float,
                  share_left: float = 0.1) -> float:
    """Seconds after a checkpoint until the images per transaction fall to share_left of
    their value right after it (about N / (k TPS) * ln(1 / share_left) for one pool)."""
    pools = _pools(pools)
    start = float(images_per_tx_at(pools, 0.0))
    if start == 0 or tps <= 0:
        return 0.0
    low, high = 0.0, 1.0
    while float(images_per_tx_at(pools, tps * high)) > share_left * start:
        high *= 2
    for _ in range(60):
        middle = (low + high) / 2
        if float(images_per_tx_at(pools, tps * middle)) > share_left * start:
            low = middle
        else:
            high = middle
    return (low + high) / 2
