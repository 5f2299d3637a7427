"""Lab: what a power cut takes from each way of writing (`python -m labs run write-path`).

In a lab VM, a small program writes numbered 4 KiB records to a file, each in one way
(kept in its own buffer, write(), write() + fsync(), O_DIRECT, O_DIRECT | O_DSYNC, and
fsync() on ext4 mounted with barrier=0), and notes each record the moment that way says it
is written. Then the lab cuts: it kills the program (a process crash) and, from a log of the
disk's writes that dm-log-writes keeps, rebuilds the disk as a power cut would leave it if
the device's volatile write cache were lost: only what a completed flush covered. It counts
the acknowledged records each fault took, beside the write path's model.

params.py  the parameters, the ways of writing and the profiles
model.py   how long each way leaves an acknowledged record where each fault wipes it
run.py     the writer, the cut and the count on the logged disk (touches the VM)
logged_disk.py  the log-writes disk and its replay (the commit-settings lab uses it too)
probe.py   what runs in the VM (standard library only): writer, cut, replay, count
findings.py, page.py  what the run found, and what the book page shows
"""

from labs.write_path.params import Parameters

NAME = "write-path"
DESCRIPTION = ("write-path: which acknowledged writes a process crash and a power cut that "
               "empties the device's cache take, for six ways of writing")
BOOK_PAGE = "book/power-loss/write-path.md"
NEEDS = "a lab VM (`python -m labs vm up`); its two lab disks; minutes"

__all__ = ["BOOK_PAGE", "DESCRIPTION", "NAME", "NEEDS", "Parameters"]
