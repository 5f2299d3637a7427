"""The write-mostly lab's parameters, profiles, configurations and workloads."""

from __future__ import annotations

from dataclasses import dataclass, fields

from labs.errors import UsageError
from labs.lab import LabParameters, option

BLOCK_SIZE = "4k"
DATA_BLOCK_SIZE = "64k"  # the drills' verified data: a checksum over every 64 KiB block
# Workloads (name -> fio rw, queue depth, I/O per second or 0 for as fast as possible);
# every mirror runs all of them. The paced writer asks for fewer writes than the slow leg can
# take, the case write-behind is made for; the others run flat out.
WORKLOADS = {
    "randread-qd1": ("randread", 1, 0),
    "randread-qd16": ("randread", 16, 0),
    "randwrite-qd1": ("randwrite", 1, 0),
    "randwrite-qd16": ("randwrite", 16, 0),
    "randwrite-qd1-paced": ("randwrite", 1, 40),
}
QD1_WORKLOADS = ("randread-qd1", "randwrite-qd1")  # the slow leg's parts, measured at depth 1
WRITE_BEHIND = 256  # mdadm's default limit of outstanding write-behind writes
MD_NAME = "wm"  # the array appears as /dev/md/wm
TIMELINE_S = 3.0  # how much of the flat-out writer's per-write log goes into results.csv
LEG_MODES = ("auto", "disks", "loop")
PARTS = ("all", "sweep", "power-cut")
ALL_CUTS = ("wm-dsync", "wb-dsync", "wb-nosync", "wb-nosync-in-order")  # CUT_SETTINGS below


@dataclass(frozen=True)
class Scale:
    """How long and how large a run is: the profile's values (ci for the tests, quick for
    first tries, full for the book), or the ones given on the command line.

    Every profile runs every configuration, workload and drill; they differ in time and size.
    """

    runtime_s: float  # per fio workload
    region_mib: int  # the part of each leg the latency workloads touch
    data_mib: int  # the verified data the drills must keep intact
    resync_sizes_mib: tuple[int, ...]  # array sizes of the resync-vs-size drill
    drill_runtime_s: float  # the short workloads inside drills
    drill_array_mib: int  # array size in the instance-replacement drill
    power_cuts: int  # power cuts per setting (a lab VM with disk legs only)
    power_cut_write_s: float  # seconds of acknowledged writes before a cut (its last third)
    power_cut_settings: tuple[str, ...]  # CUT_SETTINGS, in the order they run

    @property
    def leg_mib(self) -> int:
        """How large each leg must be (loop legs are made this size)."""
        return max(*self.resync_sizes_mib, self.drill_array_mib, self.region_mib) + 16


@dataclass(frozen=True)
class Configuration:
    """One way of using the legs; `raid` is False for a leg (or a part of one) alone."""

    name: str
    label: str
    raid: bool
    # Legs alone: "fast", "slow" (cap and delay), "slow-cap" (the slow device without the
    # delay), "fast-delay" (the delay over the fast device, without the cap).
    leg: str | None = None
    write_mostly: bool = False
    bitmap: str = "none"
    write_behind: int | None = None
    slow_slot: int = 1  # the mirror slot (role) of the slow leg: mdadm keeps the listed order
    # How the slow leg became write-mostly: "create" (mdadm --write-mostly) or "sysfs".
    marked: str = "create"
    workloads: tuple[str, ...] = tuple(WORKLOADS)

    @property
    def part(self) -> bool:
        """A part of the slow leg (the cap alone or the delay alone)."""
        return self.leg in ("slow-cap", "fast-delay")


def write_behind_cell(slot: int, marked: str) -> Configuration:
    how = "at creation" if marked == "create" else "through sysfs"
    return Configuration(f"wb-slot{slot}-{marked}",
                         f"write-behind, slow leg in slot {slot}, write-mostly {how}",
                         raid=True, write_mostly=True, bitmap="internal",
                         write_behind=WRITE_BEHIND, slow_slot=slot, marked=marked)


