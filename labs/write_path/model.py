"""The write-path lab's model: for each way of writing and each fault, the longest an
acknowledged record can stay where the fault wipes it (its window), from the write path's
model (labs/power_loss/write_path.py: Linux's and ext4's defaults). A record acknowledged
less than the window before the cut may be lost; one acknowledged earlier may not. The most
a cut can take is the records acknowledged within the window (all of them, for an endless
window).

The lab's two faults:
    process crash  the writer is killed (SIGKILL); the kernel and the disk go on
    power cut      the disk keeps only what a completed flush (or a FUA write) covered:
                   memory and the device's volatile write cache are lost
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from labs.power_loss import write_path

FAULTS = ("process crash", "power cut")
FOREVER = math.inf


@dataclass(frozen=True)
class Way:
    """One way of writing a record, as the probe does it, and where it may stay volatile."""

    name: str  # as --ways takes it
    label: str  # as the page shows it
    probe_mode: str  # labs/write_path/probe.py's --mode
    mount_options: str  # the lab file system's mount options
    crash_window_s: float
    cut_window_s: float
    example: str

    def window_s(self, fault: str) -> float:
        return self.crash_window_s if fault == "process crash" else self.cut_window_s


def _cut_window(policy: str) -> float:
    return write_path.window_s(policy, "power cut", "volatile", 0.0)


WAYS_LIST = (
    # Never handed to the kernel during the trial: any fault takes every record.
    Way("app-buffer", "own buffer only", "app-buffer", "defaults", FOREVER, FOREVER,
        "a program that buffers and answers before it writes"),
    Way("write", "write()", "write", "defaults", 0.0, _cut_window("write() only"),
        "a log file written with no fsync"),
    Way("write+fsync", "write() + fsync()", "write+fsync", "defaults", 0.0,
        _cut_window("write() + fsync()"), "PostgreSQL, synchronous_commit = on"),
    Way("direct", "O_DIRECT", "direct", "defaults", 0.0,
        _cut_window("O_DIRECT overwrite, no flush"),
        "an engine that skips the page cache and never flushes"),
    Way("direct+dsync", "O_DIRECT | O_DSYNC", "direct+dsync", "defaults", 0.0,
        _cut_window("O_DIRECT | O_DSYNC"), "a log opened with both flags"),
    # barrier=0: ext4 sends the device no flush at all, so nothing ends the device's hold.
    Way("fsync-nobarrier", "fsync(), barrier=0", "write+fsync", "barrier=0", 0.0, FOREVER,
        "a file system mounted with barriers off"),
)
WAYS = {way.name: way for way in WAYS_LIST}


def most_lost(ack_ages_s: Sequence[float], window_s: float) -> int:
    """The most records a fault can take: those acknowledged less than the window before it."""
    return sum(1 for age in ack_ages_s if age < window_s)
