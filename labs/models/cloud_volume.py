"""Cloud volumes: AWS EBS gp3 and sc1 as published, turned into predictions. Pure and fast.

A cloud volume is not a disk you own: it is a disk with a contract. gp3 promises 3,000 IOPS
and 125 MiB/s whatever its size; sc1 (Cold HDD) promises throughput by the TiB, spends
credits from a burst bucket, and charges every I/O of 1 MiB or less as a full MiB. A
program doing 16 KiB random I/O therefore gets IOPS = (sc1's MiB/s) / (1 MiB): a few dozen
at most, against gp3's thousands. This module computes that, the burst then baseline over
time, and the QEMU throttle settings that make a lab VM's disk behave like a scaled-down
volume.

Every published figure below is in data/reference/ebs-volumes.csv with its source (the
Amazon EBS user guide and the EC2 API reference); tests/test_cloud_volume_model.py checks
the constants against that file. Units: MiB = 2^20 bytes, as AWS prints them.

What the model leaves out: instance-level limits (an instance caps the throughput of all its
volumes), latency (AWS publishes none beyond "single-digit millisecond" for gp3), and the
guest's page cache, which can hide reads altogether.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from labs.errors import UsageError

KIB = 1024
MIB = 1024 ** 2
GIB_PER_TIB = 1024

# (volume type, quantity) -> value; the same keys as data/reference/ebs-volumes.csv.
PUBLISHED: dict[tuple[str, str], float] = {
    ("gp3", "baseline_iops"): 3_000,
    ("gp3", "baseline_throughput_mib_s"): 125,
    ("gp3", "max_iops"): 80_000,
    ("gp3", "max_throughput_mib_s"): 2_000,
    ("gp3", "iops_per_gib"): 500,
    ("gp3", "throughput_mib_s_per_iops"): 0.25,
    ("gp3", "min_size_gib"): 1,
    ("gp3", "max_size_gib"): 65_536,
    ("gp3", "io_unit_kib"): 256,
    ("sc1", "baseline_mib_s_per_tib"): 12,
    ("sc1", "burst_mib_s_per_tib"): 80,
    ("sc1", "max_throughput_mib_s"): 250,
    ("sc1", "max_iops"): 250,
    ("sc1", "io_unit_kib"): 1_024,
    ("sc1", "credit_tib_per_tib"): 1,
    ("sc1", "min_size_gib"): 125,
    ("sc1", "max_size_gib"): 16_384,
}
VOLUME_TYPES = ("gp3", "sc1")
PATTERNS = ("random", "sequential")


def _number(name: str, value: float, minimum: float = 0.0, *, strict: bool = True) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise UsageError(f"{name} must be a finite number, got {value!r}")
    if value < minimum or (strict and value == minimum):
        relation = "greater than" if strict else "at least"
        raise UsageError(f"{name} must be {relation} {minimum:g}, got {value:g}")
    return float(value)


def _size(volume_type: str, size_gib: float) -> float:
    low = PUBLISHED[(volume_type, "min_size_gib")]
    high = PUBLISHED[(volume_type, "max_size_gib")]
    size_gib = _number("size_gib", size_gib)
    if not low <= size_gib <= high:
        raise UsageError(f"{volume_type} volumes are {low:,.0f} to {high:,.0f} GiB, "
                         f"got {size_gib:g} GiB")
    return size_gib


@dataclass(frozen=True)
class Gp3:
    """A gp3 volume: size, and the IOPS and throughput provisioned (baseline by default)."""

    size_gib: float
    iops: float = PUBLISHED[("gp3", "baseline_iops")]
    throughput_mib_s: float = PUBLISHED[("gp3", "baseline_throughput_mib_s")]
    volume_type = "gp3"

    def __post_init__(self) -> None:
        _size("gp3", self.size_gib)
        base_iops = PUBLISHED[("gp3", "baseline_iops")]
        # The baseline comes at any size; more IOPS need 1 GiB per 500, up to the maximum.
        top_iops = max(base_iops, min(PUBLISHED[("gp3", "max_iops")],
                                      PUBLISHED[("gp3", "iops_per_gib")] * self.size_gib))
        if not base_iops <= _number("iops", self.iops) <= top_iops:
            raise UsageError(f"gp3 of {self.size_gib:g} GiB takes {base_iops:,.0f} to "
                             f"{top_iops:,.0f} IOPS, got {self.iops:g}")
        base_mib = PUBLISHED[("gp3", "baseline_throughput_mib_s")]
        top_mib = max(base_mib, min(PUBLISHED[("gp3", "max_throughput_mib_s")],
                                    PUBLISHED[("gp3", "throughput_mib_s_per_iops")] * self.iops))
        if not base_mib <= _number("throughput_mib_s", self.throughput_mib_s) <= top_mib:
            raise UsageError(f"gp3 with {self.iops:,.0f} IOPS takes {base_mib:g} to "
                             f"{top_mib:g} MiB/s, got {self.throughput_mib_s:g}")


@dataclass(frozen=True)
class Sc1:
    """An sc1 (Cold HDD) volume: throughput by the TiB, a burst bucket, 1 MiB I/O credits."""

    size_gib: float
    volume_type = "sc1"

    def __post_init__(self) -> None:
        _size("sc1", self.size_gib)

    @property
    def size_tib(self) -> float:
        return self.size_gib / GIB_PER_TIB

    @property
    def baseline_mib_s(self) -> float:
        """The rate credits accrue at, and the most it delivers once the bucket is empty."""
        return min(PUBLISHED[("sc1", "baseline_mib_s_per_tib")] * self.size_tib,
                   PUBLISHED[("sc1", "max_throughput_mib_s")])

    @property
    def burst_mib_s(self) -> float:
        return min(PUBLISHED[("sc1", "burst_mib_s_per_tib")] * self.size_tib,
                   PUBLISHED[("sc1", "max_throughput_mib_s")])

    @property
    def bucket_mib(self) -> float:
        """A full bucket: 1 TiB of credit per TiB of volume, enough to scan it all once."""
        return PUBLISHED[("sc1", "credit_tib_per_tib")] * self.size_gib * 1024

    @property
    def full_scan_seconds(self) -> float:
        """Reading the whole volume at the burst rate, as AWS's scan-time table counts it (a
        full bucket holds a whole scan's credit, so the burst lasts to the end)."""
        return self.size_gib * 1024 / self.burst_mib_s

    def burst_seconds(self, credit_fraction: float = 1.0) -> float:
        """How long a sustained workload runs at the burst rate, from this much credit."""
        credit_fraction = _fraction("credit fraction", credit_fraction)
        return self.bucket_mib * credit_fraction / (self.burst_mib_s - self.baseline_mib_s)

    def refill_seconds(self, credit_fraction: float = 0.0) -> float:
        """How long an idle volume takes to fill its bucket from this much credit."""
        credit_fraction = _fraction("credit fraction", credit_fraction)
        return self.bucket_mib * (1.0 - credit_fraction) / self.baseline_mib_s


