"""The torn-pages lab's parameters and profiles."""

from __future__ import annotations

from dataclasses import dataclass

from labs.errors import UsageError
from labs.lab import LabParameters, option


@dataclass
class Parameters(LabParameters):
    LAB = "torn-pages"
    PROFILES = {
        # ci: the smallest run that still does every step on the real system (one
        # checkpoint setting, legs shorter than its interval).
        "ci": {"scale": 4, "duration_s": 12, "checkpoint_timeouts_s": (30,),
               "burst_duration_s": 12, "warmup_s": 2, "slow_duration_s": 10,
               "fs_size_mib": 4096},
        # quick: within 5 minutes on a 2-core machine; one checkpoint setting, the legs
        # still longer than its interval (a second setting adds about 3 minutes).
        "quick": {"scale": 8, "duration_s": 35, "checkpoint_timeouts_s": (30,),
                  "burst_duration_s": 24, "warmup_s": 10, "slow_duration_s": 20},
        "full": {},
    }

    seed: int = option(7, "pgbench --random-seed of the warm-up (each leg adds its number), "
                          "and the order of the on/off legs",
                       minimum=0, maximum=2**31 - 1)
    image: str | None = option(None, "container image (default: the local build if present, "
                                     "else the official postgres:15)")
    scale: int = option(16, "pgbench scale (at least --clients)", minimum=1, maximum=10_000)
    clients: int = option(4, "pgbench clients", minimum=1, maximum=256)
    threads: int = option(2, "pgbench threads", minimum=1, maximum=64)
    duration_s: int = option(150, "seconds per pgbench leg", minimum=10, maximum=86_400)
    checkpoint_timeouts_s: tuple[int, ...] = option(
        (30, 300), "checkpoint_timeout settings compared, comma-separated", minimum=30,
        maximum=86_400)
    burst_duration_s: int = option(60, "seconds of the forced-checkpoint legs", minimum=10,
                                   maximum=86_400)
    warmup_s: int = option(30, "seconds of unmeasured warm-up", minimum=0, maximum=3600)
    write_mibps: int = option(4, "for the slow-disk legs, writes to the lab's file system "
                                 "limited to this many MiB/s (0: no slow-disk legs)",
                              minimum=0, maximum=10_000)
    slow_duration_s: int = option(90, "seconds per slow-disk leg", minimum=10, maximum=86_400)
    fs_size_mib: int = option(8192, "size of the lab's file system (a sparse file)",
                              minimum=1024, maximum=1024 * 1024)
    shared_buffers_mib: int = option(256, "PostgreSQL shared_buffers", minimum=16,
                                     maximum=65_536)

    def check(self) -> None:
        if self.scale < self.clients:
            raise UsageError(f"--scale {self.scale} must be at least --clients "
                             f"{self.clients} (else pgbench measures row contention)")
        if not self.checkpoint_timeouts_s:
            raise UsageError("--checkpoint-timeouts-s: give at least one, e.g. 30,300")

