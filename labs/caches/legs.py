"""The caches lab's measurements: the block level, the engines' cold and warm passes, the
working-set sweeps. run.py starts and stops what these measure.

Every pass records the device's own counters (`/sys/block/<dev>/stat`) around the reads, so
"bytes read" is what the lab's loop device served, whoever asked for it.
"""

from __future__ import annotations

import json
import math
import random
from typing import Any

import numpy as np

from labs.caches import model
from labs.caches.cql import CqlNode
from labs.caches.hostside import LabDisk
from labs.caches.params import Parameters, sweep_warmup_reads
from labs.caches.rocks import RocksNode
from labs.progress import Progress
from labs.records import RunRecorder
from labs.tools.mdadm import DiskStat

KEY_BYTES = 16  # RocksDB keys: b"key%013d"
# The CQL engine's own memory may grow this much in the sweep (its JIT compiler, its
# buffers) before the container is killed for memory.
HEADROOM_MIB = 64
SWEEP_TABLE = "sweep"


def percentile(values: list[float], q: float) -> float:
    return float(np.percentile(np.asarray(values, dtype=float), q)) if values else float("nan")


class Recorder:
    """Adds result rows with the lab's dimensions; the config names the setting measured."""

    def __init__(self, rec: RunRecorder):
        self.rec = rec

    def add(self, leg: str, phase: str, metric: str, value: float, unit: str,
            **dims: Any) -> None:
        config = "-".join(str(dims[k]) for k in ("engine", "setting", "compression", "cache",
                                                  "method", "readahead_kib", "row_bytes",
                                                  "record_bytes", "pattern", "fraction")
                          if dims.get(k) is not None)
        self.rec.add_result(config=config or leg, workload=f"{leg}-{phase}", metric=metric,
                            value=float(value), unit=unit, leg=leg, phase=phase, **dims)

    def latencies(self, leg: str, phase: str, values: list[float], unit: str,
                  **dims: Any) -> None:
        for q in (50, 99):
            self.add(leg, phase, f"latency_p{q}", percentile(values, q), unit, **dims)
        self.add(leg, phase, "latency_mean", float(np.mean(values)), unit, **dims)


ROCKS_READS = ("buffered", "direct")  # how the RocksDB passes read (a step each)
COMPRESSIONS = (False, True)  # each row size has a CQL table without and with compression
BLOCK_READAHEADS = ("as the device has it", "none")  # the block-level reads' two passes


# ---- block level ---------------------------------------------------------------------------

def block_level(p: Parameters, disk: LabDisk, out: Recorder, progress: Progress) -> None:
    """Random reads of a file on the lab's device: buffered, direct, mmap; readahead as is, 0."""
    folder = disk.make_folder(f"{disk.fs.mount_point}/block")
    path = f"{folder}/random.bin"
    progress.step("block level: a file of random bytes", f"{p.block_file_mib} MiB")
    disk.probe_json("fill", path, str(p.block_file_mib))
    default_sectors = disk.readahead_sectors()
    disk.default_readahead_sectors = default_sectors
    align = disk.logical_block_bytes()
    out.rec.add_tool_version("loop device readahead (default)", f"{default_sectors * 512} bytes")
    for sectors in (default_sectors, 0):  # BLOCK_READAHEADS
        readahead_kib = sectors // 2
        disk.set_readahead_sectors(sectors)
        progress.step("block level: reads", f"readahead {readahead_kib} KiB")
        for method in ("buffered", "direct", "mmap"):
            for size in p.block_record_sizes:
                count = p.mmap_reads if method == "mmap" else p.block_reads
                result = disk.probe_json("reads", path, "--method", method, "--size", str(size),
                                         "--count", str(count), "--seed", str(p.seed),
                                         "--device", disk.device_name, "--align", str(align))
                name = f"block/{method}-ra{readahead_kib}-{size}.json"
                out.rec.add_raw(name, json.dumps(result))
                dims = {"method": method, "readahead_kib": readahead_kib, "record_bytes": size}
                for phase in ("cold", "warm"):
                    one = result[phase]
                    out.add("block", phase, "device_bytes_per_read",
                            one["device_bytes"] / count, "bytes", **dims)
                    out.add("block", phase, "device_reads_per_read",
                            one["device_reads"] / count, "ratio", **dims)
                    out.latencies("block", phase, one["latency_us"], "us", **dims)
                resident = disk.resident(folder)[path].resident_bytes
                out.add("block", "after", "resident_bytes", resident, "bytes", **dims)
                out.add("block", "setup", "reads", count, "count", **dims)
                out.add("block", "setup", "file_bytes", result["file_bytes"], "bytes", **dims)
                out.add("block", "setup", "align_bytes", align, "bytes", **dims)
    disk.set_readahead_sectors(default_sectors)
    disk.ws.host.sudo(["rm", "-f", "--", path], timeout_s=60)  # Safe: the lab's own file.