def _fraction(name: str, value: float) -> float:
    value = _number(name, value, 0.0, strict=False)
    if value > 1.0:
        raise UsageError(f"{name} must be between 0 and 1, got {value:g}")
    return value


def volume(volume_type: str, size_gib: float, iops: float | None = None,
           throughput_mib_s: float | None = None) -> Gp3 | Sc1:
    """A validated volume; `iops` and `throughput_mib_s` are for gp3 only."""
    if volume_type == "gp3":
        return Gp3(size_gib, PUBLISHED[("gp3", "baseline_iops")] if iops is None else iops,
                   PUBLISHED[("gp3", "baseline_throughput_mib_s")]
                   if throughput_mib_s is None else throughput_mib_s)
    if volume_type == "sc1":
        if iops is not None or throughput_mib_s is not None:
            raise UsageError("sc1 has no provisioned IOPS or throughput (they follow its size)")
        return Sc1(size_gib)
    raise UsageError(f"unknown volume type {volume_type!r}; choose one of "
                     f"{', '.join(VOLUME_TYPES)}")


# ----------------------------------------------------------------------------------------
# Predictions
# ----------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Prediction:
    """What a workload that always has I/O waiting gets from a volume."""

    volume_type: str
    size_gib: float
    block_kib: float
    pattern: str
    phase: str           # sc1: "burst" or "baseline"; gp3: "steady"
    iops: float          # guest I/Os per second
    limit: str           # the published limit that holds it down
    units_per_io: float  # EBS I/O units one guest I/O counts as

    @property
    def mib_s(self) -> float:
        return self.iops * self.block_kib / KIB

    def as_dict(self) -> dict:
        return {"volume_type": self.volume_type, "size_gib": self.size_gib,
                "block_kib": self.block_kib, "pattern": self.pattern, "phase": self.phase,
                "iops": self.iops, "mib_s": self.mib_s, "limit": self.limit,
                "units_per_io": self.units_per_io}


