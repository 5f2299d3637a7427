"""The commit-settings lab's model: for each database setting and each fault, the longest
a commit can stay acknowledged but not yet where the fault cannot reach (its window), from
the write path's model (labs/power_loss/write_path.py) and each server's documented
background flush. A commit acknowledged less than the window before the cut may be lost;
one acknowledged earlier may not.

    PostgreSQL synchronous_commit=on    WAL write() + fdatasync before the acknowledgement
    PostgreSQL synchronous_commit=off   acknowledged at once; the WAL writer writes and
                                        flushes within three times wal_writer_delay (0.2 s)
    PostgreSQL fsync=off                WAL write() at commit, never flushed: the page cache
                                        and the device cache hold it
    InnoDB innodb_flush_log_at_trx_commit=1   log written and flushed at each commit
    InnoDB innodb_flush_log_at_trx_commit=2   log written at each commit, flushed once a
                                              second (innodb_flush_log_at_timeout)
    InnoDB innodb_flush_log_at_trx_commit=0   log written and flushed once a second
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from labs.power_loss import write_path

FAULTS = ("process crash", "kernel crash", "power cut")
MARKS = {"kernel crash": "crash", "power cut": "cut"}  # the probe's marks in the log
WAL_WRITER_DELAY_S = 0.2  # PostgreSQL's default wal_writer_delay
PG_ASYNC_FLUSH_S = 3 * WAL_WRITER_DELAY_S  # the documented most an async commit waits
INNODB_FLUSH_S = 1.0  # innodb_flush_log_at_timeout's default


@dataclass(frozen=True)
class Setting:
    """One server with one commit setting, and the write path's policy it follows."""

    name: str  # as --settings takes it
    short: str  # as the charts name it
    server: str  # postgres | mariadb (labs/infra/vm/servers.py)
    setting: str
    value: str
    safe: bool  # what the book calls it
    policy: str  # the write path's policy (labs/power_loss/write_path.py)
    flush_every_s: float = 0.0  # the server's own background flush, where it has one

    @property
    def label(self) -> str:
        engine = "PostgreSQL" if self.server == "postgres" else "InnoDB"
        return f"{engine} {self.setting}={self.value}"

    def window_s(self, fault: str) -> float:
        return write_path.window_s(self.policy, fault, "volatile", self.flush_every_s)


SETTINGS_LIST = (
    Setting("pg-sync-on", "PG sync on", "postgres", "synchronous_commit", "on", True,
            "write() + fsync()"),
    Setting("pg-sync-off", "PG sync off", "postgres", "synchronous_commit", "off", False,
            "acknowledge, flush every T", PG_ASYNC_FLUSH_S),
    Setting("pg-fsync-off", "PG fsync off", "postgres", "fsync", "off", False, "write() only"),
    Setting("innodb-1", "InnoDB 1", "mariadb", "innodb_flush_log_at_trx_commit", "1", True,
            "write() + fsync()"),
    Setting("innodb-2", "InnoDB 2", "mariadb", "innodb_flush_log_at_trx_commit", "2", False,
            "write() each, fsync every T", INNODB_FLUSH_S),
    Setting("innodb-0", "InnoDB 0", "mariadb", "innodb_flush_log_at_trx_commit", "0", False,
            "acknowledge, flush every T", INNODB_FLUSH_S),
)
SETTINGS = {setting.name: setting for setting in SETTINGS_LIST}


def most_lost(ack_ages_s: Sequence[float], window_s: float) -> int:
    """The most commits a fault can take: those acknowledged less than the window before it.
    None for a setting with no window: a commit whose acknowledgement the client printed a
    moment after the freeze (a negative age) was still answered before it."""
    if window_s <= 0:
        return 0
    return sum(1 for age in ack_ages_s if age < window_s)
