"""Hard disk drives: the model behind the Device speed chapter. Pure, fast, seeded.

One I/O on a disk costs T = T_seek + T_rotation + T_transfer: move the arm to the track,
wait for the sector to come round, then read it. Small random I/O pays the first two every
time; a long sequential read pays them once. That is the chapter in one line, and this module
turns it into numbers.

Source: OSTEP ("Operating Systems: Three Easy Pieces" v1.10), chapter 37 "Hard Disk Drives".
The two preset drives are its figure 37.5; the random and sequential rates of section 37.4
(summarised in its figure 37.6) are what tests/test_disk_model.py checks this module against.
Both are in data/reference/ostep-drives.csv.

Units: MB is 10^6 bytes and MB/s is what drive makers (and OSTEP) print; times are in ms.

The model, stated once (simplifications a reader can check against the code):

- One surface: a "track" is a cylinder; logical blocks (LBAs) fill track after track, and
  every track holds the same bytes (no zoning): bytes_per_track = peak transfer rate x one
  revolution, so reading a whole track takes exactly one revolution at the drive's peak rate.
- Track skew: each track starts `track_skew` of a revolution later than the one before,
  by default exactly the time of a one-track seek, so a sequential stream that moves to the
  next track finds its next sector just arriving (no lost revolution). A transfer that runs
  into the next track costs no extra time. Set track_skew=0 to see the lost revolutions.
- Seek time by distance: 0 on the same track, else settle_ms + c * d**p, where d is the
  distance as a fraction of a full stroke. c is calibrated so that the mean over two
  independent uniform positions equals the drive's average seek; for uniform positions
  E[d**p] = 2 / ((p + 1)(p + 2)), which is 1/3 for p = 1 (OSTEP's aside: the average seek
  distance is a third of the full stroke). The presets use p = 1 and no settle time, so a
  full stroke costs 3x the average seek: the top of OSTEP's "two or three times longer".
- Rotation: the platter turns at a constant rate; the head's angle at time t is known, so for
  a given request sequence the rotational delay is the actual angle still to turn, and the
  average over random requests is half a revolution.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from labs.errors import UsageError
from labs.models.checks import positive as _positive
from labs.models.checks import whole as _whole

MB = 1_000_000  # OSTEP's and drive makers' megabyte
POLICIES = ("fifo", "sstf", "sptf")






def mean_distance_power(exponent: float) -> float:
    """E[d**p] for d = |x - y|, x and y independent and uniform on [0, 1] (density 2(1 - d))."""
    return 2.0 / ((exponent + 1.0) * (exponent + 2.0))


@dataclass(frozen=True)
class Drive:
    """A disk drive as the model sees it. `source` says where its figures come from."""

    name: str
    rpm: float
    avg_seek_ms: float
    transfer_mb_s: float
    capacity_gb: float
    settle_ms: float = 0.0
    seek_exponent: float = 1.0
    sector_bytes: int = 512
    track_skew: float | None = None  # fraction of a revolution; None: one track's seek time
    source: str = ""

    def __post_init__(self) -> None:
        for name in ("rpm", "avg_seek_ms", "transfer_mb_s", "capacity_gb"):
            _positive(f"{self.name}: {name}", getattr(self, name))
        settle = self.settle_ms
        if not isinstance(settle, (int, float)) or not 0 <= settle < self.avg_seek_ms:
            raise UsageError(f"{self.name}: settle_ms must be in [0, avg_seek_ms), got {settle!r}")
        if not isinstance(self.seek_exponent, (int, float)) or not 0 < self.seek_exponent <= 2:
            raise UsageError(f"{self.name}: seek_exponent must be in (0, 2], "
                             f"got {self.seek_exponent!r}")
        _whole(f"{self.name}: sector_bytes", self.sector_bytes, 1)
        skew = self.track_skew
        if skew is not None and (not isinstance(skew, (int, float)) or not 0 <= skew < 1):
            raise UsageError(f"{self.name}: track_skew must be in [0, 1), got {skew!r}")
        if self.capacity_gb * 1e9 < self.bytes_per_track:
            raise UsageError(f"{self.name}: capacity is smaller than one track")

    @property
    def rotation_ms(self) -> float:
        return 60_000.0 / self.rpm

    @property
    def avg_rotation_ms(self) -> float:
        """Half a revolution: the mean wait for a sector at a random angle."""
        return self.rotation_ms / 2

    @property
    def bytes_per_track(self) -> float:
        return self.transfer_mb_s * MB * self.rotation_ms / 1000.0

    @property
    def sectors(self) -> int:
        """Addressable sectors (LBAs 0 .. sectors - 1)."""
        return int(round(self.capacity_gb * 1e9, 3) // self.sector_bytes)

    @property
    def tracks(self) -> int:
        return math.ceil(round(self.capacity_gb * 1e9 / self.bytes_per_track, 9))

    @property
    def seek_coefficient_ms(self) -> float:
        """c in settle + c * d**p, so that random seeks average avg_seek_ms."""
        return (self.avg_seek_ms - self.settle_ms) / mean_distance_power(self.seek_exponent)

    @property
    def full_stroke_ms(self) -> float:
        return self.settle_ms + self.seek_coefficient_ms

    @property
    def skew_fraction(self) -> float:
        """How much later (in revolutions) each track starts than the one before."""
        if self.track_skew is not None:
            return float(self.track_skew)
        one_track = 1 / max(self.tracks - 1, 1)
        seek = self.settle_ms + self.seek_coefficient_ms * one_track ** self.seek_exponent
        return (seek / self.rotation_ms) % 1.0


CHEETAH_15K5 = Drive("Cheetah 15K.5", rpm=15_000, avg_seek_ms=4.0, transfer_mb_s=125.0,
                     capacity_gb=300.0,
                     source="OSTEP v1.10, chapter 37 (Hard Disk Drives), figure 37.5")
BARRACUDA = Drive("Barracuda", rpm=7_200, avg_seek_ms=9.0, transfer_mb_s=105.0,
                  capacity_gb=1_000.0,
                  source="OSTEP v1.10, chapter 37 (Hard Disk Drives), figure 37.5")
# A disk small enough to work problems by hand, after OSTEP's homework simulator: 10 tracks
# of 12 sectors, 12 ms per revolution (1 ms per sector), 1 ms per track of seek.
TOY = Drive("toy", rpm=5_000, avg_seek_ms=3.0, transfer_mb_s=0.512, capacity_gb=61_440 / 1e9,
            track_skew=0.0, source="this project: a hand-sized disk (not a real drive)")
PRESETS = {"cheetah": CHEETAH_15K5, "barracuda": BARRACUDA, "toy": TOY}


def get_drive(drive: Drive | str) -> Drive:
    """A Drive, or a preset by name (cheetah, barracuda, toy)."""
    if isinstance(drive, Drive):
        return drive
    try:
        return PRESETS[str(drive).lower()]
    except KeyError:
        raise UsageError(f"unknown drive {drive!r}; choose one of "
                         f"{', '.join(PRESETS)}") from None


# ----------------------------------------------------------------------------------------
# The three components
# ----------------------------------------------------------------------------------------


def seek_ms_for_fraction(drive: Drive, fraction: float) -> float:
    """Seek time for a move of `fraction` of the full stroke (0 = stay on the track)."""
    if not 0.0 <= fraction <= 1.0:
        raise UsageError(f"seek distance must be a fraction of the stroke in [0, 1], "
                         f"got {fraction}")
    if fraction == 0.0:
        return 0.0
    return drive.settle_ms + drive.seek_coefficient_ms * fraction ** drive.seek_exponent


def seek_ms(drive: Drive, from_track: int, to_track: int) -> float:
    """Seek time between two tracks."""
    span = max(drive.tracks - 1, 1)
    return seek_ms_for_fraction(drive, abs(int(to_track) - int(from_track)) / span)


def transfer_ms(drive: Drive, nbytes: float) -> float:
    """Time to read or write `nbytes` at the drive's peak rate, once positioned."""
    return nbytes / (drive.transfer_mb_s * MB) * 1000.0