def io_units(volume_type: str, block_kib: float, pattern: str) -> float:
    """EBS I/O units per guest I/O: random I/O counts whole units (256 KiB on SSD volumes,
    1 MiB on HDD volumes), so a 16 KiB random read on sc1 costs a full MiB; sequential I/O is
    merged into units by EBS, so it counts its true share."""
    unit_kib = PUBLISHED[(volume_type, "io_unit_kib")]
    if pattern == "random":
        return float(math.ceil(block_kib / unit_kib))
    return block_kib / unit_kib


def predict(vol: Gp3 | Sc1, block_kib: float, pattern: str = "random", phase: str = "burst",
            queue_depth: float | None = None, latency_ms: float | None = None) -> Prediction:
    """IOPS and MiB/s for a workload of `block_kib` I/Os, from the volume's published limits.

    For sc1, `phase` says whether the burst bucket still has credit ("burst") or is empty
    ("baseline"). With `queue_depth` and `latency_ms` (both or neither), Little's law adds a
    third bound: a client with qd I/Os in flight, each taking latency_ms, cannot exceed
    qd / latency however generous the volume.
    """
    block_kib = _number("block_kib", block_kib)
    if pattern not in PATTERNS:
        raise UsageError(f"pattern must be one of {', '.join(PATTERNS)}, got {pattern!r}")
    units = io_units(vol.volume_type, block_kib, pattern)
    if isinstance(vol, Gp3):
        phase = "steady"
        bounds = [(vol.iops / units, f"{vol.iops:,.0f} IOPS"),
                  (vol.throughput_mib_s * KIB / block_kib, f"{vol.throughput_mib_s:g} MiB/s")]
    elif isinstance(vol, Sc1):
        if phase not in ("burst", "baseline"):
            raise UsageError(f"sc1 phase must be burst or baseline, got {phase!r}")
        rate = vol.burst_mib_s if phase == "burst" else vol.baseline_mib_s
        bounds = [(rate / units, f"{phase} {rate:.2f} MiB/s, each I/O charged {units:g} MiB"),
                  (PUBLISHED[("sc1", "max_iops")] / units,
                   f"{PUBLISHED[('sc1', 'max_iops')]:,.0f} IOPS (1 MiB I/O)")]
    else:
        raise UsageError(f"not a volume: {vol!r}")
    if (queue_depth is None) != (latency_ms is None):
        raise UsageError("give both queue_depth and latency_ms, or neither")
    if queue_depth is not None:
        qd = _number("queue_depth", queue_depth)
        latency = _number("latency_ms", latency_ms)
        bounds.append((qd / latency * 1000, f"queue depth {qd:g} / {latency:g} ms"))
    iops, limit = min(bounds, key=lambda bound: bound[0])
    return Prediction(vol.volume_type, vol.size_gib, block_kib, pattern, phase, iops, limit,
                      units)


def sc1_over_time(vol: Sc1, seconds: float, step_s: float = 60.0, block_kib: float = 1024,
                  pattern: str = "sequential", credit_fraction: float = 1.0) -> dict:
    """A sustained workload on sc1, step by step: burst until the bucket is empty, then baseline.

    The bucket gains credit at the baseline rate all the time and loses it at the rate the
    volume delivers (in charged MiB), so while bursting it drains at burst - baseline. Each
    row is the average over one step. Returns lists keyed time_s (end of the step),
    charged_mib_s, iops, mib_s, credit_mib and credit_fraction (at the end of the step).
    """
    if not isinstance(vol, Sc1):
        raise UsageError("sc1_over_time needs an sc1 volume")
    seconds = _number("seconds", seconds)
    step_s = _number("step_s", step_s)
    start = vol.bucket_mib * _fraction("credit fraction", credit_fraction)
    empty_at = start / (vol.burst_mib_s - vol.baseline_mib_s)
    per_io = predict(vol, block_kib, pattern, "baseline")
    charged_per_io_mib = per_io.units_per_io  # one unit is one MiB of credit on sc1
    rows: dict[str, list[float]] = {k: [] for k in ("time_s", "charged_mib_s", "iops", "mib_s",
                                                    "credit_mib", "credit_fraction")}
    steps = math.ceil(round(seconds / step_s, 9))
    for k in range(steps):
        t0, t1 = k * step_s, min((k + 1) * step_s, seconds)
        bursting = max(0.0, min(t1, empty_at) - t0)
        charged = (vol.burst_mib_s * bursting + vol.baseline_mib_s * (t1 - t0 - bursting))
        rate = charged / (t1 - t0)
        credit = max(start - (vol.burst_mib_s - vol.baseline_mib_s) * t1, 0.0)
        iops = rate / charged_per_io_mib
        rows["time_s"].append(t1)
        rows["charged_mib_s"].append(rate)
        rows["iops"].append(iops)
        rows["mib_s"].append(iops * block_kib / KIB)
        rows["credit_mib"].append(credit)
        rows["credit_fraction"].append(credit / vol.bucket_mib)
    return rows


