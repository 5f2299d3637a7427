"""Flash drives and Little's law: the other half of the Device speed chapter. Pure and fast.

An SSD has no arm and no platter: an operation costs about the same wherever it lands. What
it has instead is parallelism: several channels (each with its dies) work at once, so one
request at a time (queue depth 1) leaves most of the drive idle. The model, stated:

    IOPS(qd) = min( min(qd, channels) / latency,  bandwidth / block size )

- while qd < channels, every request in flight has a free channel: IOPS grows with qd and
  each request still takes `latency`;
- past `channels`, requests wait for a channel: IOPS stops growing and the time a request
  spends (Little's law: qd / IOPS) grows with qd;
- large blocks hit the bandwidth cap first.

It is a straight-line model with a hard corner; real drives bend more smoothly. None of
its parameters is a published figure: pass your drive's (or a problem's) numbers.

Little's law (for any stable system, averages over a long run): in flight = rate x time
in the system. For storage: queue depth = IOPS x latency.
"""

from __future__ import annotations

from dataclasses import dataclass

from labs.errors import UsageError
from labs.models.checks import positive as _positive

MB = 1_000_000




# ----------------------------------------------------------------------------------------
# Little's law
# ----------------------------------------------------------------------------------------


def iops_from(queue_depth: float, latency_ms: float) -> float:
    """IOPS = queue depth / latency."""
    return _positive("queue depth", queue_depth) / (_positive("latency_ms", latency_ms) / 1000)


def latency_ms_from(queue_depth: float, iops: float) -> float:
    """Latency = queue depth / IOPS."""
    return _positive("queue depth", queue_depth) / _positive("iops", iops) * 1000


def queue_depth_from(iops: float, latency_ms: float) -> float:
    """Queue depth (I/Os in flight) = IOPS x latency."""
    return _positive("iops", iops) * _positive("latency_ms", latency_ms) / 1000


# ----------------------------------------------------------------------------------------
# The SSD
# ----------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Ssd:
    """Per-operation service times, independent channels, and a bandwidth cap."""

    read_latency_us: float
    write_latency_us: float
    channels: int
    bandwidth_mb_s: float
    name: str = "ssd"

    def __post_init__(self) -> None:
        _positive("read_latency_us", self.read_latency_us)
        _positive("write_latency_us", self.write_latency_us)
        _positive("bandwidth_mb_s", self.bandwidth_mb_s)
        if isinstance(self.channels, bool) or not isinstance(self.channels, int) \
                or self.channels < 1:
            raise UsageError(f"channels must be a whole number of at least 1, "
                             f"got {self.channels!r}")

    def service_us(self, read_fraction: float = 1.0) -> float:
        """Mean time one channel spends on one operation of the given read/write mix."""
        if not isinstance(read_fraction, (int, float)) or not 0.0 <= read_fraction <= 1.0:
            raise UsageError(f"read fraction must be between 0 and 1, got {read_fraction!r}")
        return read_fraction * self.read_latency_us + (1 - read_fraction) * self.write_latency_us


@dataclass(frozen=True)
class SsdEstimate:
    queue_depth: float
    block_bytes: float
    iops: float
    limit: str  # "queue depth", "channels" or "bandwidth": what holds IOPS down

    @property
    def throughput_mb_s(self) -> float:
        return self.iops * self.block_bytes / MB

    @property
    def latency_ms(self) -> float:
        """Time in the drive per request, by Little's law (includes waiting for a channel)."""
        return latency_ms_from(self.queue_depth, self.iops)

    def as_dict(self) -> dict:
        return {"queue_depth": self.queue_depth, "block_bytes": self.block_bytes,
                "iops": self.iops, "throughput_mb_s": self.throughput_mb_s,
                "latency_ms": self.latency_ms, "limit": self.limit}


def ssd_iops(ssd: Ssd, queue_depth: float, block_bytes: float = 4096,
             read_fraction: float = 1.0) -> SsdEstimate:
    """IOPS at a queue depth: min(min(qd, channels) / latency, bandwidth / block)."""
    queue_depth = _positive("queue depth", queue_depth)
    block_bytes = _positive("block size (bytes)", block_bytes)
    service_s = ssd.service_us(read_fraction) / 1e6
    busy = min(queue_depth, ssd.channels)
    by_parallelism = busy / service_s
    by_bandwidth = ssd.bandwidth_mb_s * MB / block_bytes
    if by_bandwidth < by_parallelism:
        return SsdEstimate(queue_depth, block_bytes, by_bandwidth, "bandwidth")
    limit = "queue depth" if queue_depth < ssd.channels else "channels"
    return SsdEstimate(queue_depth, block_bytes, by_parallelism, limit)


def saturation_queue_depth(ssd: Ssd, block_bytes: float = 4096,
                           read_fraction: float = 1.0) -> float:
    """The smallest queue depth that reaches the drive's top IOPS for this block size."""
    block_bytes = _positive("block size (bytes)", block_bytes)
    service_s = ssd.service_us(read_fraction) / 1e6
    top = min(ssd.channels / service_s, ssd.bandwidth_mb_s * MB / block_bytes)
    return top * service_s  # Little's law at the corner, where no request waits yet


def queue_depth_curve(ssd: Ssd, block_bytes: float = 4096, depths: list[float] | None = None,
                      read_fraction: float = 1.0) -> list[dict]:
    """`ssd_iops` at each queue depth (default 1, 2, 4 ... 256): a chart's rows."""
    depths = depths if depths is not None else [2 ** k for k in range(9)]
    return [ssd_iops(ssd, depth, block_bytes, read_fraction).as_dict() for depth in depths]