def _position(drive: Drive, lba: int) -> tuple[int, float]:
    """(track, fraction of the track before sector `lba`); float noise at a track's end
    (11.9999999 for 12) counts as the next track's start."""
    position = lba * drive.sector_bytes / drive.bytes_per_track
    track = math.floor(position + 1e-9)
    return track, max(position - track, 0.0)


def track_of(drive: Drive, lba: int) -> int:
    return _position(drive, lba)[0]


def angle_of(drive: Drive, lba: int) -> float:
    """Where sector `lba` starts, as a fraction of a revolution (track 0 starts at 0)."""
    track, into = _position(drive, lba)
    return (into + track * drive.skew_fraction) % 1.0


def rotation_wait_ms(drive: Drive, head_angle: float, target_angle: float) -> float:
    """Time for the platter to carry `target_angle` under a head now at `head_angle`."""
    turn = (target_angle - head_angle) % 1.0
    if turn < 1e-6 or turn > 1.0 - 1e-6:  # right under the head, give or take float noise
        turn = 0.0
    return turn * drive.rotation_ms


# ----------------------------------------------------------------------------------------
# Random against sequential (OSTEP section 37.4, figure 37.6)
# ----------------------------------------------------------------------------------------


@dataclass(frozen=True)
class IoEstimate:
    """Average cost of one I/O of `nbytes` and the rate it gives, queue depth 1."""

    nbytes: float
    seek_ms: float
    rotation_ms: float
    transfer_ms: float

    @property
    def latency_ms(self) -> float:
        return self.seek_ms + self.rotation_ms + self.transfer_ms

    @property
    def iops(self) -> float:
        return 1000.0 / self.latency_ms

    @property
    def throughput_mb_s(self) -> float:
        return self.nbytes / MB * self.iops

    def as_dict(self) -> dict[str, float]:
        return {"bytes": self.nbytes, "seek_ms": self.seek_ms, "rotation_ms": self.rotation_ms,
                "transfer_ms": self.transfer_ms, "latency_ms": self.latency_ms,
                "iops": self.iops, "throughput_mb_s": self.throughput_mb_s}