def fileio_ratio(size_gib: float = 300, block_kib: float = 16, sc1_phase: str = "burst",
                 queue_depth: float | None = None, gp3_latency_ms: float | None = None,
                 sc1_latency_ms: float | None = None) -> dict:
    """gp3 / sc1 for random I/O of `block_kib` (sysbench fileio's default is 16 KiB).

    From the published limits alone (baseline gp3, sc1 of the same size). A real run also
    meets the client's own bound (threads / latency, given as queue_depth and the volumes'
    latencies) and the page cache; the seed article's 300 GiB volumes measured about 45x.
    """
    gp3_latency = {} if gp3_latency_ms is None else {"queue_depth": queue_depth,
                                                     "latency_ms": gp3_latency_ms}
    sc1_latency = {} if sc1_latency_ms is None else {"queue_depth": queue_depth,
                                                     "latency_ms": sc1_latency_ms}
    gp3 = predict(Gp3(size_gib), block_kib, "random", **gp3_latency)
    sc1 = predict(Sc1(size_gib), block_kib, "random", sc1_phase, **sc1_latency)
    return {"gp3": gp3.as_dict(), "sc1": sc1.as_dict(), "ratio": gp3.iops / sc1.iops}


# ----------------------------------------------------------------------------------------
# QEMU throttling: a lab VM disk that behaves like a (scaled) volume
# ----------------------------------------------------------------------------------------

# QEMU's -drive documentation (qemu-options.hx): "Small values can lead to timeouts or hangs
# inside the guest. A safe minimum for disks is 2 MB/s."
QEMU_MIN_BPS = 2_000_000
# This project's floor; QEMU states none for IOPS. A throttled request waits inside QEMU
# while the guest counts it as in flight, and Linux's block layer (blk-mq) times a request
# out after 30 s unless the driver sets otherwise. At 10 IOPS a queue of 128 requests
# already takes 12.8 s to drain; below that, deep queues reach the timeout.
QEMU_MIN_IOPS = 10
QEMU_VALUE_MAX = 10 ** 15  # util/throttle.c, THROTTLE_VALUE_MAX


@dataclass(frozen=True)
class QemuThrottle:
    """QEMU -drive throttling.* values (0 = unset), and what they stand for."""

    iops_total: int
    bps_total: int
    iops_size: int
    iops_total_max: int = 0
    iops_total_max_length: int = 0
    bps_total_max: int = 0
    bps_total_max_length: int = 0
    emulates: str = ""

    def options(self) -> dict[str, int]:
        names = {"iops_total": "iops-total", "bps_total": "bps-total", "iops_size": "iops-size",
                 "iops_total_max": "iops-total-max",
                 "iops_total_max_length": "iops-total-max-length",
                 "bps_total_max": "bps-total-max", "bps_total_max_length": "bps-total-max-length"}
        return {f"throttling.{name}": getattr(self, field)
                for field, name in names.items() if getattr(self, field)}

    def drive_suffix(self) -> str:
        """To append to a -drive argument: ',throttling.iops-total=...,...'."""
        return "".join(f",{key}={value}" for key, value in self.options().items())

    @property
    def burst_seconds(self) -> float:
        """How long a saturating workload bursts, from an empty QEMU bucket (docs/throttle.txt:
        the bucket holds max x max-length and leaks at the base rate even while bursting)."""
        return self.burst_seconds_at(self.bps_total_max)

    def burst_seconds_at(self, bytes_per_s: float) -> float:
        """How long the burst lasts for a workload that moves `bytes_per_s` while bursting
        (at most bps-total-max): the bucket fills at that rate less the base rate."""
        if not self.bps_total_max or bytes_per_s <= self.bps_total:
            return 0.0 if not self.bps_total_max else math.inf
        rate = min(bytes_per_s, self.bps_total_max)
        return self.bps_total_max * self.bps_total_max_length / (rate - self.bps_total)

    def predicted_iops(self, block_bytes: int, burst: bool = False) -> float:
        """IOPS QEMU allows a saturating workload of `block_bytes` I/Os, by its accounting:
        a request up to iops-size counts as one operation, a larger one proportionally
        (docs/throttle.txt); bytes count as they are."""
        block_bytes = int(_number("block_bytes", block_bytes))
        units = max(1.0, block_bytes / self.iops_size) if self.iops_size else 1.0
        iops = self.iops_total_max if burst and self.iops_total_max else self.iops_total
        bps = self.bps_total_max if burst and self.bps_total_max else self.bps_total
        return min(iops / units, bps / block_bytes)


