"""The write-mostly lab's parameters, profiles, configurations and workloads."""

from __future__ import annotations

from dataclasses import dataclass

from labs.errors import UsageError
from labs.lab import LabParameters, option

BLOCK_SIZE = "4k"
DATA_BLOCK_SIZE = "64k"  # the drills' verified data
# Workloads (name -> fio rw, queue depth, I/O per second or 0 for as fast as possible);
# every configuration runs all of them. The paced writer asks for fewer writes than the slow
# leg can take, the case write-behind is made for; the others run flat out.
WORKLOADS = {
    "randread-qd1": ("randread", 1, 0),
    "randread-qd16": ("randread", 16, 0),
    "randwrite-qd1": ("randwrite", 1, 0),
    "randwrite-qd16": ("randwrite", 16, 0),
    "randwrite-qd1-paced": ("randwrite", 1, 40),
}
WRITE_BEHIND = 256  # mdadm's default limit of outstanding write-behind writes
MD_NAME = "wm"  # the array appears as /dev/md/wm


@dataclass(frozen=True)
class Profile:
    """How long and how large: --quick for tests and first tries, full for the book."""

    name: str
    runtime_s: float  # per fio workload
    region_mib: int  # the part of each leg the latency workloads touch
    data_mib: int  # the verified data the drills must keep intact
    resync_sizes_mib: tuple[int, ...]  # array sizes of the resync-vs-size drill
    drill_runtime_s: float  # the short workloads inside drills
    drill_array_mib: int  # array size in the instance-replacement drill
    workloads: tuple[str, ...] = tuple(WORKLOADS)


PROFILE_SETTINGS = {
    # quick leaves out the flat-out writer at depth 16 (the slowest, and no claim rests on it)
    # and the configurations marked full_only.
    "quick": Profile("quick", runtime_s=1, region_mib=64, data_mib=16,
                     resync_sizes_mib=(32,), drill_runtime_s=1, drill_array_mib=64,
                     workloads=("randread-qd1", "randread-qd16", "randwrite-qd1",
                                "randwrite-qd1-paced")),
    "full": Profile("full", runtime_s=8, region_mib=256, data_mib=64,
                    resync_sizes_mib=(128, 256, 512), drill_runtime_s=3, drill_array_mib=256),
}


@dataclass(frozen=True)
class Configuration:
    """One way of using the legs; `raid` is False for a raw leg."""

    name: str
    label: str
    raid: bool
    leg: str | None = None  # raw configurations: which leg
    write_mostly: bool = False
    bitmap: str = "none"
    write_behind: int | None = None
    # The mirror slot of the slow leg. md lists write-mostly members last at creation, so the
    # slow leg is in slot 1; slot 0 is reached by marking it write-mostly afterwards.
    slow_slot: int = 1
    full_only: bool = False


CONFIGURATIONS = (
    Configuration("fast-only", "fast leg alone", raid=False, leg="fast"),
    Configuration("slow-only", "slow leg alone", raid=False, leg="slow"),
    Configuration("raid1", "RAID1, plain", raid=True),
    Configuration("raid1-wm", "RAID1, slow leg write-mostly", raid=True, write_mostly=True),
    Configuration("raid1-wm-bitmap", "RAID1, write-mostly + bitmap", raid=True,
                  write_mostly=True, bitmap="internal", full_only=True),
    Configuration("raid1-wm-wb", f"RAID1, write-mostly + bitmap + write-behind={WRITE_BEHIND}",
                  raid=True, write_mostly=True, bitmap="internal", write_behind=WRITE_BEHIND,
                  slow_slot=0),
    # The same with the slow leg in slot 1, where mdadm puts it: on kernels whose md looks
    # only at the first member to decide about write-behind, nothing is written behind.
    Configuration("raid1-wm-wb-slot1", "the same, slow leg in mirror slot 1", raid=True,
                  write_mostly=True, bitmap="internal", write_behind=WRITE_BEHIND,
                  full_only=True),
)


# --- the model the resync drill is compared with --------------------------------------------


@dataclass
class Parameters(LabParameters):
    LAB = "write-mostly"
    PROFILES = {"quick": {}, "full": {}}  # the profile's sizes are in PROFILE_SETTINGS

    host: str = option("vm1", "lab host with md and dm (default vm1: start it with "
                              "`python -m labs vm up`)")
    seed: int = option(42, "fio's random seed", minimum=0, maximum=2**31 - 1)
    fast_device: str | None = option(None, "fast leg (default: the host's first lab disk)")
    slow_device: str | None = option(None, "slow leg (default: the host's second lab disk, "
                                           "which a lab VM throttles)")
    slow_delay_ms: int = option(1, "dm-delay added to every I/O of the slow leg, in ms (0: "
                                   "none; under TCG the guest's timers make it coarser: the "
                                   "lab measures what it got)", minimum=0, maximum=1000)
    allow_device: list[str] = option([], "let the lab use this block device although it did "
                                          "not create it (its data is destroyed); repeatable",
                                      metavar="PATH")

    @property
    def settings(self) -> Profile:
        return PROFILE_SETTINGS[self.profile]

    def check(self) -> None:
        if self.fast_device and self.fast_device == self.slow_device:
            raise UsageError(f"the fast and slow legs must differ (both are {self.fast_device})")


def major_steps(profile: Profile) -> int:
    """How many top-level steps a run takes (for the progress bar)."""
    configs = [c for c in CONFIGURATIONS if profile.name == "full" or not c.full_only]
    return 3 + len(configs) + 2 + len(profile.resync_sizes_mib) + 1
