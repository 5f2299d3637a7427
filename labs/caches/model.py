"""What the caches chapter predicts, as functions (pure: no host, no run).

Read amplification. A cold read brings in whole read units: a 4 KiB page through the page
cache, the readahead window through a memory map, the sectors that cover the record with
direct I/O, a compressed chunk in Cassandra, a block in RocksDB. One read of a record costs

    units spanned x unit bytes        (+ the index's units, + readahead when it applies)

and a pass of `reads` random reads over a file of `file_units` units costs less per read
than that when reads share units: the expected number of distinct units touched is

    file_units x (1 - (1 - spanned / file_units) ** reads).

Warm, a read served from a cache costs nothing at the device; direct I/O has no page
cache, so a repeated read costs the same again unless the engine caches it itself.

Hit ratio. A cache holding `capacity` units in front of a working set of `working_set`
equally popular units hits about capacity / working_set of the time (uniform access);
for skewed access, Che's approximation of an LRU cache gives the hit ratio from the
popularity of each unit: find T with sum(1 - exp(-p_i T)) = capacity, then
hit = sum(p_i (1 - exp(-p_i T))).
"""

from __future__ import annotations

import math

import numpy as np

from labs.errors import UsageError

PAGE_BYTES = 4096
SECTOR_BYTES = 512


# ---- read units --------------------------------------------------------------------------

def units_spanned(record_bytes: float, unit_bytes: float, aligned: bool = False) -> float:
    """Expected units a record covers: at a random start, 1 + (record - 1) / unit.

    A record whose start is aligned to its own size, and whose size divides the unit
    (the block-level file: records of 128 B .. 4 KiB at multiples of their size), covers
    ceil(record / unit) units exactly.
    """
    if record_bytes <= 0 or unit_bytes <= 0:
        raise UsageError("record and unit sizes must be positive")
    if aligned:
        return float(math.ceil(record_bytes / unit_bytes))
    return 1 + (record_bytes - 1) / unit_bytes


def direct_read_bytes(record_bytes: float, align_bytes: int = SECTOR_BYTES,
                      aligned: bool = False) -> float:
    """Bytes an O_DIRECT read of a record transfers: the record rounded out to `align`."""
    return units_spanned(record_bytes, align_bytes, aligned) * align_bytes


def distinct_units(file_units: float, reads: float, spanned: float = 1.0) -> float:
    """Expected distinct units a pass of `reads` random reads touches (each spans `spanned`)."""
    if file_units <= 0:
        return 0.0
    share = min(1.0, spanned / file_units)
    return file_units * (1 - (1 - share) ** reads)


def pass_bytes_per_read(file_bytes: float, unit_bytes: float, reads: float,
                        spanned: float = 1.0) -> float:
    """Device bytes per read of a cold pass: distinct units touched x unit / reads."""
    if reads <= 0:
        raise UsageError("a pass needs at least one read")
    units = max(1.0, file_bytes / unit_bytes)
    return distinct_units(units, reads, spanned) * unit_bytes / reads


# ---- the block-level file ----------------------------------------------------------------

def block_level_bytes_per_read(method: str, record_bytes: int, file_bytes: float, reads: int,
                               readahead_bytes: int, align_bytes: int = SECTOR_BYTES,
                               warm: bool = False) -> float:
    """Device bytes per read for the probe's reads (records aligned to their own size).

    buffered: the pages that hold the record (the kernel reads no further ahead for reads
    it sees as random); mmap: a fault reads the readahead window around it (or one page
    with readahead 0); direct: the record rounded out to `align`, every time.
    """
    if method == "direct":
        return direct_read_bytes(record_bytes, align_bytes, aligned=True)
    if warm:
        return 0.0
    if method == "buffered":
        unit = PAGE_BYTES
    elif method == "mmap":
        unit = max(PAGE_BYTES, readahead_bytes)
    else:
        raise UsageError(f"unknown read method {method!r}")
    spanned = units_spanned(record_bytes, unit, aligned=True)
    return pass_bytes_per_read(file_bytes, unit, reads, spanned)


