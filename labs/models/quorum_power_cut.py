"""What a power cut of every copy at once can take from a quorum commit, when the primary's
disk is lost with it (pure).

The question is the one a failover asks: is every acknowledged commit on the disk of some
standby? A commit is exposed from the moment its client hears "done" until its WAL is on a
standby's disk; a cut in that window loses it. How long the window is depends on what the
primary waited for (`synchronous_commit`), with the standbys of synchronous_standby_names:

    on, remote_apply  the k standbys flushed before the answer: no window
    remote_write      the answer comes with the k-th standby's report that it *wrote* the WAL
                      (into its memory), one k-th round trip after the WAL left the primary;
                      the nearest standby has it on its disk half its round trip plus a flush
                      after it left: exposed for whatever of that outlasts the answer
    local             the answer comes once the primary flushed, as the WAL leaves for the
                      standbys: exposed for half the nearest round trip plus a flush
    off               the answer comes before the primary flushed; its WAL writer flushes (and
                      only flushed WAL is sent) within three wal_writer_delay, 600 ms by
                      default (the manual's chapter on asynchronous commit): that, on top

The commits a cut can take: the acknowledgement rate times the window.
"""

from __future__ import annotations

from labs.errors import UsageError

# PostgreSQL's bound on how long an asynchronous commit waits for its flush: three
# wal_writer_delay (200 ms by default).
ASYNC_FLUSH_WINDOW_MS = 3 * 200.0
SETTINGS = ("off", "local", "remote_write", "on", "remote_apply")


def window_ms(setting: str, nearest_rtt_ms: float, kth_rtt_ms: float, flush_ms: float) -> float:
    """How long an acknowledged commit can be on no standby's disk (0: never).

    nearest_rtt_ms: the round trip to the nearest standby; kth_rtt_ms: to the k-th nearest
    (the one whose answer the commit waits for); flush_ms: a standby's write and flush."""
    if setting not in SETTINGS:
        raise UsageError(f"synchronous_commit={setting!r}: not one of {', '.join(SETTINGS)}")
    on_nearest_disk_ms = nearest_rtt_ms / 2 + flush_ms  # after the WAL left the primary
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
