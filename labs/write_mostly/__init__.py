"""Lab: a write-mostly RAID1 of a fast local disk and a slow network disk (the "super disk").

    python -m labs run write-mostly --host vm1 [--profile quick] [--seed 42]

On a lab VM the two legs are the VM's data disks: the first is plain (the local NVMe
stand-in), the second is throttled by QEMU (the network-disk stand-in), with a dm-delay on
top. The lab measures both legs raw, builds RAID1 arrays over them (plain, write-mostly,
with a bitmap, with write-behind), runs 4 KiB random reads and writes at queue depth 1 and
16, counts where the I/O landed per leg, and runs failure drills each followed by a data
check that catches a single lost or wrong 4 KiB block.

params.py  parameters, profiles, the configurations and workloads compared
model.py   what the chapter predicts (transfer time, the article's figures)
run.py     the lab on a host: legs, arrays, fio, per-leg counters
drills.py  the failure drills and the data checks
page.py    what the lab page shows: tables, figures, provenance, the panel
charts.py  the lab page's Altair charts
"""

from labs.write_mostly.params import Parameters

NAME = "write-mostly"
DESCRIPTION = ("write-mostly RAID1 of a fast and a slow leg: latency per configuration, where "
               "reads land, failure drills with data checks, resync time")
BOOK_PAGE = "book/write-mostly/lab.md"
NEEDS = "a lab host with md and device-mapper and two spare disks: a lab VM (vm1)"

__all__ = ["BOOK_PAGE", "DESCRIPTION", "NAME", "NEEDS", "Parameters"]
