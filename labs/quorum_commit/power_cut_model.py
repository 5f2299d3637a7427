"""What a power cut of every copy at once can take from a quorum commit, when the primary's
disk is lost with it (pure).

The question is the one a failover asks: is every acknowledged commit on the disk of some
standby? A commit is exposed from the moment its client hears "done" until its WAL is on a
standby's disk; a cut in that window can take it. The WAL leaves the primary once the primary
has flushed it (a primary sends only flushed WAL); it is on the nearest standby's disk after
its way there and a flush. How long the window is depends on what the primary waited for
(`synchronous_commit`), with the standbys of synchronous_standby_names:

    on, remote_apply  the k standbys flushed before the answer: no window
    remote_write      the answer comes with the k-th standby's report that it has written the
                      WAL (to its operating system, not yet flushed), one k-th round trip
                      after the WAL left: exposed for whatever of the nearest standby's way
                      and flush outlasts that
    local             the answer comes once the primary flushed, as the WAL leaves for the
                      standbys: exposed for the way to the nearest standby and a flush
    off               the answer comes before the primary flushed; its WAL writer flushes
                      within three wal_writer_delay, 600 ms by default (the manual's chapter
                      on asynchronous commit): that, on top of local's window

The way to a standby is half the round trip on a network that delays both ways. The lab's
netem delays only what a standby sends (labs/infra/netns.py), so there the WAL's way out is
half the round trip without the added delay.

The commits a cut can take: the acknowledgement rate times the window. For `off` that is a
ceiling (the manual's worst case); for `local` and `remote_write` an estimate (the median
flush).
"""

from __future__ import annotations

from labs.errors import UsageError

# PostgreSQL's bound on how long an asynchronous commit waits for its flush: three
# wal_writer_delay (200 ms by default).
ASYNC_FLUSH_WINDOW_MS = 3 * 200.0
SETTINGS = ("off", "local", "remote_write", "on", "remote_apply")


def window_ms(setting: str, to_standby_ms: float, kth_rtt_ms: float, flush_ms: float) -> float:
    """How long an acknowledged commit can be on no standby's disk (0: never).

    to_standby_ms: the WAL's way to the nearest standby; kth_rtt_ms: the round trip to the
    k-th nearest (the one whose answer the commit waits for); flush_ms: a standby's write and
    flush."""
    if setting not in SETTINGS:
        raise UsageError(f"synchronous_commit={setting!r}: not one of {', '.join(SETTINGS)}")
    on_nearest_disk_ms = to_standby_ms + flush_ms  # after the WAL left the primary
    if setting in ("on", "remote_apply"):
        return 0.0
    if setting == "remote_write":
        return max(0.0, on_nearest_disk_ms - kth_rtt_ms)
    if setting == "local":
        return on_nearest_disk_ms
    return ASYNC_FLUSH_WINDOW_MS + on_nearest_disk_ms


def max_lost(acks_per_s: float, window: float) -> float:
    """The acknowledged commits a cut can take: those acknowledged within the window (ms)."""
    return acks_per_s * window / 1000
