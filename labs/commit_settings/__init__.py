"""Lab: what each fault takes from a database's commit settings
(`python -m labs run commit-settings`).

In a lab VM, PostgreSQL and MariaDB (InnoDB) commit rows 1, 2, 3, ... on a disk whose
writes dm-log-writes logs (the write-path lab's disk and probe), each with one commit
setting. At the cut the lab freezes the server, marks the log, kills the server (a process
crash) and starts it again on the same disk; then it rebuilds the disk from the log as a
kernel crash and as a power cut that empties the device's cache would leave it, starts the
server on each, and counts the acknowledged commits each fault took, beside the model.

params.py  the parameters, the settings and the profiles
model.py   how long each setting leaves an acknowledged commit where each fault wipes it
run.py     the servers, the cut, the rebuilt disks and the counts (touches the VM)
findings.py, page.py  what the run found, and what the book page shows
"""

from labs.commit_settings.params import Parameters

NAME = "commit-settings"
DESCRIPTION = ("commit-settings: which acknowledged commits a process crash, a kernel crash "
               "and a power cut take from PostgreSQL and InnoDB, setting by setting")
BOOK_PAGE = "book/power-loss/commit-settings.md"
NEEDS = "a lab VM (`python -m labs vm up`); its two lab disks; minutes"

__all__ = ["BOOK_PAGE", "DESCRIPTION", "NAME", "NEEDS", "Parameters"]