def random_io(drive: Drive | str, block_bytes: float) -> IoEstimate:
    """One small read at a random place: an average seek, half a turn, then the transfer."""
    drive = get_drive(drive)
    block_bytes = _positive("block size (bytes)", block_bytes)
    return IoEstimate(block_bytes, drive.avg_seek_ms, drive.avg_rotation_ms,
                      transfer_ms(drive, block_bytes))


def sequential_io(drive: Drive | str, total_bytes: float) -> IoEstimate:
    """One long read: a single seek and half a turn, then `total_bytes` at the peak rate."""
    return random_io(drive, total_bytes)  # the same three terms; only the size differs


def random_vs_sequential(drive: Drive | str, block_bytes: float = 4096,
                         sequential_bytes: float = 100 * MB) -> dict:
    """OSTEP's comparison: random `block_bytes` reads against one `sequential_bytes` read."""
    drive = get_drive(drive)
    random_estimate = random_io(drive, block_bytes)
    sequential_estimate = sequential_io(drive, sequential_bytes)
    return {
        "drive": drive.name,
        "random": random_estimate.as_dict(),
        "sequential": sequential_estimate.as_dict(),
        "streaming_mb_s": drive.transfer_mb_s,  # the limit of ever longer sequential reads
        "ratio": sequential_estimate.throughput_mb_s / random_estimate.throughput_mb_s,
    }


# ----------------------------------------------------------------------------------------
# A queue of requests served by FIFO, SSTF or SPTF
# ----------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Request:
    lba: int
    sectors: int = 8


@dataclass(frozen=True)
class Served:
    """One request as the drive served it (times in ms from the start of the run)."""

    index: int          # its place in the request list
    lba: int
    track: int
    admitted_ms: float  # when it entered the drive's queue
    start_ms: float     # when the drive began to serve it
    seek_ms: float
    rotate_ms: float
    transfer_ms: float

    @property
    def end_ms(self) -> float:
        return self.start_ms + self.seek_ms + self.rotate_ms + self.transfer_ms

    @property
    def response_ms(self) -> float:
        return self.end_ms - self.admitted_ms