def qemu_throttle(vol: Gp3 | Sc1, rate_scale: float = 1.0, time_scale: float = 1.0) -> QemuThrottle:
    """QEMU throttling that makes a lab VM disk behave like `vol`, scaled.

    `rate_scale` multiplies every rate (IOPS and bytes per second) and the bucket with them;
    `time_scale` divides the bucket, so the burst of a real sc1 (hours) fits in a lab
    (minutes). For sc1: iops-size = 1 MiB with iops-total = MiB/s makes every I/O of 1 MiB
    or less cost one MiB, as EBS charges it; the burst bucket maps onto QEMU's (max x
    max-length = the credit in the bucket). For gp3: its IOPS and throughput, with
    iops-size = 256 KiB, the unit EBS counts SSD I/O in. QEMU does not merge sequential
    requests the way EBS does (the guest's block layer merges some).

    Refuses (UsageError) limits below QEMU_MIN_IOPS or QEMU_MIN_BPS.
    """
    rate_scale = _number("rate_scale", rate_scale)
    time_scale = _number("time_scale", time_scale)
    if isinstance(vol, Gp3):
        iops = vol.iops * rate_scale
        bps = vol.throughput_mib_s * MIB * rate_scale
        throttle = dict(iops_total=round(iops), bps_total=round(bps),
                        iops_size=PUBLISHED[("gp3", "io_unit_kib")] * KIB,
                        emulates=f"gp3 {vol.size_gib:g} GiB, {vol.iops:,.0f} IOPS, "
                                 f"{vol.throughput_mib_s:g} MiB/s, rates x{rate_scale:g}")
    elif isinstance(vol, Sc1):
        iops = vol.baseline_mib_s * rate_scale  # one operation per MiB
        bps = vol.baseline_mib_s * MIB * rate_scale
        burst_mib = vol.burst_mib_s * rate_scale
        length = max(1, round(vol.bucket_mib * rate_scale / time_scale / burst_mib))
        throttle = dict(iops_total=round(iops), bps_total=round(bps),
                        iops_size=PUBLISHED[("sc1", "io_unit_kib")] * KIB,
                        iops_total_max=round(burst_mib), iops_total_max_length=length,
                        bps_total_max=round(burst_mib * MIB), bps_total_max_length=length,
                        emulates=f"sc1 {vol.size_gib:g} GiB, rates x{rate_scale:g}, "
                                 f"burst time /{time_scale:g}")
    else:
        raise UsageError(f"not a volume: {vol!r}")
    return _checked(vol, throttle, iops, bps, rate_scale)


def sc1_phase_throttle(vol: Sc1, phase: str = "burst", rate_scale: float = 1.0) -> QemuThrottle:
    """QEMU throttling for one sc1 phase held still: the burst rate (a bucket that never
    empties) or the baseline rate (an empty one), each I/O up to 1 MiB charged as 1 MiB.

    A 300 GiB sc1's baseline (3.5 MiB/s) is below QEMU_MIN_IOPS and is refused; its burst
    (23.4 MiB/s) is not. Refuses (UsageError) limits below the floors, like qemu_throttle.
    """
    if not isinstance(vol, Sc1):
        raise UsageError("sc1_phase_throttle needs an sc1 volume")
    if phase not in ("burst", "baseline"):
        raise UsageError(f"sc1 phase must be burst or baseline, got {phase!r}")
    rate_scale = _number("rate_scale", rate_scale)
    mib_s = (vol.burst_mib_s if phase == "burst" else vol.baseline_mib_s) * rate_scale
    throttle = dict(iops_total=round(mib_s), bps_total=round(mib_s * MIB),
                    iops_size=PUBLISHED[("sc1", "io_unit_kib")] * KIB,
                    emulates=f"sc1 {vol.size_gib:g} GiB, {phase} ({mib_s:.1f} MiB/s), "
                             f"rates x{rate_scale:g}")
    return _checked(vol, throttle, mib_s, mib_s * MIB, rate_scale)