# ---- engines ---------------------------------------------------------------------------

def cassandra_data_unit_bytes(row_disk_bytes: float, compressed: bool,
                              chunk_bytes: int = 16 * 1024) -> float:
    """What one cold row read brings in from Data.db through the page cache.

    Compressed: the whole chunk the row lives in (random values do not compress, so a
    chunk is about its nominal size on disk), plus the pages its unaligned start adds,
    plus a second chunk when the row crosses a chunk boundary. Uncompressed: the pages the
    row spans.
    """
    if compressed:
        chunks = units_spanned(row_disk_bytes, chunk_bytes)
        return chunks * units_spanned(chunk_bytes, PAGE_BYTES) * PAGE_BYTES
    return units_spanned(row_disk_bytes, PAGE_BYTES) * PAGE_BYTES


def entries_per_block(entry_bytes: float, block_bytes: int = PAGE_BYTES,
                      deviation_pct: int = 10) -> int:
    """Entries in one RocksDB data block, as its default flush policy cuts blocks: once a
    block holds `block_bytes`, or earlier when the next entry would take it past that and
    it already holds (100 - block_size_deviation) % of it. Entries of 1 KiB and a little
    more therefore make blocks of four (about 4.2 KiB), not three."""
    count, size = 0, 0.0
    while True:
        count, size = count + 1, size + entry_bytes
        if size >= block_bytes:
            return count
        if size + entry_bytes > block_bytes and size >= block_bytes * (100 - deviation_pct) / 100:
            return count


def rocksdb_data_unit_bytes(block_disk_bytes: float, direct: bool) -> float:
    """One RocksDB data block read: its pages (buffered) or its sectors (direct)."""
    if direct:
        return direct_read_bytes(block_disk_bytes)
    return units_spanned(block_disk_bytes, PAGE_BYTES) * PAGE_BYTES


# ---- hit ratio ---------------------------------------------------------------------------

def working_set_units(hot_keys: float, rows: float, file_units: float,
                      rows_cross_units: bool = True) -> float:
    """Units holding at least one of `hot_keys` rows picked at random from `rows` rows laid
    out in order over `file_units` units.

    A unit overlaps rows/units rows, plus one that crosses its boundary when rows do not
    end where units end (pages of a file; RocksDB blocks end with an entry: no crossing).
    """
    if rows <= 0 or file_units <= 0:
        return 0.0
    overlapping = rows / file_units + (1 if rows_cross_units else 0)
    share = min(1.0, hot_keys / rows)
    return file_units * (1 - (1 - share) ** overlapping)


def uniform_hit_ratio(capacity_units: float, working_set: float) -> float:
    """LRU (or any policy) under uniform access: capacity / working set, at most 1."""
    if working_set <= 0:
        return 1.0
    return float(min(1.0, max(0.0, capacity_units) / working_set))


def first_read_miss_ratio(popularity: np.ndarray, warm_reads: int, measured_reads: int) -> float:
    """The share of measured reads that are the first read of their unit since the cache was
    emptied: they miss whatever the cache's size (a cold, or compulsory, miss).

    Reads are independent draws: unit i is still unread after the warm-up with probability
    (1 - p_i)^warm and is read during the measurement with probability 1 - (1 - p_i)^measured;
    each such unit misses exactly once.
    """
    p = np.asarray(popularity, dtype=float)
    p = p[p > 0] / p.sum()
    if measured_reads <= 0:
        return 0.0
    unread = np.power(1 - p, warm_reads)
    read_now = -np.expm1(measured_reads * np.log1p(-np.minimum(p, 1 - 1e-15)))
    return float(np.sum(unread * read_now) / measured_reads)