@dataclass(frozen=True)
class Schedule:
    policy: str
    queue_depth: int
    served: tuple[Served, ...]

    @property
    def order(self) -> list[int]:
        return [s.index for s in self.served]

    @property
    def total_ms(self) -> float:
        return self.served[-1].end_ms if self.served else 0.0

    def totals(self) -> dict[str, float]:
        seek = sum(s.seek_ms for s in self.served)
        rotate = sum(s.rotate_ms for s in self.served)
        transfer = sum(s.transfer_ms for s in self.served)
        count = len(self.served)
        return {"requests": count, "seek_ms": seek, "rotate_ms": rotate,
                "transfer_ms": transfer, "total_ms": self.total_ms,
                "iops": count / self.total_ms * 1000.0 if self.total_ms else 0.0,
                "mean_response_ms": (sum(s.response_ms for s in self.served) / count
                                     if count else 0.0)}


def _check_requests(drive: Drive, requests: list[Request]) -> None:
    for i, request in enumerate(requests):
        _whole(f"request {i} sectors", request.sectors, 1)
        lba = _whole(f"request {i} lba", request.lba)
        if lba + request.sectors > drive.sectors:
            raise UsageError(f"request {i} (lba {lba}, {request.sectors} sectors) runs past "
                             f"the end of {drive.name} ({drive.sectors} sectors)")


def simulate(drive: Drive | str, requests: list[Request], policy: str = "fifo",
             queue_depth: int = 1, head_track: int = 0, head_angle: float = 0.0) -> Schedule:
    """Serve `requests` and say what each one cost.

    A closed loop, like a benchmark with `queue_depth` I/Os in flight: the first
    `queue_depth` requests are queued at time 0, and each completion admits the next one
    from the list. Among the queued requests the drive picks:

    - fifo: the oldest;
    - sstf (shortest seek first): the one on the nearest track;
    - sptf (shortest positioning time first): the one it can start soonest, seek plus
      rotation, which only the drive itself knows well (it knows where the head is).

    Ties go to the oldest request. `head_angle` is the head's starting angle as a fraction
    of a revolution, measured like `angle_of`.
    """
    drive = get_drive(drive)
    if policy not in POLICIES:
        raise UsageError(f"unknown policy {policy!r}; choose one of {', '.join(POLICIES)}")
    queue_depth = _whole("queue depth", queue_depth, 1)
    head_track = _whole("head track", head_track)
    if head_track >= drive.tracks:
        raise UsageError(f"head track {head_track} is past the last track ({drive.tracks - 1})")
    _check_requests(drive, requests)
    now = 0.0
    pending: list[tuple[int, float]] = []  # (index, admitted_ms)
    upcoming = 0
    served: list[Served] = []

    def angle_now(t_ms: float) -> float:
        return (head_angle + t_ms / drive.rotation_ms) % 1.0

    def positioning(index: int) -> tuple[float, float]:
        request = requests[index]
        seek = seek_ms(drive, head_track, track_of(drive, request.lba))
        rotate = rotation_wait_ms(drive, angle_now(now + seek), angle_of(drive, request.lba))
        return seek, rotate

    while upcoming < len(requests) or pending:
        while upcoming < len(requests) and len(pending) < queue_depth:
            pending.append((upcoming, now))
            upcoming += 1
        if policy == "fifo":
            pick = 0
        elif policy == "sstf":
            pick = min(range(len(pending)), key=lambda k: (
                abs(track_of(drive, requests[pending[k][0]].lba) - head_track), pending[k][0]))
        else:
            pick = min(range(len(pending)), key=lambda k: (
                round(sum(positioning(pending[k][0])), 9), pending[k][0]))
        index, admitted = pending.pop(pick)
        request = requests[index]
        seek, rotate = positioning(index)
        nbytes = request.sectors * drive.sector_bytes
        done = Served(index, request.lba, track_of(drive, request.lba), admitted, now, seek,
                      rotate, transfer_ms(drive, nbytes))
        served.append(done)
        now = done.end_ms
        head_track = track_of(drive, request.lba + request.sectors - 1)
    return Schedule(policy, queue_depth, tuple(served))


