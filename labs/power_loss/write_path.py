"""The write path's model: how many acknowledged writes a fault takes (pure).

A write is acknowledged at some layer (the application's buffer, the page cache, the
device) and is durable once it is on the device's media. Between the two it sits in layers
that a fault may wipe. Which layers a fault wipes:

    process crash (kill -9)   the application's own memory only
    kernel crash              all of memory (the page cache too); the device keeps its cache
    power cut                 all of memory, and the device's write cache if it is volatile

Each way of writing (a `Policy`) holds an acknowledged write in each volatile layer for a
time between a shortest and a longest hold, set by Linux's and ext4's defaults:

    page cache    written back once older than dirty_expire_centisecs (30 s) by the flusher,
                  which wakes every dirty_writeback_centisecs (5 s): 30 to 35 s
    device cache  until the next FLUSH: after an fsync at once; otherwise ext4's next
                  journal commit (commit=5 s by default) sends one: 0 to 5 s
    a background  the application's own flusher (PostgreSQL's WAL writer, InnoDB's
    flush every T once-a-second log flush): 0 to T

By Little's law the writes a cut finds in the volatile layers are, on average, the write
rate times the mean hold; at most the rate times the longest hold (the *window*). The
numbers are the kernel's documented defaults (Documentation/admin-guide/sysctl/vm.rst;
Documentation/admin-guide/ext4.rst), not measurements.
"""

from __future__ import annotations

from dataclasses import dataclass

from labs.errors import UsageError

FAULTS = ("process crash", "kernel crash", "power cut")
DEVICE_CACHES = ("volatile", "power-loss protected")

# Linux's page-cache writeback and ext4's journal commit, their defaults (seconds).
DIRTY_EXPIRE_S = 30.0
WRITEBACK_PERIOD_S = 5.0
JOURNAL_COMMIT_S = 5.0


@dataclass(frozen=True)
class Hold:
    """How long an acknowledged write stays in one volatile layer (seconds).

    `per_interval` counts the application's background flush interval T: a hold of
    0 to T is Hold(0, 0, per_interval=1)."""

    layer: str
    shortest_s: float
    longest_s: float
    per_interval: float = 0.0

    def mean_s(self, interval_s: float) -> float:
        return (self.shortest_s + self.longest_s + self.per_interval * interval_s) / 2

    def longest(self, interval_s: float) -> float:
        return self.longest_s + self.per_interval * interval_s


PAGE_CACHE = Hold("page cache", DIRTY_EXPIRE_S, DIRTY_EXPIRE_S + WRITEBACK_PERIOD_S)
DEVICE_CACHE = Hold("device cache", 0.0, JOURNAL_COMMIT_S)
APP_BUFFER = Hold("application buffer", 0.0, 0.0, per_interval=1.0)
# A write the application hands to the kernel at once but flushes only every T.
PAGE_CACHE_UNTIL_FLUSH = Hold("page cache", 0.0, 0.0, per_interval=1.0)


@dataclass(frozen=True)
class Policy:
    """One way of writing: the layers an acknowledged write may still be volatile in."""

    name: str
    example: str
    holds: tuple[Hold, ...]

    def volatile_holds(self, fault: str, device_cache: str) -> tuple[Hold, ...]:
        """The holds a fault wipes: the layers it loses, of those this write waits in."""
        lost = layers_lost(fault, device_cache)
        return tuple(hold for hold in self.holds if hold.layer in lost)


POLICIES = (
    Policy("write() only", "a log file written with no fsync", (PAGE_CACHE, DEVICE_CACHE)),
    Policy("write() + fsync()", "PostgreSQL, synchronous_commit = on", ()),
    Policy("O_DIRECT, no flush", "an engine that skips the page cache, never flushing",
           (DEVICE_CACHE,)),
    Policy("O_DIRECT | O_DSYNC", "InnoDB's log with innodb_flush_method = O_DSYNC", ()),
    Policy("acknowledge, flush every T", "PostgreSQL, synchronous_commit = off",
           (APP_BUFFER,)),
    Policy("write() each, fsync every T", "InnoDB, innodb_flush_log_at_trx_commit = 2",
           (PAGE_CACHE_UNTIL_FLUSH,)),
)


def layers_lost(fault: str, device_cache: str) -> frozenset[str]:
    """The layers whose contents a fault wipes."""
    if fault not in FAULTS:
        raise UsageError(f"fault {fault!r}: not one of {', '.join(FAULTS)}")
    if device_cache not in DEVICE_CACHES:
        raise UsageError(f"device cache {device_cache!r}: not one of {', '.join(DEVICE_CACHES)}")
    lost = {"application buffer"}
    if fault in ("kernel crash", "power cut"):
        lost.add("page cache")
    if fault == "power cut" and device_cache == "volatile":
        lost.add("device cache")
    return frozenset(lost)


def policy(name: str) -> Policy:
    for candidate in POLICIES:
        if candidate.name == name:
            return candidate
    raise UsageError(f"policy {name!r}: not one of {', '.join(p.name for p in POLICIES)}")


def window_s(name: str, fault: str, device_cache: str, interval_s: float) -> float:
    """The longest an acknowledged write can stay where this fault wipes it (0: never)."""
    holds = policy(name).volatile_holds(fault, device_cache)
    return sum(hold.longest(interval_s) for hold in holds)


def mean_exposure_s(name: str, fault: str, device_cache: str, interval_s: float) -> float:
    """The mean time an acknowledged write stays where this fault wipes it."""
    holds = policy(name).volatile_holds(fault, device_cache)
    return sum(hold.mean_s(interval_s) for hold in holds)


def expected_lost(writes_per_s: float, name: str, fault: str, device_cache: str,
                  interval_s: float) -> float:
    """Acknowledged writes a fault at a random moment takes, on average (Little's law)."""
    if writes_per_s < 0 or interval_s < 0:
        raise UsageError("the write rate and the flush interval must not be negative")
    return writes_per_s * mean_exposure_s(name, fault, device_cache, interval_s)


def most_lost(writes_per_s: float, name: str, fault: str, device_cache: str,
              interval_s: float) -> float:
    """The most acknowledged writes one fault can take: the rate times the window."""
    if writes_per_s < 0 or interval_s < 0:
        raise UsageError("the write rate and the flush interval must not be negative")
    return writes_per_s * window_s(name, fault, device_cache, interval_s)