CONFIGURATIONS = (
    Configuration("fast-only", "fast leg alone", raid=False, leg="fast"),
    Configuration("slow-only", "slow leg alone (cap and delay)", raid=False, leg="slow"),
    Configuration("slow-cap-only", "slow leg's cap alone (no delay)", raid=False,
                  leg="slow-cap", workloads=QD1_WORKLOADS),
    Configuration("slow-delay-only", "the delay alone, on the fast device (no cap)", raid=False,
                  leg="fast-delay", workloads=QD1_WORKLOADS),
    Configuration("raid1", "RAID1, plain", raid=True),
    Configuration("raid1-wm", "RAID1, slow leg write-mostly", raid=True, write_mostly=True),
    Configuration("raid1-wm-bitmap", "RAID1, write-mostly + bitmap", raid=True,
                  write_mostly=True, bitmap="internal"),
    # Write-behind, two variables apart: the slow leg's mirror slot, and whether it was
    # marked write-mostly by mdadm --create or afterwards through sysfs. Slot 1 at creation
    # is the usual command (mdadm --create ... FAST --write-mostly SLOW).
    write_behind_cell(1, "create"),
    write_behind_cell(1, "sysfs"),
    write_behind_cell(0, "create"),
    write_behind_cell(0, "sysfs"),
)
WRITE_BEHIND_CELLS = tuple(c.name for c in CONFIGURATIONS if c.write_behind)


POWER_CUT_DRILL = "drill-power-cut"  # its rows' config in results.csv


@dataclass(frozen=True)
class CutSetting:
    """One way of writing before a cut."""

    name: str
    label: str
    write_behind: int | None  # md's write-behind limit (None: write-mostly alone)
    sync: str  # "dsync": a write returns once md reports it durable; "none": once md has it
    order: str  # "random": blocks to shuffled places (a database's pages); "sequential": a log
    safety: str  # what the chapter calls it


CUT_SETTINGS = {s.name: s for s in (
    CutSetting("wm-dsync", "write-mostly alone, O_DSYNC", None, "dsync", "random", "safe"),
    CutSetting("wb-dsync", "write-behind, O_DSYNC", WRITE_BEHIND, "dsync", "random", "unsafe"),
    CutSetting("wb-nosync", "write-behind, no sync", WRITE_BEHIND, "none", "random", "unsafe"),
    CutSetting("wb-nosync-in-order", "write-behind, no sync, blocks in order", WRITE_BEHIND,
               "none", "sequential", "unsafe"),
)}