def random_requests(drive: Drive | str, count: int, rng: np.random.Generator | int,
                    sectors: int = 8) -> list[Request]:
    """`count` requests of `sectors` sectors at uniform random, block-aligned places.

    `rng` is a seeded numpy Generator or a seed, so every reader gets the same workload.
    """
    drive = get_drive(drive)
    count = _whole("request count", count)
    sectors = _whole("sectors per request", sectors, 1)
    if isinstance(rng, (int, np.integer)) and not isinstance(rng, bool):
        rng = np.random.default_rng(int(rng))
    if not isinstance(rng, np.random.Generator):
        raise UsageError("pass a seed or a seeded numpy Generator (np.random.default_rng(seed))")
    blocks = drive.sectors // sectors
    return [Request(int(b) * sectors, sectors) for b in rng.integers(0, blocks, size=count)]


def compare_policies(drive: Drive | str, requests: list[Request],
                     queue_depth: int) -> dict[str, dict[str, float]]:
    """Totals for every policy on the same requests and queue depth."""
    return {policy: simulate(drive, requests, policy, queue_depth).totals()
            for policy in POLICIES}


def queue_depth_sweep(drive: Drive | str, count: int, seed: int, depths: list[int],
                      sectors: int = 8) -> list[dict]:
    """IOPS of every policy at every queue depth, one seeded random workload (a chart's rows)."""
    requests = random_requests(drive, count, seed, sectors)
    return [{"queue_depth": depth, "policy": policy, **totals}
            for depth in depths
            for policy, totals in compare_policies(drive, requests, depth).items()]


# ----------------------------------------------------------------------------------------
# For the command line: one dict, one formatter
# ----------------------------------------------------------------------------------------


def describe(drive: Drive | str = "cheetah", block_bytes: float = 4096,
             sequential_bytes: float = 100 * MB) -> dict:
    """Everything the chapter prints about a drive, for `python -m labs disk` (and --json)."""
    drive = get_drive(drive)
    report = {
        "drive": drive.name, "source": drive.source, "rpm": drive.rpm,
        "capacity_gb": drive.capacity_gb, "avg_seek_ms": drive.avg_seek_ms,
        "full_stroke_ms": drive.full_stroke_ms, "settle_ms": drive.settle_ms,
        "seek_exponent": drive.seek_exponent, "rotation_ms": drive.rotation_ms,
        "avg_rotation_ms": drive.avg_rotation_ms, "transfer_mb_s": drive.transfer_mb_s,
        "tracks": drive.tracks,
    }
    report.update(random_vs_sequential(drive, block_bytes, sequential_bytes))
    return report


def format_description(report: dict) -> str:
    """The `describe` dict as a few lines of text."""
    rnd, seq = report["random"], report["sequential"]
    return "\n".join([
        f"{report['drive']}: {report['rpm']:,.0f} RPM, average seek {report['avg_seek_ms']:g} ms "
        f"(full stroke {report['full_stroke_ms']:.1f} ms), peak {report['transfer_mb_s']:g} MB/s"
        f"  [{report['source']}]",
        f"random {rnd['bytes'] / 1024:g} KiB: seek {rnd['seek_ms']:.2f} + rotation "
        f"{rnd['rotation_ms']:.2f} + transfer {rnd['transfer_ms']:.3f} = {rnd['latency_ms']:.2f} ms"
        f" -> {rnd['iops']:.0f} IOPS, {rnd['throughput_mb_s']:.2f} MB/s",
        f"sequential {seq['bytes'] / MB:g} MB: {seq['latency_ms']:.0f} ms -> "
        f"{seq['throughput_mb_s']:.1f} MB/s (streaming limit {report['streaming_mb_s']:g} MB/s)",
        f"sequential / random: {report['ratio']:.0f}x",
    ])
