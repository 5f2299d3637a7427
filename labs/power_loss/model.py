"""How many acknowledged commits a setting may lose to a power cut (pure).

A safe setting writes a commit's log record to the disk before acknowledging it: nothing
acknowledged can be lost. An unsafe one acknowledges first and writes the log later, in
the background; everything acknowledged since the last background write is at risk. The
bound is the acknowledgement rate times the longest the background writer may lag.
"""

from __future__ import annotations

# How long each unsafe setting may leave an acknowledged commit only in memory (seconds).
# PostgreSQL, synchronous_commit=off: the WAL writer flushes every wal_writer_delay (200 ms
# by default); the manual's chapter on asynchronous commit bounds the delay at three times
# that. InnoDB, innodb_flush_log_at_trx_commit=0: the log is written and flushed about once
# every innodb_flush_log_at_timeout (1 s by default; the manuals: a crash can erase the last
# second of transactions, and the once-a-second flush is not guaranteed to the millisecond).
FLUSH_WINDOW_S = {("postgres", "synchronous_commit", "off"): 3 * 0.200,
                  ("mariadb", "innodb_flush_log_at_trx_commit", "0"): 1.0}


def window_s(engine: str, setting: str, value: str) -> float:
    """How long before a cut a lost commit can have been acknowledged (0 if safe)."""
    return FLUSH_WINDOW_S.get((engine, setting, value), 0.0)


def max_lost(engine: str, setting: str, value: str, acks_per_s: float) -> float:
    """The most acknowledged commits a power cut can take with this setting (0 if safe)."""
    return acks_per_s * window_s(engine, setting, value)


def torn_pages(full_page_writes: str, pages_per_s: float, hold_s: float) -> float:
    """Pages a power cut leaves torn after recovery, on the lab's disk that holds the second
    half of each page `hold_s` in memory (labs/power_loss/torn.py).

    With full_page_writes on: none. The first change to a page after a checkpoint puts the
    whole page in the WAL, and recovery writes that image over whatever the disk holds.
    Off: every page written within the hold before the cut, its first half new and its
    second half old. The lab's table has one row per page, the server 16 pages of buffers
    and no background writer, so each update sends about one page to the disk at once:
    pages_per_s is the update rate.
    """
    return 0.0 if full_page_writes == "on" else pages_per_s * hold_s
