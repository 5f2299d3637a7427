"""Lab: a write-mostly RAID1 of a fast local disk and a slow network disk (the "super disk").

    python -m labs run write-mostly --host vm1 [--profile ci|quick|full] [--legs disks|loop]

The legs are either a lab VM's two data disks (the second capped by QEMU in operations per
second) or two loop devices over files in the lab's work dir (the second capped by a cgroup
io limit), so any Linux host with md and device-mapper can run it; a dm-delay goes over the
slow leg either way. The lab measures both legs raw and the slow leg's cap and delay apart,
builds RAID1 arrays over them (plain, write-mostly, with a bitmap, with write-behind in every
combination of mirror slot and of how write-mostly was set), runs 4 KiB random reads and
writes at queue depth 1 and 16, counts where the I/O landed per leg, logs every write of the
write-behind cells, and runs failure drills each followed by a data check that catches a
single lost or wrong 4 KiB piece. On a lab VM it also cuts the VM's power with writes in flight
and counts the acknowledged writes the slow leg lacks (`--part power-cut` runs only that;
`--part sweep`, the quick profile's, everything else).

params.py     parameters, profiles, the configurations and workloads compared
legs.py       the two legs (VM disks or loop devices), the host check, the loop legs' limit
run.py        the lab on a host: arrays, fio, per-leg counters
drills.py     the failure drills and the data checks
power_cut.py  the power-cut drill: the instance dies with writes in flight (a lab VM only)
cut_blocks.py the drill's numbered blocks: writer and reader scripts, the reader's result
model.py      what the chapter predicts (slow leg, write-behind backlog, transfer times)
reference.py  Hyperconnect's published figures, read closely
tables.py     tidy tables of a run, with the model beside each measurement
figures.py    every number the lab page quotes from a run
page.py       what the pages show: tables, provenance, the panel, companion runs
companions.py the numbers the page quotes from the companion runs (Debian 13, loop legs)
charts.py     the pages' Altair charts
power_cut_page.py  the power-cut drill's table, figures and chart
"""

from labs.write_mostly.params import Parameters

NAME = "write-mostly"
DESCRIPTION = ("write-mostly RAID1 of a fast and a slow leg: the slow leg's parts, latency per "
               "configuration, where reads land, write-behind by slot, failure drills, resync")
BOOK_PAGE = "book/write-mostly/lab.md"
NEEDS = ("a lab host with md RAID1 and dm-delay: loop legs on such a Linux host (--legs loop), "
         "or a lab VM's two disks (vm1)")

__all__ = ["BOOK_PAGE", "DESCRIPTION", "NAME", "NEEDS", "Parameters"]
