"""The write path's model: how many acknowledged writes a fault takes (pure).

A write is acknowledged at some layer (the application's buffer, the page cache, the
device) and is durable once it is on the device's media. Between the two it sits in layers
that a fault may wipe. Which layers a fault wipes:

    process crash (kill -9)   the application's own memory only
    kernel crash              all of memory (the page cache too); the device keeps its cache
    power cut                 all of memory, and the device's write cache if it is volatile

Each way of writing (a `Policy`) can leave an acknowledged write in each volatile layer for
at most a time set by Linux's and ext4's defaults:

    page cache    the flusher wakes every dirty_writeback_centisecs (5 s) and writes back a
                  file whose oldest dirty page is older than dirty_expire_centisecs (30 s),
                  with all its dirty pages: at most 35 s (the age is kept per file)
    device cache  until the next FLUSH: after an fsync at once; otherwise ext4's next
                  journal commit (commit=5 s by default) sends one: at most 5 s
    a background  the application's own flusher (PostgreSQL's WAL writer, InnoDB's
    flush every T once-a-second log flush): at most T

The most one fault can take is the write rate times the sum of those holds (the *window*).
On average it takes less (Little's law: the rate times the mean hold), but how soon a
device empties its cache by itself is the device's own business, so the model gives the
bound. The numbers are the kernel's documented defaults (Documentation/admin-guide/sysctl/
vm.rst; Documentation/admin-guide/ext4.rst), not measurements.
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
    """The longest an acknowledged write can stay in one volatile layer: longest_s, plus
    per_interval times the application's background flush interval T."""

    layer: str
    longest_s: float
    per_interval: float = 0.0

    def longest(self, interval_s: float) -> float:
        return self.longest_s + self.per_interval * interval_s


PAGE_CACHE = Hold("page cache", DIRTY_EXPIRE_S + WRITEBACK_PERIOD_S)
DEVICE_CACHE = Hold("device cache", JOURNAL_COMMIT_S)
APP_BUFFER = Hold("application buffer", 0.0, per_interval=1.0)
# A write the application hands to the kernel at once but flushes only every T.
PAGE_CACHE_UNTIL_FLUSH = Hold("page cache", 0.0, per_interval=1.0)


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
    # Overwrites of space the file already owns: a write that grows the file also changes
    # metadata, which waits in the journal (in memory) for up to a journal commit.
    Policy("O_DIRECT overwrite, no flush", "an engine that skips the page cache and never "
           "flushes", (DEVICE_CACHE,)),
    Policy("O_DIRECT | O_DSYNC", "a log opened with both flags", ()),
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


def most_lost(writes_per_s: float, name: str, fault: str, device_cache: str,
              interval_s: float) -> float:
    """The most acknowledged writes one fault can take: the rate times the window."""
    if writes_per_s < 0 or interval_s < 0:
        raise UsageError("the write rate and the flush interval must not be negative")
    return writes_per_s * window_s(name, fault, device_cache, interval_s)
