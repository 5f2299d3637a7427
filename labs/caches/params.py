"""The caches lab's parameters and profiles."""

from __future__ import annotations

from dataclasses import dataclass

from labs.errors import UsageError
from labs.lab import LabParameters, option

ENGINES = ("cassandra", "scylla")
# The official ScyllaDB image a reader with a registry pulls (`docker pull ...`).
SCYLLA_IMAGE = "scylladb/scylla:6.2"
READ_METHODS = ("buffered", "direct", "mmap")
PATTERNS = ("uniform", "zipf")


def sweep_warmup_reads(engine: str, hot_rows: int, measured_reads: int) -> int:
    """Reads before a sweep point is measured: enough that nearly every hot row has been read
    once with uniform keys (five per hot row for RocksDB, three for the slower CQL engine)."""
    per_hot_row = 5 if engine == "rocksdb" else 3
    return max(measured_reads, per_hot_row * hot_rows)


@dataclass
class Parameters(LabParameters):
    LAB = "caches"
    PROFILES = {
        # The smallest run that still takes every step on the real systems (the tests).
        "ci": {"fs_size_mib": 1536, "block_file_mib": 64, "block_reads": 300, "mmap_reads": 8,
               "block_record_sizes": (128, 4096), "row_sizes": (100, 4096),
               "cql_rows": 1500, "sweep_rows": 1600, "rocks_db_mib": 8, "cold_reads": 30,
               "sweep_fractions": (0.5, 1.5), "sweep_reads": 400, "cql_sweep_reads": 150,
               "rocks_sweep_cache_mib": 1, "cql_cache_budget_mib": 0,
               "throttled_reads": 30},
        "quick": {"fs_size_mib": 2048, "block_file_mib": 128, "block_reads": 1000,
                  "mmap_reads": 20, "cql_rows": 3000, "sweep_rows": 3200, "rocks_db_mib": 24,
                  "cold_reads": 150, "sweep_fractions": (0.5, 1.0, 2.0), "sweep_reads": 3000,
                  "cql_sweep_reads": 400, "rocks_sweep_cache_mib": 2,
                  "cql_cache_budget_mib": 0, "throttled_reads": 30},
        "full": {},
    }

    seed: int = option(11, "seed of every key choice (uniform and Zipf) and every value",
                       minimum=0, maximum=2**31 - 1)
    engine: str = option("cassandra", "CQL engine: cassandra (the project's image) or scylla "
                                      f"(the official image {SCYLLA_IMAGE}, if present)",
                         choices=ENGINES)
    cql_image: str | None = option(None, "image of the CQL engine (default: the local "
                                         "Cassandra build, or the official ScyllaDB image)")
    fs_size_mib: int = option(3072, "size of the lab's file system (a sparse file)",
                              minimum=512, maximum=256 * 1024)
    block_file_mib: int = option(256, "size of the block-level test file", minimum=8,
                                 maximum=16 * 1024)
    block_record_sizes: tuple[int, ...] = option(
        (128, 512, 1024, 4096), "record sizes the block-level reads ask for (bytes, each a "
                                "power of two)", minimum=128, maximum=65536)
    block_reads: int = option(2000, "random reads per block-level pass", minimum=10,
                              maximum=1_000_000)
    mmap_reads: int = option(50, "random reads per memory-mapped pass (each fault can read "
                                 "a whole readahead window)", minimum=2, maximum=100_000)
    row_sizes: tuple[int, ...] = option((100, 1024, 4096), "row (value) sizes in bytes",
                                        minimum=16, maximum=65536)
    cql_rows: int = option(6000, "rows per CQL table (one table per row size and "
                                  "compression setting)", minimum=100, maximum=5_000_000)
    sweep_rows: int = option(4800, "rows of the CQL sweep table (no compression)",
                             minimum=200, maximum=5_000_000)
    sweep_row_kib: int = option(64, "row size of the CQL sweep table, KiB (large rows fill "
                                    "the page cache with few inserts)", minimum=4,
                                maximum=1024)
    rocks_db_mib: int = option(64, "size of each RocksDB database (rows = this / row size)",
                               minimum=2, maximum=64 * 1024)
    cold_reads: int = option(200, "random reads per cold pass (then the same reads warm)",
                             minimum=10, maximum=1_000_000)
    rocks_cold_cache_mib: int = option(8, "RocksDB block cache during the cold passes",
                                       minimum=1, maximum=65536)
    sweep_fractions: tuple[float, ...] = option(
        (0.25, 0.5, 1.0, 2.0, 3.0), "working sets of the sweep, as multiples of the "
                                          "cache", minimum=0.05, maximum=20)
    zipf_exponent: float = option(0.99, "skew of the Zipf pattern", minimum=0.1, maximum=3)
    sweep_reads: int = option(20000, "RocksDB reads per sweep point (after as many warm-up "
                                     "reads)", minimum=100, maximum=10_000_000)
    cql_sweep_reads: int = option(800, "CQL reads per sweep point (after a warm-up over "
                                        "the working set)", minimum=50, maximum=1_000_000)
    rocks_sweep_cache_mib: int = option(8, "RocksDB cache (block cache or row cache) in the "
                                           "sweep", minimum=1, maximum=65536)
    cql_cache_budget_mib: int = option(
        16, "page cache left to the CQL engine's container in the sweep: its memory limit "
            "becomes what the engine itself holds, 64 MiB of headroom and this",
        minimum=0, maximum=65536)
    cql_heap_mib: int = option(384, "Cassandra's heap (ScyllaDB: its --memory)", minimum=256,
                               maximum=65536)
    cql_memory_mib: int = option(1536, "the CQL engine container's memory limit (before the "
                                       "sweep)", minimum=768, maximum=262_144)
    rocks_memory_mib: int = option(512, "the RocksDB container's memory limit", minimum=128,
                                   maximum=262_144)
    throttle_read_iops: int = option(25, "the throttled leg: reads per second the device "
                                          "grants the container", minimum=1,
                                     maximum=1_000_000)
    throttle_read_kibps: int = option(2048, "the throttled leg: KiB per second the device "
                                            "grants the container", minimum=8,
                                      maximum=10_000_000)
    throttled_reads: int = option(60, "random reads per throttled cold pass", minimum=5,
                                  maximum=100_000)

    def check(self) -> None:
        if self.host != "local":
            raise UsageError(f"--host {self.host}: the caches lab drives its engines from this "
                             "machine over 127.0.0.1 (CQL and HTTP): run it with --host local")
        for size in self.block_record_sizes:
            if size & (size - 1):
                raise UsageError(f"--block-record-sizes {size}: use powers of two "
                                 "(128, 512, 1024, 4096, ...)")
        for name in ("block_record_sizes", "row_sizes", "sweep_fractions"):
            if not getattr(self, name):
                raise UsageError(f"--{name.replace('_', '-')}: give at least one value")
        if self.block_file_mib * 4 > self.fs_size_mib:
            raise UsageError(f"--block-file-mib {self.block_file_mib} needs a file system of "
                             f"at least {self.block_file_mib * 4} MiB (--fs-size-mib)")
        if self.cql_heap_mib + 384 > self.cql_memory_mib:
            raise UsageError(f"--cql-memory-mib {self.cql_memory_mib} is too little for a "
                             f"{self.cql_heap_mib} MiB heap: give at least "
                             f"{self.cql_heap_mib + 384} MiB")
        if self.rocks_sweep_cache_mib + 128 > self.rocks_memory_mib:
            raise UsageError(f"--rocks-memory-mib {self.rocks_memory_mib} is too little for "
                             f"a {self.rocks_sweep_cache_mib} MiB cache")
        if self.cold_reads * 2 > self.cql_rows:
            raise UsageError(f"--cold-reads {self.cold_reads} must be at most half of "
                             f"--cql-rows {self.cql_rows} (each cold read is a new row)")

    def image_for_engine(self) -> str:
        if self.cql_image:
            return self.cql_image
        return SCYLLA_IMAGE if self.engine == "scylla" else "storage-labs/cassandra:5.0.9"
