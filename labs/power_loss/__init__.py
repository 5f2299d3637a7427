"""Lab: what a power cut loses (`python -m labs run power-loss --host vm1`).

Databases inside a lab VM (from Debian's packages) take numbered single-row commits from a client
whose every acknowledgement the controller (this machine, outside the VM) writes down.
Mid-stream the VM's power is cut (its QEMU process killed), the VM boots again on the same
disks, the databases recover, and the lab counts the acknowledged commits that are missing:
with the settings the book calls safe (PostgreSQL synchronous_commit=on, InnoDB
innodb_flush_log_at_trx_commit=1) and with the ones it calls unsafe (off, 0).
Two more PostgreSQL servers, with full_page_writes on and off, take updates on a disk that
writes each page in two pieces and holds the second back: the cut tears pages, and the lab
counts the pages that fail their checksum after recovery and the updates they took.

params.py  the parameters and profiles
model.py   the loss each setting allows (acknowledgement rate x the flush window), the
           pages a cut tears
run.py     the writers, the power cut, the recovery and the count (touches the VM)
torn.py    the disk that tears pages, and the torn-page legs' count
page.py    what the book page shows (torn_page.py: its torn-page section)
"""

from labs.power_loss.params import Parameters

NAME = "power-loss"
DESCRIPTION = "acknowledged commits lost to a power cut, with safe and unsafe durability settings"
BOOK_PAGE = "book/power-loss/lab.md"
NEEDS = "a lab VM (the lab cuts its power and boots it again)"

__all__ = ["BOOK_PAGE", "DESCRIPTION", "NAME", "NEEDS", "Parameters"]
