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


def pages_in_hold(pages_per_s: float, hold_s: float) -> float:
    """Pages a power cut finds torn on the lab's disk that holds part of each page `hold_s`
    in memory (labs/power_loss/torn.py): every page written within the hold before the cut,
    whatever the setting. The lab's table has a row or two per page, the server a small
    cache of pages, so each update sends about one page to the disk: pages_per_s is the
    update rate."""
    return pages_per_s * hold_s


def torn_pages(safety: str, pages_per_s: float, hold_s: float) -> float:
    """Pages still damaged after recovery. Safe (full_page_writes on, the doublewrite buffer
    on): none. PostgreSQL puts the whole page in the WAL at its first change after a
    checkpoint, and recovery writes that image over whatever the disk holds; InnoDB writes
    each page to its doublewrite area, and waits for that copy to be on the disk before it
    writes the page home, so a torn page has a whole copy that recovery writes back. Unsafe:
    every page torn (pages_in_hold)."""
    return 0.0 if safety == "safe" else pages_in_hold(pages_per_s, hold_s)