@dataclass
class Parameters(LabParameters):
    LAB = "write-mostly"
    PROFILES = {
        "ci": {"runtime_s": 1.0, "region_mib": 32, "data_mib": 8, "resync_sizes_mib": (32,),
               "drill_runtime_s": 1.0, "drill_array_mib": 32, "power_cuts": 1,
               "power_cut_write_s": 6.0, "power_cut_settings": ("wm-dsync", "wb-nosync")},
        # Within 5 minutes with the VM's start: the part the chapter leads with (the power
        # cuts, a minute each, are `--quick --part power-cut`), 1 s per workload (a slow
        # leg's 200 writes at least), and the drills' checked data as small as ci's.
        "quick": {"part": "sweep", "runtime_s": 1.0, "region_mib": 64, "data_mib": 8,
                  "resync_sizes_mib": (32, 64), "drill_runtime_s": 1.0,
                  "drill_array_mib": 64, "power_cuts": 1, "power_cut_write_s": 10.0},
        "full": {},
    }

    host: str = option("vm1", "lab host with md and dm (default vm1: start it with "
                              "`python -m labs vm up`; `local` runs on this machine)")
    seed: int = option(42, "fio's random seed", minimum=0, maximum=2**31 - 1)
    legs: str = option("auto", "what the legs are: `disks` (the host's two lab disks, a lab "
                               "VM's QEMU-throttled pair), `loop` (loop devices over files in "
                               "the lab's work dir, the slow one throttled by a cgroup io "
                               "limit), or `auto` (disks if the host has two, else loop)",
                       choices=LEG_MODES)
    fast_device: str | None = option(None, "fast leg with --legs disks (default: the host's "
                                           "first lab disk)")
    slow_device: str | None = option(None, "slow leg with --legs disks (default: the host's "
                                           "second lab disk, which a lab VM throttles)")
    slow_delay_ms: int = option(1, "dm-delay added to every I/O of the slow leg, in ms (0: "
                                   "none; the lab measures what it got)",
                                minimum=0, maximum=1000)
    loop_slow_iops: int = option(200, "with --legs loop: the cgroup io limit on the slow "
                                      "leg's reads and writes, each, per second",
                                 minimum=10, maximum=100000)
    part: str = option("all", "which part of the lab to run: all, sweep (the configurations "
                              "and the leg drills, no power cut), or power-cut (only the "
                              "power-cut drill, which needs a lab VM and its two disks)",
                       choices=PARTS)
    runtime_s: float = option(5.0, "seconds of each fio workload", minimum=1, maximum=3600)
    region_mib: int = option(256, "MiB of each leg the latency workloads touch", minimum=8,
                             maximum=65_536)
    data_mib: int = option(64, "MiB of checked data each drill must keep intact", minimum=1,
                           maximum=65_536)
    resync_sizes_mib: tuple[int, ...] = option(
        (128, 256, 512), "array sizes of the resync-against-size drill, comma-separated",
        minimum=8, maximum=65_536)
    drill_runtime_s: float = option(3.0, "seconds of the short workloads inside the drills",
                                    minimum=1, maximum=3600)
    drill_array_mib: int = option(256, "array size in the instance-replacement drill, MiB",
                                  minimum=8, maximum=65_536)
    power_cuts: int = option(2, "power cuts per setting (a lab VM with disk legs only)",
                             minimum=1, maximum=100)
    power_cut_write_s: float = option(15.0, "seconds of acknowledged writes before each cut",
                                      minimum=3, maximum=3600)
    power_cut_settings: tuple[str, ...] = option(
        ALL_CUTS, "ways of writing before a cut, comma-separated, in the order they run",
        choices=ALL_CUTS)
    allow_device: list[str] = option([], "let the lab use this block device although it did "
                                          "not create it (its data is destroyed); repeatable",
                                      metavar="PATH")

    @property
    def scale(self) -> Scale:
        """How long and how large this run is, in one value the run passes around."""
        return Scale(**{item.name: getattr(self, item.name) for item in fields(Scale)})

    def check(self) -> None:
        if self.fast_device and self.fast_device == self.slow_device:
            raise UsageError(f"the fast and slow legs must differ (both are {self.fast_device})")
        if self.legs == "loop" and (self.fast_device or self.slow_device):
            raise UsageError("--legs loop makes its own loop devices: drop --fast-device and "
                             "--slow-device, or use --legs disks")
        if self.data_mib > self.drill_array_mib or 2 * self.data_mib > self.scale.leg_mib:
            raise UsageError(f"--data-mib {self.data_mib}: the drills' checked data must fit "
                             f"in --drill-array-mib ({self.drill_array_mib}) and twice in a "
                             f"leg ({self.scale.leg_mib} MiB)")
        if self.part == "power-cut" and self.legs == "loop":
            raise UsageError("--part power-cut cuts a lab VM's power and needs its two disks: "
                             "drop --legs loop")


def workload_groups(workloads: tuple[str, ...]) -> dict[str, list[str]]:
    """The workloads by operation, in the order they run: reads, then the paced writer (it
    leaves the write-behind backlog empty), the flat-out writer at depth 1 (whose log shows
    the backlog fill from empty), and the one at depth 16."""
    order = ["randread-qd1", "randread-qd16", "randwrite-qd1-paced", "randwrite-qd1",
             "randwrite-qd16"]
    groups: dict[str, list[str]] = {}
    for workload in sorted(workloads, key=order.index):
        groups.setdefault(WORKLOADS[workload][0], []).append(workload)
    return groups


def before_the_delay(config: Configuration) -> bool:
    """Measured before the slow leg gets its delay: the fast leg and the slow leg's parts."""
    return not config.raid and config.leg != "slow"


CUT_STEPS = ("power cut: writes, then the cut", "power cut: booting again")


def steps(scale: Scale, part: str, power_cut: bool) -> list[str]:
    """The run's steps, in order: the legs; (the sweep) the prefill and the configurations
    without the delay; the delay; (the sweep) the rest and the drills; the power cuts, if
    the host can have them; the teardown."""
    sweep = part in ("all", "sweep")
    early = [config for config in CONFIGURATIONS if before_the_delay(config)]
    names = ["preparing the legs"]
    if sweep:
        names += ["prefill"] + ["a configuration"] * len(early)
    names += ["the slow leg's delay"]
    if sweep:
        names += (["a configuration"] * (len(CONFIGURATIONS) - len(early))
                  + ["drill: the slow leg lost", "drill: the fast leg lost"]
                  + ["drill: a resync"] * len(scale.resync_sizes_mib)
                  + ["drill: the data check's control"])
    if power_cut:
        names += list(CUT_STEPS) * (scale.power_cuts * len(scale.power_cut_settings))
    return names + ["taking the array and its devices down; writing the run"]