def che_hit_ratio(popularity: np.ndarray, capacity_units: float) -> float:
    """Che's approximation of an LRU cache's hit ratio for independent requests."""
    p = np.asarray(popularity, dtype=float)
    p = p[p > 0]
    if p.size == 0:
        return 1.0
    p = p / p.sum()
    if capacity_units >= p.size:
        return 1.0
    if capacity_units <= 0:
        return 0.0

    def filled(t: float) -> float:
        return float(np.sum(-np.expm1(-p * t)))

    low, high = 0.0, 1.0
    while filled(high) < capacity_units:
        high *= 2
    for _ in range(100):  # bisection to well below a unit
        middle = (low + high) / 2
        if filled(middle) < capacity_units:
            low = middle
        else:
            high = middle
    return float(np.sum(p * -np.expm1(-p * high)))


def zipf_weights(count: int, exponent: float) -> np.ndarray:
    """Popularity of ranks 1..count under Zipf(exponent), summing to 1."""
    if count < 1:
        raise UsageError("a Zipf distribution needs at least one key")
    weights = 1.0 / np.arange(1, count + 1) ** exponent
    return weights / weights.sum()


def unit_popularity(key_weights: np.ndarray, key_units: np.ndarray) -> np.ndarray:
    """The popularity of each unit: the sum of the popularity of the keys it holds."""
    _, inverse = np.unique(np.asarray(key_units), return_inverse=True)
    return np.bincount(inverse, weights=np.asarray(key_weights, dtype=float))


def random_units(count: int, file_units: int, seed: int) -> np.ndarray:
    """Where `count` hot keys land among `file_units` units when placement is by hash."""
    return np.random.default_rng(seed).integers(0, max(1, int(file_units)), size=count)


# ---- a miss on a throttled device ----------------------------------------------------------

def throttled_miss_ms(device_reads: float, device_bytes: float, iops_limit: float,
                      bytes_per_s_limit: float, unthrottled_ms: float = 0.0) -> float:
    """A miss's latency when the device grants `iops_limit` reads and `bytes_per_s` per second.

    At queue depth one the reads come one after another: a read's I/O may start only when
    the limits allow (one read every 1 / iops_limit seconds, its bytes at the byte rate),
    and the engine's own work overlaps that wait, so a read takes the longer of the two.
    """
    wait_s = 0.0
    if iops_limit > 0:
        wait_s = max(wait_s, device_reads / iops_limit)
    if bytes_per_s_limit > 0:
        wait_s = max(wait_s, device_bytes / bytes_per_s_limit)
    return max(unthrottled_ms, wait_s * 1000)


def relative_error(model: float, measured: float) -> float | None:
    """(model - measured) / measured, or None when nothing was measured."""
    if measured == 0:
        return None
    return (model - measured) / measured


def hot_keys_for_working_set(working_set: float, rows: int, file_units: float,
                             rows_cross_units: bool = True) -> int:
    """How many hot rows, picked at random, make a working set of `working_set` units
    (the inverse of working_set_units)."""
    if working_set >= file_units:
        return rows
    overlapping = rows / file_units + (1 if rows_cross_units else 0)
    share = 1 - (1 - max(0.0, working_set) / file_units) ** (1 / overlapping)
    return max(1, min(rows, round(share * rows)))


# RocksDB charges a row-cache entry for the value, the key (twice: the lookup key carries a
# file prefix) and bookkeeping; 128 bytes of bookkeeping is this model's estimate.
ROW_CACHE_OVERHEAD_BYTES = 128


def row_cache_capacity_rows(cache_bytes: float, value_bytes: float, key_bytes: float) -> float:
    return cache_bytes / (value_bytes + 2 * key_bytes + ROW_CACHE_OVERHEAD_BYTES)


def hot_key_choice(rows: int, hot: int, seed: int) -> tuple[np.random.Generator, np.ndarray]:
    """The hot keys of a sweep point (random rows, in a random popularity order), and the
    generator that then draws the reads (so the page can recompute what the lab chose)."""
    rng = np.random.default_rng(seed)
    return rng, rng.choice(rows, size=min(hot, rows), replace=False)
