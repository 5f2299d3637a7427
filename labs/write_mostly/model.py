"""What the write-mostly chapter predicts, as functions (pure: no host, no run).

The slow leg at queue depth 1: an operations-per-second cap of C forces at least 1/C seconds
between operations, and a delay of d adds d to each one, so

    slow-leg latency  ≈  1000 / C  +  d            (milliseconds; C in I/O per second)

and a mirror without write-behind completes a write only when the slow leg has it, so its
write latency is about the same. That sum assumes the two parts queue one after the other;
a cap that counts from the last operation it let through can overlap with the delay instead.

Write-behind lets up to N writes wait for the slow leg; a writer at W writes per second
against a slow leg that drains S per second fills it in

    fill time  =  N / (W − S)                      (never, if W ≤ S)

after which the write that finds it full waits for the whole backlog: about N / S seconds.
When it completes the backlog is empty, so the next writes go behind again until it is full:
the writer runs in cycles of a fast burst and one long wait, and averages the slow leg's S
writes per second. Those writes behind are the ones a power cut of the instance takes with
the fast leg: at most N, N/2 at a random moment of the cycle. A resync (or
streaming a node's data from its peers) moves `size` bytes at a steady rate: size / rate.
"""

from __future__ import annotations

import math

from labs.errors import UsageError

MD_SPEED_LIMIT_MAX_KIB_S = 200_000  # md's default /proc/sys/dev/raid/speed_limit_max


def slow_leg_latency_ms(cap_iops: float | None, delay_ms: float, device_ms: float = 0.0
                        ) -> float:
    """Latency of one operation on the slow leg at queue depth 1: the cap's spacing (none
    without a cap), plus the delay, plus what the device underneath takes (`device_ms`)."""
    if delay_ms < 0 or device_ms < 0:
        raise UsageError("delay and device time must not be negative")
    spacing = 1000.0 / cap_iops if cap_iops else 0.0
    if cap_iops is not None and cap_iops < 0:
        raise UsageError(f"cap of {cap_iops} I/O per second: must not be negative")
    return spacing + delay_ms + device_ms


def backlog_fill_s(depth: int, write_iops: float, slow_iops: float) -> float:
    """Seconds until `depth` writes wait for the slow leg (math.inf if it keeps up)."""
    if depth <= 0 or slow_iops <= 0 or write_iops <= 0:
        raise UsageError("depth, write rate and slow-leg rate must be positive")
    if write_iops <= slow_iops:
        return math.inf
    return depth / (write_iops - slow_iops)


def backlog_stall_s(depth: int, slow_iops: float) -> float:
    """How long the write that finds the backlog full waits: the whole backlog drains first."""
    if depth <= 0 or slow_iops <= 0:
        raise UsageError("depth and slow-leg rate must be positive")
    return depth / slow_iops


def backlog_sustained_iops(depth: int, write_iops: float, slow_iops: float) -> float:
    """The writer's average rate once the backlog fills again and again: each cycle puts
    W·N/(W − S) writes behind in N/(W − S) seconds, then one write waits N/S seconds for the
    whole backlog to drain. That averages S (plus one write per cycle), never more."""
    fill = backlog_fill_s(depth, write_iops, slow_iops)
    if math.isinf(fill):
        return write_iops
    return (write_iops * fill + 1) / (fill + backlog_stall_s(depth, slow_iops))


HELD_TO_THE_SLOW_PACE = 0.95  # a writer this close to the slow leg's rate is held to it


def power_cut_lost(write_behind: int | None, writer_iops: float, slow_iops: float | None,
                   slow_latency_ms: float) -> tuple[int, float]:
    """Acknowledged writes a power cut takes with the fast leg: (the most, the expected).

    Without write-behind none: every write waited for the slow leg. With a limit of N, at
    most the N writes md holds behind. A writer that outruns the slow leg is held to its
    pace (its measured rate within 5 % of the slow leg's S, or above): the backlog fills
    from 0 to N and drains from N to 0, both at a steady pace, so a moment chosen at random
    finds N/2 behind. A slower writer (W < S) never fills it: each write is behind only for
    the slow leg's latency, so about W × latency are behind at any moment (Little's law).
    """
    if not write_behind:
        return 0, 0.0
    if write_behind < 0 or writer_iops < 0 or slow_latency_ms < 0:
        raise UsageError("write-behind limit, writer rate and latency must not be negative")
    if slow_iops and writer_iops >= HELD_TO_THE_SLOW_PACE * slow_iops:
        return write_behind, write_behind / 2
    return write_behind, min(write_behind, writer_iops * slow_latency_ms / 1000)


def resync_rate_mib_s(cap_iops: float | None, request_kib: float,
                      ceiling_kib_s: float = MD_SPEED_LIMIT_MAX_KIB_S) -> float:
    """The rate a resync reaches: md's ceiling, unless the slow leg's cap times the size of
    the requests it is read in is lower."""
    ceiling = ceiling_kib_s / 1024
    if not cap_iops or request_kib <= 0:
        return ceiling
    return min(ceiling, cap_iops * request_kib / 1024)


def transfer_hours(size_bytes: float, rate_mib_s: float) -> float:
    """Hours to move size_bytes at a steady rate_mib_s (resync or streaming from peers)."""
    if rate_mib_s <= 0:
        raise UsageError(f"transfer rate must be positive, not {rate_mib_s}")
    return size_bytes / (rate_mib_s * 1024 * 1024) / 3600


def implied_rate_mib_s(size_bytes: float, hours: float) -> float:
    """The steady rate that moves size_bytes in `hours` (e.g. a reported recovery time)."""
    if hours <= 0:
        raise UsageError(f"hours must be positive, not {hours}")
    return size_bytes / (hours * 3600) / (1024 * 1024)


def relative_error(model: float, measured: float) -> float:
    """(model − measured) / measured: + when the model predicts more than was measured."""
    if measured == 0:
        raise UsageError("cannot compare a model with a measurement of 0")
    return (model - measured) / measured