def _checked(vol: Gp3 | Sc1, throttle: dict, iops: float, bps: float,
             rate_scale: float) -> QemuThrottle:
    needed = max(QEMU_MIN_IOPS / iops, QEMU_MIN_BPS / bps)
    if needed > 1:
        raise UsageError(
            f"QEMU limits of {iops:.1f} IOPS and {bps / 1e6:.2f} MB/s for {vol.volume_type} "
            f"{vol.size_gib:g} GiB are below the floor ({QEMU_MIN_IOPS} IOPS, "
            f"{QEMU_MIN_BPS / 1e6:g} MB/s): QEMU warns small limits can hang the guest; "
            f"use rate_scale >= {math.ceil(needed * rate_scale * 100) / 100:g}")
    for key in ("iops_total", "bps_total", "iops_total_max", "bps_total_max"):
        value = throttle.get(key, 0)
        if value > QEMU_VALUE_MAX or value * throttle.get(f"{key}_length", 1) > QEMU_VALUE_MAX:
            raise UsageError(f"QEMU refuses {key} = {value} (at most {QEMU_VALUE_MAX:g})")
    return QemuThrottle(**throttle)


# ----------------------------------------------------------------------------------------
# For the command line: one dict, one formatter
# ----------------------------------------------------------------------------------------


def describe(volume_type: str, size_gib: float, block_kib: float = 16,
             pattern: str = "random", iops: float | None = None,
             throughput_mib_s: float | None = None, rate_scale: float = 1.0,
             time_scale: float = 1.0) -> dict:
    """Limits, predictions and the QEMU mapping for one volume (for `python -m labs disk`)."""
    vol = volume(volume_type, size_gib, iops, throughput_mib_s)
    report: dict = {"volume_type": volume_type, "size_gib": vol.size_gib,
                    "block_kib": block_kib, "pattern": pattern}
    if isinstance(vol, Gp3):
        report["limits"] = {"iops": vol.iops, "throughput_mib_s": vol.throughput_mib_s}
        report["predictions"] = [predict(vol, block_kib, pattern).as_dict()]
    else:
        report["limits"] = {"baseline_mib_s": vol.baseline_mib_s,
                            "burst_mib_s": vol.burst_mib_s, "bucket_mib": vol.bucket_mib,
                            "burst_seconds": vol.burst_seconds(),
                            "refill_seconds": vol.refill_seconds()}
        report["predictions"] = [predict(vol, block_kib, pattern, phase).as_dict()
                                 for phase in ("burst", "baseline")]
    try:
        throttle = qemu_throttle(vol, rate_scale, time_scale)
        report["qemu"] = {"options": throttle.options(), "emulates": throttle.emulates,
                          "predicted_iops": throttle.predicted_iops(round(block_kib * KIB)),
                          "burst_seconds": throttle.burst_seconds}
    except UsageError as refusal:
        report["qemu_refused"] = str(refusal)
    return report


def format_description(report: dict) -> str:
    """The `describe` dict as a few lines of text."""
    lines = [f"{report['volume_type']} {report['size_gib']:g} GiB, {report['pattern']} "
             f"{report['block_kib']:g} KiB I/O"]
    limits = report["limits"]
    if report["volume_type"] == "sc1":
        lines.append(f"  baseline {limits['baseline_mib_s']:.2f} MiB/s, burst "
                     f"{limits['burst_mib_s']:.2f} MiB/s, bucket {limits['bucket_mib']:,.0f} MiB "
                     f"(full burst {limits['burst_seconds'] / 3600:.1f} h)")
    else:
        lines.append(f"  {limits['iops']:,.0f} IOPS, {limits['throughput_mib_s']:g} MiB/s")
    for p in report["predictions"]:
        lines.append(f"  {p['phase']}: {p['iops']:,.1f} IOPS, {p['mib_s']:,.2f} MiB/s "
                     f"(limited by {p['limit']})")
    if "qemu" in report:
        q = report["qemu"]
        options = ",".join(f"{k}={v}" for k, v in q["options"].items())
        lines.append(f"  QEMU ({q['emulates']}): {options}")
        lines.append(f"  QEMU predicts {q['predicted_iops']:,.1f} IOPS after any burst")
    else:
        lines.append(f"  QEMU: {report['qemu_refused']}")
    return "\n".join(lines)
