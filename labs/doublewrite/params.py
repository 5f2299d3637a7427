"""The doublewrite lab's parameters and profiles."""

from __future__ import annotations

from dataclasses import dataclass

from labs.errors import UsageError
from labs.lab import LabParameters, option


@dataclass
class Parameters(LabParameters):
    LAB = "doublewrite"
    PROFILES = {
        # Every step on the real server, small enough for the test suite's budget.
        "ci": {"initial_rows": 60_000, "rows": 2500, "repetitions": 1,
               "buffer_pools_mib": (8,), "fs_size_mib": 2048},
        "quick": {"initial_rows": 100_000, "rows": 5000, "repetitions": 1,
                  "buffer_pools_mib": (8, 128), "fs_size_mib": 2048},
        "full": {},
    }

    seed: int = option(7, "sysbench --rand-seed, and the order of the ON/OFF legs",
                       minimum=1, maximum=2**31 - 1)
    image: str | None = option(None, "container image (default: the local build of "
                                     "storage-labs/mariadb)")
    initial_rows: int = option(300_000, "rows in the table before the measured inserts "
                                        "(sysbench prepare, once; every leg starts from a copy)",
                               minimum=1000, maximum=100_000_000)
    rows: int = option(20_000, "rows each leg inserts (sysbench oltp_insert --events)",
                       minimum=100, maximum=100_000_000)
    threads: int = option(4, "sysbench client threads", minimum=1, maximum=256)
    key_distribution: str = option("uniform", "sysbench --rand-type of the secondary key k",
                                   choices=("uniform", "special", "gaussian", "pareto"))
    buffer_pools_mib: tuple[int, ...] = option(
        (16, 128), "innodb_buffer_pool_size settings compared (MiB), comma-separated: a pool "
                   "much smaller than the table makes page flushes dominate",
        minimum=6, maximum=65_536)
    log_file_mib: int = option(64, "innodb_log_file_size (MiB)", minimum=8, maximum=65_536)
    write_mibps: int = option(16, "for the write-limited legs, writes to the lab's file system "
                                  "limited to this many MiB/s (0: no write-limited legs)",
                              minimum=0, maximum=10_000)
    repetitions: int = option(2, "repetitions of every ON/OFF pair", minimum=1, maximum=20)
    fs_size_mib: int = option(4096, "size of the lab's file system (a sparse file)",
                              minimum=1024, maximum=1024 * 1024)
    torn_page: bool = option(True, "tear a 16 KiB page with doublewrite ON and OFF")
    force_recovery: bool = option(True, "after the OFF server refuses to start, start it "
                                        "with innodb_force_recovery=1, then 6, and read "
                                        "what is left")

    def check(self) -> None:
        if not self.buffer_pools_mib:
            raise UsageError("--buffer-pools-mib: give at least one, e.g. 16,128")
        if len(set(self.buffer_pools_mib)) != len(self.buffer_pools_mib):
            raise UsageError("--buffer-pools-mib: each setting once")
        if self.force_recovery and not self.torn_page:
            raise UsageError("--force-recovery needs --torn-page (it reads the torn table)")

    def disks(self) -> tuple[int, ...]:
        """Write limits of the legs, MiB/s (0: unlimited)."""
        return (0, self.write_mibps) if self.write_mibps else (0,)