# ---- keys ----------------------------------------------------------------------------------

def cold_keys(order: list[int] | range, count: int, seed: int) -> list[int]:
    """`count` keys evenly spaced along the order the engine stores them (from a random
    start), in random order: every read of a cold pass asks for a row in a place of the
    file no other read of the pass touches, so a pass costs what its reads cost alone."""
    rng = random.Random(seed)
    step = len(order) / count
    start = rng.random() * step
    picks = [order[int(start + i * step)] for i in range(count)]
    rng.shuffle(picks)
    return picks


def sweep_keys(rows: int, hot: int, reads: int, pattern: str, exponent: float,
               seed: int) -> list[int]:
    """`reads` keys drawn from `hot` random rows: uniformly, or Zipf over a random ranking."""
    rng, hot_keys = model.hot_key_choice(rows, hot, seed)
    if pattern == "uniform":
        return rng.choice(hot_keys, size=reads).tolist()
    weights = model.zipf_weights(len(hot_keys), exponent)
    return rng.choice(hot_keys, size=reads, p=weights).tolist()


# ---- RocksDB -----------------------------------------------------------------------------

def rocks_rows(p: Parameters, row_bytes: int) -> int:
    return max(p.cold_reads * 2, p.rocks_db_mib * 2**20 // (row_bytes + KEY_BYTES))


def readahead_settings(disk: LabDisk, leg: str) -> list[int]:
    """Readahead (sectors) of the engine passes: the device's own, then none."""
    default = disk.default_readahead_sectors
    return [default, 0] if leg == "engine" and default else [default]


def rocks_cold_passes(p: Parameters, node: RocksNode, disk: LabDisk, out: Recorder,
                      progress: Progress, leg: str = "engine", reads: int | None = None,
                      row_sizes: tuple[int, ...] | None = None,
                      settings: tuple[str, ...] = ROCKS_READS) -> None:
    reads = reads or p.cold_reads
    for row_bytes in row_sizes or p.row_sizes:
        db, rows = f"db{row_bytes}", rocks_rows(p, row_bytes)
        for setting in settings:
            progress.step(f"RocksDB {leg}: cold reads", f"{rows:,} rows of {row_bytes} B, "
                                                          f"{setting} reads")
            for number, sectors in enumerate(readahead_settings(disk, leg)):
                disk.set_readahead_sectors(sectors)
                keys = cold_keys(range(rows), reads, p.seed + row_bytes + 7919 * number
                                 + {"engine": 0, "unthrottled": 1, "throttled": 2}[leg])
                rocks_pass(p, node, disk, out, leg, db, rows, row_bytes, setting, sectors,
                           keys)
        disk.set_readahead_sectors(disk.default_readahead_sectors)


def rocks_pass(p: Parameters, node: RocksNode, disk: LabDisk, out: Recorder, leg: str,
               db: str, rows: int, row_bytes: int, setting: str, sectors: int,
               keys: list[int]) -> None:
    reads = len(keys)
    before_open = disk.counters()
    node.open(db, setting == "direct", p.rocks_cold_cache_mib)  # a new, empty block cache
    opened = disk.counters() - before_open
    disk.evict(node.db_folder(db))
    dims = {"engine": "rocksdb", "setting": setting, "readahead_kib": sectors // 2,
            "row_bytes": row_bytes}
    memory_before = node.memory()
    for phase in ("cold", "warm"):
        before = disk.counters()
        got = node.gets(keys)
        delta = disk.counters() - before
        out.rec.add_raw(f"{leg}/rocksdb-{setting}-ra{sectors // 2}-{row_bytes}-{phase}.json",
                        json.dumps(got))
        out.add(leg, phase, "device_bytes_per_read", delta.read_sectors * 512 / reads,
                "bytes", **dims)
        out.add(leg, phase, "device_reads_per_read", delta.reads / reads, "ratio", **dims)
        out.latencies(leg, phase, got["latency_us"], "us", **dims)
        counters = got["counters"]
        out.add(leg, phase, "block_cache_data_hits", counters["rocksdb.block.cache.data.hit"],
                "count", **dims)
        out.add(leg, phase, "block_cache_data_misses",
                counters["rocksdb.block.cache.data.miss"], "count", **dims)
        out.add(leg, phase, "rows_found", got["found"], "count", **dims)
    if leg != "engine":
        return
    stats = node.call("/stats")
    memory = node.memory()
    out.add(leg, "after", "block_cache_usage_bytes", stats["block_cache_usage"], "bytes",
            **dims)
    for when, mem in (("before", memory_before), ("after", memory)):
        out.add(leg, when, "container_page_cache_bytes", mem["page_cache_bytes"], "bytes",
                **dims)
        out.add(leg, when, "container_anon_bytes", mem["anon_bytes"], "bytes", **dims)
    resident = disk.resident(node.db_folder(db))
    sst = {name: r for name, r in resident.items() if name.endswith(".sst")}
    out.add(leg, "after", "resident_bytes", sum(r.resident_bytes for r in sst.values()),
            "bytes", **dims)
    out.add(leg, "setup", "data_file_bytes", sum(r.size_bytes for r in sst.values()), "bytes",
            **dims)
    out.add(leg, "setup", "open_device_bytes", opened.read_sectors * 512, "bytes", **dims)
    out.add(leg, "setup", "rows", rows, "count", **dims)
    out.add(leg, "setup", "reads", reads, "count", **dims)


def rocks_sweep(p: Parameters, node: RocksNode, disk: LabDisk, out: Recorder,
                progress: Progress) -> None:
    """Hit ratio against working set, a block cache and a row cache of the same size."""
    row_bytes = min(p.row_sizes)
    db, rows = f"db{row_bytes}", rocks_rows(p, row_bytes)
    cache_bytes = p.rocks_sweep_cache_mib * 2**20
    node.open(db, True, p.rocks_sweep_cache_mib)
    file_bytes = sum(node.call("/stats")["sst_files"].values())
    blocks = file_bytes / model.PAGE_BYTES
    capacity_blocks = cache_bytes / model.PAGE_BYTES
    for fraction in p.sweep_fractions:
        hot = model.hot_keys_for_working_set(fraction * capacity_blocks, rows, blocks,
                                             rows_cross_units=False)
        for cache in ("block", "row"):
            for pattern in ("uniform", "zipf"):
                progress.detail(f"RocksDB sweep: {cache} cache, {pattern}, {hot:,} hot rows")
                node.open(db, True, p.rocks_sweep_cache_mib if cache == "block" else 0,
                          p.rocks_sweep_cache_mib if cache == "row" else 0)
                # Warm-up: nearly every hot row read once (the model counts what is left,
                # first reads of rarely drawn rows, as misses).
                warm = sweep_warmup_reads("rocksdb", hot, p.sweep_reads)
                keys = sweep_keys(rows, hot, warm + p.sweep_reads, pattern, p.zipf_exponent,
                                  p.seed + int(fraction * 1000))
                for first in range(0, warm, 100_000):
                    node.gets(keys[first:min(warm, first + 100_000)])
                before = disk.counters()
                got = node.gets(keys[warm:])
                delta = disk.counters() - before
                kind = "row.cache" if cache == "row" else "block.cache.data"
                hits = got["counters"][f"rocksdb.{kind}.hit"]
                misses = got["counters"][f"rocksdb.{kind}.miss"]
                dims = {"engine": "rocksdb", "setting": "direct", "cache": cache,
                        "pattern": pattern, "fraction": fraction, "row_bytes": row_bytes}
                out.add("sweep", "measured", "hit_ratio", hits / max(1, hits + misses), "ratio",
                        **dims)
                out.add("sweep", "measured", "device_bytes_per_read",
                        delta.read_sectors * 512 / p.sweep_reads, "bytes", **dims)
                out.latencies("sweep", "measured", got["latency_us"], "us", **dims)
                out.add("sweep", "setup", "hot_rows", hot, "count", **dims)
                out.add("sweep", "setup", "rows", rows, "count", **dims)
                out.add("sweep", "setup", "data_file_bytes", file_bytes, "bytes", **dims)
                out.add("sweep", "setup", "cache_bytes", cache_bytes, "bytes", **dims)
                out.add("sweep", "setup", "reads", p.sweep_reads, "count", **dims)


# ---- CQL ---------------------------------------------------------------------------------

def cql_rows(p: Parameters, row_bytes: int, compressed: bool) -> int:
    """Rows of a CQL table: enough that each cold read has its own page or chunk."""
    unit = 16 * 1024 if compressed else model.PAGE_BYTES
    rows_per_unit = max(1.0, unit / (row_bytes + 24))
    rows = max(p.cql_rows, math.ceil(p.cold_reads * rows_per_unit * 1.5))
    return rows


def cql_cold_passes(p: Parameters, node: CqlNode, disk: LabDisk, out: Recorder,
                    progress: Progress, leg: str = "engine", reads: int | None = None,
                    tables: list[tuple[int, bool]] | None = None) -> None:
    from labs.caches.cql import table_name

    reads = reads or p.cold_reads
    for row_bytes, compressed in tables or [(s, c) for s in p.row_sizes for c in COMPRESSIONS]:
        table = table_name(row_bytes, compressed)
        progress.step(f"{node.flavor.engine} {leg}: cold reads", f"{node.setting}, {table}, "
                      f"{reads} cold reads then warm")
        order = node.storage_order(cql_rows(p, row_bytes, compressed))
        for number, sectors in enumerate(readahead_settings(disk, leg)):
            disk.set_readahead_sectors(sectors)
            # New keys for every pass: the key cache remembers the last pass's.
            keys = cold_keys(order, reads, p.seed + row_bytes + 7919 * number
                             + {"engine": 0, "unthrottled": 1, "throttled": 2}[leg])
            cql_pass(node, disk, out, leg, table, row_bytes, compressed, sectors, keys,
                     cql_rows(p, row_bytes, compressed))
        disk.set_readahead_sectors(disk.default_readahead_sectors)


def cql_pass(node: CqlNode, disk: LabDisk, out: Recorder, leg: str, table: str,
             row_bytes: int, compressed: bool, sectors: int, keys: list[int],
             rows: int) -> None:
    engine, setting, reads = node.flavor.engine, node.setting, len(keys)
    folder = node.table_folder(table)
    dims = {"engine": engine, "setting": setting, "compression": "lz4" if compressed else "none",
            "readahead_kib": sectors // 2, "row_bytes": row_bytes}
    caches_before = node.cache_counters()
    disk.evict(folder)
    memory_before = node.memory()
    for phase in ("cold", "warm"):
        statement = node.select(table, cold=phase == "cold")
        before = disk.counters()
        found, latencies_ms = node.timed_reads(statement, keys)
        delta = disk.counters() - before
        out.rec.add_raw(f"{leg}/{engine}-{setting}-ra{sectors // 2}-{table}-{phase}.json",
                        json.dumps({"keys": keys, "latency_ms": latencies_ms}))
        out.add(leg, phase, "device_bytes_per_read", delta.read_sectors * 512 / reads, "bytes",
                **dims)
        out.add(leg, phase, "device_reads_per_read", delta.reads / reads, "ratio", **dims)
        out.latencies(leg, phase, latencies_ms, "ms", **dims)
        out.add(leg, phase, "rows_found", found, "count", **dims)
    if leg != "engine":
        return
    caches_after = node.cache_counters()
    for cache in ("keys", "rows", "chunks"):
        if cache in caches_before and cache in caches_after:
            a, b = caches_before[cache], caches_after[cache]
            out.add(leg, "both", f"{cache}_cache_hits", b["hits"] - a["hits"], "count", **dims)
            out.add(leg, "both", f"{cache}_cache_requests", b["requests"] - a["requests"],
                    "count", **dims)
    memory = node.memory()
    for when, mem in (("before", memory_before), ("after", memory)):
        out.add(leg, when, "container_page_cache_bytes", mem["page_cache_bytes"], "bytes",
                **dims)
        out.add(leg, when, "container_anon_bytes", mem["anon_bytes"], "bytes", **dims)
    resident = disk.resident(folder)
    sizes = disk.file_sizes(folder)
    for component in ("Data.db", "Index.db", "Partitions.db", "Rows.db"):
        names = [n for n in sizes if n.endswith("-" + component)]
        if not names:
            continue
        kind = component.removesuffix(".db").lower()
        out.add(leg, "setup", f"{kind}_file_bytes", sum(sizes[n] for n in names), "bytes",
                **dims)
        out.add(leg, "after", f"{kind}_resident_bytes",
                sum(resident[n].resident_bytes for n in names if n in resident), "bytes",
                **dims)
    out.add(leg, "setup", "rows", rows, "count", **dims)
    out.add(leg, "setup", "reads", reads, "count", **dims)


def cql_sweep(p: Parameters, node: CqlNode, disk: LabDisk, out: Recorder,
              progress: Progress) -> None:
    """Page-cache hit ratio against working set, under a fixed container memory limit.

    The limit is what the engine itself holds (anonymous memory and the files it maps)
    plus headroom and --cql-cache-budget-mib; the page cache the container may keep is
    then measured by reading the whole sweep table, and the working sets are multiples
    of what was measured.
    """
    folder = node.table_folder(SWEEP_TABLE)
    data_bytes = sum(size for name, size in disk.file_sizes(folder).items()
                     if name.endswith("-Data.db"))
    rows = p.sweep_rows
    pages = data_bytes / model.PAGE_BYTES
    statement = node.select(SWEEP_TABLE, cold=False)
    everything = list(range(rows))
    # Readahead 0 for the sweep: a miss reads its row and nothing more (section 2 of the
    # chapter measures readahead on its own); the device's own setting comes back after.
    disk.set_readahead_sectors(0)
    limit_mib = _set_cql_sweep_memory_limit_mib(p, node, disk, out, folder, statement,
                                                everything)
    capacity = _cql_page_cache_capacity_bytes(node, statement, everything)
    _record_cql_bytes_per_miss(p, node, disk, out, folder, statement, rows)
    for fraction in p.sweep_fractions:
        hot = model.hot_keys_for_working_set(fraction * capacity / model.PAGE_BYTES, rows,
                                             pages)
        for pattern in ("uniform", "zipf"):
            progress.detail(f"{node.flavor.engine} sweep: {pattern}, {hot:,} hot rows, memory "
                            f"limit {limit_mib} MiB, page cache {capacity / 2**20:.0f} MiB")
            latencies_ms, memory, delta = _cql_sweep_point_reads(
                p, node, disk, folder, statement, rows, hot, pattern, fraction)
            dims = {"engine": node.flavor.engine, "setting": node.setting, "cache": "page",
                    "pattern": pattern, "fraction": fraction, "row_bytes": p.sweep_row_kib * 1024}
            _record_cql_sweep_measured(p, out, dims, delta, latencies_ms, memory)
            out.add("sweep", "setup", "hot_rows", hot, "count", **dims)
            out.add("sweep", "setup", "rows", rows, "count", **dims)
            out.add("sweep", "setup", "data_file_bytes", data_bytes, "bytes", **dims)
            out.add("sweep", "setup", "cache_bytes", capacity, "bytes", **dims)
            out.add("sweep", "setup", "memory_limit_bytes", limit_mib * 2**20, "bytes", **dims)
            out.add("sweep", "setup", "reads", p.cql_sweep_reads, "count", **dims)
    disk.set_readahead_sectors(disk.default_readahead_sectors)


def _set_cql_sweep_memory_limit_mib(p: Parameters, node: CqlNode, disk: LabDisk,
                                    out: Recorder, folder: str, statement: Any,
                                    everything: list[int]) -> int:
    """Limit the container to what the engine holds, plus headroom and the cache budget."""
    # A burst of concurrent reads first, so that the engine's own buffers have grown to
    # what the sweep's reads need before its memory is measured.
    node.concurrent_reads(statement, everything)
    disk.evict(folder)
    memory = node.memory()
    own = memory["anon_bytes"] + memory["mapped_file_bytes"]
    limit_mib = node.set_memory_limit_mib(
        int((own + p.cql_cache_budget_mib * 2**20) / 2**20) + HEADROOM_MIB)
    out.rec.add_command(f"docker update --memory {limit_mib}m {node.spec.name}")
    return limit_mib


def _cql_page_cache_capacity_bytes(node: CqlNode, statement: Any,
                                   everything: list[int]) -> int:
    """The page cache the limited container keeps after reading the whole table."""
    try:
        node.concurrent_reads(statement, everything)
        filled = node.memory()
    except Exception as error:
        node.explain_death(error)
        raise
    return max(model.PAGE_BYTES, filled["page_cache_bytes"] - filled["mapped_file_bytes"])


def _record_cql_bytes_per_miss(p: Parameters, node: CqlNode, disk: LabDisk, out: Recorder,
                               folder: str, statement: Any, rows: int) -> None:
    # What one miss costs on this table: a cold pass of its own.
    misses = min(p.cql_sweep_reads, rows // 2)
    disk.evict(folder)
    before = disk.counters()
    node.timed_reads(statement, cold_keys(node.storage_order(rows), misses, p.seed))
    miss = disk.counters() - before
    out.add("sweep", "setup", "bytes_per_miss", miss.read_sectors * 512 / misses, "bytes",
            engine=node.flavor.engine, setting=node.setting, cache="page")


def _cql_sweep_point_reads(p: Parameters, node: CqlNode, disk: LabDisk, folder: str,
                           statement: Any, rows: int, hot: int, pattern: str,
                           fraction: float) -> tuple[list[float], dict[str, int], DiskStat]:
    """From a cold page cache: a warm-up over the hot rows, then the timed reads.

    Returns their latencies, the container's memory after them and the device's counters
    around the timed reads.
    """
    disk.evict(folder)
    warm = sweep_warmup_reads(node.flavor.engine, hot, p.cql_sweep_reads)
    keys = sweep_keys(rows, hot, warm + p.cql_sweep_reads, pattern, p.zipf_exponent,
                      p.seed + int(fraction * 1000))
    try:
        node.concurrent_reads(statement, keys[:warm])
        before = disk.counters()
        _, latencies_ms = node.timed_reads(statement, keys[warm:])
        memory = node.memory()
    except Exception as error:
        node.explain_death(error)
        raise
    delta = disk.counters() - before
    return latencies_ms, memory, delta


def _record_cql_sweep_measured(p: Parameters, out: Recorder, dims: dict[str, Any],
                               delta: DiskStat, latencies_ms: list[float],
                               memory: dict[str, int]) -> None:
    out.add("sweep", "measured", "device_bytes_per_read",
            delta.read_sectors * 512 / p.cql_sweep_reads, "bytes", **dims)
    out.add("sweep", "measured", "device_reads_per_read",
            delta.reads / p.cql_sweep_reads, "ratio", **dims)
    out.latencies("sweep", "measured", latencies_ms, "ms", **dims)
    for name in ("page_cache", "anon", "mapped_file"):
        out.add("sweep", "measured", f"container_{name}_bytes", memory[f"{name}_bytes"],
                "bytes", **dims)
