"""The write-path lab's model: for each way of writing and each fault, the longest an
acknowledged record can stay where the fault wipes it (its window), from the write path's
model (labs/power_loss/write_path.py: Linux's and ext4's defaults). A record acknowledged
less than the window before the cut may be lost; one acknowledged earlier may not. The most
a cut can take is the records acknowledged within the window (all of them, for an endless
window).

The lab's three faults:
    process crash  the writer is killed (SIGKILL); the kernel and the disk go on
    kernel crash   the disk keeps every write it completed, flushed or not: the machine's
                   memory (the page cache too) is lost
    power cut      the disk keeps only what a completed flush (or a FUA write) covered:
                   memory and the device's volatile write cache are lost
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from labs.power_loss import write_path

FAULTS = ("process crash", "kernel crash", "power cut")
MARKS = {"kernel crash": "crash", "power cut": "cut"}  # the probe's marks in the log
FOREVER = math.inf


@dataclass(frozen=True)
class Way:
    """One way of writing a record, as the probe does it, and where it may stay volatile."""

    name: str  # as --ways takes it
    label: str  # as the page shows it
    probe_mode: str  # labs/write_path/probe.py's --mode
    mount_options: str  # the lab file system's mount options
    crash_window_s: float
    kernel_window_s: float
    cut_window_s: float

    def window_s(self, fault: str) -> float:
        return {"process crash": self.crash_window_s, "kernel crash": self.kernel_window_s,
                "power cut": self.cut_window_s}[fault]


def _windows(policy: str) -> tuple[float, float, float]:
    """A write-path policy's windows for a process crash, a kernel crash and a power cut."""
    return tuple(write_path.window_s(policy, fault, "volatile", 0.0)
                 for fault in FAULTS)  # type: ignore[return-value]


WAYS_LIST = (
    # Never handed to the kernel during the trial: any fault takes every record.
    Way("app-buffer", "own buffer only", "app-buffer", "defaults", FOREVER, FOREVER, FOREVER),
    # The others take the write path's windows for the policy of the same name.
    Way("write", "write()", "write", "defaults", *_windows("write() only")),
    Way("write+fsync", "write() + fsync()", "write+fsync", "defaults",
        *_windows("write() + fsync()")),
    Way("direct", "O_DIRECT", "direct", "defaults", *_windows("O_DIRECT overwrite, no flush")),
    Way("direct+dsync", "O_DIRECT | O_DSYNC", "direct+dsync", "defaults",
        *_windows("O_DIRECT | O_DSYNC")),
    # barrier=0: ext4 sends the device no flush at all, so nothing ends the device's hold;
    # the device still has every write fsync() waited for, so only a power cut takes them.
    Way("fsync-nobarrier", "fsync(), barrier=0", "write+fsync", "barrier=0", 0.0, 0.0, FOREVER),
)
WAYS = {way.name: way for way in WAYS_LIST}


def most_lost(ack_ages_s: Sequence[float], window_s: float) -> int:
    """The most records a fault can take: those acknowledged less than the window before it."""
    return sum(1 for age in ack_ages_s if age < window_s)


def direct_lost_s(write_s: float, first_write_s: float,
                  commit_s: float = write_path.JOURNAL_COMMIT_S) -> float:
    """How long before the cut ext4's last journal commit came, for O_DIRECT records.

    The writer's first record changes the file's modification time, which opens a journal
    transaction; ext4 commits it, with a FLUSH, `commit_s` later, and the next record opens
    the next one. So commits come every `commit_s` from the first write, and a cut loses the
    records written since the last of them."""
    writing_s = max(0.0, write_s - first_write_s)
    return writing_s % commit_s
